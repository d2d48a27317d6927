"""People sign in with Cairn's own authorization server (docs/oauth.md): a
one-time link, then code + PKCE as `cairn-editor` with a session cookie;
refresh tokens rotate across browser tabs; apps ask a person's consent and
show under Settings, where admins invite people.

Its own hosts (a fresh state dir each, so `cairn up` prints a one-time
link): `own` with the default token lifetime, and `short` whose access
tokens last 5 seconds, so a page lives through several refreshes in a test.
"""

import base64
import hashlib
import json
import re
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import Server, Watched, free_port, screenshot

VIEW = {"width": 1360, "height": 900}
USED = "This sign-in link was used already or has expired. Ask your admin for a new one."
NO_SESSION = "You are not signed in here."


def start(tmp_path_factory, name, **env):
    s = Server(tmp_path_factory.mktemp(name), env={"SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE": "6000", **env})
    assert s.one_time_link, "cairn up printed a one-time sign-in link:\n" + "".join(s.log[-20:])
    return s


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    s = start(tmp_path_factory, "cairn-own")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def short(tmp_path_factory):
    s = start(tmp_path_factory, "cairn-short", SPIN_VARIABLE_ACCESS_TOKEN_SECONDS="5")
    yield s
    s.stop()


# ------------------------------------------------------------- helpers ----

