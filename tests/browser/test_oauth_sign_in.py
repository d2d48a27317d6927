"""A person signs in through a real authorization server (tests/oidc:
oidc-provider), with authorization code + PKCE as a public client."""

import json
import subprocess

import pytest

from conftest import ROOT, Server, Watched, free_port

ISSUER = ROOT / "tests" / "oidc" / "issuer.sh"


@pytest.fixture
def issued(tmp_path):
    """An issuer that knows the editor's redirect URI, and a Cairn that trusts it."""
    if not (ROOT / "tests" / "oidc" / "node_modules" / "oidc-provider").exists():
        pytest.fail("the test issuer is not installed: npm ci --prefix tests/oidc (scripts/test.sh does)")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    issuer = subprocess.Popen([str(ISSUER), "--port", "0", "--resource", base + "/mcp", "--keys", str(tmp_path / "keys.json"),
                               "--redirect-uri", base + "/"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = json.loads(issuer.stdout.readline())["issuer"]
    server = Server(tmp_path / "state", port=port, sign_in=False, env={
        "SPIN_VARIABLE_ISSUER": url, "SPIN_VARIABLE_AUTH_ORIGIN": url, "SPIN_VARIABLE_UI_CLIENT_ID": "cairn-ui",
        "SPIN_VARIABLE_TENANT_CLAIM": "org_id", "SPIN_VARIABLE_ACTOR_CLAIM": "cairn_actor", "SPIN_VARIABLE_ROLE_CLAIM": "cairn_role"})
    yield server, url
    server.stop()
    issuer.terminate()
    issuer.wait(timeout=20)


def test_a_person_signs_in_with_code_and_pkce_and_writes_as_themselves(issued, browser):
    server, issuer_url = issued
    ctx = browser.new_context(viewport={"width": 1360, "height": 900})
    w = Watched(ctx.new_page())
    w.page.goto(server.base + "/")
    w.page.click("#oauth-signin")
    w.page.wait_for_url(issuer_url + "/interaction/**")
    w.page.fill('input[name="login"]', "alice")
    w.page.fill('input[name="password"]', "x")
    w.page.click('button[type="submit"]')
    w.page.click('button[type="submit"]')  # consent
    w.page.wait_for_selector("#new-note-title")
    assert "?code=" not in w.page.url and "state=" not in w.page.url
    assert "alice" in w.page.inner_text("#who") and "acme" in w.page.inner_text("#who")
    token = w.page.evaluate("localStorage.getItem('cairn.token')")
    assert token and w.page.evaluate("sessionStorage.getItem('cairn.pkce')") is None
    w.page.fill("#new-note-title", "Signed in for real")
    w.page.click("#create-note")
    w.page.wait_for_selector('#main[data-loaded="markdown"]', state="attached")
    assert "alice" in w.page.inner_text("#note-title + .row")
    # The people's-only route answers: the token is a person's (cairn_actor human), admin of acme.
    status = w.page.evaluate("t => fetch('/api/v1/audit', {headers: {authorization: 'Bearer ' + t}}).then(r => r.status)", token)
    assert status == 200
    assert w.errors == []
    ctx.close()


def test_a_sign_in_answer_with_a_foreign_state_is_refused(issued, browser):
    server, _ = issued
    ctx = browser.new_context()
    w = Watched(ctx.new_page())
    w.page.goto(server.base + "/?code=stolen&state=not-ours")
    w.page.wait_for_selector("#token-input")
    assert "state mismatch" in w.page.inner_text("#status")
    assert w.page.evaluate("localStorage.getItem('cairn.token')") is None
    assert "code=" not in w.page.url
    ctx.close()
