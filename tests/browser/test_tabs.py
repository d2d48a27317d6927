"""Notes and every tab type in the page."""

from conftest import add_tab_in_page, open_signed_in, open_tab


def test_notes_are_listed_a_page_at_a_time_and_created_from_the_page(server, context, person, agent):
    for i in range(21):
        person.note(f"Paged note {i:02}")
    w = open_signed_in(context, server)
    ids = lambda: w.page.eval_on_selector_all("#note-list a", "as => as.map(a => a.dataset.noteId)")
    seen = ids()
    assert len(seen) == 20
    # Other tests of the session made notes too: later pages are read until the last note made shows,
    # each page holding notes no earlier page did.
    while "Paged note 20" not in w.page.inner_text("#note-list"):
        first = ids()[0]
        w.page.click("#more-notes")
        w.page.wait_for_function("first => document.querySelector('#note-list a')?.dataset.noteId !== first", arg=first)
        later = ids()
        assert later and not set(later) & set(seen)
        seen += later
    w.page.wait_for_selector('#main[data-loaded="notes:later"]', state="attached")
    w.page.click("text=First page")
    w.page.wait_for_selector('#main[data-loaded="notes:first"]', state="attached")
    w.page.fill("#new-note-title", "Made in the page")
    w.page.check("#new-note-approved")
    w.page.click("#create-note")
    w.page.wait_for_selector('#main[data-loaded="markdown"]', state="attached")
    assert w.page.inner_text("#note-title") == "Made in the page"
    assert [t.get_attribute("data-kind") for t in w.page.locator("#tabs button").all()] == ["markdown", "files", "sources"]
    assert "Made in the page" in [n["title"] for n in all_notes(agent)]


def all_notes(agent):
    notes, cursor = [], None
    while True:
        page = agent.call("list_notes", **({"cursor": cursor} if cursor else {}))
        notes += page["notes"]
        cursor = page["next_cursor"]
        if not cursor:
            return notes


def test_approving_a_note_for_agents_makes_it_visible_to_them(server, context, person, agent):
    note = person.note("People first", approved=False)
    assert note not in [n["note_id"] for n in all_notes(agent)]
    w = open_signed_in(context, server)
    open_tab(w, note)
    w.page.check("#approve-toggle")
    w.page.wait_for_selector('#status:has-text("Agents may now read")')
    assert note in [n["note_id"] for n in all_notes(agent)]
    w.page.uncheck("#approve-toggle")
    w.page.wait_for_selector('#status:has-text("withdrawn")')
    assert note not in [n["note_id"] for n in all_notes(agent)]


def test_slides_are_edited_as_an_outline(server, context, person, agent):
    note = person.note("Deck")
    w = open_signed_in(context, server)
    open_tab(w, note)
    tab_id = add_tab_in_page(w, "slides", "Pitch", "#add-slide")
    w.page.click("#add-slide")
    w.page.fill("#slides .slide >> nth=0 >> .slide-title", "Why now")
    w.page.fill("#slides .slide >> nth=0 >> .slide-body", "Agents write too")
    w.page.fill("#slides .slide >> nth=0 >> .slide-notes", "pause here")
    w.page.click("#save")
    w.page.wait_for_selector('#save-status:has-text("Saved")')
    slides = agent.call("read_note_tab", note_id=note, tab_id=tab_id)["slides"]
    assert [(s["title"], s["body"], s["notes"]) for s in slides][-1] == ("Why now", "Agents write too", "pause here")


def test_a_sheet_range_is_edited_in_the_grid_and_tabs_are_renamed_and_moved(server, context, person, agent):
    note = person.note("Numbers")
    w = open_signed_in(context, server)
    open_tab(w, note)
    tab_id = add_tab_in_page(w, "sheet", "Budget", "#grid")
    w.page.fill('#grid input[data-cell="B2"]', "42")
    w.page.fill('#grid input[data-cell="C3"]', "total")
    w.page.click("#save")
    w.page.wait_for_selector('#save-status:has-text("Saved")')
    sheet_id = agent.call("read_note_tab", note_id=note, tab_id=tab_id)["sheets"][0]["sheet_id"]
    cells = agent.call("read_sheet_range", note_id=note, tab_id=tab_id, sheet_id=sheet_id, start_row=0, start_col=0, num_rows=3, num_cols=3)["values"]
    assert cells[1][1] == 42 and cells[2][2] == "total" and cells[0][0] is None
    w.page.fill("#rename-label", "Budget 2027")
    w.page.click("#rename-tab")
    w.page.wait_for_selector('#tabs button[aria-selected="true"]:has-text("Budget 2027")')
    w.page.click("#move-left")
    w.page.wait_for_selector(f'#tabs button:nth-child(3)[data-tab-id="{tab_id}"]')
    tabs = agent.call("list_note_tabs", note_id=note)["tabs"]
    assert [t["tab_id"] for t in tabs].index(tab_id) == 2 and tabs[2]["label"] == "Budget 2027"


def test_sources_are_listed_and_an_already_attached_url_is_named_so(server, context, person, agent):
    note = person.note("Reading")
    w = open_signed_in(context, server)
    open_tab(w, note, "sources")
    w.page.fill("#source-url", "https://example.com/report?a=1&b=2")
    w.page.fill("#source-title", "The report")
    w.page.click("#add-source")
    w.page.wait_for_selector('#sources a:has-text("The report")')
    w.page.fill("#source-url", "http://www.EXAMPLE.com/report/?a=1&b=2&utm_source=mail#part")
    w.page.fill("#source-title", "Same report")
    w.page.click("#add-source")
    w.page.wait_for_selector('#source-status:has-text("Already attached")')
    sources = agent.call("list_note_attachments", note_id=note)
    assert [(a["title"], a["url"]) for a in sources["attachments"] if a["kind"] == "source"] == [("The report", "https://example.com/report?a=1&b=2")]


def test_files_show_their_metadata(server, context, person):
    note = person.note("Files")
    _, head = person.call("GET", f"/api/v1/notes/{note}")
    status, _ = person.call("POST", f"/api/v1/notes/{note}/files", {"expected_version": head["version"], "name": "plan.pdf", "media_type": "application/pdf", "size_bytes": 1234})
    assert status == 201
    w = open_signed_in(context, server)
    open_tab(w, note, "files")
    assert "plan.pdf" in w.page.inner_text("#files") and "1234" in w.page.inner_text("#files")
