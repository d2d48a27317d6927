//! The wire format, pinned: `tools/list` and one request and response per
//! tool, compared with the saved JSON in tests/fixtures/wire. Regenerate with
//! `CAIRN_REGENERATE_FIXTURES=1 cargo test --release --test host wire`.
use crate::app::*;
use crate::harness::{Cairn, root};
use serde_json::{Value, json};

/// Replace what differs between runs (ids, times, hashes) with placeholders.
fn scrub(v: &Value, ids: &[(String, String)]) -> Value {
    match v {
        Value::String(s) => {
            let mut s = s.clone();
            for (real, name) in ids {
                s = s.replace(real, name);
            }
            Value::String(s)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| scrub(x, ids)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| {
                    let x = match (k.as_str(), x) {
                        ("updated_at" | "created_at" | "added_at" | "at", Value::String(_)) => json!("<time>"),
                        ("at_us", Value::Number(_)) => json!("<time µs>"),
                        ("content_hash" | "current_content_hash", Value::String(_)) => json!("<sha256>"),
                        ("text", Value::String(t)) if t.starts_with('{') => match serde_json::from_str::<Value>(t) {
                            Ok(inner) => Value::String(scrub(&inner, ids).to_string()),
                            Err(_) => scrub(x, ids),
                        },
                        _ => scrub(x, ids),
                    };
                    (k.clone(), x)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn compare(name: &str, actual: Value) {
    let path = root().join("tests/fixtures/wire").join(format!("{name}.json"));
    let pretty = serde_json::to_string_pretty(&actual).unwrap() + "\n";
    if std::env::var("CAIRN_REGENERATE_FIXTURES").is_ok() {
        std::fs::write(&path, &pretty).unwrap();
        return;
    }
    let saved = std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("{} is missing; regenerate with CAIRN_REGENERATE_FIXTURES=1", path.display()));
    let saved: Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(saved, actual, "{name}: the wire format changed; if on purpose, regenerate with CAIRN_REGENERATE_FIXTURES=1");
}

/// One request and response per tool, in an order where each finds what it
/// needs (a note of `who`'s tenant made by a person of it, its version
/// counted from 1): `seen(tool, request, response, ids)` gets each, with the
/// ids made so far (real id → placeholder).
pub fn every_tool_once(cairn: &Cairn, person: &Who, agent: &Who, mut seen: impl FnMut(&str, &Value, &Value, &[(String, String)])) {
    let note = cairn.create_note(person, "Wire brief", true);
    let t = cairn.token(agent);
    let mut ids = vec![(note.clone(), "<note_id>".to_string())];
    let mut call = |tool: &str, args: Value| -> Value {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}});
        let response = cairn.mcp(&t, &request).json();
        for (key, label) in [("tab_id", "<new_tab_id>"), ("source_id", "<source_id>")] {
            if let Some(id) = response.pointer(&format!("/result/structuredContent/{key}")).and_then(Value::as_str)
                && id.contains('-')
                && !ids.iter().any(|(r, _)| r == id)
                && id != "markdown"
            {
                ids.push((id.to_string(), format!("{label}:{tool}")));
            }
        }
        seen(tool, &request, &response, &ids);
        response
    };
    call("list_notes", json!({}));
    call("list_note_tabs", json!({"note_id": note}));
    call("read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    call(
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": 1, "idempotency_key": "wire-edit",
        "operation": "replace_text", "text": "# Brief\n\nFirst line."}),
    );
    let sheet = call(
        "create_note_tab",
        json!({"note_id": note, "expected_version": 2, "idempotency_key": "wire-sheet",
        "tab_type": "sheet", "label": "Numbers"}),
    );
    let tab = sheet["result"]["structuredContent"]["tab_id"].as_str().unwrap().to_string();
    call("read_sheet_range", json!({"note_id": note, "tab_id": tab, "start_row": 0, "start_col": 0, "num_rows": 2, "num_cols": 2}));
    call(
        "add_note_source",
        json!({"note_id": note, "expected_version": 3, "idempotency_key": "wire-source",
        "title": "Spec", "url": "https://www.example.org/spec/?utm_source=wire"}),
    );
    call("list_note_attachments", json!({"note_id": note, "kind": "sources"}));
    call("list_note_history", json!({"note_id": note, "limit": 50}));
    call("search_notes", json!({"query": "brief first"}));
    call("read_note_outline", json!({"note_id": note}));
}

#[test]
fn tools_list_and_every_tool_call_match_the_saved_fixtures() {
    let cairn = start();
    let t = cairn.token(&agent());
    let list = cairn.mcp(&t, &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).json();
    compare("tools_list", list);
    every_tool_once(&cairn, &person(), &agent(), |tool, request, response, ids| {
        compare(tool, json!({"request": scrub(request, ids), "response": scrub(response, ids)}));
    });
}
