//! The router reaches its tools two ways from the same `.wasm` files: by
//! default composed into its own instance (`[component.router.dependencies]`,
//! Spin's component dependencies), or over `wasi:http` when `tool_transport` is
//! `http` (or a tool is deployed apart, see `tools_apart.rs`). Both answer
//! exactly the same results, refusals included.
use crate::app::*;
use crate::harness::*;
use serde_json::{Value, json};

/// One agent session on a fresh host: what every step answered (the
/// structured content and whether it was an error), with the note's id
/// replaced so two hosts compare.
fn session(host: &Cairn) -> Vec<Value> {
    let note = host.create_note(&person(), "Launch brief", true);
    let token = host.token(&agent());
    let mut out = Vec::new();
    let mut step = |tool: &str, args: Value| -> Value {
        let r = host.call(&token, tool, args);
        let shown = json!({"tool": tool, "isError": r["isError"], "structured": r["structuredContent"]});
        out.push(serde_json::from_str(&shown.to_string().replace(&note, "<note>")).unwrap());
        r["structuredContent"].clone()
    };
    step("list_notes", json!({}));
    let tabs = step("list_note_tabs", json!({"note_id": note}));
    let tab = tabs["tabs"][0]["tab_id"].as_str().unwrap().to_string();
    let read = step("read_note_tab", json!({"note_id": note, "tab_id": tab}));
    let version = read["version"].clone();
    // A stale version is refused the same way through both doors.
    step(
        "edit_note_tab",
        json!({"note_id": note, "tab_id": tab, "expected_version": 999, "idempotency_key": "k-stale", "op": {"type": "replace_text", "text": "x"}}),
    );
    step(
        "edit_note_tab",
        json!({"note_id": note, "tab_id": tab, "expected_version": version, "idempotency_key": "k-1", "op": {"type": "replace_text", "text": "# Brief\n"}}),
    );
    // The replay answers the first result.
    step(
        "edit_note_tab",
        json!({"note_id": note, "tab_id": tab, "expected_version": version, "idempotency_key": "k-1", "op": {"type": "replace_text", "text": "# Brief\n"}}),
    );
    step("read_note_tab", json!({"note_id": note, "tab_id": tab}));
    step("read_note_tab", json!({"note_id": "nope", "tab_id": tab}));
    step("list_claims", json!({"note_id": note}));
    out
}

/// Strip what differs between two runs by design: times.
fn timeless(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            Value::Object(m.iter().filter(|(k, _)| !k.ends_with("_at") && *k != "at" && *k != "as_of").map(|(k, v)| (k.clone(), timeless(v))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(timeless).collect()),
        other => other.clone(),
    }
}

#[test]
fn composed_and_http_tool_calls_answer_the_same_results() {
    let composed = start_with(vec![("CAIRN_LOG", "debug")], vec![]);
    let http = start_with(vec![("CAIRN_LOG", "debug"), ("SPIN_VARIABLE_TOOL_TRANSPORT", "http")], vec![]);
    let a: Vec<Value> = session(&composed).iter().map(timeless).collect();
    let b: Vec<Value> = session(&http).iter().map(timeless).collect();
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y, "composed and http answers differ");
    }
    // The stale edit was refused, the replay answered the first write.
    assert_eq!(a[3]["isError"], true, "{}", a[3]);
    assert_eq!(a[4], a[5]);

    // Each host took the transport it was told to, and only that one.
    let (clog, hlog) = (composed.log(), http.log());
    assert!(count_lines(&clog, &["composed call", "read-note-tab"]) >= 3, "{clog}");
    assert_eq!(count_lines(&clog, &["in-process http call", "component=read-note-tab"]), 0, "{clog}");
    assert!(count_lines(&hlog, &["in-process http call", "component=read-note-tab"]) >= 3, "{hlog}");
    assert_eq!(count_lines(&hlog, &["composed call"]), 0, "{hlog}");
}

#[test]
fn the_same_tool_wasm_answers_its_own_http_route_only_where_tools_are_called_over_http() {
    // Composed into the router, a tool's public route is closed; on a host
    // of tools called over HTTP (deployed apart) the same wasm keeps its
    // door, and without the router's signed identity it refuses.
    let host = start();
    let r = host.request("POST", "/tools/read_note_tab", &[("content-type", "application/json")], b"{}");
    assert_eq!(r.status, 404, "{}", r.text());
    let apart = start_with(vec![("SPIN_VARIABLE_TOOL_TRANSPORT", "http")], vec![]);
    let r = apart.request("POST", "/tools/read_note_tab", &[("content-type", "application/json")], b"{}");
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(r.text().contains("cairn-identity"), "{}", r.text());
}

#[test]
fn every_tool_in_the_table_answers_through_its_composed_slot() {
    // A slot missing from wit/tools.wit or from call_slot would answer an
    // internal error ("the router has no slot"); every tool must instead
    // answer its own result (here: a refusal of the empty arguments).
    let host = start();
    let token = host.token(&agent());
    for tool in cairn_notes::tools::TOOLS {
        let r = host.mcp(&token, &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool.name, "arguments": {}}}));
        assert_eq!(r.status, 200, "{}: {}", tool.name, r.text());
        let v = r.json();
        assert!(v.get("error").is_none(), "{}: {v}", tool.name);
        assert!(v["result"]["structuredContent"].is_object(), "{}: {v}", tool.name);
    }
}
