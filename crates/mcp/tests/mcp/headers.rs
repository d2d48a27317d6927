//! The 2026-07-28 headers: `MCP-Protocol-Version` must name a revision
//! spoken here; `Mcp-Method` and `Mcp-Name` must agree with the body of a
//! request of one message. A header that disagrees refuses the request
//! whole, before anything runs.
use crate::common::*;
use cairn_mcp::Answer;
use serde_json::{Value, json};

fn list_notes() -> String {
    call(1, "list_notes", json!({})).to_string()
}

#[test]
fn headers_that_agree_with_the_body_let_it_run() {
    let core = Core::new();
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "list_notes")];
    let answer = post(&core, &agent(), list_notes().as_bytes(), &headers).unwrap();
    assert!(matches!(answer, Answer::Reply(_)), "{answer:?}");
    assert_eq!(core.calls(), ["list_notes"]);
}

#[test]
fn a_method_header_that_disagrees_refuses_the_request_under_its_id() {
    let core = Core::new();
    assert_eq!(
        refused(&core, list_notes().as_bytes(), &[("mcp-method", "tools/list")]),
        r#"{"error":{"code":-32600,"message":"the Mcp-Method header does not match the body's method"},"id":1,"jsonrpc":"2.0"}"#
    );
    assert!(core.calls().is_empty());
}

#[test]
fn a_name_header_that_disagrees_with_the_tool_refuses_the_request() {
    let core = Core::new();
    assert_eq!(
        refused(&core, list_notes().as_bytes(), &[("mcp-method", "tools/call"), ("mcp-name", "read_note_tab")]),
        r#"{"error":{"code":-32600,"message":"the Mcp-Name header does not match params.name (params.uri for resources/read)"},"id":1,"jsonrpc":"2.0"}"#
    );
    assert!(core.calls().is_empty());
}

#[test]
fn for_resources_read_the_name_header_is_the_uri() {
    let core = Core::new();
    let note = core.note(&person(), "Named", true);
    let uri = format!("cairn://notes/{note}/tabs/markdown");
    let body = rpc(1, "resources/read", json!({"uri": uri})).to_string();
    let read = post(&core, &agent(), body.as_bytes(), &[("mcp-method", "resources/read"), ("mcp-name", &uri)]).unwrap();
    assert_eq!(read.status(), 200, "{read:?}");
    let wrong: Value = serde_json::from_str(&refused(&core, body.as_bytes(), &[("mcp-method", "resources/read"), ("mcp-name", "read_note_tab")])).unwrap();
    assert_eq!(wrong["error"]["code"], -32600, "{wrong}");
}

#[test]
fn a_protocol_version_header_not_spoken_here_refuses_the_request() {
    let core = Core::new();
    let want = r#"{"error":{"code":-32600,"message":"unsupported MCP-Protocol-Version 2020-01-01; supported: 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26"},"id":null,"jsonrpc":"2.0"}"#;
    assert_eq!(refused(&core, list_notes().as_bytes(), &[("mcp-protocol-version", "2020-01-01")]), want);
    let batch = json!([call(1, "list_notes", json!({})), rpc(2, "ping", json!({}))]).to_string();
    assert_eq!(refused(&core, batch.as_bytes(), &[("mcp-protocol-version", "2020-01-01")]), want);
    assert!(core.calls().is_empty());
    for v in ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"] {
        assert!(post(&core, &agent(), list_notes().as_bytes(), &[("mcp-protocol-version", v)]).is_ok(), "{v}");
    }
}

#[test]
fn method_and_name_headers_are_not_checked_against_a_batch_of_several() {
    let core = Core::new();
    let batch = json!([call(1, "list_notes", json!({})), rpc(2, "ping", json!({}))]).to_string();
    let answer = post(&core, &agent(), batch.as_bytes(), &[("mcp-method", "tools/list"), ("mcp-name", "nothing")]).unwrap();
    assert_eq!(answer.status(), 200, "{answer:?}");
}

#[test]
fn a_batch_of_one_is_checked_like_a_single_message() {
    let core = Core::new();
    let batch = json!([rpc(7, "ping", json!({}))]).to_string();
    let r: Value = serde_json::from_str(&refused(&core, batch.as_bytes(), &[("mcp-method", "tools/list")])).unwrap();
    assert_eq!((r["error"]["code"].as_i64(), r["id"].as_u64()), (Some(-32600), Some(7)), "{r}");
}
