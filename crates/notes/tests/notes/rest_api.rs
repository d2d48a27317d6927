//! The people's REST helpers follow the same rules as the tools.
use crate::common::*;
use cairn_notes::rest;
use serde_json::json;

#[test]
fn create_note_makes_the_fixed_tabs_at_version_one() {
    let mut w = World::new();
    let ada = human("acme");
    let r = rest::create_note(&w.kv, &mut w.env, &ada, json!({"title": "Plan", "approved_for_agents": true})).unwrap();
    assert_eq!(r.status, 201);
    assert_eq!(r.body["version"], 1);
    let note = r.body["note_id"].as_str().unwrap();
    assert!(note.starts_with("note-"));
    let g = rest::get_note(&w.kv, &ada, note).unwrap();
    assert_eq!(g.status, 200);
    let tabs: Vec<(&str, &str, u64)> = g.body["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["tab_id"].as_str().unwrap(), t["type"].as_str().unwrap(), t["tab_version"].as_u64().unwrap()))
        .collect();
    assert_eq!(tabs, [("markdown", "markdown", 1), ("files", "files", 1), ("sources", "sources", 1)]);
    assert_eq!(g.body["approved_for_agents"], true);
}

#[test]
fn create_note_refuses_bad_bodies_naming_the_field_and_writes_nothing() {
    let mut w = World::new();
    let ada = human("acme");
    for (body, field) in [
        (json!({}), "title"),
        (json!({"title": ""}), "title"),
        (json!({"title": "t", "x": 1}), "x"),
        (json!({"title": "t", "approved_for_agents": "yes"}), "approved_for_agents"),
    ] {
        let r = rest::create_note(&w.kv, &mut w.env, &ada, body).unwrap();
        assert_eq!(r.status, 400);
        assert_eq!(r.body["field"], field);
    }
    assert!(w.kv.dump().is_empty());
}

#[test]
fn write_tab_is_a_conditional_write_for_people_too() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    w.write_text(&bot, &note, "agent line", "a1");
    let before = w.kv.notes_state();
    let stale = rest::write_tab(&w.kv, &mut w.env, &ada, &note, "markdown", json!({"expected_version": 1, "text": "stale browser tab"})).unwrap();
    assert_eq!(stale.status, 409);
    assert_eq!(stale.body["error"], "version_conflict");
    assert_eq!(stale.body["current_version"], 2);
    assert_eq!(w.kv.notes_state(), before);
    let ok = rest::write_tab(
        &w.kv,
        &mut w.env,
        &ada,
        &note,
        "markdown",
        json!({"expected_version": 2, "text": "agent line\nperson line", "idempotency_key": "save-1"}),
    )
    .unwrap();
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.body["version"], 3);
    let again = rest::write_tab(
        &w.kv,
        &mut w.env,
        &ada,
        &note,
        "markdown",
        json!({"expected_version": 2, "text": "agent line\nperson line", "idempotency_key": "save-1"}),
    )
    .unwrap();
    assert_eq!(again.body["replayed"], true);
    assert_eq!(w.tab(&bot, &note, "markdown")["text"], "agent line\nperson line");
}

#[test]
fn write_tab_takes_exactly_one_of_text_or_data_and_fits_the_tab_type() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let deck = w.create_tab(&ada, &note, "slides", "Deck");
    let r = rest::write_tab(&w.kv, &mut w.env, &ada, &note, "markdown", json!({"expected_version": 2})).unwrap();
    assert_eq!(r.status, 400);
    let r = rest::write_tab(&w.kv, &mut w.env, &ada, &note, &deck, json!({"expected_version": 2, "text": "x"})).unwrap();
    assert_eq!(r.status, 400);
    assert_eq!(r.body["field"], "operation");
    let r = rest::write_tab(
        &w.kv,
        &mut w.env,
        &ada,
        &note,
        &deck,
        json!({"expected_version": 2, "data": {"slides": [{"title": "A"}, {"title": "B", "body": "b"}]}}),
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(w.tab(&ada, &note, &deck)["slides"][1]["body"], "b");
    let r = rest::write_tab(&w.kv, &mut w.env, &ada, "note-missing", "markdown", json!({"expected_version": 1, "text": "x"})).unwrap();
    assert_eq!(r.status, 404);
}

#[test]
fn attached_files_are_listed_as_metadata_only() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    let r = rest::attach_file(
        &w.kv,
        &mut w.env,
        &ada,
        &note,
        json!({"expected_version": 1, "name": "q3.pdf", "media_type": "application/pdf", "size_bytes": 12345}),
    )
    .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    let list = w.ok(&bot, "list_note_attachments", json!({"note_id": note, "kind": "files"}));
    let item = &list["attachments"][0];
    assert_eq!(item["kind"], "file");
    assert_eq!(item["name"], "q3.pdf");
    assert_eq!(item["size_bytes"], 12345);
    let keys: Vec<&str> = item.as_object().unwrap().keys().map(String::as_str).collect();
    for forbidden in ["content", "url", "link", "download_url"] {
        assert!(!keys.contains(&forbidden), "{forbidden}");
    }
    assert_eq!(w.ok(&bot, "list_note_attachments", json!({"note_id": note, "kind": "sources"}))["total"], 0);
}
