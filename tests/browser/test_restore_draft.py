"""Restore never drops a draft without asking (docs/editor.md: drafts are never dropped).

Over an unsaved draft of the tab, "Restore" asks first: do not restore
(nothing written, the draft as it was), restore and keep the draft (it
comes back over the restored text, and its save merges), or restore and
discard it.
"""

from conftest import open_signed_in, open_tab

FIRST = "# Plan\n\nthe first paragraph\n"
SECOND = "# Plan\n\nthe second paragraph\n"
MINE = SECOND + "\nmy unsaved line\n"


def drafts(page):
    """The drafts this browser keeps: their texts."""
    return page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('cairn.draft'))"
                         ".map(k => JSON.parse(localStorage.getItem(k)).text)")


def drafted_over_two_versions(context, server, person, agent, title):
    """A note at its second text, open in a page where the person typed MINE: (note, first version, page)."""
    note = person.note(title)
    v1 = person.write(note, FIRST)
    person.write(note, SECOND)
    w = open_signed_in(context, server)
    open_tab(w, note)
    w.page.fill("#editor", MINE)
    assert drafts(w.page) == [MINE]
    w.page.wait_for_selector(f'#history li[data-version="{v1}"] .restore-version')
    return note, v1, w


def test_restore_over_a_draft_asks_and_not_restoring_changes_nothing(server, context, person, agent):
    note, v1, w = drafted_over_two_versions(context, server, person, agent, "Restore asks")
    before = agent.call("read_note_tab", note_id=note, tab_id="markdown")
    w.page.click(f'#history li[data-version="{v1}"] .restore-version')
    w.page.wait_for_selector("#restore-ask", timeout=5000)
    assert "unsaved draft" in w.page.inner_text("#restore-ask")
    assert agent.call("read_note_tab", note_id=note, tab_id="markdown")["version"] == before["version"], "nothing restored before the answer"
    assert drafts(w.page) == [MINE]
    w.page.click("#restore-cancel")
    w.page.wait_for_selector("#history-view", state="hidden")
    assert w.page.input_value("#editor") == MINE and drafts(w.page) == [MINE]
    assert agent.call("read_note_tab", note_id=note, tab_id="markdown")["version"] == before["version"]
    assert w.errors == []


def test_restore_keeping_the_draft_brings_it_back_over_the_restored_text(server, context, person, agent):
    note, v1, w = drafted_over_two_versions(context, server, person, agent, "Restore keeps")
    now = agent.call("read_note_tab", note_id=note, tab_id="markdown")["version"]
    w.page.click(f'#history li[data-version="{v1}"] .restore-version')
    w.page.click("#restore-keep")
    w.page.wait_for_selector(f'#note-version:has-text("version {now + 1}")')
    w.page.wait_for_selector('#status:has-text("Your draft is kept")')
    assert agent.call("read_note_tab", note_id=note, tab_id="markdown")["text"] == FIRST
    assert w.page.input_value("#editor") == MINE and drafts(w.page) == [MINE]
    assert w.page.is_visible("#draft-banner")
    # Its save is stale (it started before the restore): the merge screen, never a silent overwrite.
    w.page.click("#save")
    w.page.wait_for_selector("#merge")
    assert "my unsaved line" in w.page.inner_text("#merge-view")
    assert agent.call("read_note_tab", note_id=note, tab_id="markdown")["text"] == FIRST
    assert w.errors == []


def test_restore_discarding_the_draft_is_the_persons_choice(server, context, person, agent):
    note, v1, w = drafted_over_two_versions(context, server, person, agent, "Restore discards")
    w.page.click(f'#history li[data-version="{v1}"] .restore-version')
    w.page.click("#restore-discard")
    w.page.wait_for_selector('#status:has-text("Restored the tab")')
    w.page.wait_for_selector('#main[data-loaded="markdown"]', state="attached")
    assert w.page.input_value("#editor") == FIRST and drafts(w.page) == []
    assert agent.call("read_note_tab", note_id=note, tab_id="markdown")["text"] == FIRST
    assert w.errors == []
