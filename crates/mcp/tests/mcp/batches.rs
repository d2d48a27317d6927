//! The batch rule: a body is one JSON-RPC object or a batch of 1 to 10;
//! anything else is refused whole before anything runs. A batch's replies
//! come back as an array, in the order of their messages.
use crate::common::*;
use cairn_mcp::Answer;
use serde_json::{Value, json};

const WHOLE: &str = "a request is a JSON-RPC object or an array of them";

fn creates(note: &str, n: u64) -> Vec<Value> {
    (0..n)
        .map(|i| call(i, "create_note_tab", json!({"note_id": note, "expected_version": 1, "idempotency_key": format!("k{i}"), "tab_type": "sheet"})))
        .collect()
}

#[test]
fn a_batch_of_eleven_is_refused_whole_and_nothing_runs() {
    let core = Core::new();
    let note = core.note(&person(), "batch target", true);
    let body = Value::from(creates(&note, 11)).to_string();
    assert_eq!(
        refused(&core, body.as_bytes(), &[]),
        r#"{"error":{"code":-32600,"message":"a batch holds 1 to 10 messages; this one has 11: nothing was run"},"id":null,"jsonrpc":"2.0"}"#
    );
    assert!(core.calls().is_empty(), "{:?}", core.calls());
    let tabs: Value = serde_json::from_str(&core.direct(&agent(), "list_note_tabs", json!({"note_id": note}))).unwrap();
    assert_eq!(tabs["structuredContent"]["version"], 1, "part of a refused batch ran");
}

#[test]
fn an_empty_batch_is_refused_whole() {
    let core = Core::new();
    assert_eq!(
        refused(&core, b"[]", &[]),
        r#"{"error":{"code":-32600,"message":"a batch holds 1 to 10 messages; this one has 0: nothing was run"},"id":null,"jsonrpc":"2.0"}"#
    );
}

#[test]
fn a_batch_of_ten_runs_every_message_in_order() {
    let core = Core::new();
    let note = core.note(&person(), "in order", true);
    let mut batch: Vec<Value> = (1..=8).map(|i| rpc(i, "ping", json!({}))).collect();
    batch.insert(
        2,
        call(
            100,
            "edit_note_tab",
            json!({"note_id": note, "tab_id": "markdown", "expected_version": 1, "idempotency_key": "first", "operation": "replace_text", "text": "written first"}),
        ),
    );
    batch.insert(3, call(101, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"})));
    assert_eq!(batch.len(), 10);
    let replies = reply(&core, &agent(), &Value::from(batch));
    let ids: Vec<u64> = replies.as_array().unwrap().iter().map(|r| r["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [1, 2, 100, 101, 3, 4, 5, 6, 7, 8]);
    let read = &replies[3]["result"]["structuredContent"];
    assert_eq!((read["text"].as_str(), read["version"].as_u64()), (Some("written first"), Some(2)), "the read ran after the edit: {read}");
}

#[test]
fn a_batch_of_one_is_answered_with_an_array_of_one() {
    let core = Core::new();
    let body = json!([rpc(1, "ping", json!({}))]).to_string();
    assert_eq!(post(&core, &agent(), body.as_bytes(), &[]), Ok(Answer::Reply(r#"[{"id":1,"jsonrpc":"2.0","result":{}}]"#.into())));
}

#[test]
fn a_single_message_is_answered_with_a_single_reply() {
    let core = Core::new();
    assert_eq!(reply_text(&core, &agent(), &rpc(9, "ping", json!({}))), r#"{"id":9,"jsonrpc":"2.0","result":{}}"#);
}

#[test]
fn a_body_that_is_neither_an_object_nor_an_array_is_refused_whole() {
    let core = Core::new();
    for body in [r#""just a string""#, "5", "null", "true"] {
        let r: Value = serde_json::from_str(&refused(&core, body.as_bytes(), &[])).unwrap();
        assert_eq!(r, json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": WHOLE}}), "{body}");
    }
}

#[test]
fn a_body_that_is_not_json_is_a_parse_error() {
    let core = Core::new();
    for body in ["{not json", "[1,", "", "{} {}"] {
        let r: Value = serde_json::from_str(&refused(&core, body.as_bytes(), &[])).unwrap();
        assert_eq!((r["error"]["code"].as_i64(), &r["id"]), (Some(-32700), &Value::Null), "{body}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().starts_with("parse error: "), "{r}");
    }
}

#[test]
fn a_body_that_is_not_utf8_is_a_parse_error() {
    let core = Core::new();
    let r: Value = serde_json::from_str(&refused(&core, b"{\"jsonrpc\": \"2.0\xff\"}", &[])).unwrap();
    assert_eq!(r["error"]["code"], -32700);
    assert!(r["error"]["message"].as_str().unwrap().starts_with("parse error: the body is not UTF-8: "), "{r}");
}

#[test]
fn a_message_that_is_not_an_object_gets_its_own_error_and_the_rest_run() {
    let core = Core::new();
    let body = json!([1, rpc(2, "ping", json!({}))]);
    assert_eq!(
        reply_text(&core, &agent(), &body),
        r#"[{"error":{"code":-32600,"message":"a JSON-RPC message is an object"},"id":null,"jsonrpc":"2.0"},{"id":2,"jsonrpc":"2.0","result":{}}]"#
    );
}

#[test]
fn a_message_with_a_member_given_twice_refuses_the_whole_request() {
    let core = Core::new();
    let body = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"id":3,"method":"ping"}]"#;
    let r: Value = serde_json::from_str(&refused(&core, body.as_bytes(), &[])).unwrap();
    assert_eq!((r["error"]["code"].as_i64(), &r["id"]), (Some(-32600), &Value::Null), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().starts_with("invalid JSON-RPC message: duplicate field `id`"), "{r}");
}
