"""What others wrote never runs in the page."""

from conftest import Agent, open_signed_in, open_tab

PAYLOADS = [
    '<img src=x onerror="window.__pwned=1;alert(1)">',
    "<script>window.__pwned=2;alert(2)</script>",
    '<svg onload="window.__pwned=3;alert(3)"></svg>',
    '<a href="javascript:window.__pwned=4;alert(4)">click</a>',
    "[link](javascript:window.__pwned=5)",
    '<iframe src="javascript:alert(6)"></iframe>',
    '<form action="javascript:alert(7)"><button>go</button></form>',
]
ONE = " ".join(PAYLOADS)


def no_script_ran(w):
    assert w.dialogs == []
    assert w.page.evaluate("window.__pwned") is None
    live = w.page.evaluate("""() => [...document.querySelectorAll('#main *')].filter(e =>
        [...e.attributes].some(a => a.name.startsWith('on') || /^\\s*javascript:/i.test(a.value))).map(e => e.outerHTML)""")
    assert live == []
    assert w.page.locator("#main script, #main iframe, #main form").count() == 0


def test_script_in_every_field_others_write_never_runs(server, context, person):
    evil = Agent(server, server.token("agent-evil", '<img src=x onerror="window.__pwned=9;alert(9)">'))
    note = person.note('<img src=x onerror="alert(10)"> title')
    tab = evil.call("read_note_tab", note_id=note, tab_id="markdown")
    v = evil.call("edit_note_tab", note_id=note, tab_id="markdown", operation="replace_text", text="\n\n".join(PAYLOADS) + "\n",
                  expected_version=tab["version"], idempotency_key="evil-1")["version"]
    slides = evil.call("create_note_tab", note_id=note, tab_type="slides", label='<svg onload="alert(11)">', expected_version=v,
                       idempotency_key="evil-2", slides=[{"title": PAYLOADS[0], "body": ONE, "notes": PAYLOADS[2]}])
    sheet = evil.call("create_note_tab", note_id=note, tab_type="sheet", label="Sheet <b>x</b>", expected_version=slides["version"],
                      idempotency_key="evil-3")
    sheet_id = evil.call("read_note_tab", note_id=note, tab_id=sheet["tab_id"])["sheets"][0]["sheet_id"]
    done = evil.call("edit_note_tab", note_id=note, tab_id=sheet["tab_id"], operation="sheet_set_range", sheet_id=sheet_id, start_row=0,
                     start_col=0, values=[[PAYLOADS[0], PAYLOADS[1]]], expected_version=sheet["version"], idempotency_key="evil-4")
    evil.call("add_note_source", note_id=note, url="https://example.com/a", title=ONE, expected_version=done["version"], idempotency_key="evil-5")
    claim = evil.call("claim_note", note_id=note, tab_id="markdown", ttl_seconds=300)
    evil.call("post_claim_note", claim_id=claim["claim_id"], text=ONE)
    _, head = person.call("GET", f"/api/v1/notes/{note}")
    status, _ = person.call("POST", f"/api/v1/notes/{note}/files", {"expected_version": head["version"], "name": PAYLOADS[0], "media_type": "text/plain", "size_bytes": 3})
    assert status == 201

    w = open_signed_in(context, server)
    open_tab(w, note)
    assert w.page.inner_text("#note-title") == '<img src=x onerror="alert(10)"> title'  # shown as text
    w.page.wait_for_selector("#presence .claim")
    assert 'onerror="window.__pwned=9' in w.page.inner_text("#presence")
    assert "<script>" not in w.page.inner_html("#preview")
    assert "click" in w.page.inner_text("#preview")
    w.page.click("#history li.version .view-version")
    w.page.wait_for_selector("#version-content")
    w.page.keyboard.press("Escape")
    w.page.click("#history li.version .diff-version")
    w.page.wait_for_selector("#diff-view")
    no_script_ran(w)
    for tab_id in [slides["tab_id"], sheet["tab_id"], "sources", "files"]:
        open_tab(w, note, tab_id)
        no_script_ran(w)
    open_tab(w, note, sheet["tab_id"])
    assert w.page.input_value('#grid input[data-cell="A1"]') == PAYLOADS[0]
    open_tab(w, note, slides["tab_id"])
    assert w.page.input_value("#slides .slide-title") == PAYLOADS[0]
    open_tab(w, note, "sources")
    assert "<script>" in w.page.inner_text("#sources")
    open_tab(w, note, "files")
    assert "onerror" in w.page.inner_text("#files")
    no_script_ran(w)
