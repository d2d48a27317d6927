//! The tool registry: names, scopes, annotations, required fields and what descriptions say.
use crate::common::*;
use cairn_notes::tools;
use serde_json::json;

#[test]
fn tool_names_use_only_lowercase_and_underscores_and_scopes_match_kinds() {
    let specs = tools();
    let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        [
            "list_notes",
            "search_notes",
            "list_note_tabs",
            "read_note_tab",
            "read_note_outline",
            "read_sheet_range",
            "list_note_attachments",
            "list_note_history",
            "merge_note_tab",
            "edit_note_tab",
            "create_note_tab",
            "add_note_source",
            "claim_note",
            "renew_claim",
            "release_claim",
            "post_claim_note",
            "list_claims"
        ]
    );
    for s in &specs {
        assert!(s.name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{}", s.name);
        let read = s.annotations.read_only_hint;
        assert_eq!(s.scope, if read { "notes:read" } else { "notes:write" }, "{}", s.name);
        let listed = serde_json::to_value(s).unwrap();
        assert!(listed.get("inputSchema").is_some() && listed["annotations"].get("readOnlyHint").is_some());
        assert!(listed.get("scope").is_none(), "scope is not part of the MCP listing");
    }
}

/// Clients (ChatGPT apps, Cursor's Ask mode) treat a tool without hints as an
/// open-world write: every tool states a title and all four hints.
#[test]
fn every_tool_has_a_title_and_all_four_annotations_and_none_is_open_world() {
    for s in &cairn_notes::tools::tools() {
        let listed = serde_json::to_value(s).unwrap();
        assert!(listed["title"].as_str().is_some_and(|t| !t.is_empty()), "{}", s.name);
        for hint in ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] {
            assert!(listed["annotations"][hint].is_boolean(), "{} lacks {hint}", s.name);
        }
        assert_eq!(listed["annotations"]["openWorldHint"], false, "{}", s.name);
        // A read tool is never destructive.
        if s.annotations.read_only_hint {
            assert!(!s.annotations.destructive_hint, "{}", s.name);
        }
    }
}

#[test]
fn write_tools_require_expected_version_and_idempotency_key_and_say_what_to_do_on_conflict() {
    let content_writes = ["edit_note_tab", "create_note_tab", "add_note_source"];
    for s in tools().iter().filter(|s| content_writes.contains(&s.name)) {
        let required: Vec<&str> = s.input_schema["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert!(required.contains(&"expected_version") && required.contains(&"idempotency_key"), "{}", s.name);
        assert!(s.description.contains("version_conflict"), "{}", s.name);
        assert!(s.description.contains("new version"), "{}", s.name);
        assert!(s.description.contains("idempotency key"), "{}", s.name);
    }
    let edit = tools().into_iter().find(|s| s.name == "edit_note_tab").unwrap();
    assert!(edit.description.contains("read the tab again, redo your change"));
    assert!(edit.description.contains("one intended change on one base version"));
    let src = tools().into_iter().find(|s| s.name == "add_note_source").unwrap();
    assert!(src.description.contains("derive it from the note_id and the normalized URL"));
}

#[test]
fn unknown_tools_and_non_object_arguments_are_invalid_argument_results() {
    let mut w = World::new();
    let ada = human("acme");
    let r = w.refused(&ada, "delete_everything", json!({}));
    assert_eq!(r["error"], "invalid_argument");
    assert_eq!(r["field"], "name");
    let r = w.refused(&ada, "list_notes", json!([1, 2]));
    assert_eq!(r["field"], "arguments");
    assert!(r["next_step"].is_string());
    // Missing arguments are an empty object.
    w.ok(&ada, "list_notes", serde_json::Value::Null);
}

#[test]
fn a_bad_argument_names_its_field() {
    let mut w = World::new();
    let ada = human("acme");
    let cases = [
        ("read_note_tab", json!({"note_id": "n", "tab_id": 7}), "tab_id"),
        ("read_note_tab", json!({"note_id": "n"}), "tab_id"),
        ("read_note_tab", json!({"note_id": "n", "tab_id": "t", "extra": 1}), "extra"),
        (
            "edit_note_tab",
            json!({"note_id": "n", "tab_id": "t", "expected_version": "7", "idempotency_key": "k",
            "operation": "replace_text", "text": "x"}),
            "expected_version",
        ),
        (
            "edit_note_tab",
            json!({"note_id": "n", "tab_id": "t", "expected_version": 7, "idempotency_key": "k",
            "operation": "replace_text"}),
            "text",
        ),
        (
            "create_note_tab",
            json!({"note_id": "n", "expected_version": 1, "idempotency_key": "k", "tab_type": "slides",
            "label": "x".repeat(101)}),
            "label",
        ),
    ];
    for (tool, args, field) in cases {
        let r = w.refused(&ada, tool, args);
        assert_eq!(r["error"], "invalid_argument");
        assert_eq!(r["field"], field, "{tool}: {}", r["message"]);
    }
}
