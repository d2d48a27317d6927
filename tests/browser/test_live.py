"""Live: the page sees another actor's write within a couple of seconds."""

from conftest import agent_rewrite, open_signed_in, open_tab, opened


def test_without_a_draft_an_agents_write_shows_in_place(server, context, person, agent):
    note, _, w = opened(context, server, person, "Live text", "# Live\n\nline one\n")
    agent_rewrite(agent, note, lambda t: t + "\n## Added\n\nby the agent\n")
    w.page.wait_for_function("() => document.querySelector('#editor').value.includes('by the agent')", timeout=2500)
    w.page.wait_for_selector('#outline li[data-level="2"]:has-text("Added")', timeout=2500)
    w.page.wait_for_selector('#history li.version:has-text("Drafting agent")', timeout=2500)
    assert w.page.is_hidden("#remote-banner")
    assert w.errors == []


def test_with_a_draft_the_page_says_who_changed_it_and_merges_in_one_click(server, context, person, agent):
    note, _, w = opened(context, server, person, "Live merge", "top\n\nmiddle\n\nbottom\n")
    w.page.fill("#editor", "top, by the person\n\nmiddle\n\nbottom\n")
    agent_rewrite(agent, note, lambda t: t.replace("bottom\n", "bottom, by the agent\n"))
    w.page.wait_for_selector("#remote-banner:visible", timeout=2500)
    assert "Drafting agent (agent) changed this note" in w.page.inner_text("#remote-banner")
    assert w.page.input_value("#editor") == "top, by the person\n\nmiddle\n\nbottom\n"
    w.page.click("#merge-theirs")
    w.page.wait_for_function("() => document.querySelector('#editor').value.includes('bottom, by the agent')")
    assert w.page.input_value("#editor") == "top, by the person\n\nmiddle\n\nbottom, by the agent\n"
    w.page.click("#save")
    w.page.wait_for_selector('#save-status:has-text("Saved")')
    assert w.page.locator("#merge").count() == 0
    assert agent.call("read_note_tab", note_id=note, tab_id="markdown")["text"] == "top, by the person\n\nmiddle\n\nbottom, by the agent\n"
    assert w.errors == []


def test_a_claim_taken_by_an_agent_shows_on_the_board_live(server, context, person, agent):
    note, _, w = opened(context, server, person, "Live claims", "text\n")
    w.page.wait_for_selector('#presence li:has-text("Nobody holds")')
    agent.call("claim_note", note_id=note, tab_id="markdown", ttl_seconds=60)
    w.page.wait_for_selector('#presence li.claim[data-actor="agent"]', timeout=2500)


def test_an_idle_note_page_asks_about_once_a_second(server, context, person):
    note, _, w = opened(context, server, person, "Idle", "quiet\n")
    w.page.wait_for_timeout(1500)
    calls = []
    w.page.on("request", lambda r: "/api/" in r.url and calls.append(r.url))
    w.page.wait_for_timeout(6000)
    assert 3 <= len(calls) <= 9, calls
    assert all("/changes" in c for c in calls), calls


def test_merging_an_overlapping_live_change_opens_the_merge_screen(server, context, person, agent):
    note, _, w = opened(context, server, person, "Live conflict", "a\nb\n")
    w.page.fill("#editor", "a\nB by me\n")
    agent_rewrite(agent, note, lambda t: "a\nb by agent\n")
    w.page.wait_for_selector("#remote-banner:visible", timeout=2500)
    w.page.click("#merge-theirs")
    w.page.wait_for_selector("#merge .conflict")
    assert "While you were editing" in w.page.inner_text("#merge .banner")
    w.page.locator("#merge .conflict .pick-theirs").click()
    w.page.click("#merge-save")
    w.page.wait_for_selector('#save-status:has-text("Saved")')
    assert agent.call("read_note_tab", note_id=note, tab_id="markdown")["text"] == "a\nb by agent\n"
    assert w.errors == []
