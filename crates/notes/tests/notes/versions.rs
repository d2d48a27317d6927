//! Versions: counters, note scope by default, tab scope on request; stale writes refused.
use crate::common::*;
use cairn_notes::NEXT_STEP_REREAD;
use serde_json::json;

#[test]
fn stale_version_is_refused_and_nothing_written() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    w.write_text(&ada, &note, "person paragraph", "p1");
    let before = w.kv.notes_state();
    let r = w.refused(
        &ada,
        "edit_note_tab",
        json!({
        "note_id": note, "tab_id": "markdown", "expected_version": 1, "idempotency_key": "agent-1",
        "operation": "replace_text", "text": "agent text without the paragraph"}),
    );
    assert_eq!(r["error"], "version_conflict");
    assert_eq!(r["current_version"], 2);
    assert_eq!(r["next_step"], NEXT_STEP_REREAD);
    assert!(r["message"].as_str().unwrap().contains("version 2"));
    assert_eq!(w.kv.notes_state(), before, "nothing written");
    assert_eq!(w.tab(&ada, &note, "markdown")["text"], "person paragraph");
}

#[test]
fn every_write_bumps_the_note_version_and_the_tab_version_by_one() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let r1 = w.write_text(&ada, &note, "a", "k1");
    let r2 = w.write_text(&ada, &note, "b", "k2");
    assert_eq!(r1["structuredContent"]["version"], 2);
    assert_eq!(r2["structuredContent"]["version"], 3);
    assert_eq!(r1["structuredContent"]["tab_version"], 2);
    assert_eq!(r2["structuredContent"]["tab_version"], 3);
    let sheet = w.create_tab(&ada, &note, "sheet", "Numbers");
    let tab = w.tab(&ada, &note, &sheet);
    // A sheet tab's read lists its sheets without cells: a part token.
    assert_eq!(tab["version"], "4:part", "creating a tab moves the note version");
    assert_eq!(tab["tab_version"], "1:part");
    assert_eq!(w.tab(&ada, &note, "markdown")["tab_version"], 3, "other tabs keep their version");
}

#[test]
fn note_scope_refuses_a_write_after_a_change_in_another_tab() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let sheet = w.create_tab(&ada, &note, "sheet", "Numbers");
    let read = w.tab(&ada, &note, "markdown");
    let v = read["version"].as_u64().unwrap();
    w.ok(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": sheet, "expected_version": v, "idempotency_key": "cells",
        "operation": "sheet_set_range", "sheet_id": "s1", "start_row": 0, "start_col": 0, "values": [[1]]}),
    );
    let r = w.refused(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": v,
        "idempotency_key": "brief", "operation": "replace_text", "text": "brief"}),
    );
    assert_eq!(r["error"], "version_conflict");
    assert_eq!(r["version_scope"], "note");
    assert_eq!(r["current_version"], v + 1);
}

#[test]
fn tab_scope_ignores_writes_to_other_tabs() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let sheet = w.create_tab(&ada, &note, "sheet", "Numbers");
    let read = w.tab(&ada, &note, "markdown");
    let tv = read["tab_version"].as_u64().unwrap();
    let v = read["version"].as_u64().unwrap();
    w.ok(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": sheet, "expected_version": v, "idempotency_key": "cells",
        "operation": "sheet_set_range", "sheet_id": "s1", "start_row": 0, "start_col": 0, "values": [[1]]}),
    );
    let r = w.ok(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": tv,
        "version_scope": "tab", "idempotency_key": "brief", "operation": "replace_text", "text": "brief"}),
    );
    assert_eq!(r["tab_version"], tv + 1);
    assert_eq!(r["version"], v + 2);
}

#[test]
fn tab_scope_refuses_a_stale_tab_version() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    w.write_text(&ada, &note, "first", "k1");
    let r = w.refused(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": 1,
        "version_scope": "tab", "idempotency_key": "k2", "operation": "replace_text", "text": "stale"}),
    );
    assert_eq!(r["error"], "version_conflict");
    assert_eq!(r["version_scope"], "tab");
    assert_eq!(r["current_version"], 2);
}

#[test]
fn expected_version_is_required() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let r = w.refused(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "idempotency_key": "k",
        "operation": "replace_text", "text": "x"}),
    );
    assert_eq!(r["error"], "invalid_argument");
    assert_eq!(r["field"], "expected_version");
}
