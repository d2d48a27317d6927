//! The scopes a request needs, known from the body before anything runs:
//! a known tool's own scope for `tools/call`, `notes:read` for the
//! resources that hold notes, none for anything else.
use crate::common::*;
use cairn_mcp::Request;
use cairn_notes::tools::TOOLS;
use serde_json::{Value, json};

fn scopes(body: &Value) -> Vec<&'static str> {
    let body = body.to_string();
    let request = Request::read(body.as_bytes(), |_| None).expect("a readable request");
    request.scopes().collect()
}

#[test]
fn every_tool_call_needs_its_tool_s_own_scope() {
    for tool in TOOLS {
        let want = if tool.annotations.read_only_hint { "notes:read" } else { "notes:write" };
        assert_eq!(tool.scope, want, "{}", tool.name);
        assert_eq!(scopes(&call(1, tool.name, json!({}))), [want], "{}", tool.name);
    }
}

#[test]
fn listing_and_reading_resources_need_the_read_scope() {
    assert_eq!(scopes(&rpc(1, "resources/list", json!({}))), ["notes:read"]);
    assert_eq!(scopes(&rpc(1, "resources/read", json!({"uri": "cairn://notes/n1"}))), ["notes:read"]);
    assert_eq!(scopes(&rpc(1, "completion/complete", json!({}))), ["notes:read"], "completions name notes");
}

#[test]
fn methods_that_read_no_note_need_no_scope() {
    for method in ["initialize", "server/discover", "ping", "tools/list", "resources/templates/list", "prompts/list", "logging/setLevel"] {
        assert!(scopes(&rpc(1, method, json!({}))).is_empty(), "{method}");
    }
    assert!(scopes(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).is_empty());
}

#[test]
fn an_unknown_or_unnamed_tool_needs_no_scope_and_is_refused_when_it_runs() {
    for params in [json!({"name": "drop_tables", "arguments": {}}), json!({"name": 5}), json!({})] {
        let message = rpc(1, "tools/call", params.clone());
        assert!(scopes(&message).is_empty(), "{params}");
        let core = Core::new();
        assert_eq!(reply(&core, &agent(), &message)["error"]["code"], -32602, "{params}");
        assert!(core.calls().is_empty());
    }
}

#[test]
fn a_tools_call_without_an_id_still_needs_its_scope() {
    let notification = json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "edit_note_tab", "arguments": {}}});
    assert_eq!(scopes(&notification), ["notes:write"]);
}

#[test]
fn a_batch_needs_the_scope_of_each_message_in_order() {
    let batch = json!([
        call(1, "list_notes", json!({})),
        call(2, "edit_note_tab", json!({})),
        rpc(3, "ping", json!({})),
        rpc(4, "resources/read", json!({"uri": "cairn://notes/n1"})),
        call(5, "claim_note", json!({})),
    ]);
    assert_eq!(scopes(&batch), ["notes:read", "notes:write", "notes:read", "notes:write"]);
}
