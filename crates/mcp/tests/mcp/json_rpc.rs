//! JSON-RPC's rules for one message: `jsonrpc` is "2.0", a method is named,
//! an id is a string or an integer, params are an object; an unknown method
//! is -32601. Each error answers that message alone, under its id when it
//! has a usable one.
use crate::common::*;
use serde_json::{Value, json};

#[test]
fn a_message_that_is_not_json_rpc_2_0_is_invalid_request_under_its_id() {
    let core = Core::new();
    assert_eq!(
        reply_text(&core, &agent(), &json!({"id": 1, "method": "ping"})),
        r#"{"error":{"code":-32600,"message":"jsonrpc must be \"2.0\""},"id":1,"jsonrpc":"2.0"}"#
    );
    let r = reply(&core, &agent(), &json!({"jsonrpc": "1.0", "id": "a", "method": "ping"}));
    assert_eq!((r["error"]["code"].as_i64(), r["id"].as_str()), (Some(-32600), Some("a")), "{r}");
    // Even without an id: a message that is not JSON-RPC 2.0 is no notification.
    let r = reply(&core, &agent(), &json!({"method": "notifications/initialized"}));
    assert_eq!((r["error"]["code"].as_i64(), &r["id"]), (Some(-32600), &Value::Null), "{r}");
}

#[test]
fn a_message_without_a_method_is_invalid_request() {
    let core = Core::new();
    assert_eq!(
        reply_text(&core, &agent(), &json!({"jsonrpc": "2.0", "id": 4})),
        r#"{"error":{"code":-32600,"message":"missing method"},"id":4,"jsonrpc":"2.0"}"#
    );
    let r = reply(&core, &agent(), &json!({"jsonrpc": "2.0", "id": 4, "method": 12}));
    assert_eq!(r["error"]["message"], "missing method", "a method that is not a string is none: {r}");
}

#[test]
fn an_id_that_is_neither_a_string_nor_an_integer_is_invalid_request_under_a_null_id() {
    let core = Core::new();
    for id in [json!(1.5), json!({"a": 1}), json!([1]), json!(true), Value::Null] {
        assert_eq!(
            reply_text(&core, &agent(), &json!({"jsonrpc": "2.0", "id": id, "method": "ping"})),
            r#"{"error":{"code":-32600,"message":"id must be a string or an integer"},"id":null,"jsonrpc":"2.0"}"#,
            "{id}"
        );
    }
}

#[test]
fn string_and_integer_ids_come_back_as_sent() {
    let core = Core::new();
    for id in [json!("req-7"), json!(-3), json!(u64::MAX)] {
        assert_eq!(reply(&core, &agent(), &json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))["id"], id);
    }
}

#[test]
fn params_that_are_not_an_object_are_invalid_params() {
    let core = Core::new();
    for params in [json!([1]), json!("x"), Value::Null] {
        assert_eq!(
            reply_text(&core, &agent(), &rpc(2, "ping", params.clone())),
            r#"{"error":{"code":-32602,"message":"params must be an object"},"id":2,"jsonrpc":"2.0"}"#,
            "{params}"
        );
    }
    assert_eq!(reply_text(&core, &agent(), &json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})), r#"{"id":2,"jsonrpc":"2.0","result":{}}"#);
}

#[test]
fn an_unknown_method_is_method_not_found() {
    let core = Core::new();
    assert_eq!(
        reply_text(&core, &agent(), &rpc(1, "prompts/list", json!({}))),
        r#"{"error":{"code":-32601,"message":"unknown method prompts/list"},"id":1,"jsonrpc":"2.0"}"#
    );
}

#[test]
fn ping_answers_an_empty_result() {
    let core = Core::new();
    assert_eq!(ask(&core, &agent(), "ping", json!({})), json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
}
