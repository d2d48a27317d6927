"""A link never switches who is signed in without asking (docs/editor.md).

Accounts are compared by tenant and subject, never by display name, and
whatever state the stored sign-in is in (a valid access token, an expired
one, one the page cannot read). Until the person says "switch", nothing of
theirs is replaced, revoked or forgotten: the access token, the refresh
token and the drafts stay as they were. A one-time link (`#/sign-in/…`) is
used up by opening it and says whom it signs in only then: with a sign-in
here, the page asks before using it, and asks again before another account
replaces the person's.

Its own hosts (a fresh state dir each): `own`, with the default token
lifetime, and `short`, whose access tokens last 5 seconds (a sign-in whose
access token has expired, as a returning visitor's almost always has).
"""

import subprocess
import time

import pytest

from conftest import CAIRN, Watched
from test_own_sign_in import VIEW, claims, invite, refresh_grant, signed_in_by_link, start, stored

TOKEN, REFRESH = "cairn.token", "cairn.refresh"
QUICK = 10_000  # ms: a question the page asks shows at once


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    s = start(tmp_path_factory, "cairn-links")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def short(tmp_path_factory):
    s = start(tmp_path_factory, "cairn-links-short", SPIN_VARIABLE_ACCESS_TOKEN_SECONDS="5")
    yield s
    s.stop()


def other_tenant_token(server, sub="mallory", name="Mallory"):
    """A person's token of another tenant, minted by `cairn token`: what an attacker's link carries."""
    out = subprocess.run(
        [str(CAIRN), "token", "--tenant", "elsewhere", "--sub", sub, "--name", name, "--actor", "human", "--role", "admin",
         "--scope", "notes:read notes:write", "--audience", server.base + "/mcp", "--state-dir", str(server.state_dir)],
        check=True, capture_output=True, text=True)
    return out.stdout.strip()


def a_draft(w, text):
    """Types `text` into a new note's markdown tab: a draft kept in this browser. Returns its storage key."""
    w.page.fill("#new-note-title", "Drafted before the link")
    w.page.click("#create-note")
    w.page.wait_for_selector('#main[data-loaded="markdown"]', state="attached")
    w.page.fill("#editor", text)
    keys = w.page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('cairn.draft'))")
    assert len(keys) == 1, keys
    return keys[0]


def kept(page, before):
    """Everything of the person's sign-in, as it was before the link."""
    return {k: stored(page, k) for k in before} == before


def storage(ctx, host, key=None, value=None):
    """This origin's local storage, read (or one key set) from a page where the
    editor does not run: what the browser holds while no editor tab is open."""
    page = ctx.new_page()
    page.goto(host.base + "/ui/config.json")
    if key is not None:
        page.evaluate("([k, v]) => localStorage.setItem(k, v)", [key, value])
    held = page.evaluate("Object.fromEntries(Object.entries(localStorage))")
    page.close()
    return held


@pytest.mark.parametrize("state", ["valid", "expired", "unreadable"])
def test_a_token_link_of_another_tenant_asks_first_whatever_state_the_stored_sign_in_is_in(state, own, short, browser):
    host = short if state == "expired" else own
    ctx = browser.new_context(viewport=VIEW)
    w = signed_in_by_link(ctx, invite(host, f"Kept {state}"))
    a_draft(w, "the person's words\n")
    w.page.close()
    if state == "unreadable":
        storage(ctx, host, TOKEN, "not-a-readable-token")
    if state == "expired":
        time.sleep(max(0.0, claims(storage(ctx, host)[TOKEN])["exp"] - time.time()) + 1.5)
    before = storage(ctx, host)
    assert before.get(TOKEN) and before.get(REFRESH) and len(before) == 3, before

    w = Watched(ctx.new_page())
    theirs = other_tenant_token(host)
    w.page.goto(host.base + "/#token=" + theirs)
    w.page.wait_for_selector("#switch-identity", timeout=QUICK)
    prompt = w.page.inner_text("#switch-identity")
    assert "Mallory" in prompt and "tenant elsewhere" in prompt, prompt
    assert (f"Kept {state}" if state != "unreadable" else "cannot read") in prompt, prompt
    assert theirs not in w.page.url
    assert kept(w.page, before), "nothing is replaced, revoked or forgotten before the person chooses"
    w.page.click("#switch-stay")
    w.page.wait_for_selector("#new-note-title")
    assert f"Kept {state}" in w.page.inner_text("#who")
    draft = next(k for k in before if k.startswith("cairn.draft"))
    assert stored(w.page, draft) == before[draft]
    refresh = stored(w.page, REFRESH)
    assert w.errors == []
    ctx.close()
    # The person's own sign-in was never revoked: its refresh token still works.
    status, body, _ = refresh_grant(host, refresh)
    assert status == 200 and body["access_token"], body


