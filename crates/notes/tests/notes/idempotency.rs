//! Idempotency keys: checked first, replay the first result, refuse reuse for another payload.
use crate::common::*;
use serde_json::json;

fn edit(note: &str, version: u64, key: &str, text: &str) -> serde_json::Value {
    json!({"note_id": note, "tab_id": "markdown", "expected_version": version, "idempotency_key": key,
           "operation": "replace_text", "text": text})
}

#[test]
fn same_key_same_payload_returns_the_first_result_marked_replayed() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let first = w.ok(&ada, "edit_note_tab", edit(&note, 1, "k1", "hello"));
    assert_eq!(first["replayed"], false);
    assert_eq!(first["version"], 2);
    let before = w.kv.dump();
    let again = w.ok(&ada, "edit_note_tab", edit(&note, 1, "k1", "hello"));
    assert_eq!(again["replayed"], true);
    let mut expected = first.clone();
    expected["replayed"] = true.into();
    assert_eq!(again, expected);
    assert_eq!(w.kv.dump(), before, "a replay writes nothing");
}

#[test]
fn same_key_with_a_different_payload_is_refused_and_nothing_written() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    w.ok(&ada, "edit_note_tab", edit(&note, 1, "k1", "hello"));
    let before = w.kv.notes_state();
    let r = w.refused(&ada, "edit_note_tab", edit(&note, 2, "k1", "something else"));
    assert_eq!(r["error"], "idempotency_key_reused");
    assert_eq!(r["current_version"], 2);
    assert_eq!(w.kv.notes_state(), before);
}

#[test]
fn key_is_checked_before_version_so_a_stale_resend_returns_the_first_result() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let first = w.ok(&ada, "edit_note_tab", edit(&note, 1, "lost-reply", "agent text"));
    // Someone else writes: the resend's expected_version (1) is now stale twice over.
    w.ok(&ada, "edit_note_tab", edit(&note, 2, "person", "person text"));
    let resend = w.ok(&ada, "edit_note_tab", edit(&note, 1, "lost-reply", "agent text"));
    assert_eq!(resend["replayed"], true);
    assert_eq!(resend["version"], first["version"]);
    assert_eq!(w.tab(&ada, &note, "markdown")["text"], "person text", "the replay did not write again");
}

#[test]
fn create_note_tab_resent_after_a_lost_reply_returns_the_first_tab() {
    let mut w = World::new();
    let ada = agent("acme");
    let note = w.note(&human("acme"), "Deck", true);
    let args = json!({"note_id": note, "expected_version": 1, "idempotency_key": "deck-1", "tab_type": "slides",
                      "slides": [{"title": "Intro"}]});
    let first = w.ok(&ada, "create_note_tab", args.clone());
    let second = w.ok(&ada, "create_note_tab", args);
    assert_eq!(second["tab_id"], first["tab_id"]);
    assert_eq!(second["replayed"], true);
    let tabs = w.ok(&ada, "list_note_tabs", json!({"note_id": note}));
    let slides = tabs["tabs"].as_array().unwrap().iter().filter(|t| t["type"] == "slides").count();
    assert_eq!(slides, 1, "no duplicate tab");
}

#[test]
fn records_spilled_out_of_the_head_still_replay_and_refuse_reuse() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Busy", true);
    let first = w.ok(&ada, "edit_note_tab", edit(&note, 1, "oldest", "v1"));
    for i in 0..80u64 {
        w.ok(&ada, "edit_note_tab", edit(&note, 2 + i, &format!("k{i}"), &format!("text {i}")));
    }
    let head_len = w.kv.dump().into_iter().find(|(k, _)| k == &format!("t/acme/note/{note}")).unwrap().1.len();
    assert!(head_len < 100_000, "the head stays bounded ({head_len} bytes)");
    let replay = w.ok(&ada, "edit_note_tab", edit(&note, 1, "oldest", "v1"));
    assert_eq!(replay["replayed"], true);
    assert_eq!(replay["version"], first["version"]);
    let reused = w.refused(&ada, "edit_note_tab", edit(&note, 82, "oldest", "new text"));
    assert_eq!(reused["error"], "idempotency_key_reused");
}

#[test]
fn keys_are_scoped_to_one_note() {
    let mut w = World::new();
    let ada = human("acme");
    let a = w.note(&ada, "A", true);
    let b = w.note(&ada, "B", true);
    w.ok(&ada, "edit_note_tab", edit(&a, 1, "same-key", "text a"));
    let rb = w.ok(&ada, "edit_note_tab", edit(&b, 1, "same-key", "text b"));
    assert_eq!(rb["replayed"], false);
    assert_eq!(w.tab(&ada, &b, "markdown")["text"], "text b");
}

#[test]
fn a_refused_write_leaves_its_key_free_for_the_redone_change() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    w.ok(&ada, "edit_note_tab", edit(&note, 1, "person", "person text"));
    let r = w.refused(&ada, "edit_note_tab", edit(&note, 1, "agent-1", "agent text"));
    assert_eq!(r["error"], "version_conflict");
    // The refusal stored no record: the same key on the fresh version is a first write.
    let ok = w.ok(&ada, "edit_note_tab", edit(&note, 2, "agent-1", "person text\nagent text"));
    assert_eq!(ok["replayed"], false);
}

#[test]
fn the_head_keeps_only_the_newest_record_and_the_one_before_replays_from_its_own_key() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Pair", true);
    let first = w.ok(&ada, "edit_note_tab", edit(&note, 1, "first", "one"));
    w.ok(&ada, "edit_note_tab", edit(&note, 2, "second", "two"));
    let head: serde_json::Value = serde_json::from_slice(&w.kv.dump().into_iter().find(|(k, _)| k == &format!("t/acme/note/{note}")).unwrap().1).unwrap();
    let kept: Vec<&str> = head["idem"].as_array().unwrap().iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert_eq!(kept, ["second"], "only the newest record rides in the head");
    assert_eq!(head["history"].as_array().unwrap().len(), 1, "only the newest history entry rides in the head");
    let replay = w.ok(&ada, "edit_note_tab", edit(&note, 1, "first", "one"));
    assert_eq!(replay["replayed"], true);
    assert_eq!(replay["version"], first["version"]);
    assert_eq!(w.tab(&ada, &note, "markdown")["text"], "two", "the replay wrote nothing");
}
