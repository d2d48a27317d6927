//! Every tool publishes an `outputSchema`, and what it returns keeps to it.
//!
//! The behaviour tests all call tools through `crate::common::checked_call`, which
//! validates each structuredContent against the tool's schema. A tool's
//! result is its `Output` type and its schema is derived from that type, so
//! the two cannot drift apart by hand; this file drives the tools through
//! their result forms (catching a derivation that disagrees with what serde
//! writes) and every tool of the table to a refusal, proves the schemas are
//! valid JSON Schema with an object at the root (as MCP requires), and shows
//! the check rejects a result that breaks the schema.
use crate::common::*;
use cairn_notes::tools::TOOLS;
use serde_json::{Value, json};

#[test]
fn every_output_schema_is_valid_json_schema_with_an_object_at_the_root() {
    for t in TOOLS {
        let schema = (t.output_schema)();
        assert_eq!(schema["type"], "object", "{}: MCP requires an object at the root of outputSchema", t.name);
        jsonschema::meta::validate(&schema).unwrap_or_else(|e| panic!("{}: not valid JSON Schema: {e}", t.name));
        assert_eq!(t.spec().output_schema, schema, "{}: tools/list publishes the same schema", t.name);
    }
}

#[test]
fn every_tool_answers_within_its_output_schema_when_it_succeeds_and_when_it_refuses() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Schemas", true);
    let v = w.version(&ada, &note);
    w.ok(&bot, "list_notes", json!({}));
    w.ok(&bot, "list_note_tabs", json!({"note_id": note}));
    w.ok(&bot, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    w.ok(
        &bot,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": v,
        "idempotency_key": "k1", "operation": "replace_text", "text": "one\ntwo\n"}),
    );
    w.ok(&bot, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "at_version": v}));
    w.ok(&bot, "read_note_outline", json!({"note_id": note}));
    w.ok(&bot, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "start_line": 2, "max_lines": 1}));
    w.ok(&bot, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "since_version": v}));
    let sheet = w.create_tab(&bot, &note, "sheet", "Numbers");
    let slides = w.create_tab(&bot, &note, "slides", "Deck");
    let read = w.tab(&bot, &note, &sheet);
    let sheet_id = read["sheets"][0]["sheet_id"].clone();
    let v = w.version(&bot, &note);
    w.ok(
        &bot,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": sheet, "expected_version": v, "idempotency_key": "k2",
        "operation": "sheet_set_range", "sheet_id": sheet_id, "start_row": 0, "start_col": 0, "values": [[1, "a", true, null]]}),
    );
    w.ok(&bot, "read_sheet_range", json!({"note_id": note, "tab_id": sheet, "start_row": 0, "start_col": 0, "num_rows": 2, "num_cols": 2}));
    w.tab(&bot, &note, &slides);
    let v = w.version(&bot, &note);
    w.ok(
        &bot,
        "add_note_source",
        json!({"note_id": note, "expected_version": v, "idempotency_key": "k3",
        "url": "https://example.com/a", "title": "A"}),
    );
    w.ok(
        &bot,
        "add_note_source",
        json!({"note_id": note, "expected_version": v + 1, "idempotency_key": "k4",
        "url": "https://example.com/a", "title": "A"}),
    );
    w.ok(&bot, "list_note_attachments", json!({"note_id": note}));
    w.ok(&bot, "read_note_tab", json!({"note_id": note, "tab_id": "sources"}));
    w.ok(&bot, "list_note_history", json!({"note_id": note}));
    w.ok(&bot, "merge_note_tab", json!({"note_id": note, "base_version": 1, "text": "a proposal\n"}));
    w.ok(&bot, "search_notes", json!({"query": "one two"}));
    let claim = w.claim_ok(&bot, &note, Some("markdown"));
    w.ok(&bot, "renew_claim", json!({"claim_id": claim}));
    w.ok(&bot, "post_claim_note", json!({"claim_id": claim, "text": "rewriting the intro"}));
    w.ok(&ada, "list_claims", json!({"note_id": note}));
    w.ok(&bot, "release_claim", json!({"claim_id": claim}));
    w.ok(&bot, "release_claim", json!({"claim_id": claim}));
    // A refusal from every tool: a note that does not exist, or arguments that are wrong.
    for t in TOOLS {
        let args = match t.name {
            "list_notes" => json!({"limit": 0}),
            "search_notes" => json!({"query": "\"unclosed"}),
            "list_claims" => json!({"note_id": "missing"}),
            "claim_note" => json!({"note_id": "missing"}),
            "renew_claim" | "release_claim" | "post_claim_note" => json!({"claim_id": "not a claim"}),
            _ => json!({"note_id": "missing", "tab_id": "markdown", "expected_version": 1, "idempotency_key": "x",
                "operation": "append_text", "text": "x", "tab_type": "slides", "url": "https://example.com/b",
                "start_row": 0, "start_col": 0, "num_rows": 1, "num_cols": 1}),
        };
        let r = w.call(&bot, t.name, args);
        assert_eq!(r["isError"], true, "{}: {}", t.name, r["structuredContent"]);
    }
    let seen = OUTPUTS_CHECKED.with(|c| c.borrow().clone());
    for t in TOOLS {
        assert!(seen.iter().any(|(name, good)| name == t.name && !*good), "{}: no refusal was checked against its schema", t.name);
    }
    let succeeded = seen.iter().filter(|(_, good)| *good).count();
    assert!(succeeded >= 25, "only {succeeded} successful results were checked");
}

#[test]
fn a_result_that_breaks_its_schema_is_caught() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Broken", true);
    let mut good = w.ok(&ada, "list_note_tabs", json!({"note_id": note}));
    assert_valid_output("list_note_tabs", &good);
    type Breakage = (&'static str, fn(&mut Value));
    let breakages: [Breakage; 4] = [
        ("a required field missing", |v| {
            v.as_object_mut().unwrap().remove("version");
        }),
        ("a version that is not a number", |v| v["version"] = json!("3")),
        ("another notice", |v| v["notice"] = json!("follow these instructions")),
        ("a tab of an unknown type", |v| v["tabs"][0]["type"] = json!("video")),
    ];
    for (what, break_it) in breakages {
        let mut bad = good.clone();
        break_it(&mut bad);
        let caught = std::panic::catch_unwind(|| assert_valid_output("list_note_tabs", &bad)).is_err();
        assert!(caught, "{what}: passed the output schema");
    }
    let refusal = w.refused(&ada, "list_note_tabs", json!({"note_id": "missing"}));
    let mut bad = refusal.clone();
    bad["error"] = json!("oops");
    assert!(std::panic::catch_unwind(|| assert_valid_output("list_note_tabs", &bad)).is_err(), "an unknown refusal code passed");
    good["extra_field_added_later"] = json!(1);
    assert_valid_output("list_note_tabs", &good);
}
