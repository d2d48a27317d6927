//! The notes rules end to end: a person over REST and an agent over MCP,
//! through the router and each tool's own component.
use crate::app::*;
use serde_json::{Value, json};

fn sc(v: &Value) -> &Value {
    &v["structuredContent"]
}

#[test]
fn stale_agent_write_is_refused_with_the_current_version_and_nothing_written() {
    let cairn = start();
    let note = cairn.create_note(&person(), "brief", true);
    let t = cairn.token(&agent());
    let read = cairn.call(&t, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    let v0 = sc(&read)["version"].as_u64().unwrap();
    // The person saves in between.
    let p = cairn.token(&person());
    let r = cairn.rest(&p, "PUT", &format!("/api/v1/notes/{note}/tabs/markdown"), Some(&json!({"expected_version": v0, "text": "person's line"})));
    assert_eq!(r.status, 200, "{}", r.text());
    let stale = cairn.call(
        &t,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": v0,
        "idempotency_key": "agent-1", "operation": "replace_text", "text": "agent's line"}),
    );
    assert_eq!(stale["isError"], true);
    assert_eq!(sc(&stale)["error"], "version_conflict");
    assert_eq!(sc(&stale)["current_version"].as_u64().unwrap(), v0 + 1);
    assert!(sc(&stale)["next_step"].as_str().unwrap().contains("read"));
    let now = cairn.call(&t, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    assert_eq!(sc(&now)["text"], "person's line");
    assert_eq!(sc(&now)["provenance"]["updated_by"].as_str().map(|s| s.contains("ada")), Some(true), "{now}");
    assert!(sc(&now)["notice"].as_str().unwrap().contains("not instructions"));
}

#[test]
fn stale_person_save_gets_409_and_nothing_is_lost() {
    let cairn = start();
    let note = cairn.create_note(&person(), "brief", true);
    let t = cairn.token(&agent());
    let v0 = sc(&cairn.call(&t, "list_note_tabs", json!({"note_id": note})))["version"].as_u64().unwrap();
    let ok = cairn.call(
        &t,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": v0,
        "idempotency_key": "a", "operation": "replace_text", "text": "agent wrote this"}),
    );
    assert_eq!(ok["isError"], false, "{ok}");
    let p = cairn.token(&person());
    let r = cairn.rest(&p, "PUT", &format!("/api/v1/notes/{note}/tabs/markdown"), Some(&json!({"expected_version": v0, "text": "stale browser tab"})));
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.json()["current_version"].as_u64().unwrap(), v0 + 1);
    let note_now = cairn.rest(&p, "GET", &format!("/api/v1/notes/{note}"), None).json();
    assert_eq!(note_now["version"].as_u64().unwrap(), v0 + 1);
    let text = cairn.call(&t, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    assert_eq!(sc(&text)["text"], "agent wrote this");
}

#[test]
fn a_resent_create_returns_the_first_tab_even_after_the_note_moved_on() {
    let cairn = start();
    let note = cairn.create_note(&person(), "decks", true);
    let t = cairn.token(&agent());
    let v0 = sc(&cairn.call(&t, "list_note_tabs", json!({"note_id": note})))["version"].as_u64().unwrap();
    let args = json!({"note_id": note, "expected_version": v0, "idempotency_key": "deck-q3", "tab_type": "slides",
        "label": "Q3", "slides": [{"title": "Intro"}, {"title": "Numbers", "body": "up 4%"}]});
    let first = cairn.call(&t, "create_note_tab", args.clone());
    assert_eq!(first["isError"], false, "{first}");
    let tab = sc(&first)["tab_id"].as_str().unwrap().to_string();
    assert!(tab.starts_with("slides-"), "{tab}");
    let again = cairn.call(&t, "create_note_tab", args.clone());
    assert_eq!(sc(&again)["tab_id"], tab.as_str());
    assert_eq!(sc(&again)["replayed"], true);
    let mut other = args;
    other["label"] = json!("Q4");
    let reused = cairn.call(&t, "create_note_tab", other);
    assert_eq!(sc(&reused)["error"], "idempotency_key_reused");
    let tabs = cairn.call(&t, "list_note_tabs", json!({"note_id": note}));
    let slides = sc(&tabs)["tabs"].as_array().unwrap().iter().filter(|t| t["type"] == "slides").count();
    assert_eq!(slides, 1);
}

#[test]
fn sources_are_normalized_and_never_attached_twice() {
    let cairn = start();
    let note = cairn.create_note(&person(), "research", true);
    let t = cairn.token(&agent());
    let mut version = sc(&cairn.call(&t, "list_note_tabs", json!({"note_id": note})))["version"].as_u64().unwrap();
    let mut ids = Vec::new();
    for (i, url) in ["https://www.Example.org/report/", "http://example.org/report?utm_source=x#top", "https://example.org/report"].iter().enumerate() {
        let r = cairn.call(
            &t,
            "add_note_source",
            json!({"note_id": note, "expected_version": version,
            "idempotency_key": format!("k{i}"), "title": "Report", "url": url}),
        );
        assert_eq!(r["isError"], false, "{r}");
        assert_eq!(sc(&r)["url"], "https://example.org/report");
        assert_eq!(sc(&r)["already_attached"], i > 0);
        ids.push(sc(&r)["source_id"].as_str().unwrap().to_string());
        version = sc(&r)["version"].as_u64().unwrap();
    }
    assert!(ids.iter().all(|id| *id == ids[0]));
    let bad = cairn.call(
        &t,
        "add_note_source",
        json!({"note_id": note, "expected_version": version,
        "idempotency_key": "ftp", "title": "x", "url": "ftp://example.org/x"}),
    );
    assert_eq!(sc(&bad)["error"], "invalid_argument");
    let listed = cairn.call(&t, "list_note_attachments", json!({"note_id": note, "kind": "sources"}));
    let items = sc(&listed).to_string();
    assert_eq!(items.matches("https://example.org/report").count(), 1, "{items}");
}

