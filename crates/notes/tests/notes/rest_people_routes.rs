//! The people's routes a browser editor needs: reads and writes through the
//! agents' tools (same rules, same results, refusals in the REST shape), and
//! `update_note`, the note's approval and title as one conditional write.
use crate::common::*;
use cairn_notes::Identity;
use cairn_notes::rest::{self, RestReply};
use serde_json::{Value, json};

/// A note approved for agents with text in its markdown tab (version 2).
fn note_with_text(w: &mut World, who: &Identity, text: &str) -> String {
    let note = w.note(who, "Plan", true);
    assert_eq!(w.write_text(who, &note, text, "seed")["isError"], false);
    note
}

fn edit(w: &mut World, who: &Identity, note: &str, tab: &str, body: Value) -> RestReply {
    rest::edit_tab(&w.kv, &mut w.env, who, note, tab, body).unwrap()
}

fn update(w: &mut World, who: &Identity, note: &str, body: Value) -> RestReply {
    rest::update_note(&w.kv, &mut w.env, who, note, body).unwrap()
}

fn source(w: &mut World, who: &Identity, note: &str, body: Value) -> RestReply {
    rest::add_source(&w.kv, &mut w.env, who, note, body).unwrap()
}

/// The newest history entry of a note.
fn newest_entry(w: &mut World, who: &Identity, note: &str) -> Value {
    let h = rest::note_history(&w.kv, &mut w.env, who, note, None, None, Some("1")).unwrap();
    assert_eq!(h.status, 200, "{}", h.body);
    h.body["entries"][0].clone()
}

#[test]
fn people_list_notes_pages_like_the_tool() {
    let mut w = World::new();
    let ada = human("acme");
    let notes: Vec<String> = ["One", "Two", "Three"].iter().map(|t| w.note(&ada, t, true)).collect();
    let first = rest::list_notes(&w.kv, &mut w.env, &ada, None, Some("2")).unwrap();
    assert_eq!(first.status, 200);
    assert_eq!(first.body, w.ok(&ada, "list_notes", json!({"limit": 2})));
    let ids: Vec<&str> = first.body["notes"].as_array().unwrap().iter().map(|n| n["note_id"].as_str().unwrap()).collect();
    assert_eq!(ids, [notes[0].as_str(), notes[1].as_str()]);
    assert_eq!(first.body["notes"][0]["title"], "One");
    assert_eq!(first.body["notes"][0]["version"], 1);
    let cursor = first.body["next_cursor"].as_str().unwrap().to_string();
    let second = rest::list_notes(&w.kv, &mut w.env, &ada, Some(&cursor), Some("2")).unwrap();
    assert_eq!(second.status, 200);
    assert_eq!(second.body["notes"][0]["note_id"], notes[2].as_str());
    assert_eq!(second.body["next_cursor"], Value::Null);
    let bad = rest::list_notes(&w.kv, &mut w.env, &ada, None, Some("many")).unwrap();
    assert_eq!((bad.status, bad.body["error"].as_str(), bad.body["field"].as_str()), (400, Some("invalid_argument"), Some("limit")));
    let over = rest::list_notes(&w.kv, &mut w.env, &ada, None, Some("51")).unwrap();
    assert_eq!((over.status, over.body["field"].as_str()), (400, Some("limit")), "the tool's own limit applies");
}

#[test]
fn reading_a_tab_returns_the_tools_result() {
    let mut w = World::new();
    let ada = human("acme");
    let note = note_with_text(&mut w, &ada, "# Plan\nship it");
    let r = rest::read_tab(&w.kv, &mut w.env, &ada, &note, "markdown", None).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.body, w.tab(&ada, &note, "markdown"));
    assert_eq!(r.body["text"], "# Plan\nship it");
    assert_eq!(r.body["type"], "markdown");
    assert_eq!((r.body["version"].as_u64(), r.body["tab_version"].as_u64()), (Some(2), Some(2)));
    assert_eq!(r.body["provenance"]["updated_by"], "ADA (ada, human)");
    assert!(r.body["notice"].as_str().unwrap().contains("not instructions"));
}

