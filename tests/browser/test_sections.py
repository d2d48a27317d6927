"""A markdown tab's sections in the page: the outline, who holds which, and section claims."""

import time

import pytest

from conftest import Refused, Watched, agent_rewrite, open_signed_in, open_tab, wait_until_no_claims

FILLER = "".join(f"Background line {i}.\n" for i in range(1, 121))
BASE = "# Plan\n\nIntro.\n\n" + FILLER + "\n## Risks\n\nNone yet.\n\n## Dates\n\nTBD.\n\n### Launch\n\nFriday.\n"
# A heading with markup in it, as an agent might write one.
EVIL = '\n## <img src=x onerror="window.__pwned=1"> costs\n\nUnknown.\n'


def stored(agent, note):
    return agent.call("read_note_tab", note_id=note, tab_id="markdown")["text"]


def local_clock(w, expires_at):
    """The time of day the page shows for `expires_at` (the browser's own local time)."""
    return w.page.evaluate("t => new Date(t).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })", expires_at)


def row(w, section_id):
    return w.page.locator(f'#outline li.section[data-section-id="{section_id}"]')


def outline_open(context, server, person, title, text=BASE):
    note = person.note(title)
    person.write(note, text)
    w = open_signed_in(context, server)
    open_tab(w, note)
    w.page.wait_for_selector('#outline li.section[data-section-id="plan"]')
    return note, w


def claim_in_page(w, section_id):
    row(w, section_id).locator("button.claim-section").click()
    row(w, section_id).locator("button.release-section").wait_for()


def test_the_outline_lists_sections_and_shows_who_holds_which(server, context, person, agent):
    note = person.note("Outline")
    person.write(note, BASE + EVIL)
    claim = agent.call("claim_note", note_id=note, tab_id="markdown", section_id="risks", ttl_seconds=300)
    w = open_signed_in(context, server)
    open_tab(w, note)
    w.page.wait_for_selector('#outline li.section[data-section-id="risks"] .section-holder')
    sections = w.page.eval_on_selector_all("#outline li.section", """els => els.map(e =>
        [e.dataset.sectionId, e.dataset.level, e.querySelector('.section-heading').textContent])""")
    assert sections == [["plan", "1", "Plan"], ["risks", "2", "Risks"], ["dates", "2", "Dates"], ["launch", "3", "Launch"],
                        ["img-src-x-onerror-window-pwned-1-costs", "2", '<img src=x onerror="window.__pwned=1"> costs']]
    # Indented by level.
    x = {s: row(w, s).locator(".section-heading").bounding_box()["x"] for s in ["plan", "risks", "launch"]}
    assert x["plan"] < x["risks"] < x["launch"]
    # A heading an agent wrote is text, never markup.
    assert w.page.locator("#outline img").count() == 0 and w.page.evaluate("window.__pwned") is None
    badge = row(w, "risks").locator(".section-holder").inner_text()
    assert badge == f"held by Drafting agent (agent) until {local_clock(w, claim['expires_at'])}"
    # The held section has no Claim; nor has the whole-document section that holds it; free ones have.
    assert row(w, "risks").locator("button.claim-section").count() == 0
    assert row(w, "plan").locator("button.claim-section").count() == 0
    assert "overlaps a held section" in row(w, "plan").inner_text()
    assert row(w, "dates").locator("button.claim-section").count() == 1
    # A section claim does not lock the editor.
    assert w.page.is_hidden("#holder-banner") and w.page.inner_text("#save") == "Save"
    assert "section “Risks” of tab" in w.page.inner_text("#presence")

    # A click on a heading selects its section in the editor, caret on the heading, scrolled into view.
    row(w, "dates").locator(".section-heading").click()
    sel = w.page.evaluate("""() => { const e = document.querySelector('#editor');
        return { text: e.value.slice(e.selectionStart, e.selectionEnd), start: e.selectionStart, dir: e.selectionDirection,
                 focused: document.activeElement === e, top: e.scrollTop, height: e.clientHeight,
                 line: parseFloat(getComputedStyle(e).lineHeight), pad: parseFloat(getComputedStyle(e).paddingTop) } }""")
    assert sel["text"] == "## Dates\n\nTBD.\n\n### Launch\n\nFriday.\n\n"
    assert sel["start"] == BASE.index("## Dates") and sel["dir"] == "backward" and sel["focused"]
    heading_top = sel["pad"] + BASE[:BASE.index("## Dates")].count("\n") * sel["line"]
    assert sel["top"] > 0 and sel["top"] <= heading_top and heading_top + sel["line"] <= sel["top"] + sel["height"]

    # The outline follows the board and the text: the agent lets go and adds a section.
    agent.call("release_claim", claim_id=claim["claim_id"])
    agent_rewrite(agent, note, lambda t: t + "\n## Budget\n\nTo do.\n")
    w.page.wait_for_selector('#outline li.section[data-section-id="budget"]', timeout=15000)
    assert row(w, "risks").locator(".section-holder").count() == 0
    assert row(w, "risks").locator("button.claim-section").count() == 1
    # The preview's sanitizer parses the markup and the page's CSP refuses its handler: that is the
    # only error, and no dialog opened.
    assert [e for e in w.errors if "Content Security Policy" not in e] == [] and w.dialogs == []


