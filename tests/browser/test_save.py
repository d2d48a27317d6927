"""A person edits and saves."""

from conftest import open_signed_in, open_tab, screenshot


def test_a_saved_edit_moves_the_version_on(server, context, person, agent):
    note = person.note("Launch brief")
    v = person.write(note, "# Launch brief\n\nGoals.\n")
    w = open_signed_in(context, server)
    open_tab(w, note)
    assert w.page.input_value("#editor") == "# Launch brief\n\nGoals.\n"
    assert f"version {v}" in w.page.inner_text("#save-status")
    w.page.fill("#editor", "# Launch brief\n\nGoals.\n\n- ship on Friday\n")
    assert "Unsaved" in w.page.inner_text("#save-status")
    w.page.wait_for_selector('#preview li:has-text("ship on Friday")')
    w.page.click("#save")
    w.page.wait_for_selector(f'#save-status:has-text("version {v + 1}")')
    w.page.wait_for_selector(f'#note-version:has-text("version {v + 1}")')
    stored = agent.call("read_note_tab", note_id=note, tab_id="markdown")
    assert stored["text"].endswith("- ship on Friday\n") and stored["version"] == v + 1
    assert "Local person" in stored["provenance"]["updated_by"]
    # The saved draft is gone; a reload shows the stored text, no draft banner.
    w.page.reload()
    w.page.wait_for_selector("#editor")
    w.page.wait_for_selector("#save-status:not(:empty)")
    assert w.page.is_hidden("#draft-banner")
    screenshot(w.page, "ui-editor.png")
    assert w.errors == []


def test_a_retried_save_of_the_same_text_lands_once(server, context, person, agent):
    note = person.note("Retry")
    v = person.write(note, "one\n")
    w = open_signed_in(context, server)
    open_tab(w, note)
    w.page.fill("#editor", "one\ntwo\n")
    # The first answer is lost on its way back: the page sees a failure, keeps the draft.
    state = {"dropped": False}

    def lose_first_answer(route):
        if route.request.method == "PUT" and not state["dropped"]:
            state["dropped"] = True
            route.fetch()
            route.abort()
        else:
            route.continue_()

    w.page.route("**/api/v1/notes/*/tabs/*", lose_first_answer)
    w.page.click("#save")
    w.page.wait_for_selector('#save-status:has-text("Not saved")')
    assert "draft is kept" in w.page.inner_text("#save-status")
    w.page.click("#save")
    w.page.wait_for_selector(f'#save-status:has-text("version {v + 1}")')
    history = agent.call("list_note_history", note_id=note, tab_id="markdown")
    assert [e["version"] for e in history["entries"] if e["version"] > v] == [v + 1]
    assert agent.call("read_note_tab", note_id=note, tab_id="markdown")["text"] == "one\ntwo\n"
