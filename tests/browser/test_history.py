"""History in the page: versions, diffs, restore."""

from conftest import agent_rewrite, open_signed_in, open_tab


def test_an_old_version_is_viewed_diffed_and_restored_as_a_new_version(server, context, person, agent):
    note = person.note("History")
    v1 = person.write(note, "# Title\n\nthe person's paragraph\n")
    agent_rewrite(agent, note, lambda t: "# Title\n\nthe agent replaced it\n")
    w = open_signed_in(context, server)
    open_tab(w, note)
    w.page.wait_for_selector(f'#history li[data-version="{v1}"]')
    entries = w.page.locator("#history li.version")
    assert "Drafting agent (agent)" in entries.nth(0).inner_text()
    assert "Local person (human)" in w.page.inner_text(f'#history li[data-version="{v1}"]')
    w.page.click(f'#history li[data-version="{v1}"] .view-version')
    w.page.wait_for_selector("#version-content")
    assert "the person's paragraph" in w.page.inner_text("#version-content")
    w.page.keyboard.press("Escape")
    w.page.wait_for_selector("#history-view", state="hidden")
    w.page.click(f'#history li[data-version="{v1}"] .diff-version')
    w.page.wait_for_selector("#diff-view")
    assert "- the person's paragraph" in w.page.inner_text("#diff-view .del")
    assert "+ the agent replaced it" in w.page.inner_text("#diff-view .ins")
    w.page.click("#history-view-close")
    now = agent.call("read_note_tab", note_id=note, tab_id="markdown")["version"]
    w.page.click(f'#history li[data-version="{v1}"] .restore-version')
    w.page.wait_for_selector(f'#note-version:has-text("version {now + 1}")')
    w.page.wait_for_selector('#main[data-loaded="markdown"]', state="attached")
    assert w.page.input_value("#editor") == "# Title\n\nthe person's paragraph\n"
    stored = agent.call("read_note_tab", note_id=note, tab_id="markdown")
    assert stored["text"] == "# Title\n\nthe person's paragraph\n" and stored["version"] == now + 1
    # The agent's version is still in the history.
    assert "the agent replaced it" in agent.call("read_note_tab", note_id=note, tab_id="markdown", at_version=now)["text"]