def http(method, url, body=None, form=None, token=None, headers=None):
    """One call: (status, parsed JSON or text, headers)."""
    h = dict(headers or {})
    data = None
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        h["content-type"] = "application/x-www-form-urlencoded"
    elif body is not None:
        data = json.dumps(body).encode()
        h["content-type"] = "application/json"
    if token:
        h["authorization"] = "Bearer " + token
    req = urllib.request.Request(url, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, raw, hdrs = r.status, r.read().decode(), r.headers
    except urllib.error.HTTPError as e:
        status, raw, hdrs = e.code, e.read().decode(), e.headers
    try:
        return status, json.loads(raw), hdrs
    except ValueError:
        return status, raw, hdrs


def invite(server, name, role="member"):
    """A one-time link for a new person, made by the local admin (a minted token)."""
    status, body, _ = http("POST", server.base + "/oauth/invites", {"name": name, "role": role}, token=server.person_token())
    assert status == 201, body
    assert body["link"].startswith(server.base + "/#/sign-in/"), body
    return body["link"]


def signed_in_by_link(context, link):
    """A page signed in by opening a one-time link."""
    w = Watched(context.new_page())
    w.page.goto(link)
    w.page.wait_for_selector("#new-note-title")
    secret = link.split("#/sign-in/", 1)[1]
    assert secret not in w.page.url
    assert "code=" not in w.page.url and "state=" not in w.page.url
    return w


def refused_link(browser, link):
    """Opens `link` in a fresh browser: it must be refused, plainly."""
    ctx = browser.new_context(viewport=VIEW)
    w = Watched(ctx.new_page())
    w.page.goto(link)
    w.page.wait_for_selector("#sign-in-why")
    assert USED in w.page.inner_text("#sign-in-why")
    assert link.split("#/sign-in/", 1)[1] not in w.page.url
    assert w.page.evaluate("localStorage.getItem('cairn.token')") is None
    assert w.errors == []
    ctx.close()


def stored(page, key):
    return page.evaluate("k => localStorage.getItem(k)", key)


def claims(token):
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def refresh_grant(server, refresh_token, client_id="cairn-editor"):
    return http("POST", server.base + "/oauth/token", form={
        "grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id})


def b64url(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class App:
    """An MCP client as Cairn sees it: registered dynamically, with a loopback
    redirect URI (caught in the page with `page.route`, nothing listens)."""

    def __init__(self, server, name="Test App"):
        self.server = server
        self.redirect_uri = f"http://127.0.0.1:{free_port()}/cb"
        status, body, _ = http("POST", server.base + "/oauth/register", {"redirect_uris": [self.redirect_uri], "client_name": name})
        assert status in (200, 201), body
        self.client_id = body["client_id"]
        self.verifier = b64url(secrets.token_bytes(32))
        self.state = b64url(secrets.token_bytes(12))

    def authorize_url(self):
        q = {"response_type": "code", "client_id": self.client_id, "redirect_uri": self.redirect_uri,
             "code_challenge": b64url(hashlib.sha256(self.verifier.encode()).digest()), "code_challenge_method": "S256",
             "state": self.state, "scope": "notes:read notes:write", "resource": self.server.base + "/mcp"}
        return self.server.base + "/oauth/authorize?" + urllib.parse.urlencode(q)

    def catch_callback(self, page):
        """The redirect to the app: answered in the page, its query recorded."""
        seen = []

        def fulfil(route):
            seen.append(route.request.url)
            route.fulfill(status=200, content_type="text/plain", body="the app got its answer")

        page.route(self.redirect_uri + "*", fulfil)
        return seen

    def exchange(self, code):
        status, body, _ = http("POST", self.server.base + "/oauth/token", form={
            "grant_type": "authorization_code", "code": code, "redirect_uri": self.redirect_uri,
            "client_id": self.client_id, "code_verifier": self.verifier, "resource": self.server.base + "/mcp"})
        assert status == 200, body
        return body


def mcp_tools(server, token):
    status, body, hdrs = http("POST", server.base + "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, token=token, headers={
        "accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"})
    if isinstance(body, str) and "data:" in body:  # an event stream: its one message
        body = json.loads(next(l[5:] for l in body.splitlines() if l.startswith("data:")))
    return status, body


def query_of(url):
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))


def consent_card(w, app):
    """Opens the app's authorization request in the signed-in page: the consent card."""
    seen = app.catch_callback(w.page)
    w.page.goto(app.authorize_url())
    w.page.wait_for_selector("#consent")
    assert "#/consent/" in w.page.url
    return seen


# --------------------------------------------------------------- tests ----

def test_the_printed_link_signs_the_first_person_in_and_works_once(own, browser):
    ctx = browser.new_context(viewport=VIEW)
    w = signed_in_by_link(ctx, own.one_time_link)
    assert "local" in w.page.inner_text("#who")
    token = stored(w.page, "cairn.token")
    assert token and stored(w.page, "cairn.refresh")
    assert claims(token)["role"] == "admin" and claims(token).get("actor", "human") == "human"
    assert w.page.evaluate("sessionStorage.getItem('cairn.pkce')") is None
    # The API takes the access token: a note is created and opened.
    w.page.fill("#new-note-title", "Signed in by link")
    w.page.click("#create-note")
    w.page.wait_for_selector('#main[data-loaded="markdown"]', state="attached")
    # The session cookie is for /oauth only, HttpOnly: the page cannot read it.
    assert w.page.evaluate("document.cookie") == ""
    assert w.page.evaluate("fetch('/oauth/session').then(r => r.json())")["signed_in"] is True
    assert w.errors == []
    # The same link, again, in another browser: refused, plainly.
    refused_link(browser, own.one_time_link)
    ctx.close()


def test_a_session_survives_a_reload_and_a_new_tab(own, browser):
    ctx = browser.new_context(viewport=VIEW)
    w = signed_in_by_link(ctx, invite(own, "Reload Ray"))
    assert "Reload Ray" in w.page.inner_text("#who")
    w.page.reload()
    w.page.wait_for_selector("#new-note-title")
    assert "Reload Ray" in w.page.inner_text("#who")
    second = Watched(ctx.new_page())
    second.page.goto(own.base + "/")
    second.page.wait_for_selector("#new-note-title")
    assert "Reload Ray" in second.page.inner_text("#who")
    session = second.page.evaluate("fetch('/oauth/session').then(r => r.json())")
    assert session["signed_in"] is True and session["name"] == "Reload Ray" and session["tenant"] == "local"
    assert w.errors == [] and second.errors == []
    ctx.close()


def test_refresh_tokens_rotate_across_two_tabs_without_signing_anyone_out(short, browser):
    ctx = browser.new_context(viewport=VIEW)
    w = signed_in_by_link(ctx, short.one_time_link)
    first_access, first_refresh = stored(w.page, "cairn.token"), stored(w.page, "cairn.refresh")
    # Both tabs poll the open note every second and refresh before expiry:
    # one refresh at a time (a Web Lock), each tab reusing the other's.
    w.page.fill("#new-note-title", "Two tabs, short tokens")
    w.page.click("#create-note")
    w.page.wait_for_selector('#main[data-loaded="markdown"]', state="attached")
    second = Watched(ctx.new_page())
    second.page.goto(w.page.url)
    second.page.wait_for_selector('#main[data-loaded="markdown"]', state="attached")
    time.sleep(13)
    for tab in (w, second):
        assert tab.page.locator("#token-input").count() == 0, tab.page.inner_text("main")
        assert tab.page.locator("#editor").count() == 1
    access, refresh = stored(w.page, "cairn.token"), stored(w.page, "cairn.refresh")
    assert access != first_access and refresh != first_refresh, "the page refreshed (tokens last 5 s)"
    assert claims(access)["exp"] * 1000 > time.time() * 1000
    # A save still goes through, from either tab.
    version = int(re.search(r"version (\d+)", second.page.inner_text("#save-status")).group(1))
    second.page.fill("#editor", "written after several refreshes\n")
    second.page.click("#save")
    second.page.wait_for_selector(f'#save-status:has-text("version {version + 1}")')
    # The sign-in is whole (no tab presented a used refresh token): a reload is still signed in.
    w.page.reload()
    w.page.wait_for_selector('#main[data-loaded="markdown"]', state="attached")
    assert w.errors == [] and second.errors == []
    ctx.close()


def test_sign_out_revokes_the_refresh_token_and_ends_the_session(own, browser):
    ctx = browser.new_context(viewport=VIEW)
    w = signed_in_by_link(ctx, invite(own, "Leaving Lee"))
    refresh = stored(w.page, "cairn.refresh")
    assert refresh
    w.page.click("#sign-out")
    w.page.wait_for_selector("#token-input")
    assert w.page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('cairn'))") == []
    status, body, _ = refresh_grant(own, refresh)
    assert status == 400 and body["error"] == "invalid_grant", body
    assert w.page.evaluate("fetch('/oauth/session').then(r => r.json())")["signed_in"] is False
    # "Sign in" without a session: a plain message, and no loop back to the server.
    w.page.click("#oauth-signin")
    w.page.wait_for_selector(f"#sign-in-why:has-text('{NO_SESSION}')")
    time.sleep(1)
    assert w.page.url.rstrip("/#") == own.base and w.page.locator("#token-input").count() == 1
    assert w.errors == []
    ctx.close()


