//! A lapsed claim is released (reason expired): it never blocks and never shows.
use crate::common::*;
use serde_json::json;

#[test]
fn lapsed_claim_never_blocks_and_never_shows() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    let c = w.ok(&bot, "claim_note", json!({"note_id": note, "ttl_seconds": 5}));
    let id = c["claim_id"].as_str().unwrap().to_string();
    let r = w.edit_markdown(&ada, &note, "person", "p1");
    assert_eq!(r["error"], "claim_conflict", "live claims block");
    w.advance_s(5);
    // Reads never show it, even before any commit dropped it.
    assert!(w.board(&ada).is_empty());
    let one = w.ok(&ada, "list_claims", json!({"note_id": note}));
    assert_eq!(one["claims"].as_array().unwrap().len(), 0);
    // It does not block a write, nor a claim by someone else.
    let r = w.edit_markdown(&ada, &note, "person", "p2");
    assert!(r.get("error").is_none(), "{r}");
    // The write's commit dropped it: expiry is a release with reason expired.
    let expired: Vec<_> = w.claim_audit("acme").into_iter().filter(|a| a["event"] == "expired").collect();
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0]["claim_id"], id.as_str());
    assert_eq!(expired[0]["reason"], "expired");
    let again = w.claim(&ada, &note, None);
    assert!(again.get("error").is_none(), "{again}");
    // A lapsed claim cannot be renewed or noted; releasing it says it already ended.
    let r = w.refused(&bot, "renew_claim", json!({"claim_id": id}));
    assert_eq!(r["error"], "not_found");
    assert!(r["next_step"].as_str().unwrap().contains("claim the target again"));
    let r = w.refused(&bot, "post_claim_note", json!({"claim_id": id, "text": "still here"}));
    assert_eq!(r["error"], "not_found");
    let r = w.ok(&bot, "release_claim", json!({"claim_id": id}));
    assert_eq!(r["already_released"], true);
    assert_eq!(r["reason"], "expired");
}

#[test]
fn a_lapsed_claim_is_not_renewed_by_a_heartbeat_but_replaced() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Plan", true);
    let first = w.ok(&bot, "claim_note", json!({"note_id": note, "ttl_seconds": 1}));
    w.advance_s(2);
    let second = w.claim(&bot, &note, None);
    assert_eq!(second["renewed"], false);
    assert_ne!(second["claim_id"], first["claim_id"], "ids are never reused");
    assert_eq!(w.board(&bot).len(), 1);
}
