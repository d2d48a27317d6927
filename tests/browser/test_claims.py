"""Presence and claims in the page."""

import time

import pytest

from conftest import Refused, Watched, open_signed_in, open_tab, screenshot, wait_until_no_claims


def claimed_in_page(context, server, person, title):
    """A new note open in a page whose person has claimed its markdown tab."""
    note = person.note(title)
    w = open_signed_in(context, server)
    open_tab(w, note)
    w.page.click("#claim-toggle")
    w.page.wait_for_selector('#claim-toggle:has-text("Release")')
    return note, w


def test_an_agents_claim_is_named_with_its_expiry_and_the_save_is_refused_with_that_name(server, context, person, agent):
    note = person.note("Held")
    person.write(note, "draft\n")
    claim = agent.call("claim_note", note_id=note, tab_id="markdown", ttl_seconds=120)
    agent.call("post_claim_note", claim_id=claim["claim_id"], text="rewriting the intro, back in two minutes")
    w = open_signed_in(context, server)
    open_tab(w, note)
    w.page.wait_for_selector("#holder-banner:visible")
    banner = w.page.inner_text("#holder-banner")
    assert "Drafting agent (agent) holds this tab until" in banner
    board = w.page.inner_text("#presence")
    assert "Drafting agent" in board and "rewriting the intro" in board and "until" in board
    screenshot(w.page, "ui-presence.png")
    w.page.fill("#editor", "draft\nmine\n")
    w.page.click("#save")
    w.page.wait_for_selector('#save-status:has-text("Not saved")')
    refusal = w.page.inner_text("#save-status")
    assert "Drafting agent" in refusal and "draft is kept" in refusal
    assert agent.call("read_note_tab", note_id=note, tab_id="markdown")["text"] == "draft\n"
    # The agent lets go; the page sees it on its own and the save goes through.
    agent.call("release_claim", claim_id=claim["claim_id"])
    w.page.wait_for_selector("#holder-banner", state="hidden", timeout=15000)
    w.page.click("#save")
    w.page.wait_for_selector('#save-status:has-text("Saved")')
    assert agent.call("read_note_tab", note_id=note, tab_id="markdown")["text"] == "draft\nmine\n"


def test_the_persons_own_claim_shows_in_list_claims_and_goes_when_they_leave(server, context, person, agent):
    note, w = claimed_in_page(context, server, person, "Mine")
    claims = agent.call("list_claims", note_id=note)["claims"]
    assert [(c["held_by"], c["actor_type"], c["tab_id"]) for c in claims] == [("Local person", "human", "markdown")]
    # The agent is refused while the person holds the tab, with the person named.
    tab = agent.call("read_note_tab", note_id=note, tab_id="markdown")
    with pytest.raises(Refused) as refused:
        agent.call("edit_note_tab", note_id=note, tab_id="markdown", operation="replace_text", text="x\n",
                   expected_version=tab["version"], idempotency_key="agent-blocked-1")
    assert refused.value.body["error"] == "claim_conflict" and refused.value.body["held_by"] == "Local person"
    # Leaving the note releases the claim.
    w.page.evaluate("location.hash = '#/'")
    w.page.wait_for_selector("#new-note-title")
    assert wait_until_no_claims(agent, note) == []


def test_closing_the_tab_releases_the_persons_claim(server, context, person, agent):
    note, w = claimed_in_page(context, server, person, "Closed")
    assert len(agent.call("list_claims", note_id=note)["claims"]) == 1
    w.page.close(run_before_unload=True)
    assert wait_until_no_claims(agent, note) == []


def test_the_persons_claim_is_kept_alive_by_a_heartbeat_while_they_edit(server, context, person, agent):
    note = person.note("Heartbeat")
    page = context.new_page()
    page.clock.install()  # the page's timers run on a clock the test moves
    w = Watched(page)
    w.page.goto(server.sign_in_link)
    w.page.wait_for_selector("#new-note-title")
    open_tab(w, note)
    w.page.click("#claim-toggle")
    w.page.wait_for_selector('#claim-toggle:has-text("Release")')
    [claim] = agent.call("list_claims", note_id=note)["claims"]
    assert claim["renewed"] is False and claim["ttl_seconds"] == 60
    w.page.clock.run_for(21_000)  # past one heartbeat (every 20 s)
    deadline = time.time() + 10
    while not agent.call("list_claims", note_id=note)["claims"][0]["renewed"] and time.time() < deadline:
        w.page.clock.run_for(1_000)
    [renewed] = agent.call("list_claims", note_id=note)["claims"]
    assert renewed["renewed"] is True and renewed["claim_id"] == claim["claim_id"]