def test_a_one_time_link_opened_while_signed_in_asks_before_it_is_used(own, browser):
    ctx = browser.new_context(viewport=VIEW)
    w = signed_in_by_link(ctx, invite(own, "Ada Admin", role="admin"))
    before = {k: stored(w.page, k) for k in (TOKEN, REFRESH)}
    link = invite(own, "Someone Else")
    w.page.goto(link)
    w.page.wait_for_selector("#link-confirm", timeout=QUICK)
    assert "Ada Admin" in w.page.inner_text("#link-confirm")
    assert link.split("#/sign-in/", 1)[1] not in w.page.url
    assert kept(w.page, before)
    w.page.click("#link-stay")
    w.page.wait_for_selector("#new-note-title")
    assert "Ada Admin" in w.page.inner_text("#who") and kept(w.page, before)
    # The session cookie is still the person's: the link was never used.
    assert w.page.evaluate("fetch('/oauth/session').then(r => r.json())")["name"] == "Ada Admin"
    assert w.errors == []
    ctx.close()
    # Declined, the link is unspent: it still signs its own person in.
    other = browser.new_context(viewport=VIEW)
    assert "Someone Else" in signed_in_by_link(other, link).page.inner_text("#who")
    other.close()


def same_name_admin_opens_a_members_link(own, browser, name):
    """An admin signed in by link opens an invitation for a member of the same
    tenant and the same display name, and says "Use the link": the page asks
    again, by account. Returns (context, page, what was stored before)."""
    ctx = browser.new_context(viewport=VIEW)
    w = signed_in_by_link(ctx, invite(own, name, role="admin"))
    draft = a_draft(w, "the admin's unsaved words\n")
    before = {k: stored(w.page, k) for k in (TOKEN, REFRESH, draft)}
    w.page.goto(invite(own, name, role="member"))
    w.page.wait_for_selector("#link-confirm", timeout=QUICK)
    w.page.click("#link-use")
    w.page.wait_for_selector("#switch-identity", timeout=QUICK)
    prompt = w.page.inner_text("#switch-identity")
    assert "admin" in prompt and "member" in prompt and "account" in prompt, prompt
    assert kept(w.page, before), "the admin's sign-in is untouched while the person decides"
    return ctx, w, before


def test_a_link_for_another_account_of_the_same_name_asks_and_staying_keeps_the_admin(own, browser):
    ctx, w, before = same_name_admin_opens_a_members_link(own, browser, "Sam Same")
    w.page.click("#switch-stay")
    w.page.wait_for_selector("#new-note-title")
    assert kept(w.page, before)
    assert claims(stored(w.page, TOKEN))["role"] == "admin"
    # The member's session, started by the link, is ended; the admin's refresh token still works.
    assert w.page.evaluate("fetch('/oauth/session').then(r => r.json())")["signed_in"] is False
    assert w.errors == []
    ctx.close()
    status, body, _ = refresh_grant(own, before[REFRESH])
    assert status == 200 and claims(body["access_token"])["role"] == "admin", body


def test_switching_to_the_links_account_happens_only_when_the_person_says_so(own, browser):
    ctx, w, before = same_name_admin_opens_a_members_link(own, browser, "Pat Twin")
    admin = claims(before[TOKEN])
    w.page.click("#switch-go")
    w.page.wait_for_selector("#new-note-title")
    now = claims(stored(w.page, TOKEN))
    assert now["role"] == "member" and now["sub"] != admin["sub"]
    # The admin's drafts stay in the browser, under the admin's account.
    draft = next(k for k in before if k.startswith("cairn.draft"))
    assert stored(w.page, draft) == before[draft]
    assert w.errors == []
    ctx.close()
    status, body, _ = refresh_grant(own, before[REFRESH])
    assert status == 400 and body["error"] == "invalid_grant", "switching revoked the admin's refresh token"


def test_a_one_time_link_of_the_signed_in_account_signs_in_after_one_question(own, browser):
    ctx = browser.new_context(viewport=VIEW)
    w = Watched(ctx.new_page())
    w.page.goto(own.sign_in_link)  # the local person, with a minted token
    w.page.wait_for_selector("#new-note-title")
    w.page.goto(own.one_time_link)  # the same account: the first person's printed link
    w.page.wait_for_selector("#link-confirm", timeout=QUICK)
    w.page.click("#link-use")
    w.page.wait_for_selector("#new-note-title")
    assert w.page.locator("#switch-identity").count() == 0 and stored(w.page, REFRESH)
    assert claims(stored(w.page, TOKEN))["sub"] == "local-person"
    assert w.errors == []
    ctx.close()
