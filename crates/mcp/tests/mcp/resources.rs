//! Notes and tabs as MCP resources, read through the read tools: the same
//! tenants and agent visibility, refusals turned into JSON-RPC errors about
//! the URI (-32002 for what does not exist or may not be seen).
use crate::common::*;
use serde_json::{Value, json};

fn read(core: &Core, who: &cairn_auth::Principal, uri: &str) -> Value {
    ask(core, who, "resources/read", json!({"uri": uri}))
}

fn listed_uris(core: &Core, who: &cairn_auth::Principal) -> Vec<String> {
    let r = ask(core, who, "resources/list", json!({}));
    r["result"]["resources"].as_array().unwrap_or_else(|| panic!("{r}")).iter().map(|r| r["uri"].as_str().unwrap().to_string()).collect()
}

#[test]
fn each_visible_note_is_listed_with_its_title_version_and_time() {
    let core = Core::new();
    let note = core.note(&person(), "Launch brief", true);
    let r = ask(&core, &agent(), "resources/list", json!({}));
    let notes: Value = serde_json::from_str(&core.direct(&agent(), "list_notes", json!({}))).unwrap();
    let updated_at = &notes["structuredContent"]["notes"][0]["provenance"]["updated_at"];
    assert_eq!(
        r["result"],
        json!({"resources": [{
            "uri": format!("cairn://notes/{note}"),
            "name": note,
            "title": "Launch brief",
            "description": "Note \u{201c}Launch brief\u{201d} at version 1: its tabs, each a resource",
            "mimeType": "application/json",
            "annotations": {"lastModified": updated_at},
        }]})
    );
    assert!(updated_at.is_string(), "{notes}");
}

#[test]
fn the_templates_name_a_note_and_a_tab() {
    let core = Core::new();
    let r = ask(&core, &agent(), "resources/templates/list", json!({}));
    let templates = r["result"]["resourceTemplates"].as_array().unwrap();
    let uris: Vec<&str> = templates.iter().map(|t| t["uriTemplate"].as_str().unwrap()).collect();
    assert_eq!(uris, ["cairn://notes/{note_id}/tabs/{tab_id}", "cairn://notes/{note_id}"]);
    assert_eq!(templates[1]["mimeType"], "application/json");
    assert!(templates[0]["description"].as_str().unwrap().contains("not instructions"));
    assert!(core.calls().is_empty(), "templates need no tool");
}

