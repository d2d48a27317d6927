//! Releasing: idempotent, and the claim's notes go with it.
use crate::common::*;
use cairn_notes::rest;
use serde_json::json;

#[test]
fn release_is_idempotent_and_drops_claim_notes() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    let id = w.claim_ok(&bot, &note, None);
    let posted = w.ok(&bot, "post_claim_note", json!({"claim_id": id, "text": "rewriting the intro, hands off"}));
    assert_eq!(posted["notes_on_claim"], 1);
    let board = w.board(&ada);
    assert_eq!(board[0]["notes"][0]["text"], "rewriting the intro, hands off");
    assert_eq!(board[0]["notes"][0]["provenance"]["author"], "CLAUDE (claude, agent)");
    let r = w.ok(&bot, "release_claim", json!({"claim_id": id}));
    assert_eq!(r["released"], true);
    assert_eq!(r["already_released"], false);
    assert_eq!(r["reason"], "released");
    assert!(w.board(&ada).is_empty());
    let before = w.kv.notes_state();
    for (k, v) in &before {
        assert!(!String::from_utf8_lossy(v).contains("rewriting the intro"), "the claim note outlived its claim in {k}");
    }
    // Again: the same answer every time, nothing else changes.
    for _ in 0..2 {
        let again = w.ok(&bot, "release_claim", json!({"claim_id": id}));
        assert_eq!(again["already_released"], true);
        assert_eq!(again["released"], false);
        assert_eq!(again["reason"], "released");
    }
    let rest_again = rest::release_claim(&w.kv, &mut w.env, &bot, &id).unwrap();
    assert_eq!(rest_again.status, 200);
    assert_eq!(rest_again.body["already_released"], true);
    // A released claim cannot be renewed or noted.
    assert_eq!(w.refused(&bot, "renew_claim", json!({"claim_id": id}))["error"], "not_found");
    assert_eq!(w.refused(&bot, "post_claim_note", json!({"claim_id": id, "text": "x"}))["error"], "not_found");
    // The target is free again.
    w.claim_ok(&ada, &note, None);
}

#[test]
fn a_claim_id_that_was_never_issued_is_not_found() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Plan", true);
    let id = w.claim_ok(&bot, &note, None);
    let forged = format!("clm-{note}-zz-abcdefgh");
    assert_eq!(w.refused(&bot, "release_claim", json!({"claim_id": forged}))["error"], "not_found");
    let missing_note = "clm-note-missing-1-abcdefgh";
    assert_eq!(w.refused(&bot, "release_claim", json!({"claim_id": missing_note}))["error"], "not_found");
    let r = w.refused(&bot, "release_claim", json!({"claim_id": "note-1"}));
    assert_eq!(r["error"], "invalid_argument");
    assert_eq!(r["field"], "claim_id");
    assert_eq!(w.board(&bot)[0]["claim_id"], id.as_str());
}
