//! Notes and tabs as MCP resources: listed, templated and read under the same
//! scopes, tenants and agent visibility as the tools, with the provenance
//! notice, on every revision.
use crate::app::*;
use crate::harness::Cairn;
use serde_json::{Value, json};

fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// The JSON-RPC reply of one message.
fn ask(cairn: &Cairn, token: &str, method: &str, params: Value) -> Value {
    let r = cairn.mcp(token, &rpc(method, params));
    assert_eq!(r.status, 200, "{method}: {}", r.text());
    r.json()
}

fn read(cairn: &Cairn, token: &str, uri: &str) -> Value {
    ask(cairn, token, "resources/read", json!({"uri": uri}))
}

/// Replaces the markdown tab's text; the note's new version.
fn write_text(cairn: &Cairn, token: &str, note: &str, text: &str) -> u64 {
    let tab = cairn.call(token, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    let v = &tab["structuredContent"]["version"];
    let w = cairn.call(
        token,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": v,
        "idempotency_key": format!("res-{note}"), "operation": "replace_text", "text": text}),
    );
    assert_eq!(w["isError"], false, "{w}");
    w["structuredContent"]["version"].as_u64().unwrap()
}

#[test]
fn notes_are_listed_and_a_tab_reads_as_its_versions_and_provenance_then_its_text() {
    let cairn = start();
    let t = cairn.token(&agent());
    let note = cairn.create_note(&person(), "Launch brief", true);
    let version = write_text(&cairn, &t, &note, "# Launch\n\nShip on Friday.\n");

    let init = ask(&cairn, &t, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}));
    assert_eq!(init["result"]["capabilities"]["resources"]["listChanged"], false, "{init}");

    let listed = ask(&cairn, &t, "resources/list", json!({}));
    let resources = listed["result"]["resources"].as_array().unwrap();
    let mine = resources.iter().find(|r| r["uri"] == format!("cairn://notes/{note}")).unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(mine["title"], "Launch brief");
    assert_eq!(mine["mimeType"], "application/json");

    let templates = ask(&cairn, &t, "resources/templates/list", json!({}));
    let uris: Vec<&str> = templates["result"]["resourceTemplates"].as_array().unwrap().iter().map(|t| t["uriTemplate"].as_str().unwrap()).collect();
    assert!(uris.contains(&"cairn://notes/{note_id}/tabs/{tab_id}"), "{templates}");

    let n = read(&cairn, &t, &format!("cairn://notes/{note}"));
    let listing: Value = serde_json::from_str(n["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    let tab_uri = format!("cairn://notes/{note}/tabs/markdown");
    assert!(listing["tabs"].as_array().unwrap().iter().any(|tab| tab["uri"] == tab_uri), "{listing}");

    let tab = read(&cairn, &t, &tab_uri);
    let contents = tab["result"]["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 2, "{tab}");
    assert!(contents.iter().all(|c| c["uri"] == tab_uri));
    let meta: Value = serde_json::from_str(contents[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(contents[0]["mimeType"], "application/json");
    assert_eq!(meta["notice"], cairn_notes::NOTICE);
    assert!(meta["provenance"]["updated_by"].as_str().unwrap().contains("agent-1"), "{meta}");
    assert_eq!(meta["version"], version);
    assert!(meta.get("text").is_none(), "the text comes once, as markdown");
    assert_eq!(contents[1]["mimeType"], "text/markdown");
    assert_eq!(contents[1]["text"], "# Launch\n\nShip on Friday.\n");
}

#[test]
fn a_tab_that_is_not_markdown_reads_as_the_json_of_read_note_tab() {
    let cairn = start();
    let t = cairn.token(&agent());
    let note = cairn.create_note(&person(), "Sources", true);
    let r = read(&cairn, &t, &format!("cairn://notes/{note}/tabs/sources"));
    let contents = r["result"]["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 1, "{r}");
    let body: Value = serde_json::from_str(contents[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!((body["type"].as_str(), body["count"].as_u64()), (Some("sources"), Some(0)), "{body}");
    assert_eq!(body["notice"], cairn_notes::NOTICE);
}

#[test]
fn agents_see_no_unapproved_note_and_no_other_tenant_as_a_resource() {
    let cairn = start();
    let t = cairn.token(&agent());
    let hidden = cairn.create_note(&person(), "Draft", false);
    let other = Who { tenant: "globex", ..person() };
    let foreign = cairn.create_note(&other, "Theirs", true);
    let listed = ask(&cairn, &t, "resources/list", json!({}));
    let uris: Vec<&str> = listed["result"]["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert!(!uris.iter().any(|u| u.contains(&hidden) || u.contains(&foreign)), "{uris:?}");
    for note in [&hidden, &foreign] {
        for uri in [format!("cairn://notes/{note}"), format!("cairn://notes/{note}/tabs/markdown")] {
            let r = read(&cairn, &t, &uri);
            assert_eq!(r["error"]["code"], -32002, "{uri}: {r}");
            assert!(r.get("result").is_none());
        }
    }
    // The person who may see the draft reads it.
    let p = cairn.token(&person());
    assert!(read(&cairn, &p, &format!("cairn://notes/{hidden}/tabs/markdown")).get("result").is_some());
}

#[test]
fn reading_resources_needs_the_read_scope() {
    let cairn = start();
    let note = cairn.create_note(&person(), "Scoped", true);
    let writer = cairn.token(&Who { scope: "notes:write", ..agent() });
    for (method, params) in [("resources/list", json!({})), ("resources/read", json!({"uri": format!("cairn://notes/{note}")}))] {
        let r = cairn.mcp(&writer, &rpc(method, params));
        assert_eq!(r.status, 403, "{method}: {}", r.text());
        let challenge = r.header("www-authenticate").unwrap_or_default().to_string();
        assert!(challenge.contains("insufficient_scope") && challenge.contains("notes:read"), "{challenge}");
    }
}

#[test]
fn a_uri_that_is_not_a_cairn_resource_is_invalid_params_naming_the_shapes() {
    let cairn = start();
    let t = cairn.token(&agent());
    for uri in ["file:///etc/passwd", "cairn://notes/", "cairn://notes/a/tabs", "cairn://notes/a b", "cairn://notes/a/tabs/b/c", "cairn://notes/../x"] {
        let r = read(&cairn, &t, uri);
        assert_eq!(r["error"]["code"], -32602, "{uri}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("cairn://notes/{note_id}/tabs/{tab_id}"), "{r}");
    }
    let r = ask(&cairn, &t, "resources/read", json!({}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let r = ask(&cairn, &t, "resources/list", json!({"cursor": 5}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

#[test]
fn resources_page_through_every_note_once() {
    let cairn = start();
    let t = cairn.token(&agent());
    let made: std::collections::BTreeSet<String> = (0..53).map(|i| cairn.create_note(&person(), &format!("n{i}"), true)).collect();
    let (mut seen, mut cursor, mut pages) = (Vec::new(), None::<String>, 0);
    loop {
        let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
        let r = ask(&cairn, &t, "resources/list", params);
        pages += 1;
        for res in r["result"]["resources"].as_array().unwrap() {
            seen.push(res["uri"].as_str().unwrap().trim_start_matches("cairn://notes/").to_string());
        }
        match r["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(pages, 2);
    assert_eq!(seen.len(), made.len(), "each note once");
    assert_eq!(seen.into_iter().collect::<std::collections::BTreeSet<_>>(), made);
}

#[test]
fn stateless_resource_results_are_complete_with_cache_hints_and_mcp_name_is_the_uri() {
    let cairn = start();
    let t = cairn.token(&agent());
    let note = cairn.create_note(&person(), "Stateless", true);
    let uri = format!("cairn://notes/{note}/tabs/markdown");
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    for (method, params) in [
        ("resources/list", json!({"_meta": meta})),
        ("resources/templates/list", json!({"_meta": meta})),
        ("resources/read", json!({"_meta": meta, "uri": uri})),
    ] {
        let r = ask(&cairn, &t, method, params);
        assert_eq!(r["result"]["resultType"], "complete", "{method}: {r}");
        assert_eq!((r["result"]["ttlMs"].as_u64(), r["result"]["cacheScope"].as_str()), (Some(0), Some("private")), "{method}: {r}");
    }
    let body = rpc("resources/read", json!({"uri": uri}));
    let auth = format!("Bearer {t}");
    let send = |name: &str| {
        cairn.request(
            "POST",
            "/mcp",
            &[("authorization", &auth), ("content-type", "application/json"), ("mcp-method", "resources/read"), ("mcp-name", name)],
            body.to_string().as_bytes(),
        )
    };
    assert_eq!(send(&uri).status, 200);
    let wrong = send("read_note_tab");
    assert_eq!(wrong.status, 400, "{}", wrong.text());
}
