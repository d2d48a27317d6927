//! MCP over Streamable HTTP: revisions, methods, JSON-RPC errors, batches.
use crate::app::*;
use serde_json::{Value, json};

fn rpc(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[test]
fn initialize_echoes_each_handshake_revision_and_falls_back_to_the_latest() {
    let cairn = start();
    let t = cairn.token(&agent());
    for v in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let r = cairn.mcp(&t, &rpc(1, "initialize", json!({"protocolVersion": v, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})));
        assert_eq!(r.json()["result"]["protocolVersion"], v);
        assert_eq!(r.json()["result"]["capabilities"]["tools"]["listChanged"], false);
        let instructions = r.json()["result"]["instructions"].as_str().unwrap().to_string();
        for rule in ["read the tab again", "redo your change", "new idempotency key", "never resend your old content"] {
            assert!(instructions.contains(rule), "the instructions do not state {rule:?}: {instructions}");
        }
    }
    let r = cairn.mcp(&t, &rpc(2, "initialize", json!({"protocolVersion": "2024-01-01", "capabilities": {}})));
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-11-25");
}

#[test]
fn server_discover_lists_every_revision_and_stateless_results_are_complete() {
    let cairn = start();
    let t = cairn.token(&agent());
    let meta = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}});
    let r = cairn.mcp(&t, &rpc(1, "server/discover", meta.clone())).json();
    let versions: Vec<&str> = r["result"]["supportedVersions"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(versions, ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]);
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "cairn");
    let listed = cairn.mcp(&t, &rpc(2, "tools/list", meta)).json();
    assert_eq!(listed["result"]["resultType"], "complete");
    let bad = cairn.mcp(&t, &rpc(3, "tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "1999-01-01"}}))).json();
    assert_eq!(bad["error"]["code"], -32602);
}

#[test]
fn delete_is_405_a_get_not_accepting_a_stream_is_406_an_anonymous_get_401_and_notifications_202() {
    let cairn = start();
    let t = cairn.token(&agent());
    let auth = format!("Bearer {t}");
    let delete = cairn.request("DELETE", "/mcp", &[("authorization", &auth)], b"");
    assert_eq!((delete.status, delete.header("allow")), (405, Some("GET, POST")), "no sessions to delete");
    let plain = cairn.request("GET", "/mcp", &[("authorization", &auth), ("accept", "application/json")], b"");
    assert_eq!(plain.status, 406, "{}", plain.text());
    assert!(plain.text().contains("Accept: text/event-stream"), "{}", plain.text());
    let anonymous = cairn.request("GET", "/mcp", &[("accept", "text/event-stream")], b"");
    assert_eq!(anonymous.status, 401, "the stream is behind the same door: {}", anonymous.text());
    let r = cairn.mcp(&t, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(r.status, 202);
    assert!(r.body.is_empty());
}

#[test]
fn json_rpc_errors_carry_the_right_codes() {
    let cairn = start();
    let t = cairn.token(&agent());
    let auth = format!("Bearer {t}");
    let parse = cairn.request("POST", "/mcp", &[("authorization", &auth)], b"{not json");
    assert_eq!(parse.json()["error"]["code"], -32700);
    let invalid = cairn.mcp(&t, &json!("just a string"));
    assert_eq!(invalid.json()["error"]["code"], -32600);
    let no_version = cairn.mcp(&t, &json!({"id": 1, "method": "ping"}));
    assert_eq!(no_version.json()["error"]["code"], -32600);
    let unknown = cairn.mcp(&t, &rpc(1, "prompts/list", json!({})));
    assert_eq!(unknown.json()["error"]["code"], -32601);
    let tool = cairn.mcp(&t, &rpc(1, "tools/call", json!({"name": "drop_tables", "arguments": {}})));
    assert_eq!(tool.json()["error"]["code"], -32602);
    assert!(tool.json()["error"]["message"].as_str().unwrap().contains("drop_tables"));
    let args = cairn.mcp(&t, &rpc(1, "tools/call", json!({"name": "list_notes", "arguments": [1]})));
    assert_eq!(args.json()["error"]["code"], -32602);
    assert_eq!(cairn.mcp(&t, &rpc(9, "ping", json!({}))).json()["result"], json!({}));
}

#[test]
fn a_batch_of_ten_runs_in_order_without_replies_to_notifications() {
    let cairn = start();
    let t = cairn.token(&agent());
    let mut batch: Vec<Value> = (1..=9).map(|i| rpc(i, "ping", json!({}))).collect();
    batch.insert(4, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let r = cairn.mcp(&t, &Value::Array(batch));
    let replies = r.json();
    let ids: Vec<u64> = replies.as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, (1..=9).collect::<Vec<_>>());
}

#[test]
fn eleven_messages_or_none_are_refused_whole_and_nothing_runs() {
    let cairn = start();
    let person = person();
    let note = cairn.create_note(&person, "batch target", true);
    let t = cairn.token(&agent());
    let tabs = cairn.call(&t, "list_note_tabs", json!({"note_id": note}));
    let version = tabs["structuredContent"]["version"].as_u64().unwrap();
    let creates: Vec<Value> = (0..11)
        .map(|i| {
            rpc(
                i,
                "tools/call",
                json!({"name": "create_note_tab", "arguments": {
            "note_id": note, "expected_version": version, "idempotency_key": format!("k{i}"), "tab_type": "sheet"}}),
            )
        })
        .collect();
    let r = cairn.mcp(&t, &Value::Array(creates));
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32600);
    let after = cairn.call(&t, "list_note_tabs", json!({"note_id": note}));
    assert_eq!(after["structuredContent"]["version"].as_u64().unwrap(), version, "part of a refused batch ran");
    let empty = cairn.mcp(&t, &json!([]));
    assert_eq!(empty.json()["error"]["code"], -32600);
}

#[test]
fn an_oversized_body_gets_413_unparsed() {
    let cairn = start_with(vec![("SPIN_VARIABLE_MAX_BODY_BYTES", "2048")], vec![]);
    let t = cairn.token(&agent());
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x".repeat(4096)}});
    assert_eq!(cairn.mcp(&t, &big).status, 413);
    assert_eq!(cairn.mcp(&t, &rpc(1, "ping", json!({}))).status, 200);
}

#[test]
fn mcp_method_and_name_headers_must_match_the_body() {
    let cairn = start();
    let t = cairn.token(&agent());
    let auth = format!("Bearer {t}");
    let body = rpc(1, "tools/call", json!({"name": "list_notes", "arguments": {}})).to_string();
    let ok = cairn.request("POST", "/mcp", &[("authorization", &auth), ("mcp-method", "tools/call"), ("mcp-name", "list_notes")], body.as_bytes());
    assert_eq!(ok.status, 200);
    let bad = cairn.request("POST", "/mcp", &[("authorization", &auth), ("mcp-method", "tools/list")], body.as_bytes());
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["error"]["code"], -32600);
    let version = cairn.request("POST", "/mcp", &[("authorization", &auth), ("mcp-protocol-version", "2020-01-01")], body.as_bytes());
    assert_eq!(version.status, 400);
}

