"""Live: the page sees another actor's write within a couple of seconds,
on its `events` stream while it can hold one, by polling `changes` when it
cannot."""

import http.client
import json
import time
from urllib.parse import urlparse

from conftest import agent_rewrite, open_signed_in, open_tab, opened


def test_without_a_draft_an_agents_write_shows_in_place(server, context, person, agent):
    note, _, w = opened(context, server, person, "Live text", "# Live\n\nline one\n")
    agent_rewrite(agent, note, lambda t: t + "\n## Added\n\nby the agent\n")
    w.page.wait_for_function("() => document.querySelector('#editor').value.includes('by the agent')", timeout=2500)
    w.page.wait_for_selector('#outline li[data-level="2"]:has-text("Added")', timeout=2500)
    w.page.wait_for_selector('#history li.version:has-text("Drafting agent")', timeout=2500)
    assert w.page.is_hidden("#remote-banner")
    assert w.errors == []


def test_with_a_draft_the_page_says_who_changed_it_and_merges_in_one_click(server, context, person, agent):
    note, _, w = opened(context, server, person, "Live merge", "top\n\nmiddle\n\nbottom\n")
    w.page.fill("#editor", "top, by the person\n\nmiddle\n\nbottom\n")
    agent_rewrite(agent, note, lambda t: t.replace("bottom\n", "bottom, by the agent\n"))
    w.page.wait_for_selector("#remote-banner:visible", timeout=2500)
    assert "Drafting agent (agent) changed this note" in w.page.inner_text("#remote-banner")
    assert w.page.input_value("#editor") == "top, by the person\n\nmiddle\n\nbottom\n"
    w.page.click("#merge-theirs")
    w.page.wait_for_function("() => document.querySelector('#editor').value.includes('bottom, by the agent')")
    assert w.page.input_value("#editor") == "top, by the person\n\nmiddle\n\nbottom, by the agent\n"
    w.page.click("#save")
    w.page.wait_for_selector('#save-status:has-text("Saved")')
    assert w.page.locator("#merge").count() == 0
    assert agent.call("read_note_tab", note_id=note, tab_id="markdown")["text"] == "top, by the person\n\nmiddle\n\nbottom, by the agent\n"
    assert w.errors == []


def test_a_claim_taken_by_an_agent_shows_on_the_board_live(server, context, person, agent):
    note, _, w = opened(context, server, person, "Live claims", "text\n")
    w.page.wait_for_selector('#presence li:has-text("Nobody holds")')
    agent.call("claim_note", note_id=note, tab_id="markdown", ttl_seconds=60)
    w.page.wait_for_selector('#presence li.claim[data-actor="agent"]', timeout=2500)


def test_an_open_note_page_follows_its_stream_and_polls_nothing(server, context, person, agent):
    calls, streams = [], []
    context.on("request", lambda r: "/api/" in r.url and calls.append(r.url))
    context.on("response", lambda r: "/events" in r.url and streams.append(r.status))
    note, _, w = opened(context, server, person, "Followed", "quiet\n")
    # A page closed by the test before may hold a lease for a moment more:
    # refused, this page polls and tries the stream again in a few seconds.
    deadline = 12_000
    while 200 not in streams and deadline > 0:
        w.page.wait_for_timeout(250)
        deadline -= 250
    assert 200 in streams, f"the page never held its events stream: {streams}"
    w.page.wait_for_timeout(500)
    calls.clear()
    w.page.wait_for_timeout(4000)
    assert calls == [], f"an idle page that holds its stream asks nothing: {calls}"
    agent_rewrite(agent, note, lambda t: t + "told on the stream\n")
    w.page.wait_for_function("() => document.querySelector('#editor').value.includes('told on the stream')", timeout=2500)
    assert not any("/changes" in c for c in calls), calls
    assert w.errors == []


def hold_listen_stream(server, token):
    """A `subscriptions/listen` stream held open as `token`'s subject: the
    connection, to close when done. A page closed by the test before may
    hold a lease for a moment more: asked again for a few seconds."""
    url = urlparse(server.base)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {"notifications": {"resourcesListChanged": True}}})
    for _ in range(40):
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        conn.request("POST", "/mcp", body, {"authorization": "Bearer " + token, "content-type": "application/json",
                                             "accept": "application/json, text/event-stream"})
        r = conn.getresponse()
        if r.status == 200:
            return conn
        assert r.status == 429, r.read()
        conn.close()
        time.sleep(0.25)
    raise AssertionError("the person's stream leases stayed held")


def test_with_the_persons_streams_all_held_the_page_polls_and_still_sees_a_write(server, context, person, agent):
    held = [hold_listen_stream(server, person.token) for _ in range(2)]
    try:
        calls = []
        context.on("request", lambda r: "/api/" in r.url and calls.append(r.url))
        note, _, w = opened(context, server, person, "Polled", "quiet\n")
        w.page.wait_for_timeout(3000)
        assert sum("/changes" in c for c in calls) >= 2, calls
        agent_rewrite(agent, note, lambda t: t + "seen by polling\n")
        w.page.wait_for_function("() => document.querySelector('#editor').value.includes('seen by polling')", timeout=2500)
        assert w.errors == []
    finally:
        for c in held:
            c.close()


def test_merging_an_overlapping_live_change_opens_the_merge_screen(server, context, person, agent):
    note, _, w = opened(context, server, person, "Live conflict", "a\nb\n")
    w.page.fill("#editor", "a\nB by me\n")
    agent_rewrite(agent, note, lambda t: "a\nb by agent\n")
    w.page.wait_for_selector("#remote-banner:visible", timeout=2500)
    w.page.click("#merge-theirs")
    w.page.wait_for_selector("#merge .conflict")
    assert "While you were editing" in w.page.inner_text("#merge .banner")
    w.page.locator("#merge .conflict .pick-theirs").click()
    w.page.click("#merge-save")
    w.page.wait_for_selector('#save-status:has-text("Saved")')
    assert agent.call("read_note_tab", note_id=note, tab_id="markdown")["text"] == "a\nb by agent\n"
    assert w.errors == []
