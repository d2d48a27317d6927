//! The audit trail: every write attempt with its outcome (committed,
//! version conflict, claim conflict, invalid, forbidden), claim events and
//! refused calls, with who and when, never the content; per tenant, for
//! people only, paged without loss.
use crate::common::*;
use cairn_notes::rest;
use serde_json::{Value, json};

fn trail(w: &mut World, who: &cairn_notes::env::Identity, note: Option<&str>) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let r = rest::audit(&w.kv, &mut w.env, who, note, None, cursor.as_deref(), Some("3")).unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
        out.extend(r.body["events"].as_array().unwrap().iter().cloned());
        match r.body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return out,
        }
    }
}

#[test]
fn every_write_attempt_is_in_the_trail_with_its_outcome_and_never_the_content() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Audited", true);
    assert_eq!(w.write_text(&bot, &note, "secret plan", "k1")["isError"], false);
    // A stale write, an invalid one, a claim in the way.
    let stale = w.call(
        &bot,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": 1,
        "idempotency_key": "k2", "operation": "replace_text", "text": "also secret"}),
    );
    assert_eq!(stale["structuredContent"]["error"], "version_conflict");
    let bad = w.call(
        &bot,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": 2,
        "idempotency_key": "k3", "operation": "replace_in_text", "old_text": "", "new_text": "x"}),
    );
    assert_eq!(bad["structuredContent"]["error"], "invalid_argument");
    w.claim_ok(&ada, &note, None);
    let held = w.call(
        &bot,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": 3,
        "idempotency_key": "k4", "operation": "append_text", "text": "more"}),
    );
    assert_eq!(held["structuredContent"]["error"], "claim_conflict");

    let events = trail(&mut w, &ada, Some(&note));
    let outcomes: Vec<(String, String)> =
        events.iter().map(|e| (e["kind"].as_str().unwrap().to_string(), e["outcome"].as_str().unwrap().to_string())).collect();
    for want in [("write", "committed"), ("write", "version_conflict"), ("write", "invalid_argument"), ("claim", "granted"), ("claim", "refused")] {
        assert!(outcomes.contains(&(want.0.to_string(), want.1.to_string())), "{want:?} missing from {outcomes:?}");
    }
    let conflict = events.iter().find(|e| e["outcome"] == "version_conflict").unwrap();
    assert_eq!(conflict["tool"], "edit_note_tab");
    assert_eq!(conflict["current_version"], 2);
    assert_eq!(conflict["by"]["actor_type"], "agent");
    let bad = events.iter().find(|e| e["outcome"] == "invalid_argument").unwrap();
    assert_eq!(bad["field"], "old_text");
    // Oldest first, each once.
    let times: Vec<u64> = events.iter().map(|e| e["at_us"].as_u64().unwrap()).collect();
    assert!(times.windows(2).all(|p| p[0] <= p[1]), "{times:?}");
    let text = serde_json::to_string(&events).unwrap();
    assert!(!text.contains("secret"), "the trail carries content: {text}");
}

#[test]
fn refused_people_writes_are_recorded_too() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "REST", true);
    let r = rest::write_tab(&w.kv, &mut w.env, &ada, &note, "markdown", json!({"expected_version": 9, "text": "x"})).unwrap();
    assert_eq!(r.status, 409);
    rest::record_refusal(&w.kv, &mut w.env, &ada, "PUT /api/v1/notes/{note}/tabs/{tab}", Some(&note), &r);
    let events = trail(&mut w, &ada, Some(&note));
    let e = events.iter().find(|e| e["outcome"] == "version_conflict").expect("recorded");
    assert_eq!(e["tool"], "PUT /api/v1/notes/{note}/tabs/{tab}");
}

#[test]
fn the_trail_stays_in_its_tenant_and_is_for_people() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Mine", true);
    w.write_text(&ada, &note, "x", "k");
    let other = human("globex");
    let r = rest::audit(&w.kv, &mut w.env, &other, None, None, None, None).unwrap();
    assert_eq!(r.body["events"], json!([]), "{}", r.body);
    assert_eq!(rest::audit(&w.kv, &mut w.env, &other, Some(&note), None, None, None).unwrap().status, 404);
    let r = rest::audit(&w.kv, &mut w.env, &agent("acme"), None, None, None, None).unwrap();
    assert_eq!((r.status, r.body["error"].as_str()), (403, Some("forbidden")), "{}", r.body);
    let r = rest::audit(&w.kv, &mut w.env, &ada, None, Some("yesterday"), None, None).unwrap();
    assert_eq!((r.status, r.body["field"].as_str()), (400, Some("since")));
}
