//! Tab ids: assigned once, never reused; no write path resolves a type or a label.
use crate::common::*;
use cairn_notes::rest;
use serde_json::json;

#[test]
fn new_tab_ids_are_type_seq_random_and_fixed_tabs_keep_their_names() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let s = w.create_tab(&ada, &note, "slides", "Deck");
    let parts: Vec<&str> = s.split('-').collect();
    assert_eq!(parts.len(), 3, "{s}");
    assert_eq!(parts[0], "slides");
    assert_eq!(parts[1], "1");
    assert_eq!(parts[2].len(), 8);
    let t = w.create_tab(&ada, &note, "sheet", "Numbers");
    assert!(t.starts_with("sheet-2-"), "{t}");
    let tabs = w.ok(&ada, "list_note_tabs", json!({"note_id": note}));
    let ids: Vec<&str> = tabs["tabs"].as_array().unwrap().iter().map(|t| t["tab_id"].as_str().unwrap()).collect();
    assert_eq!(&ids[..3], ["markdown", "files", "sources"]);
}

#[test]
fn tab_ids_are_never_reused_even_after_deletion() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let mut seen = std::collections::HashSet::new();
    for round in 0..5 {
        let id = w.create_tab(&ada, &note, "slides", "Deck");
        assert!(seen.insert(id.clone()), "round {round}: {id} was handed out before");
        let v = w.version(&ada, &note);
        let r = rest::delete_tab(&w.kv, &mut w.env, &ada, &note, &id, json!({"expected_version": v})).unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
        let gone = w.refused(&ada, "read_note_tab", json!({"note_id": note, "tab_id": id}));
        assert_eq!(gone["error"], "not_found");
    }
    let last = w.create_tab(&ada, &note, "slides", "Deck");
    assert!(last.starts_with("slides-6-"), "the counter only grows: {last}");
}

#[test]
fn a_type_or_a_label_is_never_resolved_into_a_tab_id() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let deck = w.create_tab(&ada, &note, "slides", "Deck");
    let v = w.version(&ada, &note);
    for handle in ["slides", "Deck", "sheet", "Slides"] {
        let before = w.kv.notes_state();
        let r = w.refused(
            &ada,
            "edit_note_tab",
            json!({"note_id": note, "tab_id": handle, "expected_version": v,
            "idempotency_key": format!("k-{handle}"), "operation": "slide_add", "title": "New"}),
        );
        assert_eq!(r["error"], "not_found", "{handle}");
        assert_eq!(w.kv.notes_state(), before);
        let r = w.refused(&ada, "read_note_tab", json!({"note_id": note, "tab_id": handle}));
        assert_eq!(r["error"], "not_found", "{handle}");
    }
    assert_eq!(w.tab(&ada, &note, &deck)["slides"].as_array().unwrap().len(), 0);
}

#[test]
fn labels_may_repeat_and_each_tab_keeps_its_own_id() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let a = w.create_tab(&ada, &note, "slides", "Deck");
    let b = w.create_tab(&ada, &note, "slides", "Deck");
    assert_ne!(a, b);
    let v = w.version(&ada, &note);
    w.ok(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": b, "expected_version": v, "idempotency_key": "k",
        "operation": "slide_add", "title": "Only in b"}),
    );
    assert_eq!(w.tab(&ada, &note, &a)["slides"].as_array().unwrap().len(), 0);
    assert_eq!(w.tab(&ada, &note, &b)["slides"][0]["title"], "Only in b");
}

#[test]
fn fixed_tabs_cannot_be_deleted_and_attachments_cannot_be_edited() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let r = rest::delete_tab(&w.kv, &mut w.env, &ada, &note, "markdown", json!({"expected_version": 1})).unwrap();
    assert_eq!(r.status, 400);
    for tab in ["files", "sources"] {
        let r = w.refused(
            &ada,
            "edit_note_tab",
            json!({"note_id": note, "tab_id": tab, "expected_version": 1,
            "idempotency_key": "k", "operation": "replace_tab_data", "data": {}}),
        );
        assert_eq!(r["error"], "invalid_argument");
        assert_eq!(r["field"], "tab_id");
    }
}

#[test]
fn an_operation_for_another_tab_type_is_refused_naming_operation() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let r = w.refused(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": 1,
        "idempotency_key": "k", "operation": "slide_add", "title": "x"}),
    );
    assert_eq!(r["error"], "invalid_argument");
    assert_eq!(r["field"], "operation");
}
