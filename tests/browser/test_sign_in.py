"""Signing in with the link `cairn up` prints."""

from conftest import Watched


def test_the_sign_in_link_keeps_the_token_out_of_the_address_bar_and_the_server_log(server, context):
    w = Watched(context.new_page())
    w.page.goto(server.sign_in_link)
    w.page.wait_for_selector("#new-note-title")
    token = server.sign_in_link.split("#token=", 1)[1]
    assert token not in w.page.url
    # Kept in localStorage, so that a new browser tab is signed in too (signing out forgets it).
    assert w.page.evaluate("localStorage.getItem('cairn.token')") == token
    assert w.page.evaluate("sessionStorage.length") == 0
    assert "Local person" in w.page.inner_text("#who")
    assert not any(token in line for line in server.log[1:] if "People's editor" not in line and "#token=" not in line)
    assert w.errors == []


def test_without_a_token_the_page_asks_to_sign_in_and_calls_nothing(server, context):
    w = Watched(context.new_page())
    calls = []
    w.page.on("request", lambda r: "/api/" in r.url and calls.append(r.url))
    w.page.goto(server.base + "/")
    w.page.wait_for_selector("#token-input")
    assert "Sign in" in w.page.inner_text("main")
    assert calls == []


def test_every_answer_of_the_page_carries_a_strict_content_security_policy(server, context):
    page = context.new_page()
    for path in ["/", "/ui/app.js", "/ui/vendor/purify.es.mjs"]:
        r = page.request.get(server.base + path)
        assert r.status == 200
        csp = r.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe-inline" not in csp
        assert r.headers["x-content-type-options"] == "nosniff"


def test_a_link_for_someone_else_asks_first_and_staying_keeps_the_person(server, context):
    w = Watched(context.new_page())
    w.page.goto(server.sign_in_link)
    w.page.wait_for_selector("#new-note-title")
    mine = w.page.evaluate("localStorage.getItem('cairn.token')")
    theirs = server.token("mallory", "Mallory", actor="human")
    w.page.goto(server.base + "/#token=" + theirs)
    w.page.wait_for_selector("#switch-identity")
    prompt = w.page.inner_text("#switch-identity")
    assert "Local person" in prompt and "Mallory" in prompt
    assert theirs not in w.page.url, "the token left the address bar at once"
    assert w.page.evaluate("localStorage.getItem('cairn.token')") == mine, "nothing switched before the person chose"
    w.page.click("#switch-stay")
    w.page.wait_for_selector("#new-note-title")
    assert "Local person" in w.page.inner_text("#who")
    assert w.page.evaluate("localStorage.getItem('cairn.token')") == mine
    w.page.go_back()
    assert theirs not in w.page.url, "the token is not in the tab's history either"
    assert w.errors == []


def test_a_link_for_someone_else_switches_only_when_the_person_says_so(server, context):
    w = Watched(context.new_page())
    w.page.goto(server.sign_in_link)
    w.page.wait_for_selector("#new-note-title")
    theirs = server.token("grace", "Grace", actor="human")
    w.page.goto(server.base + "/#token=" + theirs)
    w.page.wait_for_selector("#switch-go")
    w.page.click("#switch-go")
    w.page.wait_for_selector("#new-note-title")
    assert "Grace" in w.page.inner_text("#who")
    assert w.errors == []


def test_a_bad_or_expired_link_shows_the_sign_in_page_with_a_plain_message(server, context):
    import time
    w = Watched(context.new_page())
    w.page.goto(server.base + "/#token=not-a-token")
    w.page.wait_for_selector("#token-input")
    assert "does not hold a sign-in" in w.page.inner_text("main")
    assert "not-a-token" not in w.page.url
    old = subprocess_token(server, ttl=1)
    time.sleep(2.2)
    w.page.goto(server.base + "/#token=" + old)
    w.page.wait_for_selector("text=has expired")
    assert w.page.locator("#token-input").count() == 1
    assert w.page.evaluate("localStorage.getItem('cairn.token')") is None
    assert w.errors == []


def subprocess_token(server, ttl):
    import subprocess
    from conftest import CAIRN
    out = subprocess.run(
        [str(CAIRN), "token", "--tenant", "local", "--sub", "brief", "--name", "Brief", "--actor", "human",
         "--ttl", str(ttl), "--audience", server.base + "/mcp", "--state-dir", str(server.state_dir)],
        check=True, capture_output=True, text=True)
    return out.stdout.strip()