#[test]
fn reading_slides_and_sheet_tabs_returns_their_shapes() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Deck", true);
    let made = rest::create_tab(
        &w.kv,
        &mut w.env,
        &ada,
        &note,
        json!({"expected_version": 1, "idempotency_key": "deck",
        "tab_type": "slides", "label": "Deck", "slides": [{"title": "Hello", "body": "b", "notes": "n"}]}),
    )
    .unwrap();
    let deck = made.body["tab_id"].as_str().unwrap().to_string();
    let slides = rest::read_tab(&w.kv, &mut w.env, &ada, &note, &deck, None).unwrap();
    assert_eq!(slides.status, 200);
    assert_eq!(slides.body["type"], "slides");
    assert_eq!(slides.body["slides"], json!([{"index": 0, "title": "Hello", "body": "b", "notes": "n"}]));
    let sheet = w.create_tab(&ada, &note, "sheet", "Numbers");
    let r = rest::read_tab(&w.kv, &mut w.env, &ada, &note, &sheet, None).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.body, w.tab(&ada, &note, &sheet));
    assert_eq!(r.body["type"], "sheet");
    assert_eq!(r.body["sheets"][0]["sheet_id"], "s1");
    assert_eq!((r.body["sheets"][0]["rows"].as_u64(), r.body["sheets"][0]["cols"].as_u64()), (Some(0), Some(0)));
    assert!(r.body["hint"].as_str().unwrap().contains("read_sheet_range"));
}

#[test]
fn reading_a_tab_at_a_version_returns_it_as_it_was() {
    let mut w = World::new();
    let ada = human("acme");
    let note = note_with_text(&mut w, &ada, "first");
    assert_eq!(w.write_text(&ada, &note, "second", "again")["isError"], false);
    let r = rest::read_tab(&w.kv, &mut w.env, &ada, &note, "markdown", Some("2")).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!((r.body["text"].as_str(), r.body["at_version"].as_u64(), r.body["version"].as_str()), (Some("first"), Some(2), Some("3:part")));
    let bad = rest::read_tab(&w.kv, &mut w.env, &ada, &note, "markdown", Some("two")).unwrap();
    assert_eq!((bad.status, bad.body["field"].as_str()), (400, Some("at_version")));
}

#[test]
fn a_sheet_range_in_a1_notation_reads_those_cells() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Data", true);
    let sheet = w.create_tab(&ada, &note, "sheet", "Numbers");
    let set = edit(
        &mut w,
        &ada,
        &note,
        &sheet,
        json!({"expected_version": 2, "idempotency_key": "cells", "operation": "sheet_set_range",
        "sheet_id": "s1", "start_row": 0, "start_col": 0, "values": [["a", "b", "c"], ["d", "e", "f"], ["g", "h", "i"]]}),
    );
    assert_eq!(set.status, 200, "{}", set.body);
    let r = rest::read_range(&w.kv, &mut w.env, &ada, &note, &sheet, Some("B2:C3"), None).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["values"], json!([["e", "f"], ["h", "i"]]));
    let from_tool = w.ok(&ada, "read_sheet_range", json!({"note_id": note, "tab_id": sheet, "start_row": 1, "start_col": 1, "num_rows": 2, "num_cols": 2}));
    assert_eq!(r.body, from_tool);
    let one = rest::read_range(&w.kv, &mut w.env, &ada, &note, &sheet, Some("a1"), Some("s1")).unwrap();
    assert_eq!((one.status, one.body["values"].clone()), (200, json!([["a"]])));
    for (range, field) in [(Some("C3:A1"), "range"), (Some("1A"), "range"), (Some("A0"), "range"), (None, "range"), (Some("A1:A101"), "num_rows")] {
        let bad = rest::read_range(&w.kv, &mut w.env, &ada, &note, &sheet, range, None).unwrap();
        assert_eq!((bad.status, bad.body["field"].as_str()), (400, Some(field)), "{range:?}: {}", bad.body);
    }
    let markdown = rest::read_range(&w.kv, &mut w.env, &ada, &note, "markdown", Some("A1"), None).unwrap();
    assert_eq!((markdown.status, markdown.body["field"].as_str()), (400, Some("tab_id")));
}

