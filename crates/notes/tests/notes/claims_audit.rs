//! Every claim attempt is audited under audit/claims/<note_id>/<time>-<tag>.
use crate::common::*;
use cairn_notes::{ActorType, rest, sweep_expired_claims};
use serde_json::json;

#[test]
fn every_claim_attempt_is_audited() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    let id = w.claim_ok(&bot, &note, Some("markdown")); // granted
    w.claim_ok(&bot, &note, Some("markdown")); // renewed (heartbeat)
    w.ok(&bot, "renew_claim", json!({"claim_id": id})); // renewed
    w.claim(&ada, &note, None); // refused (claim_conflict)
    w.edit_markdown(&ada, &note, "x", "k1"); // write refused
    w.refused(&ada, "release_claim", json!({"claim_id": id})); // refused (forbidden)
    w.ok(&bot, "post_claim_note", json!({"claim_id": id, "text": "secret plan"})); // noted
    w.ok(&bot, "release_claim", json!({"claim_id": id})); // released
    let short = w.ok(&bot, "claim_note", json!({"note_id": note, "ttl_seconds": 1}));
    w.advance_s(2);
    sweep_expired_claims(&w.kv, &mut w.env, "acme").unwrap(); // expired
    let held = w.claim_ok(&bot, &note, None);
    let root = admin("acme", "root", ActorType::Human);
    rest::force_release_claim(&w.kv, &mut w.env, &root, &held).unwrap(); // forced

    let keys: Vec<String> = w.kv.dump().into_iter().map(|(k, _)| k).filter(|k| k.starts_with("t/acme/audit/claims/")).collect();
    for k in &keys {
        let tail = k.strip_prefix(&format!("t/acme/audit/claims/{note}/")).expect("under the note");
        let (time, tag) = tail.split_once('-').unwrap();
        assert_eq!(time.len(), 20, "{k}");
        assert!(time.bytes().all(|b| b.is_ascii_digit()));
        assert_eq!(tag.len(), 8, "{k}");
    }
    let audit = w.claim_audit("acme");
    let events: Vec<(&str, &str)> = audit.iter().map(|a| (a["event"].as_str().unwrap(), a["action"].as_str().unwrap())).collect();
    let want = [
        ("granted", "claim_note"),
        ("renewed", "claim_note"),
        ("renewed", "renew_claim"),
        ("refused", "claim_note"),
        ("refused", "edit_note_tab"),
        ("refused", "release_claim"),
        ("noted", "post_claim_note"),
        ("released", "release_claim"),
        ("granted", "claim_note"),
        ("expired", "expire"),
        ("granted", "claim_note"),
        ("forced", "force_release_claim"),
    ];
    assert_eq!(events, want);
    let refused_write = &audit[4];
    assert_eq!(refused_write["error"], "claim_conflict");
    assert_eq!(refused_write["by"]["subject"], "ada");
    assert_eq!(refused_write["holder"]["subject"], "claude");
    assert_eq!(audit[9]["claim_id"], short["claim_id"]);
    assert!(audit[9]["by"].is_null(), "nobody expired it");
    assert_eq!(audit[11]["by"]["subject"], "root");
    // The record of a claim note keeps its size and hash, never its text.
    assert_eq!(audit[6]["note_chars"], 11);
    assert!(!audit[6].to_string().contains("secret plan"));
}

#[test]
fn a_claim_refused_under_a_lost_swap_still_leaves_one_record_per_attempted_operation() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Plan", true);
    w.kv.lose_next_swaps(3);
    let id = w.claim_ok(&bot, &note, None);
    let audit = w.claim_audit("acme");
    assert_eq!(audit.len(), 1, "retries rewrite the operation's own record");
    assert_eq!(audit[0]["event"], "granted");
    assert_eq!(audit[0]["claim_id"], id.as_str());
}
