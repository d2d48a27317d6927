//! Idempotency keys: checked first, replay the first result, refuse reuse for another payload.
use crate::common::*;
use cairn_notes::Store;
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

/// The fingerprint each `edit_note_tab` operation stores with its key, as
/// the records already in stores hold it: a change of argument types must
/// not change it, or a retry across an upgrade would be refused as a reused key.
#[test]
fn the_stored_fingerprint_of_every_edit_operation_is_stable() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let slides = w.create_tab(&ada, &note, "slides", "Deck");
    let sheet = w.create_tab(&ada, &note, "sheet", "Grid");
    let sheet_id = w.tab(&ada, &note, &sheet)["sheets"][0]["sheet_id"].as_str().unwrap().to_string();
    let ops = [
        ("markdown".to_string(), json!({"operation": "replace_text", "text": "# Plan\n\nhello\n"})),
        ("markdown".to_string(), json!({"operation": "append_text", "text": "more", "rebase": true})),
        ("markdown".to_string(), json!({"operation": "replace_in_text", "old_text": "hello", "new_text": "hi", "version_scope": "note"})),
        (slides.clone(), json!({"operation": "slide_add", "title": "One", "notes": "say it"})),
        (slides.clone(), json!({"operation": "slides_add_outline", "slides": [{"title": "Two", "body": "b"}]})),
        (slides, json!({"operation": "replace_tab_data", "data": {"slides": [{"title": "Only"}]}})),
        (sheet, json!({"operation": "sheet_set_range", "sheet_id": sheet_id, "start_row": 1, "start_col": 2, "values": [[1, "x", null]]})),
    ];
    let mut stored = Vec::new();
    for (i, (tab, op)) in ops.into_iter().enumerate() {
        let v = w.version(&ada, &note);
        let mut args = json!({"note_id": note, "tab_id": tab, "expected_version": v, "idempotency_key": format!("golden-{i}")});
        args.as_object_mut().unwrap().extend(op.as_object().unwrap().clone());
        w.ok(&ada, "edit_note_tab", args);
        let head: serde_json::Value = serde_json::from_slice(&w.kv.get("default", &format!("t/acme/note/{note}")).unwrap().unwrap()).unwrap();
        let record = head["idem"].as_array().unwrap().iter().find(|r| r["key"] == format!("golden-{i}")).unwrap();
        stored.push(record["fp"].as_str().unwrap().to_string());
    }
    assert_eq!(stored, GOLDEN, "stored fingerprints, in operation order");
}

/// Computed by the arguments' flat form, before they were typed.
const GOLDEN: [&str; 7] = [
    "2:a33b5283a788746d6c0b661d2a1ecd8a481833fe9c9e01859196fabb99ccb7d8",
    "2:6da4e3d1762384c7aad94c12c847b631f9f6a8001d0b896333ac1f326e67dc69",
    "2:8009883d08748c505e191cc94c8fdce0934aef07df0bbfa8d69802779517d6b3",
    "2:58885b89f12e6b1dead12ad28d08c2f34d575eb61972109679142eaf70414ff8",
    "2:7a9c4af092755fa747f1ba842faf48c6dceab53cf6a520782854d4caff6bd1d5",
    "2:3271ece4d9e1c52f907d3dbc396735d7f5acdd5a33325fcd8eb89b983feb5913",
    "2:e08a4a27290c868d28c1148899b7a39c475ae6f7c72ad94f0e08b72ea3e2028d",
];
