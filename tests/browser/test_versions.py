"""Versions right: a draft only while it differs, tab-scoped saves, restore after others wrote."""

import time

from conftest import agent_rewrite, open_signed_in, open_tab, opened


def drafts(w):
    return w.page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('cairn.draft'))")


def test_typing_a_character_and_deleting_it_leaves_no_draft_and_a_reload_shows_the_agents_line(server, context, person, agent):
    note, _, w = opened(context, server, person, "Typed and deleted", "first line\n")
    w.page.click("#editor")
    w.page.keyboard.press("End")
    w.page.keyboard.type("x")
    assert len(drafts(w)) == 1
    w.page.keyboard.press("Backspace")
    assert drafts(w) == []
    agent_rewrite(agent, note, lambda t: t + "appended by the agent\n")
    w.page.reload()
    w.page.wait_for_selector('#main[data-loaded="markdown"]', state="attached")
    assert w.page.input_value("#editor") == "first line\nappended by the agent\n"
    assert w.page.is_hidden("#draft-banner")
    assert w.errors == []


def test_a_stored_draft_equal_to_the_text_it_started_from_is_dropped(server, context, person, agent):
    note, v, w = opened(context, server, person, "Stale equal draft", "base text\n")
    tab_version = agent.call("read_note_tab", note_id=note, tab_id="markdown")["tab_version"]
    w.page.fill("#editor", "base text\nchanged\n")
    key = drafts(w)[0]
    # A draft left by an older page: its text is the text it started from.
    w.page.evaluate("([k, v, tv]) => localStorage.setItem(k, JSON.stringify({text: 'base text\\n', base_version: v, base_tab_version: tv, base_text: 'base text\\n'}))",
                    [key, v, tab_version])
    agent_rewrite(agent, note, lambda t: t + "the agent's line\n")
    w.page.reload()
    w.page.wait_for_selector('#main[data-loaded="markdown"]', state="attached")
    assert w.page.input_value("#editor") == "base text\nthe agent's line\n"
    assert w.page.is_hidden("#draft-banner")
    assert drafts(w) == []


def test_approving_the_note_then_editing_saves_without_a_merge(server, context, person, agent):
    note = person.note("Approve then edit", approved=False)
    person.write(note, "one\n")
    w = open_signed_in(context, server)
    open_tab(w, note)
    w.page.check("#approve-toggle")
    w.page.wait_for_selector('#status:has-text("Agents may now read")')
    w.page.fill("#editor", "one\ntwo\n")
    w.page.click("#save")
    w.page.wait_for_selector('#save-status:has-text("Saved")')
    assert w.page.locator("#merge").count() == 0
    assert agent.call("read_note_tab", note_id=note, tab_id="markdown")["text"] == "one\ntwo\n"
    assert w.errors == []


def test_restore_after_an_agent_wrote_succeeds_shows_the_text_and_says_so(server, context, person, agent):
    note, v1, w = opened(context, server, person, "Restore after", "the person's text\n")
    w.page.wait_for_selector(f'#history li[data-version="{v1}"]')
    # A draft the restore must not bring back once the person discards it, and a write the page has not seen.
    w.page.fill("#editor", "a draft before the restore\n")
    agent_rewrite(agent, note, lambda t: "the agent's text\n")
    w.page.click(f'#history li[data-version="{v1}"] .restore-version')
    w.page.click("#restore-discard")
    w.page.wait_for_selector('#status:has-text("Restored")')
    w.page.wait_for_selector('#main[data-loaded="markdown"]', state="attached")
    assert w.page.input_value("#editor") == "the person's text\n"
    assert w.page.is_hidden("#draft-banner")
    assert agent.call("read_note_tab", note_id=note, tab_id="markdown")["text"] == "the person's text\n"
    time.sleep(2)
    assert "Restored" in w.page.inner_text("#status")
    w.page.reload()
    w.page.wait_for_selector('#main[data-loaded="markdown"]', state="attached")
    assert w.page.input_value("#editor") == "the person's text\n"
    assert w.errors == []


def test_an_older_pages_draft_equal_to_the_text_at_its_version_is_dropped(server, context, person, agent):
    note, v, w = opened(context, server, person, "Old page draft", "as it was\n")
    w.page.fill("#editor", "as it was\nedited\n")
    key = drafts(w)[0]
    # The shape an earlier page kept: no base text, the note's version only.
    w.page.evaluate("([k, v]) => localStorage.setItem(k, JSON.stringify({text: 'as it was\\n', base_version: v}))", [key, v])
    agent_rewrite(agent, note, lambda t: t + "the agent's line\n")
    w.page.reload()
    w.page.wait_for_selector('#main[data-loaded="markdown"]', state="attached")
    assert w.page.input_value("#editor") == "as it was\nthe agent's line\n"
    assert w.page.is_hidden("#draft-banner")
