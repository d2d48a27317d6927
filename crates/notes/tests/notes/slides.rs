//! Slides: outlines of 1-20 items of only title, body, notes.
use crate::common::*;
use serde_json::{Value, json};

fn outline(n: usize) -> Vec<Value> {
    (0..n).map(|i| json!({"title": format!("Slide {i}"), "body": "b"})).collect()
}

#[test]
fn create_note_tab_fills_a_deck_from_an_outline_of_up_to_20_slides() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Deck", true);
    let r = w.ok(
        &bot,
        "create_note_tab",
        json!({"note_id": note, "expected_version": 1, "idempotency_key": "k",
        "tab_type": "slides", "label": "Pitch", "slides": outline(20)}),
    );
    let tab = w.tab(&bot, &note, r["tab_id"].as_str().unwrap());
    assert_eq!(tab["slides"].as_array().unwrap().len(), 20);
    assert_eq!(tab["slides"][19]["title"], "Slide 19");
    assert_eq!(tab["slides"][0]["notes"], "");
}

#[test]
fn outlines_of_zero_or_more_than_20_slides_are_refused_and_nothing_written() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Deck", true);
    let deck = w.create_tab(&human("acme"), &note, "slides", "Deck");
    let before = w.kv.notes_state();
    for n in [0, 21] {
        let r = w.refused(
            &bot,
            "create_note_tab",
            json!({"note_id": note, "expected_version": 2, "idempotency_key": "k",
            "tab_type": "slides", "slides": outline(n)}),
        );
        assert_eq!(r["error"], "invalid_argument");
        assert_eq!(r["field"], "slides");
        let r = w.refused(
            &bot,
            "edit_note_tab",
            json!({"note_id": note, "tab_id": deck, "expected_version": 2,
            "idempotency_key": "k", "operation": "slides_add_outline", "slides": outline(n)}),
        );
        assert_eq!(r["field"], "slides");
    }
    assert_eq!(w.kv.notes_state(), before);
}

#[test]
fn unknown_slide_fields_are_refused() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Deck", true);
    let deck = w.create_tab(&human("acme"), &note, "slides", "Deck");
    let before = w.kv.notes_state();
    let r = w.refused(
        &bot,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": deck, "expected_version": 2,
        "idempotency_key": "k", "operation": "slides_add_outline", "slides": [{"title": "a", "bullets": ["x"]}]}),
    );
    assert_eq!(r["field"], "slides");
    assert!(r["message"].as_str().unwrap().contains("bullets"));
    let r = w.refused(
        &bot,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": deck, "expected_version": 2,
        "idempotency_key": "k", "operation": "slide_add", "title": "Sources", "index": 0}),
    );
    assert_eq!(r["field"], "index");
    let r = w.refused(
        &bot,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": deck, "expected_version": 2,
        "idempotency_key": "k", "operation": "replace_tab_data", "data": {"slides": [{"title": "a", "layout": "two"}]}}),
    );
    assert_eq!(r["error"], "invalid_argument");
    assert!(r["field"].as_str().unwrap().starts_with("data.slides"));
    let r = w.refused(
        &bot,
        "create_note_tab",
        json!({"note_id": note, "expected_version": 2, "idempotency_key": "k",
        "tab_type": "slides", "slides": [{"body": "no title"}]}),
    );
    assert_eq!(r["field"], "slides");
    assert_eq!(w.kv.notes_state(), before);
}

#[test]
fn slide_add_and_outline_append_in_order_and_replace_tab_data_replaces() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Deck", true);
    let deck = w.create_tab(&bot, &note, "slides", "Deck");
    w.ok(
        &bot,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": deck, "expected_version": 2, "idempotency_key": "a",
        "operation": "slide_add", "title": "One", "body": "b1", "notes": "n1"}),
    );
    w.ok(
        &bot,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": deck, "expected_version": 3, "idempotency_key": "b",
        "operation": "slides_add_outline", "slides": [{"title": "Two"}, {"title": "Three", "notes": "n3"}]}),
    );
    let tab = w.tab(&bot, &note, &deck);
    let titles: Vec<&str> = tab["slides"].as_array().unwrap().iter().map(|s| s["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["One", "Two", "Three"]);
    assert_eq!(tab["slides"][0]["notes"], "n1");
    w.ok(
        &bot,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": deck, "expected_version": 4, "idempotency_key": "c",
        "operation": "replace_tab_data", "data": {"slides": [{"title": "Only"}]}}),
    );
    assert_eq!(w.tab(&bot, &note, &deck)["slides"].as_array().unwrap().len(), 1);
}

#[test]
fn a_sheet_tab_takes_no_outline() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Deck", true);
    let r = w.refused(
        &bot,
        "create_note_tab",
        json!({"note_id": note, "expected_version": 1, "idempotency_key": "k",
        "tab_type": "sheet", "slides": outline(1)}),
    );
    assert_eq!(r["field"], "slides");
    let r = w.refused(
        &bot,
        "create_note_tab",
        json!({"note_id": note, "expected_version": 1, "idempotency_key": "k",
        "tab_type": "markdown"}),
    );
    assert_eq!(r["field"], "tab_type");
}
