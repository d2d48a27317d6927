//! A lost CAS race is retried from a fresh read; the caller's version decides conflicts.
use crate::common::*;
use serde_json::json;

#[test]
fn lost_swaps_are_retried_internally_and_the_write_lands_once() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    w.kv.lose_next_swaps(5);
    let r = w.ok(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": 1,
        "idempotency_key": "k", "operation": "replace_text", "text": "landed"}),
    );
    assert_eq!(r["version"], 2, "one bump, not one per attempt");
    assert_eq!(w.tab(&ada, &note, "markdown")["text"], "landed");
}

#[test]
fn a_head_that_stays_busy_gives_a_busy_refusal_and_the_head_does_not_move() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let head_key = format!("t/acme/note/{note}");
    let head = |w: &World| w.kv.dump().into_iter().find(|(k, _)| *k == head_key).unwrap().1;
    let before = head(&w);
    w.kv.lose_next_swaps(1000);
    let r = w.refused(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": 1,
        "idempotency_key": "k", "operation": "replace_text", "text": "never"}),
    );
    assert_eq!(r["error"], "busy");
    assert_eq!(head(&w), before);
    w.kv.lose_next_swaps(0);
    // The same call with the same key then lands once.
    let r = w.ok(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": 1,
        "idempotency_key": "k", "operation": "replace_text", "text": "never"}),
    );
    assert_eq!(r["replayed"], false);
}

#[test]
fn history_and_idempotency_records_spill_to_their_own_keys_and_the_head_stays_bounded() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let mut sizes = Vec::new();
    for i in 0..200u64 {
        let r = w.write_text(&ada, &note, &format!("text {i}"), &format!("key-{i}"));
        assert_eq!(r["isError"], false);
        if i == 99 || i == 199 {
            sizes.push(w.kv.dump().into_iter().find(|(k, _)| k.ends_with(&format!("note/{note}"))).unwrap().1.len());
        }
    }
    assert!(sizes[1] <= sizes[0] + 200, "head size flat: {sizes:?}");
    let keys: Vec<String> = w.kv.dump().into_iter().map(|(k, _)| k).collect();
    let audit = keys.iter().filter(|k| k.starts_with(&format!("t/acme/audit/{note}/"))).count();
    let idem = keys.iter().filter(|k| k.starts_with(&format!("t/acme/idem/{note}/"))).count();
    assert!(audit >= 160, "audit records spilled: {audit}");
    assert!(idem >= 160, "idempotency records spilled: {idem}");
}
