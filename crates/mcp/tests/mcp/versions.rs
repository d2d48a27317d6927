//! Protocol revisions: `initialize` settles on a handshake revision, the
//! stateless 2026-07-28 revision rides in each request's `_meta` and marks
//! every result complete, and a revision not spoken here is refused.
use crate::common::*;
use serde_json::{Value, json};

const HANDSHAKES: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];

fn meta(version: &str) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {}})
}

fn initialize(core: &Core, asked: Value) -> Value {
    ask(core, &agent(), "initialize", json!({"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}))
}

#[test]
fn initialize_echoes_each_handshake_revision() {
    let core = Core::new();
    for v in HANDSHAKES {
        let r = &initialize(&core, json!(v))["result"];
        assert_eq!(r["protocolVersion"], v);
        assert_eq!(
            r["capabilities"],
            json!({"tools": {"listChanged": false}, "resources": {"listChanged": false, "subscribe": true}, "completions": {}, "logging": {}})
        );
        assert_eq!(r["serverInfo"], json!({"name": "cairn", "title": "Cairn", "version": env!("CARGO_PKG_VERSION")}));
        assert!(r.get("resultType").is_none(), "{r}");
        let instructions = r["instructions"].as_str().unwrap();
        for rule in ["read the tab again", "redo your change", "new idempotency key", "never resend your old content", "cairn://notes/{note_id}"] {
            assert!(instructions.contains(rule), "the instructions do not state {rule:?}: {instructions}");
        }
    }
}

#[test]
fn initialize_falls_back_to_the_latest_handshake_revision() {
    let core = Core::new();
    for asked in [json!("2024-01-01"), json!("2026-07-28"), json!(20250618), Value::Null] {
        assert_eq!(initialize(&core, asked.clone())["result"]["protocolVersion"], "2025-11-25", "{asked}");
    }
    assert_eq!(ask(&core, &agent(), "initialize", json!({}))["result"]["protocolVersion"], "2025-11-25");
}

#[test]
fn server_discover_lists_every_revision_newest_first_and_is_complete_with_cache_hints() {
    let core = Core::new();
    for params in [json!({"_meta": meta("2026-07-28")}), json!({})] {
        let r = &ask(&core, &agent(), "server/discover", params.clone())["result"];
        assert_eq!(r["supportedVersions"], json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]), "{params}");
        assert_eq!((r["resultType"].as_str(), r["ttlMs"].as_u64(), r["cacheScope"].as_str()), (Some("complete"), Some(0), Some("private")), "{params}");
        assert_eq!(r["serverInfo"]["name"], "cairn");
        assert_eq!(r["_meta"]["io.modelcontextprotocol/serverInfo"], r["serverInfo"]);
        assert_eq!(r["capabilities"]["resources"], json!({"listChanged": true, "subscribe": true}), "subscriptions/listen also tells list changes");
    }
}

#[test]
fn on_the_stateless_revision_every_result_is_marked_complete() {
    let core = Core::new();
    let stateless = json!({"_meta": meta("2026-07-28")});
    assert_eq!(reply_text(&core, &agent(), &rpc(1, "ping", stateless.clone())), r#"{"id":1,"jsonrpc":"2.0","result":{"resultType":"complete"}}"#);
    let listed = &ask(&core, &agent(), "tools/list", stateless.clone())["result"];
    assert_eq!((listed["resultType"].as_str(), listed["ttlMs"].as_u64(), listed["cacheScope"].as_str()), (Some("complete"), Some(0), Some("private")));
    let init = &ask(&core, &agent(), "initialize", stateless)["result"];
    assert_eq!(init["resultType"], "complete");
    assert!(init.get("ttlMs").is_none(), "only listings carry cache hints: {init}");
}

#[test]
fn a_tool_result_on_the_stateless_revision_is_marked_complete_and_otherwise_as_the_tool_wrote_it() {
    let core = Core::new();
    let note = core.note(&person(), "Stateless", true);
    let args = json!({"note_id": note, "tab_id": "markdown"});
    let message = rpc(1, "tools/call", json!({"_meta": meta("2026-07-28"), "name": "read_note_tab", "arguments": args}));
    let text = reply_text(&core, &agent(), &message);
    let written = core.direct(&agent(), "read_note_tab", args);
    let inner = written.strip_prefix('{').unwrap();
    assert_eq!(text, format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"resultType":"complete",{inner}}}"#));
}

#[test]
fn results_on_a_handshake_revision_carry_no_result_type() {
    let core = Core::new();
    for v in HANDSHAKES {
        let r = &ask(&core, &agent(), "tools/list", json!({"_meta": meta(v)}))["result"];
        assert!(r.get("resultType").is_none() && r.get("ttlMs").is_none(), "{v}: resultType {}", r["resultType"]);
    }
    assert_eq!(
        reply_text(&core, &agent(), &rpc(2, "ping", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": 7}}))),
        r#"{"id":2,"jsonrpc":"2.0","result":{}}"#
    );
}

#[test]
fn a_revision_not_spoken_here_in_meta_is_invalid_params_and_nothing_runs() {
    let core = Core::new();
    let bad = json!({"_meta": meta("1999-01-01")});
    assert_eq!(
        reply_text(&core, &agent(), &rpc(3, "tools/list", bad.clone())),
        r#"{"error":{"code":-32602,"message":"unsupported protocol version 1999-01-01; supported: 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26"},"id":3,"jsonrpc":"2.0"}"#
    );
    let mut params = bad;
    params["name"] = json!("list_notes");
    params["arguments"] = json!({});
    assert_eq!(ask(&core, &agent(), "tools/call", params)["error"]["code"], -32602);
    assert!(core.calls().is_empty(), "{:?}", core.calls());
}
