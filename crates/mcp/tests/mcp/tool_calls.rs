//! `tools/call`: a tool's result comes back as the tool wrote it, a
//! refusal is a result with `isError` (never a JSON-RPC error), the
//! arguments reach the tool as the caller wrote them, and what never reaches
//! a tool (an unknown tool, params or arguments of the wrong shape) is
//! -32602; a tool that fails is -32603 for its message alone.
use crate::common::*;
use serde_json::{Value, json};

#[test]
fn a_tool_result_reaches_the_caller_as_the_tool_wrote_it() {
    let core = Core::new();
    let note = core.note(&person(), "Verbatim", true);
    let args = json!({"note_id": note, "tab_id": "markdown"});
    let text = reply_text(&core, &agent(), &call(1, "read_note_tab", args.clone()));
    let written = core.direct(&agent(), "read_note_tab", args);
    assert_eq!(text, format!(r#"{{"jsonrpc":"2.0","id":1,"result":{written}}}"#));
}

#[test]
fn the_arguments_reach_the_tool_as_the_caller_wrote_them() {
    let core = Core::new();
    let note = core.note(&person(), "Raw", true);
    let arguments = format!(r#"{{ "note_id" : "{note}",   "tab_id":"mark\u0064own", "_meta": {{"progressToken": 1}} }}"#);
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"read_note_tab","arguments":{arguments}}}}}"#);
    let r: Value = match post(&core, &agent(), body.as_bytes(), &[]).unwrap() {
        cairn_mcp::Answer::Reply(text) => serde_json::from_str(&text).unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(core.arguments(), [arguments]);
}

#[test]
fn a_call_without_arguments_runs_with_none() {
    let core = Core::new();
    let r = ask(&core, &agent(), "tools/call", json!({"name": "list_notes"}));
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(core.arguments(), ["{}"]);
}

#[test]
fn a_refusal_is_a_result_with_is_error_not_a_json_rpc_error() {
    let core = Core::new();
    let note = core.note(&person(), "Refusals", true);
    let r = reply(
        &core,
        &agent(),
        &call(
            1,
            "edit_note_tab",
            json!({"note_id": note, "tab_id": "markdown", "expected_version": 7, "idempotency_key": "late", "operation": "replace_text", "text": "x"}),
        ),
    );
    assert!(r.get("error").is_none(), "{r}");
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(r["result"]["structuredContent"]["error"], "version_conflict", "{r}");
    let bad = ask(&core, &agent(), "tools/call", json!({"name": "list_note_tabs", "arguments": {}}));
    assert_eq!((bad["result"]["isError"].as_bool(), bad["result"]["structuredContent"]["error"].as_str()), (Some(true), Some("invalid_argument")), "{bad}");
}

#[test]
fn an_unknown_tool_is_invalid_params_naming_it_and_nothing_runs() {
    let core = Core::new();
    assert_eq!(
        reply_text(&core, &agent(), &call(1, "drop_tables", json!({}))),
        r#"{"error":{"code":-32602,"message":"unknown tool drop_tables"},"id":1,"jsonrpc":"2.0"}"#
    );
    assert!(core.calls().is_empty());
}

#[test]
fn a_call_that_names_no_tool_is_invalid_params() {
    let core = Core::new();
    let want = r#"{"error":{"code":-32602,"message":"params.name must be a tool name"},"id":1,"jsonrpc":"2.0"}"#;
    for params in [json!({}), json!({"name": 5, "arguments": {}}), json!({"name": null})] {
        assert_eq!(reply_text(&core, &agent(), &rpc(1, "tools/call", params.clone())), want, "{params}");
    }
    assert_eq!(reply_text(&core, &agent(), &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"})), want);
}

#[test]
fn arguments_that_are_not_an_object_are_invalid_params() {
    let core = Core::new();
    for arguments in [json!([1]), json!("x"), Value::Null, json!(3)] {
        assert_eq!(
            reply_text(&core, &agent(), &call(1, "list_notes", arguments.clone())),
            r#"{"error":{"code":-32602,"message":"params.arguments must be an object"},"id":1,"jsonrpc":"2.0"}"#,
            "{arguments}"
        );
    }
    assert!(core.calls().is_empty());
}

#[test]
fn params_that_cannot_be_read_are_invalid_params() {
    let core = Core::new();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_notes","name":"list_notes","arguments":{}}}"#;
    let r: Value = match post(&core, &agent(), body.as_bytes(), &[]).unwrap() {
        cairn_mcp::Answer::Reply(text) => serde_json::from_str(&text).unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().starts_with("params: duplicate field `name`"), "{r}");
    assert!(core.calls().is_empty());
}

#[test]
fn a_tool_that_fails_is_an_internal_error_for_its_message_alone() {
    let core = Core::new();
    let note = core.note(&person(), "Broken", true);
    core.corrupt(&note);
    let replies = reply(&core, &agent(), &json!([call(1, "list_note_tabs", json!({"note_id": note})), rpc(2, "ping", json!({}))]));
    assert_eq!(replies[0]["error"]["code"], -32603, "{replies}");
    assert!(replies[0]["error"]["message"].as_str().unwrap().starts_with("tool list_note_tabs failed: "), "{replies}");
    assert_eq!(replies[1], json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
}