#[test]
fn the_edit_route_gives_people_every_tool_operation() {
    let mut w = World::new();
    let ada = human("acme");
    let note = note_with_text(&mut w, &ada, "line one");
    let appended =
        edit(&mut w, &ada, &note, "markdown", json!({"expected_version": 2, "idempotency_key": "add", "operation": "append_text", "text": "line two"}));
    assert_eq!(appended.status, 200, "{}", appended.body);
    assert_eq!((appended.body["version"].as_u64(), appended.body["tab_id"].as_str()), (Some(3), Some("markdown")));
    assert_eq!(w.tab(&ada, &note, "markdown")["text"], "line one\nline two\n");
    let deck = w.create_tab(&ada, &note, "slides", "Deck");
    let slide = edit(&mut w, &ada, &note, &deck, json!({"expected_version": 4, "idempotency_key": "slide", "operation": "slide_add", "title": "Intro"}));
    assert_eq!(slide.status, 200, "{}", slide.body);
    assert_eq!(w.tab(&ada, &note, &deck)["slides"][0]["title"], "Intro");
    // Tab scope: the tab's own version, as the tool takes it.
    let tab_v = w.tab(&ada, &note, "markdown")["tab_version"].as_u64().unwrap();
    let scoped = edit(
        &mut w,
        &ada,
        &note,
        "markdown",
        json!({"expected_version": tab_v, "version_scope": "tab", "idempotency_key": "swap",
        "operation": "replace_in_text", "old_text": "two", "new_text": "2"}),
    );
    assert_eq!(scoped.status, 200, "{}", scoped.body);
    assert_eq!(w.tab(&ada, &note, "markdown")["text"], "line one\nline 2\n");
    let replay = edit(
        &mut w,
        &ada,
        &note,
        "markdown",
        json!({"expected_version": tab_v, "version_scope": "tab", "idempotency_key": "swap",
        "operation": "replace_in_text", "old_text": "two", "new_text": "2"}),
    );
    assert_eq!((replay.status, replay.body["replayed"].as_bool(), replay.body["version"].clone()), (200, Some(true), scoped.body["version"].clone()));
}

#[test]
fn edit_route_refuses_a_tab_id_that_disagrees_with_the_path() {
    let mut w = World::new();
    let ada = human("acme");
    let note = note_with_text(&mut w, &ada, "keep");
    let before = w.kv.notes_state();
    let body = json!({"tab_id": "files", "expected_version": 2, "idempotency_key": "k", "operation": "append_text", "text": "x"});
    let r = edit(&mut w, &ada, &note, "markdown", body);
    assert_eq!((r.status, r.body["error"].as_str(), r.body["field"].as_str()), (400, Some("invalid_argument"), Some("tab_id")));
    assert!(r.body["message"].as_str().unwrap().contains("markdown"), "{}", r.body);
    let r = edit(
        &mut w,
        &ada,
        &note,
        "markdown",
        json!({"note_id": "note-other", "expected_version": 2, "idempotency_key": "k",
        "operation": "append_text", "text": "x"}),
    );
    assert_eq!((r.status, r.body["field"].as_str()), (400, Some("note_id")));
    assert_eq!(w.kv.notes_state(), before, "nothing was written");
    // The same ids as the path are fine.
    let same = edit(
        &mut w,
        &ada,
        &note,
        "markdown",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": 2,
        "idempotency_key": "k", "operation": "append_text", "text": "x"}),
    );
    assert_eq!(same.status, 200, "{}", same.body);
    assert_eq!(w.tab(&ada, &note, "markdown")["text"], "keep\nx\n");
}