#[test]
fn tools_list_publishes_schema_annotations_and_scopes_for_every_tool() {
    let cairn = start();
    let t = cairn.token(&agent());
    let tools = cairn.mcp(&t, &rpc(1, "tools/list", json!({}))).json()["result"]["tools"].clone();
    let names: Vec<&str> = tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), cairn_notes::tools().len());
    for want in
        ["list_notes", "list_note_tabs", "read_note_tab", "read_sheet_range", "list_note_attachments", "edit_note_tab", "create_note_tab", "add_note_source"]
    {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    for tool in tools.as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        assert!(name.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{name}");
        assert_eq!(tool["inputSchema"]["additionalProperties"], false, "{name}");
        let read_only = tool["annotations"]["readOnlyHint"].as_bool().unwrap();
        let scope = tool["securitySchemes"][0]["scopes"][0].as_str().unwrap();
        assert_eq!(tool["securitySchemes"][0]["type"], "oauth2");
        assert_eq!(scope, if read_only { "notes:read" } else { "notes:write" }, "{name}");
        if ["edit_note_tab", "create_note_tab", "add_note_source"].contains(&name) {
            let required: Vec<&str> = tool["inputSchema"]["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
            assert!(required.contains(&"expected_version") && required.contains(&"idempotency_key"), "{name}: {required:?}");
        }
    }
}