def test_an_app_is_allowed_works_shows_in_settings_and_is_disconnected(own, browser):
    ctx = browser.new_context(viewport=VIEW)
    w = signed_in_by_link(ctx, invite(own, "Consenting Cam"))
    app = App(own)
    seen = consent_card(w, app)
    card = w.page.inner_text("#consent")
    assert w.page.inner_text("#consent-title") == "Connect Test App?"
    assert "registered itself just now" in card
    assert f"127.0.0.1:{app.redirect_uri.split(':')[2].split('/')[0]}" in w.page.inner_text("#consent-redirect")
    assert app.redirect_uri in card
    assert "read notes approved for agents" in card and "write to notes approved for agents" in card
    assert "local" in w.page.inner_text("#consent-tenant")
    agent = w.page.inner_text("#consent-agent strong")
    assert "Test App" in agent and "never as you" in w.page.inner_text("#consent-agent")
    assert w.page.get_attribute("#consent", "role") == "dialog"
    screenshot(w.page, "ui-consent.png")
    w.page.click("#consent-approve")
    w.page.wait_for_url(app.redirect_uri + "*")
    q = query_of(seen[-1])
    assert q["state"] == app.state and "code" in q and q.get("iss") == own.base
    tokens = app.exchange(q["code"])
    assert tokens["refresh_token"] and set(tokens["scope"].split()) <= {"notes:read", "notes:write"}
    assert claims(tokens["access_token"])["name"] == agent and claims(tokens["access_token"]).get("actor") == "agent"
    status, body = mcp_tools(own, tokens["access_token"])
    assert status == 200 and body["result"]["tools"], body
    # The person's connected apps list it; Disconnect revokes its refresh.
    w.page.goto(own.base + "/#/settings")
    w.page.wait_for_selector('#main[data-loaded="settings"]', state="attached")
    row = w.page.locator(f'#app-list li[data-client-id="{app.client_id}"]')
    assert "Test App" in row.inner_text() and agent in row.inner_text()
    row.locator("button.disconnect").click()
    w.page.wait_for_selector("#apps-status")
    assert "Disconnected Test App: it can no longer refresh" in w.page.inner_text("#apps-status")
    assert w.page.locator(f'#app-list li[data-client-id="{app.client_id}"]').count() == 0
    status, body, _ = refresh_grant(own, tokens["refresh_token"], app.client_id)
    assert status == 400 and body["error"] == "invalid_grant", body
    assert w.errors == []
    ctx.close()