#[test]
fn refused_tool_route_writes_are_audited_once_under_the_tool_name() {
    let mut w = World::new();
    let ada = human("acme");
    let note = note_with_text(&mut w, &ada, "x");
    let stale = edit(&mut w, &ada, &note, "markdown", json!({"expected_version": 1, "idempotency_key": "s", "operation": "append_text", "text": "y"}));
    assert_eq!(stale.status, 409);
    let wrong = edit(
        &mut w,
        &ada,
        &note,
        "markdown",
        json!({"tab_id": "sources", "expected_version": 2, "idempotency_key": "t",
        "operation": "append_text", "text": "y"}),
    );
    assert_eq!(wrong.status, 400);
    let records = w.refused_writes("acme");
    let seen: Vec<(&str, &str, Option<&str>)> =
        records.iter().map(|r| (r["tool"].as_str().unwrap(), r["error"].as_str().unwrap(), r["field"].as_str())).collect();
    assert_eq!(seen.len(), 2, "{records:?}");
    assert!(seen.contains(&("edit_note_tab", "version_conflict", None)), "{seen:?}");
    assert!(seen.contains(&("edit_note_tab", "invalid_argument", Some("tab_id"))), "{seen:?}");
    assert!(records.iter().all(|r| r["note_id"] == note.as_str()));
    // Reads record nothing.
    rest::read_tab(&w.kv, &mut w.env, &ada, &note, "nope", None).unwrap();
    assert_eq!(w.refused_writes("acme").len(), 2);
}

#[test]
fn create_tab_route_answers_201_with_the_new_tab() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let r = rest::create_tab(&w.kv, &mut w.env, &ada, &note, json!({"expected_version": 1, "idempotency_key": "sheet", "tab_type": "sheet"})).unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    let tab = r.body["tab_id"].as_str().unwrap();
    assert!(tab.starts_with("sheet-"), "{tab}");
    assert_eq!((r.body["label"].as_str(), r.body["version"].as_u64(), r.body["note_id"].as_str()), (Some("Sheet"), Some(2), Some(note.as_str())));
    let g = rest::get_note(&w.kv, &ada, &note).unwrap();
    assert_eq!(g.body["tabs"][3]["tab_id"], tab);
    let again = rest::create_tab(&w.kv, &mut w.env, &ada, &note, json!({"expected_version": 1, "idempotency_key": "sheet", "tab_type": "sheet"})).unwrap();
    assert_eq!((again.status, again.body["tab_id"].as_str(), again.body["replayed"].as_bool()), (201, Some(tab), Some(true)));
    let keyless = rest::create_tab(&w.kv, &mut w.env, &ada, &note, json!({"expected_version": 2, "tab_type": "slides"})).unwrap();
    assert_eq!((keyless.status, keyless.body["field"].as_str()), (400, Some("idempotency_key")));
    let stale = rest::create_tab(&w.kv, &mut w.env, &ada, &note, json!({"expected_version": 1, "idempotency_key": "late", "tab_type": "slides"})).unwrap();
    assert_eq!((stale.status, stale.body["current_version"].as_u64()), (409, Some(2)));
}

