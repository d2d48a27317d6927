"""Signing in with the link `cairn up` prints."""

from conftest import Watched


def test_the_sign_in_link_keeps_the_token_out_of_the_address_bar_and_the_server_log(server, context):
    w = Watched(context.new_page())
    w.page.goto(server.sign_in_link)
    w.page.wait_for_selector("#new-note-title")
    token = server.sign_in_link.split("#token=", 1)[1]
    assert token not in w.page.url
    assert w.page.evaluate("sessionStorage.getItem('cairn.token')") == token
    assert w.page.evaluate("localStorage.length") == 0 or all(
        token not in w.page.evaluate("k => localStorage.getItem(k)", k)
        for k in w.page.evaluate("Object.keys(localStorage)"))
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
