//! The published JSON Schemas and the typed parsers accept and refuse the
//! same payloads: a catalogue of boundary cases, and for every tool of the
//! table the cases that need no list (an unknown field, nothing at all).
use cairn_kv::memory::MemoryStore;
use cairn_notes::{ActorType, Identity, Role, SimEnv, call_tool_value, tools};
use serde_json::{Value, json};

/// Whether the code accepts the arguments: anything but an argument refusal counts
/// (on an empty store a valid call ends in not_found).
fn code_accepts(tool: &str, args: &Value) -> bool {
    let kv = MemoryStore::new();
    let mut env = SimEnv::new(1);
    let who = Identity { tenant: "acme".into(), subject: "s".into(), display_name: "S".into(), actor_type: ActorType::Human, role: Role::Member };
    let r = call_tool_value(&kv, &mut env, &who, tool, args.clone()).unwrap();
    let code = r["structuredContent"]["error"].as_str().unwrap_or("");
    !(code == "invalid_argument" || code == "too_large")
}

fn slides(n: usize) -> Value {
    Value::Array((0..n).map(|i| json!({"title": format!("S{i}")})).collect())
}

fn cases() -> Vec<(&'static str, Value, bool)> {
    let n = "note-abc-123";
    let e = |extra: Value| {
        let mut v = json!({"note_id": n, "tab_id": "markdown", "expected_version": 3, "idempotency_key": "k"});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    let c = |extra: Value| {
        let mut v = json!({"note_id": n, "expected_version": 3, "idempotency_key": "k"});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    vec![
        ("list_notes", json!({}), true),
        ("list_notes", json!({"limit": 50, "cursor": "c16e6f7465733a35"}), true),
        ("list_notes", json!({"limit": 51}), false),
        ("list_notes", json!({"limit": 0}), false),
        ("list_notes", json!({"limit": "10"}), false),
        ("list_notes", json!({"cursor": null}), false),
        ("list_notes", json!({"page": 2}), false),
        ("search_notes", json!({"query": "launch brief"}), true),
        ("search_notes", json!({"query": "plan*", "tab_type": "sheet", "limit": 20}), true),
        ("search_notes", json!({}), false),
        ("search_notes", json!({"query": 5}), false),
        ("search_notes", json!({"query": ""}), false),
        ("search_notes", json!({"query": "x".repeat(201)}), false),
        ("search_notes", json!({"query": "x", "limit": 21}), false),
        ("search_notes", json!({"query": "x", "limit": 0}), false),
        ("search_notes", json!({"query": "x", "tab_type": "poem"}), false),
        ("search_notes", json!({"query": "x", "page": 1}), false),
        ("list_note_tabs", json!({"note_id": n}), true),
        ("list_note_tabs", json!({}), false),
        ("list_note_tabs", json!({"note_id": 5}), false),
        ("list_note_tabs", json!({"note_id": "bad id!"}), false),
        ("list_note_tabs", json!({"note_id": "x".repeat(65)}), false),
        ("read_note_tab", json!({"note_id": n, "tab_id": "slides-1-abcdefgh"}), true),
        ("read_note_tab", json!({"note_id": n}), false),
        ("read_note_tab", json!({"note_id": n, "tab_id": "markdown", "at_version": 3}), true),
        ("read_note_tab", json!({"note_id": n, "tab_id": "markdown", "at_version": -1}), false),
        ("read_note_tab", json!({"note_id": n, "tab_id": "markdown", "at_version": "3"}), false),
        ("read_note_tab", json!({"note_id": n, "tab_id": "markdown", "start_line": 3, "max_lines": 10}), true),
        ("read_note_tab", json!({"note_id": n, "tab_id": "markdown", "section_id": "plan"}), true),
        ("read_note_tab", json!({"note_id": n, "tab_id": "markdown", "since_version": 2}), true),
        ("read_note_tab", json!({"note_id": n, "tab_id": "markdown", "start_line": 0}), false),
        ("read_note_tab", json!({"note_id": n, "tab_id": "markdown", "max_lines": 100_001}), false),
        ("read_note_tab", json!({"note_id": n, "tab_id": "markdown", "section_id": ""}), false),
        ("read_note_tab", json!({"note_id": n, "tab_id": "markdown", "since_version": -2}), false),
        ("read_note_outline", json!({"note_id": n}), true),
        ("read_note_outline", json!({"note_id": n, "tab_id": "markdown"}), true),
        ("read_note_outline", json!({"tab_id": "markdown"}), false),
        ("read_note_outline", json!({"note_id": n, "tab_id": "bad id!"}), false),
        ("read_note_outline", json!({"note_id": n, "depth": 2}), false),
        ("list_note_history", json!({"note_id": n}), true),
        ("merge_note_tab", json!({"note_id": n, "base_version": 1, "text": "x\n"}), true),
        ("merge_note_tab", json!({"note_id": n, "tab_id": "markdown", "base_version": 2, "text": ""}), true),
        ("merge_note_tab", json!({"note_id": n, "text": "x\n"}), false),
        ("merge_note_tab", json!({"note_id": n, "base_version": 0, "text": "x\n"}), false),
        ("merge_note_tab", json!({"note_id": n, "base_version": "1", "text": "x\n"}), false),
        ("merge_note_tab", json!({"note_id": n, "base_version": 1}), false),
        ("merge_note_tab", json!({"note_id": n, "base_version": 1, "text": 7}), false),
        ("list_note_history", json!({"note_id": n, "tab_id": "markdown", "limit": 50}), true),
        ("list_note_history", json!({"note_id": n, "limit": 51}), false),
        ("list_note_history", json!({"note_id": n, "limit": 0}), false),
        ("list_note_history", json!({"tab_id": "markdown"}), false),
        ("list_note_history", json!({"note_id": n, "tab_id": "bad id!"}), false),
        ("read_note_tab", json!({"note_id": n, "tab_id": "a", "version": 1}), false),
        ("read_sheet_range", json!({"note_id": n, "tab_id": "t", "start_row": 0, "start_col": 0, "num_rows": 100, "num_cols": 100}), true),
        ("read_sheet_range", json!({"note_id": n, "tab_id": "t", "start_row": 9999, "start_col": 99, "num_rows": 1, "num_cols": 1, "sheet_id": "s1"}), true),
        ("read_sheet_range", json!({"note_id": n, "tab_id": "t", "start_row": 0, "start_col": 0, "num_rows": 101, "num_cols": 1}), false),
        ("read_sheet_range", json!({"note_id": n, "tab_id": "t", "start_row": 0, "start_col": 0, "num_rows": 1, "num_cols": 0}), false),
        ("read_sheet_range", json!({"note_id": n, "tab_id": "t", "start_col": 0, "num_rows": 1, "num_cols": 1}), false),
        ("read_sheet_range", json!({"note_id": n, "tab_id": "t", "start_row": -1, "start_col": 0, "num_rows": 1, "num_cols": 1}), false),
        ("read_sheet_range", json!({"note_id": n, "tab_id": "t", "start_row": 10000, "start_col": 0, "num_rows": 1, "num_cols": 1}), false),
        ("list_note_attachments", json!({"note_id": n, "kind": "sources", "limit": 50}), true),
        ("list_note_attachments", json!({"note_id": n, "kind": "files", "cursor": "c166696c65733a31"}), true),
        ("list_note_attachments", json!({"note_id": n, "kind": "links"}), false),
        ("list_note_attachments", json!({"note_id": n, "kind": "sources", "limit": 100}), false),
        ("edit_note_tab", e(json!({"operation": "replace_text", "text": "hello"})), true),
        ("edit_note_tab", e(json!({"operation": "append_text", "text": "a line", "rebase": true})), true),
        ("edit_note_tab", e(json!({"operation": "replace_in_text", "old_text": "a", "new_text": "b"})), true),
        ("edit_note_tab", e(json!({"operation": "replace_in_text", "old_text": "", "new_text": "b"})), false),
        ("edit_note_tab", e(json!({"operation": "replace_in_text", "old_text": "a"})), false),
        ("edit_note_tab", e(json!({"operation": "append_text", "old_text": "a", "text": "b"})), false),
        ("edit_note_tab", e(json!({"operation": "append_text", "text": "a", "rebase": "yes"})), false),
        ("edit_note_tab", e(json!({"operation": "replace_text", "text": "", "version_scope": "tab", "base_content_hash": "0".repeat(64)})), true),
        ("edit_note_tab", e(json!({"operation": "replace_tab_data", "data": {"slides": []}})), true),
        ("edit_note_tab", e(json!({"operation": "slide_add", "title": "Sources", "body": "3 links"})), true),
        ("edit_note_tab", e(json!({"operation": "slide_add", "title": "Sources", "notes": "n"})), true),
        ("edit_note_tab", e(json!({"operation": "slides_add_outline", "slides": slides(20)})), true),
        ("edit_note_tab", e(json!({"operation": "sheet_set_range", "sheet_id": "s1", "start_row": 0, "start_col": 0, "values": [[1, "a", true, null]]})), true),
        ("edit_note_tab", e(json!({"operation": "slide_add", "title": "Sources", "index": 0})), false),
        ("edit_note_tab", e(json!({"operation": "slides_add", "slides": [{"title": "a"}]})), false),
        ("edit_note_tab", e(json!({"operation": "slides_add_outline", "slides": [{"title": "a", "bullets": ["x"]}]})), false),
        ("edit_note_tab", e(json!({"operation": "slides_add_outline", "slides": slides(21)})), false),
        ("edit_note_tab", e(json!({"operation": "slides_add_outline", "slides": []})), false),
        ("edit_note_tab", e(json!({"operation": "slides_add_outline", "slides": [{"body": "no title"}]})), false),
        ("edit_note_tab", e(json!({"operation": "replace_text"})), false),
        ("edit_note_tab", e(json!({"operation": "replace_text", "text": "x", "values": [[1]]})), false),
        ("edit_note_tab", e(json!({"operation": "replace_text", "text": "x", "title": "t"})), false),
        ("edit_note_tab", e(json!({"operation": "replace_text", "text": "x", "version_scope": "doc"})), false),
        ("edit_note_tab", e(json!({"operation": "replace_text", "text": "x", "base_content_hash": "xyz"})), false),
        ("edit_note_tab", e(json!({"operation": "replace_text", "text": "x".repeat(1_000_001)})), false),
        ("edit_note_tab", e(json!({"operation": "replace_tab_data", "data": [1]})), false),
        ("edit_note_tab", e(json!({"operation": "sheet_set_range", "start_row": 0, "start_col": 0, "values": [[1]]})), false),
        ("edit_note_tab", e(json!({"operation": "sheet_set_range", "sheet_id": "s1", "start_row": 0, "start_col": 0, "values": [[{"a": 1}]]})), false),
        ("edit_note_tab", e(json!({"operation": "sheet_set_range", "sheet_id": "s1", "start_row": 0, "start_col": 0, "values": []})), false),
        ("edit_note_tab", e(json!({"operation": "sheet_set_range", "sheet_id": "s1", "start_row": 0, "start_col": 100, "values": [[1]]})), false),
        ("edit_note_tab", json!({"note_id": n, "tab_id": "markdown", "idempotency_key": "k", "operation": "replace_text", "text": "x"}), false),
        ("edit_note_tab", e(json!({"operation": "replace_text", "text": "x", "expected_version": -1})), false),
        ("edit_note_tab", e(json!({"operation": "replace_text", "text": "x", "idempotency_key": ""})), false),
        ("create_note_tab", c(json!({"tab_type": "slides", "label": "Pitch", "slides": slides(3)})), true),
        ("create_note_tab", c(json!({"tab_type": "sheet"})), true),
        ("create_note_tab", c(json!({"tab_type": "markdown"})), false),
        ("create_note_tab", c(json!({"tab_type": "slides", "slides": slides(21)})), false),
        ("create_note_tab", c(json!({"tab_type": "sheet", "slides": slides(1)})), false),
        ("create_note_tab", c(json!({"tab_type": "sheet", "label": ""})), false),
        ("create_note_tab", json!({"note_id": n, "expected_version": 3, "tab_type": "sheet"}), false),
        ("add_note_source", c(json!({"title": "Report", "url": "https://example.org/report"})), true),
        ("add_note_source", c(json!({"url": "https://example.org/report"})), false),
        ("add_note_source", c(json!({"title": "Report", "url": 5})), false),
        ("add_note_source", c(json!({"title": "Report", "url": "https://example.org", "note": "x"})), false),
        ("add_note_source", c(json!({"title": "", "url": "https://example.org"})), false),
        ("claim_note", json!({"note_id": n}), true),
        ("claim_note", json!({"note_id": n, "tab_id": "slides-1-abcdefgh", "ttl_seconds": 3600}), true),
        ("claim_note", json!({"note_id": n, "ttl_seconds": 1}), true),
        ("claim_note", json!({"note_id": n, "ttl_seconds": 0}), false),
        ("claim_note", json!({"note_id": n, "ttl_seconds": 3601}), false),
        ("claim_note", json!({"note_id": n, "ttl_seconds": -5}), false),
        ("claim_note", json!({"note_id": n, "ttl_seconds": "600"}), false),
        ("claim_note", json!({"note_id": n, "tab_id": null}), false),
        ("claim_note", json!({"note_id": n, "tab_id": "bad id"}), false),
        ("claim_note", json!({"tab_id": "markdown"}), false),
        ("claim_note", json!({"note_id": n, "exclusive": true}), false),
        ("renew_claim", json!({"claim_id": format!("clm-{n}-1-abcdefgh")}), true),
        ("renew_claim", json!({"claim_id": "clm-x-zzzzzzzzzzzzz-00000000", "ttl_seconds": 60}), true),
        ("renew_claim", json!({"claim_id": format!("clm-{n}-1-abcdefgh"), "ttl_seconds": 0}), false),
        ("renew_claim", json!({"claim_id": format!("clm-{n}-1-ABCDEFGH")}), false),
        ("renew_claim", json!({"claim_id": format!("clm-{n}-1-abcdefg")}), false),
        ("renew_claim", json!({"claim_id": format!("clm-{n}-zzzzzzzzzzzzzz-abcdefgh")}), false),
        ("renew_claim", json!({"claim_id": format!("{n}-1-abcdefgh")}), false),
        ("renew_claim", json!({"claim_id": format!("clm-{}-1-abcdefgh", "x".repeat(65))}), false),
        ("renew_claim", json!({"claim_id": "clm--1-abcdefgh"}), false),
        ("renew_claim", json!({}), false),
        ("release_claim", json!({"claim_id": format!("clm-{n}-a0-0000zzzz")}), true),
        ("release_claim", json!({"claim_id": "clm-a_b-c-1-abcdefgh"}), true),
        ("release_claim", json!({"claim_id": format!("clm-{n}-1-abcdefgh"), "reason": "done"}), false),
        ("release_claim", json!({"claim_id": 7}), false),
        ("post_claim_note", json!({"claim_id": format!("clm-{n}-1-abcdefgh"), "text": "rewriting the intro"}), true),
        ("post_claim_note", json!({"claim_id": format!("clm-{n}-1-abcdefgh"), "text": "é".repeat(2000)}), true),
        ("post_claim_note", json!({"claim_id": format!("clm-{n}-1-abcdefgh"), "text": "x".repeat(2001)}), false),
        ("post_claim_note", json!({"claim_id": format!("clm-{n}-1-abcdefgh"), "text": ""}), false),
        ("post_claim_note", json!({"claim_id": format!("clm-{n}-1-abcdefgh")}), false),
        ("list_claims", json!({}), true),
        ("list_claims", json!({"note_id": n}), true),
        ("list_claims", json!({"note_id": 5}), false),
        ("list_claims", json!({"limit": 5}), false),
    ]
}

#[test]
fn published_schemas_and_typed_parsers_accept_and_refuse_the_same_payloads() {
    let specs = tools();
    let mut mismatches = Vec::new();
    for (tool, args, valid) in cases() {
        let spec = specs.iter().find(|s| s.name == tool).expect("tool exists");
        let validator = jsonschema::draft202012::new(&spec.input_schema).expect("schema compiles");
        let schema_ok = validator.is_valid(&args);
        let code_ok = code_accepts(tool, &args);
        if schema_ok != valid || code_ok != valid {
            let shown: String = args.to_string().chars().take(160).collect();
            mismatches.push(format!("{tool} {shown}: expected {valid}, schema {schema_ok}, code {code_ok}"));
        }
    }
    assert!(mismatches.is_empty(), "disagreements:\n{}", mismatches.join("\n"));
}

/// Every tool of the table, with no case of its own in [`cases`]: an
/// unknown field and (where any is required) the empty object are refused
/// by its schema and its parser alike.
#[test]
fn every_tool_refuses_unknown_and_missing_fields_in_its_schema_and_its_parser_alike() {
    for spec in tools() {
        assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
        assert_eq!(spec.input_schema["additionalProperties"], false, "{}", spec.name);
        let validator = jsonschema::draft202012::new(&spec.input_schema).expect("schema compiles");
        let unknown = json!({"field_no_tool_has": 1});
        assert!(!validator.is_valid(&unknown), "{}: the schema takes an unknown field", spec.name);
        assert!(!code_accepts(spec.name, &unknown), "{}: the parser takes an unknown field", spec.name);
        let required = spec.input_schema["required"].as_array().is_some_and(|r| !r.is_empty());
        let empty = json!({});
        assert_eq!(validator.is_valid(&empty), !required, "{}: the schema on {{}}", spec.name);
        assert_eq!(code_accepts(spec.name, &empty), !required, "{}: the parser on {{}}", spec.name);
    }
}
