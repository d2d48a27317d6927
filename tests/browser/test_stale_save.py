"""A stale save: the draft is kept and merged, never dropped."""

from conftest import agent_rewrite, open_signed_in, open_tab, screenshot, typed_while_the_agent_writes

BASE = "# Plan\n\nIntro paragraph.\n\n## Risks\n\nNone yet.\n\n## Dates\n\nTBD.\n"


def test_an_agent_edit_while_the_person_types_is_merged_and_both_lines_are_kept(server, context, person, agent):
    note, w = typed_while_the_agent_writes(context, server, person, agent, "Plan", BASE,
                                           BASE.replace("TBD.\n", "TBD.\n- person: launch on the 9th\n"),
                                           lambda t: t.replace("None yet.\n", "None yet.\n- agent: the vendor may slip\n"))
    w.page.click("#save")
    w.page.wait_for_selector("#merge")
    banner = w.page.inner_text("#merge .banner")
    assert "stale" in banner and "Drafting agent" in banner and "do not overlap" in banner
    mine = w.page.locator("#merge-view .seg-mine")
    assert mine.count() == 1 and "person: launch on the 9th" in mine.inner_text()
    assert "agent: the vendor may slip" in w.page.inner_text("#merge-view .seg-theirs")
    assert w.page.locator("#merge-view .conflict").count() == 0
    screenshot(w.page, "ui-merge.png")
    w.page.click("#merge-save")
    w.page.wait_for_selector('#save-status:has-text("Saved")')
    final = agent.call("read_note_tab", note_id=note, tab_id="markdown")["text"]
    assert "- agent: the vendor may slip\n" in final and "- person: launch on the 9th\n" in final
    assert w.page.input_value("#editor") == final
    assert w.errors == []


def test_overlapping_edits_are_shown_side_by_side_and_nothing_is_saved_until_the_person_picks(server, context, person, agent):
    note = person.note("Dates")
    person.write(note, BASE)
    w = open_signed_in(context, server)
    open_tab(w, note)
    w.page.fill("#editor", BASE.replace("TBD.\n", "Friday the 9th.\n").replace("Intro paragraph.", "Intro, by the person."))
    agent_rewrite(agent, note, lambda t: t.replace("TBD.\n", "Monday the 12th.\n"))
    before = agent.call("read_note_tab", note_id=note, tab_id="markdown")
    w.page.click("#save")
    w.page.wait_for_selector("#merge .conflict")
    conflict = w.page.locator("#merge .conflict")
    assert "Monday the 12th." in conflict.locator(".theirs pre").inner_text()
    assert "Drafting agent" in conflict.locator(".theirs").inner_text()
    assert "Friday the 9th." in conflict.locator(".mine pre").inner_text()
    # The person's change that does not overlap is already merged in.
    assert "Intro, by the person." in w.page.inner_text("#merge-view .seg-mine")
    assert w.page.is_disabled("#merge-save")
    # Nothing was written while the person decides.
    assert agent.call("read_note_tab", note_id=note, tab_id="markdown")["version"] == before["version"]
    conflict.locator(".pick-mine").click()
    w.page.fill("#merge .conflict-result", "Friday the 9th (Monday the 12th at the latest).\n")
    assert w.page.is_enabled("#merge-save")
    w.page.click("#merge-save")
    w.page.wait_for_selector('#save-status:has-text("Saved")')
    final = agent.call("read_note_tab", note_id=note, tab_id="markdown")["text"]
    assert "Friday the 9th (Monday the 12th at the latest).\n" in final and "Intro, by the person." in final
    # Theirs is not lost: it is in the history, readable at its version.
    old = agent.call("read_note_tab", note_id=note, tab_id="markdown", at_version=before["version"])
    assert "Monday the 12th." in old["text"]


def test_backing_out_of_the_merge_returns_to_the_draft_unchanged(server, context, person, agent):
    _, w = typed_while_the_agent_writes(context, server, person, agent, "Back out", "a\nb\n", "a\nB by me\n", lambda t: "a\nb by agent\n")
    w.page.click("#save")
    w.page.wait_for_selector("#merge .conflict")
    w.page.click("#merge-cancel")
    assert w.page.is_visible("#editor")
    assert w.page.input_value("#editor") == "a\nB by me\n"
    draft = w.page.evaluate("Object.entries(localStorage).find(([k]) => k.startsWith('cairn.draft'))")
    assert draft is not None and "B by me" in draft[1]


def test_a_stale_draft_survives_a_reload_and_a_closed_tab(server, context, person, agent):
    note, w = typed_while_the_agent_writes(context, server, person, agent, "Reload", "first\nsecond\n",
                                           "first\nsecond\nthird, typed before the reload\n", lambda t: "zeroth, by the agent\n" + t)
    w.page.reload()
    w.page.wait_for_selector("#draft-banner:visible")
    assert w.page.input_value("#editor") == "first\nsecond\nthird, typed before the reload\n"
    assert "unsaved draft" in w.page.inner_text("#draft-banner")
    w.page.close()
    # A new tab of the same browser profile: the draft is still there.
    w2 = open_signed_in(context, server)
    open_tab(w2, note)
    w2.page.wait_for_selector("#draft-banner:visible")
    assert "third, typed before the reload" in w2.page.input_value("#editor")
    w2.page.click("#save")
    w2.page.wait_for_selector("#merge")
    w2.page.click("#merge-save")
    w2.page.wait_for_selector('#save-status:has-text("Saved")')
    final = agent.call("read_note_tab", note_id=note, tab_id="markdown")["text"]
    assert final == "zeroth, by the agent\nfirst\nsecond\nthird, typed before the reload\n"
