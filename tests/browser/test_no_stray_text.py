"""No stray text anywhere in the editor: every view's visible text
(`document.body.innerText`) is read for what a missing value prints —
`null`, `undefined`, `NaN`, `[object …]` — and the test names the view and
the text around each one it finds.

The views: the sign-in card and its refusals, the notes list, search (hits,
none, a refused query), a note with each tab type, presence and claims (a
section held by an agent, with its note), the history (a version, a diff),
a restore over a draft, a change arriving over a draft, the merge screen, a
refused save, settings with a connected app and an invite made, the
consent screen, the questions a link asks, and the errors of a missing
note and a tampered consent request.
"""

import re

from conftest import agent_rewrite, open_signed_in, open_tab
from test_own_sign_in import App

# No word boundaries: two missing values side by side print "nullnull".
STRAY = re.compile(r"null|undefined|NaN|\[object")
TEXT = "# Stray check\n\nThe opening paragraph.\n\n## Budget\n\nNumbers to come.\n"


class Reader:
    """Reads each view's visible text and keeps what looks like a missing value."""

    def __init__(self):
        self.page = None
        self.found = []
        self.views = []

    def read(self, view, ready):
        try:
            self.page.wait_for_selector(ready, state="attached", timeout=10_000)
        except Exception as e:
            raise AssertionError(f"the view {view!r} did not show ({ready}); stray text so far: {self.found}") from e
        text = self.page.evaluate("document.body.innerText")
        self.views.append(view)
        for m in STRAY.finditer(text):
            around = text[max(0, m.start() - 60):m.end() + 60].replace("\n", " ⏎ ")
            self.found.append(f"{view}: {m.group(0)!r} in …{around}…")

    def go(self, view, route, ready):
        self.page.evaluate("r => { location.hash = r }", route)
        self.read(view, ready)


def a_full_note(person, agent):
    """A note with text, history, a slides and a sheet tab with content, a
    source and a file, and a section an agent holds with a claim note."""
    note = person.note("Every view")
    v1 = person.write(note, TEXT)
    agent_rewrite(agent, note, lambda t: t.replace("Numbers to come.", "Numbers: 42."))
    head = agent.call("read_note_tab", note_id=note, tab_id="markdown")
    slides = agent.call("create_note_tab", note_id=note, tab_type="slides", label="Deck", expected_version=head["version"],
                        idempotency_key=f"stray-{note}-1", slides=[{"title": "Why", "body": "Because", "notes": "pause"}])
    sheet = agent.call("create_note_tab", note_id=note, tab_type="sheet", label="Figures", expected_version=slides["version"],
                       idempotency_key=f"stray-{note}-2")
    sheet_id = agent.call("read_note_tab", note_id=note, tab_id=sheet["tab_id"])["sheets"][0]["sheet_id"]
    done = agent.call("edit_note_tab", note_id=note, tab_id=sheet["tab_id"], operation="sheet_set_range", sheet_id=sheet_id,
                      start_row=0, start_col=0, values=[["cost", 12], ["", 3.5]], expected_version=sheet["version"],
                      idempotency_key=f"stray-{note}-3")
    agent.call("add_note_source", note_id=note, url="https://example.com/report", title="The report",
               expected_version=done["version"], idempotency_key=f"stray-{note}-4")
    _, now = person.call("GET", f"/api/v1/notes/{note}")
    status, body = person.call("POST", f"/api/v1/notes/{note}/files", {"expected_version": now["version"], "name": "figures.csv",
                                                                      "media_type": "text/csv", "size_bytes": 120})
    assert status == 201, body
    claim = agent.call("claim_note", note_id=note, tab_id="markdown", section_id="budget", ttl_seconds=300)
    agent.call("post_claim_note", claim_id=claim["claim_id"], text="checking the numbers")
    return note, v1, slides["tab_id"], sheet["tab_id"]