#[test]
fn adding_a_source_answers_201_and_lists_it_with_the_attachments() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let r = source(&mut w, &ada, &note, json!({"expected_version": 1, "idempotency_key": "src", "title": "Spec", "url": "https://www.Example.com/spec/"}));
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        (r.body["already_attached"].as_bool(), r.body["url"].as_str(), r.body["version"].as_u64()),
        (Some(false), Some("https://example.com/spec"), Some(2))
    );
    let id = r.body["source_id"].as_str().unwrap().to_string();
    let file =
        rest::attach_file(&w.kv, &mut w.env, &ada, &note, json!({"expected_version": 2, "name": "a.pdf", "media_type": "application/pdf", "size_bytes": 10}))
            .unwrap();
    assert_eq!(file.status, 201);
    let all = rest::list_attachments(&w.kv, &mut w.env, &ada, &note, None, None, None).unwrap();
    assert_eq!(all.status, 200);
    assert_eq!(all.body, w.ok(&ada, "list_note_attachments", json!({"note_id": note})));
    assert_eq!(all.body["total"], 2);
    assert_eq!(all.body["attachments"][0]["kind"], "file");
    assert_eq!(all.body["attachments"][1]["source_id"], id.as_str());
    let page = rest::list_attachments(&w.kv, &mut w.env, &ada, &note, Some("sources"), None, Some("1")).unwrap();
    assert_eq!((page.body["attachments"][0]["title"].as_str(), page.body["total"].as_u64()), (Some("Spec"), Some(1)));
    let bad = rest::list_attachments(&w.kv, &mut w.env, &ada, &note, Some("links"), None, None).unwrap();
    assert_eq!((bad.status, bad.body["field"].as_str()), (400, Some("kind")));
}

#[test]
fn source_already_attached_answers_200_with_the_existing_source() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let first = source(&mut w, &ada, &note, json!({"expected_version": 1, "idempotency_key": "one", "title": "Spec", "url": "https://example.com/spec"}));
    assert_eq!(first.status, 201);
    let before = w.kv.notes_state();
    let again = source(
        &mut w,
        &ada,
        &note,
        json!({"expected_version": 2, "idempotency_key": "two", "title": "Other title",
        "url": "http://www.example.com/spec/?utm_source=x#top"}),
    );
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body["already_attached"], true);
    assert_eq!(again.body["source_id"], first.body["source_id"]);
    assert_eq!(
        (again.body["title"].as_str(), again.body["url"].as_str(), again.body["version"].as_u64()),
        (Some("Spec"), Some("https://example.com/spec"), Some(2))
    );
    assert_eq!(again.body["replayed"], false);
    assert_eq!(w.kv.notes_state(), before, "nothing was written");
}

#[test]
fn update_note_approves_for_agents_as_a_conditional_write() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Private", false);
    assert_eq!(w.ok(&bot, "list_notes", json!({}))["notes"], json!([]), "not approved yet");
    let r = update(&mut w, &ada, &note, json!({"expected_version": 1, "approved_for_agents": true}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        (r.body["version"].as_u64(), r.body["approved_for_agents"].as_bool(), r.body["title"].as_str(), r.body["replayed"].as_bool()),
        (Some(2), Some(true), Some("Private"), Some(false))
    );
    assert_eq!(w.ok(&bot, "list_notes", json!({}))["notes"][0]["note_id"], note.as_str());
    let entry = newest_entry(&mut w, &ada, &note);
    assert_eq!((entry["version"].as_u64(), entry["action"].as_str(), entry["tab_id"].clone()), (Some(2), Some("update_note"), Value::Null));
    assert_eq!(entry["by"]["actor_type"], "human");
    let g = rest::get_note(&w.kv, &ada, &note).unwrap();
    assert_eq!((g.body["version"].as_u64(), g.body["approved_for_agents"].as_bool()), (Some(2), Some(true)));
    // Withdrawn again: hidden from agents.
    assert_eq!(update(&mut w, &ada, &note, json!({"expected_version": 2, "approved_for_agents": false})).status, 200);
    assert_eq!(w.refused(&bot, "list_note_tabs", json!({"note_id": note}))["error"], "not_found");
}