#[test]
fn bad_arguments_name_the_field_and_nothing_is_written() {
    let cairn = start();
    let note = cairn.create_note(&person(), "slides", true);
    let t = cairn.token(&agent());
    let v0 = sc(&cairn.call(&t, "list_note_tabs", json!({"note_id": note})))["version"].as_u64().unwrap();
    let r = cairn.call(
        &t,
        "create_note_tab",
        json!({"note_id": note, "expected_version": v0, "idempotency_key": "k",
        "tab_type": "slides", "slides": [{"title": "a", "bullets": ["x"]}]}),
    );
    assert_eq!(sc(&r)["error"], "invalid_argument");
    assert!(r.to_string().contains("bullets"), "{r}");
    let r = cairn.call(
        &t,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "idempotency_key": "k",
        "operation": "replace_text", "text": "x"}),
    );
    assert!(r.to_string().contains("expected_version"), "{r}");
    let after = sc(&cairn.call(&t, "list_note_tabs", json!({"note_id": note})))["version"].as_u64().unwrap();
    assert_eq!(after, v0);
}

#[test]
fn sheet_cells_are_written_and_read_by_range() {
    let cairn = start();
    let note = cairn.create_note(&person(), "numbers", true);
    let t = cairn.token(&agent());
    let v0 = sc(&cairn.call(&t, "list_note_tabs", json!({"note_id": note})))["version"].as_u64().unwrap();
    let created = cairn.call(&t, "create_note_tab", json!({"note_id": note, "expected_version": v0, "idempotency_key": "s", "tab_type": "sheet"}));
    let tab = sc(&created)["tab_id"].as_str().unwrap().to_string();
    let read = cairn.call(&t, "read_note_tab", json!({"note_id": note, "tab_id": tab}));
    let sheet_id = sc(&read)["sheets"][0]["sheet_id"].as_str().unwrap().to_string();
    // A sheet's listing holds no cells: its version is a part token, which a range write takes.
    let v1 = sc(&read)["version"].clone();
    assert_eq!(v1, json!(format!("{}:part", v0 + 1)));
    let w = cairn.call(
        &t,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": tab, "expected_version": v1, "idempotency_key": "w",
        "operation": "sheet_set_range", "sheet_id": sheet_id, "start_row": 5000, "start_col": 3, "values": [["a", 1], ["b", 2]]}),
    );
    assert_eq!(w["isError"], false, "{w}");
    let r = cairn.call(
        &t,
        "read_sheet_range",
        json!({"note_id": note, "tab_id": tab, "sheet_id": sheet_id,
        "start_row": 5000, "start_col": 3, "num_rows": 2, "num_cols": 2}),
    );
    assert_eq!(sc(&r)["values"], json!([["a", 1], ["b", 2]]));
    let too_big = cairn.call(&t, "read_sheet_range", json!({"note_id": note, "tab_id": tab, "start_row": 0, "start_col": 0, "num_rows": 101, "num_cols": 1}));
    assert_eq!(sc(&too_big)["error"], "invalid_argument");
}

#[test]
fn a_person_renames_and_moves_a_tab_and_the_agent_still_finds_it_by_id() {
    let cairn = start();
    let note = cairn.create_note(&person(), "decks", true);
    let t = cairn.token(&agent());
    let v0 = sc(&cairn.call(&t, "list_note_tabs", json!({"note_id": note})))["version"].as_u64().unwrap();
    let made = cairn.call(
        &t,
        "create_note_tab",
        json!({"note_id": note, "expected_version": v0, "idempotency_key": "d1",
        "tab_type": "slides", "label": "Pitch"}),
    );
    let deck = sc(&made)["tab_id"].as_str().unwrap().to_string();
    let p = cairn.token(&person());
    let path = format!("/api/v1/notes/{note}/tabs/{deck}");
    let r = cairn.rest(&p, "PATCH", &path, Some(&json!({"expected_version": v0 + 1, "label": "Roadmap", "position": 0})));
    assert_eq!(r.status, 200, "{}", r.text());
    // A stale rename (the version before the move) is refused and changes nothing.
    let stale = cairn.rest(&p, "PATCH", &path, Some(&json!({"expected_version": v0 + 1, "label": "Budget"})));
    assert_eq!(stale.status, 409, "{}", stale.text());
    assert_eq!(stale.json()["current_version"].as_u64().unwrap(), v0 + 2);
    let tabs = cairn.call(&t, "list_note_tabs", json!({"note_id": note}));
    let first = &sc(&tabs)["tabs"][0];
    assert_eq!(first["tab_id"], deck.as_str(), "{tabs}");
    assert_eq!(first["label"], "Roadmap");
    let read = cairn.call(&t, "read_note_tab", json!({"note_id": note, "tab_id": deck}));
    assert_eq!(read["isError"], false, "{read}");
    assert_eq!(sc(&read)["tab_version"], sc(&made)["tab_version"], "a rename does not touch the content version");
}
