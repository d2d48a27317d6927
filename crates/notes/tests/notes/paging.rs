//! Listings page with limit <= 50 and an opaque cursor.
use crate::common::*;
use serde_json::json;

#[test]
fn list_notes_pages_through_every_note_once_with_limit_50() {
    let mut w = World::new();
    let ada = human("acme");
    let mut created = Vec::new();
    for i in 0..300 {
        created.push(w.note(&ada, &format!("Note {i}"), true));
    }
    let mut seen = Vec::new();
    let mut cursor = None;
    let mut calls = 0;
    loop {
        let mut args = json!({"limit": 50});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = w.ok(&ada, "list_notes", args);
        calls += 1;
        let notes = page["notes"].as_array().unwrap();
        assert!(notes.len() <= 50);
        seen.extend(notes.iter().map(|n| n["note_id"].as_str().unwrap().to_string()));
        match page["next_cursor"].as_str() {
            Some(c) => {
                assert!(!c.contains(':') && !c.chars().all(|c| c.is_ascii_digit()), "opaque cursor: {c}");
                cursor = Some(c.to_string());
            }
            None => break,
        }
        assert!(calls < 20);
    }
    assert_eq!(seen, created, "every note once, in creation order");
    assert_eq!(calls, 6);
}

#[test]
fn limit_above_50_or_below_1_and_foreign_cursors_are_refused() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "N", true);
    for limit in [0, 51, 100] {
        let r = w.refused(&ada, "list_notes", json!({"limit": limit}));
        assert_eq!(r["field"], "limit");
        let r = w.refused(&ada, "list_note_attachments", json!({"note_id": note, "limit": limit}));
        assert_eq!(r["field"], "limit");
    }
    for cursor in ["abc", "c1zz", "10"] {
        let r = w.refused(&ada, "list_notes", json!({"cursor": cursor}));
        assert_eq!(r["field"], "cursor");
    }
    // A cursor from one listing is not accepted by another.
    for i in 0..3 {
        w.note(&ada, &format!("More {i}"), true);
    }
    let page = w.ok(&ada, "list_notes", json!({"limit": 1}));
    let c = page["next_cursor"].as_str().unwrap();
    let r = w.refused(&ada, "list_note_attachments", json!({"note_id": note, "cursor": c}));
    assert_eq!(r["field"], "cursor");
}

#[test]
fn a_note_with_120_sources_lists_in_three_calls() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Research", true);
    for i in 0..120 {
        let v = w.version(&ada, &note);
        w.ok(
            &ada,
            "add_note_source",
            json!({"note_id": note, "expected_version": v, "idempotency_key": format!("s{i}"),
            "title": format!("Page {i}"), "url": format!("https://example.org/p/{i}")}),
        );
    }
    let mut sizes = Vec::new();
    let mut urls = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"note_id": note, "kind": "sources", "limit": 50});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = w.ok(&ada, "list_note_attachments", args);
        let items = page["attachments"].as_array().unwrap();
        sizes.push(items.len());
        urls.extend(items.iter().map(|i| i["url"].as_str().unwrap().to_string()));
        assert_eq!(page["total"], 120);
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(sizes, [50, 50, 20]);
    let expected: Vec<String> = (0..120).map(|i| format!("https://example.org/p/{i}")).collect();
    assert_eq!(urls, expected);
}

#[test]
fn agents_page_past_hidden_notes() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let mut open = Vec::new();
    for i in 0..30 {
        let id = w.note(&ada, &format!("N{i}"), i % 3 == 0);
        if i % 3 == 0 {
            open.push(id);
        }
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"limit": 4});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = w.ok(&bot, "list_notes", args);
        seen.extend(page["notes"].as_array().unwrap().iter().map(|n| n["note_id"].as_str().unwrap().to_string()));
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(seen, open);
}