#[test]
fn a_note_reads_as_its_tabs_each_with_its_uri() {
    let core = Core::new();
    let note = core.note(&person(), "Tabs", true);
    let uri = format!("cairn://notes/{note}");
    let r = read(&core, &agent(), &uri);
    let contents = r["result"]["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 1, "{r}");
    assert_eq!((contents[0]["uri"].as_str(), contents[0]["mimeType"].as_str()), (Some(uri.as_str()), Some("application/json")));
    let listing: Value = serde_json::from_str(contents[0]["text"].as_str().unwrap()).unwrap();
    let mut direct: Value = serde_json::from_str(&core.direct(&agent(), "list_note_tabs", json!({"note_id": note}))).unwrap();
    let mut want = direct["structuredContent"].take();
    for tab in want["tabs"].as_array_mut().unwrap() {
        tab["uri"] = format!("cairn://notes/{note}/tabs/{}", tab["tab_id"].as_str().unwrap()).into();
    }
    assert_eq!(listing, want);
    assert!(listing["tabs"].as_array().unwrap().iter().any(|t| t["uri"] == format!("{uri}/tabs/markdown")), "{listing}");
}

#[test]
fn a_markdown_tab_reads_as_its_versions_and_provenance_then_its_text() {
    let core = Core::new();
    let note = core.note(&person(), "Launch", true);
    let text = "# Launch\n\nShip on Friday.\n";
    let edit = json!({"note_id": note, "tab_id": "markdown", "expected_version": 1, "idempotency_key": "w", "operation": "replace_text", "text": text});
    assert_eq!(reply(&core, &agent(), &call(1, "edit_note_tab", edit))["result"]["isError"], false);
    let uri = format!("cairn://notes/{note}/tabs/markdown");
    let r = read(&core, &agent(), &uri);
    let contents = r["result"]["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 2, "{r}");
    assert!(contents.iter().all(|c| c["uri"] == uri));
    let meta: Value = serde_json::from_str(contents[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(contents[0]["mimeType"], "application/json");
    assert_eq!(meta["notice"], cairn_notes::NOTICE);
    assert_eq!(meta["version"], 2);
    assert!(meta["provenance"]["updated_by"].as_str().unwrap().contains("agent-1"), "{meta}");
    assert!(meta.get("text").is_none(), "the text comes once, as markdown");
    assert_eq!(contents[1], json!({"uri": uri, "mimeType": "text/markdown", "text": text}));
}

#[test]
fn a_tab_that_is_not_markdown_reads_as_the_json_of_read_note_tab() {
    let core = Core::new();
    let note = core.note(&person(), "Sources", true);
    let r = read(&core, &agent(), &format!("cairn://notes/{note}/tabs/sources"));
    let contents = r["result"]["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 1, "{r}");
    let body: Value = serde_json::from_str(contents[0]["text"].as_str().unwrap()).unwrap();
    let direct: Value = serde_json::from_str(&core.direct(&agent(), "read_note_tab", json!({"note_id": note, "tab_id": "sources"}))).unwrap();
    assert_eq!(body, direct["structuredContent"]);
    assert_eq!((body["type"].as_str(), body["count"].as_u64()), (Some("sources"), Some(0)), "{body}");
}

#[test]
fn agents_see_no_unapproved_note_and_no_other_tenant_as_a_resource() {
    let core = Core::new();
    let hidden = core.note(&person(), "Draft", false);
    let foreign = core.note(&stranger(), "Theirs", true);
    let seen = listed_uris(&core, &agent());
    assert!(!seen.iter().any(|u| u.contains(&hidden) || u.contains(&foreign)), "{seen:?}");
    for note in [&hidden, &foreign] {
        for uri in [format!("cairn://notes/{note}"), format!("cairn://notes/{note}/tabs/markdown")] {
            let r = read(&core, &agent(), &uri);
            assert_eq!(r["error"]["code"], -32002, "{uri}: {r}");
            assert!(r["error"]["message"].as_str().unwrap().starts_with(&format!("resource not found: {uri} (")), "{r}");
            assert!(r.get("result").is_none());
        }
    }
    assert!(listed_uris(&core, &person()).contains(&format!("cairn://notes/{hidden}")));
    assert!(read(&core, &person(), &format!("cairn://notes/{hidden}/tabs/markdown")).get("result").is_some());
}

#[test]
fn a_tab_that_does_not_exist_is_resource_not_found() {
    let core = Core::new();
    let note = core.note(&person(), "One tab short", true);
    let uri = format!("cairn://notes/{note}/tabs/slides-9-nothere");
    assert_eq!(read(&core, &agent(), &uri)["error"]["code"], -32002);
}

#[test]
fn a_uri_that_is_not_a_cairn_resource_is_invalid_params_naming_the_shapes() {
    let core = Core::new();
    let long = format!("cairn://notes/{}", "a".repeat(65));
    for uri in ["file:///etc/passwd", "cairn://notes/", "cairn://notes/a/tabs", "cairn://notes/a b", "cairn://notes/a/tabs/b/c", "cairn://notes/../x", &long] {
        let want = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message":
            format!("{uri} is not a Cairn resource: use cairn://notes/{{note_id}} or cairn://notes/{{note_id}}/tabs/{{tab_id}}")}});
        assert_eq!(read(&core, &agent(), uri), want, "{uri}");
    }
    for params in [json!({}), json!({"uri": 5})] {
        let r = ask(&core, &agent(), "resources/read", params);
        assert_eq!(r["error"], json!({"code": -32602, "message": "params.uri must be a resource URI"}), "{r}");
    }
    assert!(core.calls().is_empty());
}

#[test]
fn a_cursor_that_no_listing_gave_is_invalid_params() {
    let core = Core::new();
    let r = ask(&core, &agent(), "resources/list", json!({"cursor": 5}));
    assert_eq!(r["error"], json!({"code": -32602, "message": "cursor must be a string from a previous nextCursor"}), "{r}");
    let r = ask(&core, &agent(), "resources/list", json!({"cursor": "not-a-cursor"}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().starts_with("cairn://notes: "), "{r}");
    assert!(ask(&core, &agent(), "resources/list", json!({"cursor": null})).get("result").is_some());
}

#[test]
fn resources_page_through_every_note_once() {
    let core = Core::new();
    let made: std::collections::BTreeSet<String> = (0..53).map(|i| core.note(&person(), &format!("n{i}"), true)).collect();
    let (mut seen, mut cursor, mut pages) = (Vec::new(), None::<String>, 0);
    loop {
        let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
        let r = ask(&core, &agent(), "resources/list", params);
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
fn stateless_resource_results_are_complete_with_cache_hints() {
    let core = Core::new();
    let note = core.note(&person(), "Stateless", true);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    for (method, params) in [
        ("resources/list", json!({"_meta": meta})),
        ("resources/templates/list", json!({"_meta": meta})),
        ("resources/read", json!({"_meta": meta, "uri": format!("cairn://notes/{note}/tabs/markdown")})),
    ] {
        let r = &ask(&core, &agent(), method, params)["result"];
        assert_eq!((r["resultType"].as_str(), r["ttlMs"].as_u64(), r["cacheScope"].as_str()), (Some("complete"), Some(0), Some("private")), "{method}: {r}");
    }
}

#[test]
fn a_resource_error_is_not_marked_complete_on_the_stateless_revision() {
    let core = Core::new();
    let r = ask(&core, &agent(), "resources/read", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}, "uri": "cairn://notes/nothere"}));
    assert_eq!(r["error"]["code"], -32002, "{r}");
    assert!(r.get("result").is_none(), "{r}");
}
