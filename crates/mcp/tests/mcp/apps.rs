//! MCP Apps: the merge view reads as one self-contained HTML document, the
//! extension is declared only to a client that renders apps, and the
//! merge it shows (`merge_note_tab`) writes back at the version it gives.
use serde_json::{Value, json};

use crate::common::*;

fn read_view(core: &Core) -> Value {
    let r = ask(core, &agent(), "resources/read", json!({"uri": "ui://cairn/merge"}));
    r["result"]["contents"][0].clone()
}

#[test]
fn the_merge_view_is_one_html_document_that_loads_nothing_from_anywhere() {
    let view = read_view(&Core::new());
    assert_eq!(view["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(view["_meta"]["ui"]["csp"], json!({"connectDomains": [], "resourceDomains": []}), "no origin asked of the host");
    let html = view["text"].as_str().unwrap();
    assert!(html.starts_with("<!doctype html>"), "{}", &html[..40]);
    assert!(html.contains("default-src 'none'"), "its own CSP allows nothing but itself");
    for outside in ["http://", "https://", "<script src", "<link", "@import", "url("] {
        assert!(!html.contains(outside), "the view loads nothing: found {outside}");
    }
    assert!(!html.contains("innerHTML"), "text written by others is set as text");
}

#[test]
fn the_apps_extension_is_declared_only_to_a_client_that_renders_apps() {
    let core = Core::new();
    let init = |caps: Value| {
        ask(&core, &agent(), "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": {"name": "t", "version": "1"}}))
    };
    let plain = init(json!({}));
    assert!(plain["result"]["capabilities"].get("extensions").is_none(), "{plain}");
    let apps = init(json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}));
    assert_eq!(apps["result"]["capabilities"]["extensions"], json!({"io.modelcontextprotocol/ui": {}}), "{apps}");
    let other_type = init(json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/uri-list"]}}}));
    assert!(other_type["result"]["capabilities"].get("extensions").is_none(), "{other_type}");
    let meta = |caps: Value| json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": caps}});
    let discover = ask(&core, &agent(), "server/discover", meta(json!({"extensions": {"io.modelcontextprotocol/ui": {}}})));
    assert_eq!(discover["result"]["capabilities"]["extensions"], json!({"io.modelcontextprotocol/ui": {}}), "{discover}");
    let discover = ask(&core, &agent(), "server/discover", meta(json!({})));
    assert!(discover["result"]["capabilities"].get("extensions").is_none(), "{discover}");
}

fn call_tool(core: &Core, who: &cairn_auth::Principal, name: &str, args: Value) -> Value {
    reply(core, who, &call(1, name, args))["result"]["structuredContent"].clone()
}

#[test]
fn a_stale_proposal_merges_with_the_text_now_and_the_merge_writes_at_the_version_it_gives() {
    let core = Core::new();
    let note = core.note(&person(), "Shared", true);
    let edit = |who: cairn_auth::Principal, version: u64, text: &str, key: &str| {
        call_tool(
            &core,
            &who,
            "edit_note_tab",
            json!({"note_id": note, "tab_id": "markdown", "operation": "replace_text", "text": text, "expected_version": version, "idempotency_key": key}),
        )
    };
    assert_eq!(edit(person(), 1, "a\nb\nc\n", "p1")["version"], 2);
    assert_eq!(edit(person(), 2, "A\nb\nc\n", "p2")["version"], 3);
    let refused = edit(agent(), 2, "a\nb\nC\n", "a1");
    assert_eq!(refused["error"], "version_conflict", "{refused}");
    let merge = call_tool(&core, &agent(), "merge_note_tab", json!({"note_id": note, "base_version": 2, "text": "a\nb\nC\n"}));
    assert_eq!((merge["merged"].as_str(), merge["clean"].as_bool(), merge["version"].as_u64()), (Some("A\nb\nC\n"), Some(true), Some(3)), "{merge}");
    let joined: String = merge["segments"].as_array().unwrap().iter().map(|s| s["text"].as_str().unwrap()).collect();
    assert_eq!(joined, "A\nb\nC\n", "the segments' texts joined are the merge");
    assert_eq!(edit(agent(), 3, "A\nb\nC\n", "m1")["version"], 4);
    let current = call_tool(&core, &agent(), "merge_note_tab", json!({"note_id": note, "base_version": 4, "text": "A\nb by agent\nC\n"}));
    assert_eq!((current["clean"].as_bool(), current["merged"].as_str()), (Some(true), Some("A\nb by agent\nC\n")), "nothing moved since: {current}");
    edit(person(), 4, "A\nb by person\nC\n", "p3");
    let conflict = call_tool(&core, &agent(), "merge_note_tab", json!({"note_id": note, "base_version": 4, "text": "A\nb by agent\nC\n"}));
    assert_eq!(conflict["conflicts"][0], json!({"base_start": 2, "base": "b\n", "theirs": "b by person\n", "mine": "b by agent\n"}), "{conflict}");
    assert_eq!(conflict["merged"], "A\nb by person\nC\n", "a conflict keeps what is stored");
}

#[test]
fn a_merge_past_the_notes_version_or_of_a_note_an_agent_may_not_see_is_refused_and_writes_nothing() {
    let core = Core::new();
    let note = core.note(&person(), "Shared", true);
    let future = call_tool(&core, &agent(), "merge_note_tab", json!({"note_id": note, "base_version": 9, "text": "x\n"}));
    assert_eq!((future["error"].as_str(), future["field"].as_str()), (Some("invalid_argument"), Some("base_version")), "{future}");
    let draft = core.note(&person(), "Draft", false);
    let hidden = call_tool(&core, &agent(), "merge_note_tab", json!({"note_id": draft, "base_version": 1, "text": "x\n"}));
    assert_eq!(hidden["error"], "not_found", "an unapproved note is not there for an agent: {hidden}");
}