def test_a_person_claims_a_section_and_an_agent_is_refused_writing_it(server, context, person, agent):
    note, w = outline_open(context, server, person, "Claimed section")
    claim_in_page(w, "risks")
    assert row(w, "risks").locator(".section-holder").inner_text().startswith("held by you until ")
    assert "You hold the section “Risks” until" in w.page.inner_text("#outline-status")
    # One section a tab: no Claim elsewhere while the person holds one.
    assert w.page.locator("#outline button.claim-section").count() == 0
    [c] = agent.call("list_claims", note_id=note)["claims"]
    assert (c["held_by"], c["actor_type"], c["tab_id"], c["section_id"]) == ("Local person", "human", "markdown", "risks")

    # The agent cannot change the section's lines...
    with pytest.raises(Refused) as refused:
        agent_rewrite(agent, note, lambda t: t.replace("None yet.", "The vendor may slip."))
    assert refused.value.body["error"] == "claim_conflict" and refused.value.body["held_by"] == "Local person"
    assert refused.value.body["section_id"] == "risks"
    # ...nor claim the section holding it...
    with pytest.raises(Refused) as refused:
        agent.call("claim_note", note_id=note, tab_id="markdown", section_id="plan", ttl_seconds=60)
    assert refused.value.body["error"] == "claim_conflict" and refused.value.body["held_by"] == "Local person"
    # ...but writes elsewhere in the tab.
    agent_rewrite(agent, note, lambda t: t.replace("TBD.", "Monday the 12th."))
    assert stored(agent, note) == BASE.replace("TBD.", "Monday the 12th.")

    # Released in the page, the agent may write the section.
    row(w, "risks").locator("button.release-section").click()
    row(w, "risks").locator("button.claim-section").wait_for()
    assert wait_until_no_claims(agent, note) == []
    agent_rewrite(agent, note, lambda t: t.replace("None yet.", "The vendor may slip."))
    assert "The vendor may slip." in stored(agent, note)
    assert w.errors == []


def test_a_claim_on_a_section_someone_else_holds_is_refused_in_words(server, context, person, agent):
    note = person.note("Taken")
    person.write(note, BASE)
    page = context.new_page()
    page.clock.install()
    w = Watched(page)
    w.page.goto(server.sign_in_link)
    w.page.wait_for_selector("#new-note-title")
    open_tab(w, note)
    w.page.wait_for_selector('#outline li.section[data-section-id="launch"] button.claim-section')
    # The page's clock stands still (and a read under way ends): the outline is not read again before the click.
    w.page.clock.pause_at(int(time.time() * 1000) + 1000)
    time.sleep(0.5)
    held = agent.call("claim_note", note_id=note, tab_id="markdown", section_id="dates", ttl_seconds=300)
    row(w, "launch").locator("button.claim-section").dispatch_event("click")
    w.page.wait_for_selector("#outline-status.bad")
    assert w.page.inner_text("#outline-status") == (
        f"Drafting agent (agent) is working on the section “Dates” until {local_clock(w, held['expires_at'])}: "
        "you can claim the section “Launch” after they finish.")
    # The refusal read the board again: the holder shows, and no claim of the person's was made.
    row(w, "dates").locator(".section-holder").wait_for()
    assert [c["held_by"] for c in agent.call("list_claims", note_id=note)["claims"]] == ["Drafting agent"]