#[test]
fn update_note_renames_within_the_create_note_limits() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Old", true);
    let before = w.kv.notes_state();
    for title in [String::new(), "x".repeat(201)] {
        let r = update(&mut w, &ada, &note, json!({"expected_version": 1, "title": title}));
        assert_eq!((r.status, r.body["field"].as_str()), (400, Some("title")), "{}", r.body);
    }
    assert_eq!(w.kv.notes_state(), before);
    let r = update(&mut w, &ada, &note, json!({"expected_version": 1, "title": "x".repeat(200)}));
    assert_eq!(r.status, 200, "{}", r.body);
    let r = update(&mut w, &ada, &note, json!({"expected_version": 2, "title": "New"}));
    assert_eq!((r.status, r.body["title"].as_str(), r.body["approved_for_agents"].as_bool()), (200, Some("New"), Some(true)));
    assert_eq!(rest::get_note(&w.kv, &ada, &note).unwrap().body["title"], "New");
    assert_eq!(w.ok(&ada, "list_notes", json!({}))["notes"][0]["title"], "New");
}

#[test]
fn empty_update_note_is_refused_naming_the_fields() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let before = w.kv.notes_state();
    let r = update(&mut w, &ada, &note, json!({"expected_version": 1}));
    assert_eq!((r.status, r.body["error"].as_str()), (400, Some("invalid_argument")));
    let message = r.body["message"].as_str().unwrap();
    assert!(message.contains("approved_for_agents") && message.contains("title"), "{message}");
    let unknown = update(&mut w, &ada, &note, json!({"expected_version": 1, "label": "x"}));
    assert_eq!((unknown.status, unknown.body["field"].as_str()), (400, Some("label")));
    let missing = update(&mut w, &ada, &note, json!({"title": "x"}));
    assert_eq!((missing.status, missing.body["field"].as_str()), (400, Some("expected_version")));
    assert_eq!(w.kv.notes_state(), before);
}

#[test]
fn stale_update_note_is_refused_and_nothing_written() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    assert_eq!(w.write_text(&bot, &note, "agent line", "a1")["isError"], false);
    let before = w.kv.notes_state();
    let r = update(&mut w, &ada, &note, json!({"expected_version": 1, "title": "Renamed", "idempotency_key": "rename"}));
    assert_eq!((r.status, r.body["error"].as_str(), r.body["current_version"].as_u64()), (409, Some("version_conflict"), Some(2)));
    assert_eq!(r.body["next_step"], cairn_notes::NEXT_STEP_REREAD);
    assert_eq!(w.kv.notes_state(), before, "nothing was written");
    assert_eq!(rest::get_note(&w.kv, &ada, &note).unwrap().body["title"], "Plan");
}

#[test]
fn update_note_replays_with_its_key() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", false);
    let body = json!({"expected_version": 1, "approved_for_agents": true, "idempotency_key": "approve-1"});
    let first = update(&mut w, &ada, &note, body.clone());
    assert_eq!(first.status, 200, "{}", first.body);
    let after_first = w.kv.notes_state();
    let again = update(&mut w, &ada, &note, body);
    assert_eq!((again.status, again.body["replayed"].as_bool(), again.body["version"].as_u64()), (200, Some(true), Some(2)));
    assert_eq!(w.kv.notes_state(), after_first, "a replay writes nothing");
    let other = update(&mut w, &ada, &note, json!({"expected_version": 1, "title": "Else", "idempotency_key": "approve-1"}));
    assert_eq!((other.status, other.body["error"].as_str(), other.body["field"].as_str()), (409, Some("idempotency_key_reused"), Some("idempotency_key")));
}

