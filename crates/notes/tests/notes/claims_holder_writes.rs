//! The holder's own writes pass its claims; claims never replace the version check.
use crate::common::*;
use cairn_notes::rest;
use serde_json::json;

#[test]
fn holder_writes_pass() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    w.claim_ok(&bot, &note, None);
    let r = w.edit_markdown(&bot, &note, "agent text", "b1");
    assert!(r.get("error").is_none(), "{r}");
    let deck = w.create_tab(&bot, &note, "slides", "Deck");
    let v = w.version(&bot, &note);
    w.ok(
        &bot,
        "add_note_source",
        json!({"note_id": note, "expected_version": v, "idempotency_key": "s",
        "title": "Report", "url": "https://example.org/r"}),
    );
    let v = w.version(&bot, &note);
    w.ok(
        &bot,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": deck, "expected_version": v,
        "idempotency_key": "b2", "operation": "slide_add", "title": "One"}),
    );
    assert_eq!(w.tab(&ada, &note, &deck)["slides"][0]["title"], "One");
}

#[test]
fn a_tab_holder_writes_its_tab_and_others_still_need_the_current_version() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    w.claim_ok(&ada, &note, Some("markdown"));
    let r = rest::write_tab(&w.kv, &mut w.env, &ada, &note, "markdown", json!({"expected_version": 1, "text": "person text"})).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    // Holding a claim does not excuse a stale version.
    let r = rest::write_tab(&w.kv, &mut w.env, &ada, &note, "markdown", json!({"expected_version": 1, "text": "stale"})).unwrap();
    assert_eq!(r.status, 409);
    assert_eq!(r.body["error"], "version_conflict");
    // The agent writes another tab meanwhile.
    let deck = w.create_tab(&bot, &note, "slides", "Deck");
    assert!(deck.starts_with("slides-"));
}

#[test]
fn deleting_a_claimed_tab_ends_its_holders_claim() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let deck = w.create_tab(&ada, &note, "slides", "Deck");
    let id = w.claim_ok(&ada, &note, Some(&deck));
    let v = w.version(&ada, &note);
    let r = rest::delete_tab(&w.kv, &mut w.env, &ada, &note, &deck, json!({"expected_version": v})).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(w.board(&ada).is_empty());
    let again = w.ok(&ada, "release_claim", json!({"claim_id": id}));
    assert_eq!(again["already_released"], true);
    assert_eq!(again["reason"], "tab_deleted");
}
