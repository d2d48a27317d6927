//! What gets no reply: notifications (no id) and the client's own
//! responses. A request with nothing to reply to answers 202 with no body.
use crate::common::*;
use cairn_mcp::Answer;
use serde_json::{Value, json};

fn notification(method: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": method})
}

#[test]
fn a_notification_gets_no_reply_and_the_request_answers_202() {
    let core = Core::new();
    let answer = post(&core, &agent(), notification("notifications/initialized").to_string().as_bytes(), &[]).unwrap();
    assert_eq!(answer, Answer::Accepted);
    assert_eq!(answer.status(), 202);
}

#[test]
fn a_batch_of_notifications_and_client_responses_answers_202() {
    let core = Core::new();
    let batch = json!([
        notification("notifications/initialized"),
        notification("notifications/cancelled"),
        {"jsonrpc": "2.0", "id": 5, "result": {}},
        {"jsonrpc": "2.0", "id": 6, "error": {"code": -1, "message": "no"}},
        notification("no/such/method"),
    ]);
    assert_eq!(post(&core, &agent(), batch.to_string().as_bytes(), &[]), Ok(Answer::Accepted));
}

#[test]
fn notifications_in_a_batch_get_no_reply_and_the_rest_keep_their_order() {
    let core = Core::new();
    let batch = json!([rpc(1, "ping", json!({})), notification("notifications/initialized"), rpc(2, "ping", json!({}))]);
    assert_eq!(reply_text(&core, &agent(), &batch), r#"[{"id":1,"jsonrpc":"2.0","result":{}},{"id":2,"jsonrpc":"2.0","result":{}}]"#);
}

#[test]
fn a_tools_call_without_an_id_runs_nothing() {
    let core = Core::new();
    let note = core.note(&person(), "quiet", true);
    let message = json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "create_note_tab", "arguments":
        {"note_id": note, "expected_version": 1, "idempotency_key": "k", "tab_type": "sheet"}}});
    assert_eq!(post(&core, &agent(), message.to_string().as_bytes(), &[]), Ok(Answer::Accepted));
    assert!(core.calls().is_empty(), "{:?}", core.calls());
}

#[test]
fn a_response_needs_an_id_to_go_unanswered() {
    let core = Core::new();
    let r = reply(&core, &agent(), &json!({"jsonrpc": "2.0", "result": {}}));
    assert_eq!((r["error"]["code"].as_i64(), r["error"]["message"].as_str()), (Some(-32600), Some("missing method")), "{r}");
}
