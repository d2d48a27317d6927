//! Agents see only notes approved for agents; anything else is not_found for them.
mod common;
use cairn_notes::rest;
use common::*;
use serde_json::json;

#[test]
fn agent_cannot_see_or_write_an_unapproved_note() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let hidden = w.note(&ada, "People only", false);
    let missing = w.refused(&bot, "list_note_tabs", json!({"note_id": "note-nope"}));
    let r = w.refused(&bot, "list_note_tabs", json!({"note_id": hidden}));
    assert_eq!(r, missing);
    let r = w.refused(
        &bot,
        "read_note_tab",
        json!({"note_id": hidden, "tab_id": "markdown"}),
    );
    assert_eq!(r["error"], "not_found");
    let before = w.kv.notes_state();
    let r = w.refused(
        &bot,
        "edit_note_tab",
        json!({"note_id": hidden, "tab_id": "markdown", "expected_version": 1,
        "idempotency_key": "k", "operation": "replace_text", "text": "x"}),
    );
    assert_eq!(r["error"], "not_found");
    let r = w.refused(
        &bot,
        "add_note_source",
        json!({"note_id": hidden, "expected_version": 1,
        "idempotency_key": "k", "title": "t", "url": "https://example.org"}),
    );
    assert_eq!(r["error"], "not_found");
    assert_eq!(w.kv.notes_state(), before);
    let g = rest::get_note(&w.kv, &bot, &hidden).unwrap();
    assert_eq!(g.status, 404);
    // The person sees it.
    assert_eq!(
        w.ok(&ada, "list_note_tabs", json!({"note_id": hidden}))["note_id"],
        hidden.as_str()
    );
}

#[test]
fn list_notes_shows_agents_only_approved_notes_and_people_all() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let open = w.note(&ada, "Open", true);
    w.note(&ada, "Closed", false);
    let agent_view = w.ok(&bot, "list_notes", json!({}));
    let ids: Vec<&str> = agent_view["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["note_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [open.as_str()]);
    assert_eq!(
        w.ok(&ada, "list_notes", json!({}))["notes"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn agent_can_work_in_an_approved_note() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Open", true);
    let r = w.write_text(&bot, &note, "from the agent", "k1");
    assert_eq!(r["isError"], false);
    let read = w.tab(&bot, &note, "markdown");
    assert!(
        read["provenance"]["updated_by"]
            .as_str()
            .unwrap()
            .contains("agent")
    );
}
