//! base_content_hash: a write based on content that changed is refused.
use crate::common::*;
use serde_json::json;

#[test]
fn matching_base_content_hash_lets_the_write_through() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    w.write_text(&ada, &note, "base", "k1");
    let read = w.tab(&ada, &note, "markdown");
    let r = w.ok(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": read["version"],
        "base_content_hash": read["provenance"]["content_hash"], "idempotency_key": "k2",
        "operation": "replace_text", "text": "base + more"}),
    );
    assert_ne!(r["content_hash"], read["provenance"]["content_hash"]);
}

#[test]
fn stale_base_content_hash_is_refused_and_nothing_written() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let old = w.tab(&ada, &note, "markdown");
    w.write_text(&ada, &note, "changed", "k1");
    let now = w.tab(&ada, &note, "markdown");
    let before = w.kv.notes_state();
    // The version matches a fresh read, but the hash names the old content.
    let r = w.refused(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown",
        "expected_version": now["version"], "base_content_hash": old["provenance"]["content_hash"],
        "idempotency_key": "k2", "operation": "replace_text", "text": "based on old"}),
    );
    assert_eq!(r["error"], "content_hash_mismatch");
    assert_eq!(r["current_content_hash"], now["provenance"]["content_hash"]);
    assert_eq!(r["current_version"], now["version"]);
    assert_eq!(w.kv.notes_state(), before);
}

#[test]
fn content_hash_is_the_sha256_of_the_text() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let r = w.write_text(&ada, &note, "abc", "k1");
    assert_eq!(r["structuredContent"]["content_hash"], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
