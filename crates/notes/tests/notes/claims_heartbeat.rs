//! Claiming what you already hold is a heartbeat, and renew_claim extends a live claim.
use crate::common::*;
use cairn_notes::rest;
use serde_json::json;

#[test]
fn reclaiming_your_own_claim_is_a_heartbeat() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Plan", true);
    let first = w.claim(&bot, &note, Some("markdown"));
    assert_eq!(first["renewed"], false);
    w.advance_s(300);
    let again = w.claim(&bot, &note, Some("markdown"));
    assert!(again.get("error").is_none(), "{again}");
    assert_eq!(again["claim_id"], first["claim_id"]);
    assert_eq!(again["renewed"], true);
    assert_eq!(again["since"], first["since"]);
    assert!(again["expires_at"].as_str() > first["expires_at"].as_str());
    assert_eq!(w.board(&bot).len(), 1, "still one claim");
    // Past the first expiry, the heartbeat keeps it alive.
    w.advance_s(400);
    let board = w.board(&bot);
    assert_eq!(board.len(), 1);
    assert_eq!(board[0]["claim_id"], first["claim_id"]);
}

#[test]
fn people_get_201_for_a_new_claim_and_200_for_a_heartbeat() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let r = rest::claim_note(&w.kv, &mut w.env, &ada, &note, json!({"ttl_seconds": 60})).unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["renewed"], false);
    w.advance_s(30);
    let again = rest::claim_note(&w.kv, &mut w.env, &ada, &note, json!({})).unwrap();
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body["renewed"], true);
    assert_eq!(again.body["claim_id"], r.body["claim_id"]);
    assert_eq!(again.body["ttl_seconds"], 600);
    let other = rest::claim_note(&w.kv, &mut w.env, &agent("acme"), &note, json!({})).unwrap();
    assert_eq!(other.status, 409);
    assert_eq!(other.body["error"], "claim_conflict");
    assert_eq!(other.body["held_by"], "ADA");
    let bad = rest::claim_note(&w.kv, &mut w.env, &ada, &note, json!({"ttl_seconds": 0})).unwrap();
    assert_eq!(bad.status, 400);
    assert_eq!(bad.body["field"], "ttl_seconds");
}

#[test]
fn renew_extends_a_live_claim_by_its_own_ttl_or_a_new_one() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Plan", true);
    let c = w.ok(&bot, "claim_note", json!({"note_id": note, "ttl_seconds": 120}));
    let id = c["claim_id"].clone();
    w.advance_s(100);
    let r = w.ok(&bot, "renew_claim", json!({"claim_id": id}));
    assert_eq!(r["renewed"], true);
    assert_eq!(r["ttl_seconds"], 120);
    assert_eq!(r["expires_at"], "2026-01-01T00:03:40.000030Z");
    w.advance_s(100);
    let r = w.ok(&bot, "renew_claim", json!({"claim_id": id, "ttl_seconds": 3600}));
    assert_eq!(r["expires_at"], "2026-01-01T01:03:20.000040Z");
    assert_eq!(r["claim_id"], id);
    let rest_renew = rest::renew_claim(&w.kv, &mut w.env, &bot, id.as_str().unwrap(), json!({})).unwrap();
    assert_eq!(rest_renew.status, 200);
    assert_eq!(rest_renew.body["ttl_seconds"], 3600);
}