def test_deny_sends_access_denied_back_with_the_same_state(own, browser):
    ctx = browser.new_context(viewport=VIEW)
    w = signed_in_by_link(ctx, invite(own, "Denying Dana"))
    app = App(own, name="Unwanted App")
    seen = consent_card(w, app)
    assert w.page.inner_text("#consent-title") == "Connect Unwanted App?"
    w.page.click("#consent-deny")
    w.page.wait_for_url(app.redirect_uri + "*")
    q = query_of(seen[-1])
    assert q["error"] == "access_denied" and q["state"] == app.state and "code" not in q
    w.page.goto(own.base + "/#/settings")
    w.page.wait_for_selector('#main[data-loaded="settings"]', state="attached")
    assert w.page.locator("#no-apps").count() == 1
    assert w.errors == []
    ctx.close()


def test_a_consent_request_waits_for_the_sign_in(own, browser):
    """No sign-in in this browser: the page says to open a sign-in link (once,
    no loop); opening one in the same tab comes back to the request."""
    ctx = browser.new_context(viewport=VIEW)
    w = Watched(ctx.new_page())
    app = App(own, name="Patient App")
    app.catch_callback(w.page)
    w.page.goto(app.authorize_url())
    w.page.wait_for_selector(f"#sign-in-why:has-text('{NO_SESSION}')")
    time.sleep(1)
    assert w.page.locator("#consent").count() == 0 and "error=" not in w.page.url
    w.page.goto(invite(own, "Patient Pat"))
    w.page.wait_for_selector("#consent")
    assert w.page.inner_text("#consent-title") == "Connect Patient App?"
    assert w.errors == []
    ctx.close()


def test_a_tampered_consent_request_is_refused_plainly(own, browser):
    ctx = browser.new_context(viewport=VIEW)
    w = signed_in_by_link(ctx, invite(own, "Careful Cary"))
    w.page.goto(own.base + "/#/consent/not-a-sealed-request")
    w.page.wait_for_selector("#consent-refused")
    assert "cannot be used" in w.page.inner_text("#consent-refused")
    assert w.page.locator("#consent-approve").count() == 0
    ctx.close()


def test_an_admin_invites_a_member_who_signs_in_once(own, browser):
    admin_ctx = browser.new_context(viewport=VIEW)
    admin = Watched(admin_ctx.new_page())
    admin.page.goto(own.sign_in_link)  # the local admin, with a minted token
    admin.page.wait_for_selector("#new-note-title")
    admin.page.click("#settings-link")
    admin.page.wait_for_selector("#invite-name")
    admin.page.fill("#invite-name", "Robin")
    admin.page.select_option("#invite-role", "member")
    admin.page.click("#invite-create")
    admin.page.wait_for_selector("#invite-link")
    link = admin.page.input_value("#invite-link")
    assert link.startswith(own.base + "/#/sign-in/")
    assert admin.page.get_attribute("#invite-link", "readonly") is not None
    assert "works once, until" in admin.page.inner_text("#invite-result")
    assert admin.errors == []

    ctx = browser.new_context(viewport=VIEW)
    w = signed_in_by_link(ctx, link)
    assert "Robin" in w.page.inner_text("#who") and "local" in w.page.inner_text("#who")
    c = claims(stored(w.page, "cairn.token"))
    assert c["tenant"] == "local" and c.get("role", "member") == "member"
    # A member has connected apps but no invite form.
    w.page.click("#settings-link")
    w.page.wait_for_selector('#main[data-loaded="settings"]', state="attached")
    assert w.page.locator("#apps").count() == 1 and w.page.locator("#invite").count() == 0
    assert w.errors == []
    refused_link(browser, link)
    ctx.close()
    admin_ctx.close()



def test_the_consent_card_and_settings_pass_the_accessibility_audit(own, browser):
    from test_accessibility import AXE, serious
    if not AXE.exists():
        pytest.fail("axe-core is not installed: (cd tests/browser && npm ci) — scripts/test.sh does")
    ctx = browser.new_context(viewport=VIEW, bypass_csp=True)  # axe is added by the test, past the CSP
    w = Watched(ctx.new_page())
    w.page.goto(own.sign_in_link)  # the local admin, with a minted token
    w.page.wait_for_selector("#new-note-title")
    consent_card(w, App(own, name="Audited App"))
    serious(w.page, "consent card")
    w.page.goto(own.base + "/#/settings")
    w.page.wait_for_selector("#invite-name")
    w.page.fill("#invite-name", "Audited Ada")
    w.page.click("#invite-create")
    w.page.wait_for_selector("#invite-link")
    serious(w.page, "settings with an invite link")
    assert w.errors == []
    ctx.close()