def test_a_save_touching_a_section_an_agent_holds_keeps_the_text_and_says_who(server, context, person, agent):
    note, w = outline_open(context, server, person, "Agent at work")
    claim = agent.call("claim_note", note_id=note, tab_id="markdown", section_id="risks", ttl_seconds=300)
    row(w, "risks").locator(".section-holder").wait_for(timeout=15000)
    mine = BASE.replace("None yet.", "None, says the person.")
    w.page.fill("#editor", mine)
    w.page.click("#save")
    w.page.wait_for_selector('#save-status:has-text("Not saved")')
    assert w.page.inner_text("#save-status") == (
        f"Not saved. Drafting agent (agent) is working on the section “Risks” until {local_clock(w, claim['expires_at'])}. "
        "Your text is kept here; save again after they finish, or undo your change in that section.")
    # Nothing was written; the person's text is still in the editor and in the browser's drafts.
    assert stored(agent, note) == BASE
    assert w.page.input_value("#editor") == mine
    draft = w.page.evaluate("n => Object.entries(localStorage).find(([k]) => k.startsWith('cairn.draft') && k.endsWith('|' + n + '|markdown'))", note)
    assert draft is not None and "None, says the person." in draft[1]
    # The agent finishes; the same text saves.
    agent.call("release_claim", claim_id=claim["claim_id"])
    w.page.click("#save")
    w.page.wait_for_selector('#save-status:has-text("Saved")')
    assert stored(agent, note) == mine
    assert w.errors == []


def test_a_save_elsewhere_while_an_agent_holds_a_section_goes_through(server, context, person, agent):
    note, w = outline_open(context, server, person, "Side by side")
    agent.call("claim_note", note_id=note, tab_id="markdown", section_id="risks", ttl_seconds=300)
    row(w, "risks").locator(".section-holder").wait_for(timeout=15000)
    assert w.page.is_hidden("#holder-banner")
    mine = BASE.replace("TBD.", "Friday the 9th.") + "\n## Owners\n\nThe person.\n"
    w.page.fill("#editor", mine)
    w.page.click("#save")
    w.page.wait_for_selector('#save-status:has-text("Saved")')
    assert stored(agent, note) == mine
    # The save reads the outline again: the new section shows, the agent still holds its own.
    row(w, "owners").wait_for()
    assert "held by Drafting agent (agent)" in row(w, "risks").inner_text()
    assert w.errors == []


def test_a_person_holding_a_section_is_told_to_release_it_to_edit_elsewhere(server, context, person, agent):
    note, w = outline_open(context, server, person, "Fenced in")
    claim_in_page(w, "risks")
    outside = BASE.replace("TBD.", "Friday the 9th.")
    w.page.fill("#editor", outside)
    w.page.click("#save")
    w.page.wait_for_selector('#save-status:has-text("Not saved")')
    assert w.page.inner_text("#save-status") == (
        "Not saved. You hold the section “Risks”: you can change only its lines while you hold it. Release it to edit elsewhere.")
    assert stored(agent, note) == BASE and w.page.input_value("#editor") == outside
    # Inside the section the save goes through.
    inside = BASE.replace("None yet.", "The vendor may slip.")
    w.page.fill("#editor", inside)
    w.page.click("#save")
    w.page.wait_for_selector('#save-status:has-text("Saved")')
    assert stored(agent, note) == inside
    assert w.errors == []


def test_a_persons_section_claim_is_renewed_while_they_edit_and_released_when_they_leave(server, context, person, agent):
    note = person.note("Heartbeat section")
    person.write(note, BASE)
    page = context.new_page()
    page.clock.install()  # the page's timers run on a clock the test moves
    w = Watched(page)
    w.page.goto(server.sign_in_link)
    w.page.wait_for_selector("#new-note-title")
    open_tab(w, note)
    w.page.wait_for_selector('#outline li.section[data-section-id="dates"] button.claim-section')
    claim_in_page(w, "dates")
    [claim] = agent.call("list_claims", note_id=note)["claims"]
    assert claim["section_id"] == "dates" and claim["renewed"] is False
    w.page.clock.run_for(21_000)  # past one heartbeat
    deadline = time.time() + 10
    while not agent.call("list_claims", note_id=note)["claims"][0]["renewed"] and time.time() < deadline:
        w.page.clock.run_for(1_000)
    [renewed] = agent.call("list_claims", note_id=note)["claims"]
    assert renewed["renewed"] is True and renewed["claim_id"] == claim["claim_id"] and renewed["section_id"] == "dates"
    # Leaving the note releases it.
    w.page.evaluate("location.hash = '#/'")
    w.page.wait_for_selector("#new-note-title")
    assert wait_until_no_claims(agent, note) == []