def test_no_view_shows_null_undefined_nan_or_object(server, context, browser, person, agent):
    r = Reader()
    # Signed out: the sign-in card, and the refusals of links that do not sign in.
    out = browser.new_context(viewport={"width": 1360, "height": 900})
    r.page = out.new_page()
    r.page.goto(server.base + "/")
    r.read("sign-in card", "#token-input")
    r.page.goto(server.base + "/#token=not-a-token")
    r.read("unreadable token link", "#sign-in-why")
    r.page.goto(server.base + "/#/sign-in/not-a-live-link")
    r.read("spent one-time link", "#sign-in-why")
    out.close()

    note, v1, slides, sheet = a_full_note(person, agent)
    w = open_signed_in(context, server)
    r.page = w.page
    r.read("notes list", '#main[data-loaded="notes:first"]')
    r.go("search with hits", "#/search/opening", '#main[data-loaded="search:opening"]')
    r.go("search without hits", "#/search/zzyzxnothing", "#no-hits")
    r.go("refused search", '#/search/"unclosed', "#search-refused")
    r.go("missing note", "#/n/no-such-note", ".banner.bad")

    open_tab(w, note)
    w.page.wait_for_selector('#outline .section-holder[data-actor="agent"]')
    w.page.wait_for_selector("#presence .claim-notes")
    w.page.wait_for_selector(f'#history li[data-version="{v1}"]')
    r.read("markdown tab with presence, outline and history", "#editor")
    w.page.click(f'#history li[data-version="{v1}"] .view-version')
    r.read("a version", "#version-content")
    w.page.click("#history-view-close")
    w.page.click(f'#history li[data-version="{v1}"] .diff-version')
    r.read("a diff", "#diff-view")
    w.page.click("#history-view-close")
    for tab, ready in [(slides, "#slides .slide"), (sheet, "#grid"), ("sources", "#sources li"), ("files", "#files td")]:
        open_tab(w, note, tab)
        r.read(f"{tab} tab", ready)

    # Settings with a connected app and an invite; the consent screen; a tampered request.
    app = App(server, name="Stray App")
    seen = app.catch_callback(w.page)
    w.page.goto(app.authorize_url())
    r.read("consent screen", "#consent")
    w.page.click("#consent-approve")
    w.page.wait_for_url(app.redirect_uri + "*")
    assert seen
    w.page.goto(server.base + "/#/settings")
    r.read("settings with a connected app", "#app-list li")
    w.page.fill("#invite-name", "Invited Ivy")
    w.page.click("#invite-create")
    r.read("settings with an invite link", "#invite-link")
    link = w.page.input_value("#invite-link")
    r.go("tampered consent request", "#/consent/not-a-sealed-request", "#consent-refused")

    # Over a draft: an agent's change is announced, a stale save merges, a held tab refuses, a restore asks.
    agent.call("release_claim", claim_id=agent.call("list_claims", note_id=note)["claims"][0]["claim_id"])
    open_tab(w, note)
    w.page.fill("#editor", TEXT.replace("The opening paragraph.", "The person's opening."))
    agent_rewrite(agent, note, lambda t: t.replace("The opening paragraph.", "The agent's opening."))
    r.read("a change over a draft", "#remote-banner:not([hidden])")
    w.page.click("#save")
    r.read("merge screen", "#merge .conflict")
    w.page.click("#merge-cancel")
    claim = agent.call("claim_note", note_id=note, tab_id="markdown", ttl_seconds=120)
    w.page.wait_for_selector("#holder-banner:not([hidden])")
    w.page.click("#save")
    r.read("a refused save", '#save-status:has-text("Not saved")')
    agent.call("release_claim", claim_id=claim["claim_id"])
    w.page.click(f'#history li[data-version="{v1}"] .restore-version')
    r.read("restore over a draft", "#restore-ask")
    w.page.click("#restore-cancel")

    # The questions a link asks of a person signed in.
    w.page.goto(server.base + "/#token=" + server.token("stray-other", "Other Person", actor="human"))
    r.read("switch question", "#switch-identity")
    w.page.click("#switch-stay")
    w.page.wait_for_selector("#new-note-title")
    w.page.goto(link)
    r.read("one-time link question", "#link-confirm")
    w.page.click("#link-stay")
    w.page.wait_for_selector("#new-note-title")

    assert len(r.views) == 25, r.views
    assert not r.found, "stray text:\n" + "\n".join(r.found)
    assert w.errors == []