#[test]
fn a_whole_note_claim_by_someone_else_refuses_update_note() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    let tab_claim = w.claim_ok(&bot, &note, Some("markdown"));
    let r = update(&mut w, &ada, &note, json!({"expected_version": 1, "title": "Renamed"}));
    assert_eq!(r.status, 200, "a claim on one tab leaves the note's title alone: {}", r.body);
    assert_eq!(rest::release_claim(&w.kv, &mut w.env, &bot, &tab_claim).unwrap().status, 200);
    let claim = w.claim_ok(&bot, &note, None);
    let before = w.kv.notes_state();
    let r = update(&mut w, &ada, &note, json!({"expected_version": 2, "approved_for_agents": false}));
    assert_eq!((r.status, r.body["error"].as_str()), (409, Some("claim_conflict")), "{}", r.body);
    assert_eq!(
        (r.body["claim_id"].as_str(), r.body["actor_type"].as_str(), r.body["current_version"].as_u64()),
        (Some(claim.as_str()), Some("agent"), Some(2))
    );
    assert_eq!(r.body["next_step"], cairn_notes::NEXT_STEP_CLAIM);
    assert_eq!(
        w.kv.notes_state().iter().filter(|(k, _)| !k.contains("/audit/")).collect::<Vec<_>>(),
        before.iter().filter(|(k, _)| !k.contains("/audit/")).collect::<Vec<_>>(),
        "nothing was written"
    );
    // The holder itself may write.
    let own = update(&mut w, &bot, &note, json!({"expected_version": 2, "title": "Bot's"}));
    assert_eq!(own.status, 200, "{}", own.body);
}

#[test]
fn only_people_change_a_notes_approval() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    let before = w.kv.notes_state();
    let r = update(&mut w, &bot, &note, json!({"expected_version": 1, "approved_for_agents": false}));
    assert_eq!((r.status, r.body["error"].as_str(), r.body["field"].as_str()), (403, Some("forbidden"), Some("approved_for_agents")));
    assert_eq!(w.kv.notes_state(), before);
    let renamed = update(&mut w, &bot, &note, json!({"expected_version": 1, "title": "Agent title"}));
    assert_eq!((renamed.status, renamed.body["title"].as_str()), (200, Some("Agent title")));
}

#[test]
fn tool_refusal_keeps_the_rest_shape() {
    let mut w = World::new();
    let ada = human("acme");
    let note = note_with_text(&mut w, &ada, "x");
    let args = json!({"expected_version": 1, "idempotency_key": "late", "operation": "append_text", "text": "y"});
    let r = edit(&mut w, &ada, &note, "markdown", args.clone());
    let mut tool_args = args;
    tool_args["note_id"] = note.clone().into();
    tool_args["tab_id"] = "markdown".into();
    let from_tool = w.refused(&ada, "edit_note_tab", tool_args);
    assert_eq!(r.status, 409);
    assert_eq!(r.body, from_tool, "the body is the tool's refusal");
    assert_eq!((r.body["error"].as_str(), r.body["current_version"].as_u64()), (Some("version_conflict"), Some(2)));
    // The same shape as a REST helper's own refusal of the same conflict.
    let own = rest::write_tab(&w.kv, &mut w.env, &ada, &note, "markdown", json!({"expected_version": 1, "text": "z"})).unwrap();
    assert_eq!(own.status, r.status);
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&own.body), keys(&r.body));
    assert_eq!(own.body["next_step"], r.body["next_step"]);
    // Every code keeps its status: not found (also another tenant), too large, invalid.
    let missing = rest::read_tab(&w.kv, &mut w.env, &ada, &note, "slides-9-zzzz", None).unwrap();
    assert_eq!((missing.status, missing.body["error"].as_str()), (404, Some("not_found")));
    let elsewhere = rest::read_tab(&w.kv, &mut w.env, &human("globex"), &note, "markdown", None).unwrap();
    assert_eq!((elsewhere.status, elsewhere.body["error"].as_str()), (404, Some("not_found")));
    let huge = edit(
        &mut w,
        &ada,
        &note,
        "markdown",
        json!({"expected_version": 2, "idempotency_key": "big", "operation": "replace_text",
        "text": "x".repeat(1_000_001)}),
    );
    assert_eq!((huge.status, huge.body["error"].as_str(), huge.body["field"].as_str()), (413, Some("too_large"), Some("text")));
    let bad_op = edit(&mut w, &ada, &note, "markdown", json!({"expected_version": 2, "idempotency_key": "op", "operation": "rewrite"}));
    assert_eq!((bad_op.status, bad_op.body["field"].as_str()), (400, Some("operation")));
    assert!(bad_op.body["next_step"].is_string());
}
