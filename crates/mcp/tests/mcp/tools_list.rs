//! `tools/list`: every tool of the core's one table, in its order, as the
//! core publishes it, with the OAuth scope it needs and the MCP Apps view
//! it links (only `edit_note_tab`, to the merge view); and the wire format
//! pinned by the saved fixture the end-to-end tests compare with too.
use crate::common::*;
use cairn_notes::tools::TOOLS;
use serde_json::{Value, json};

#[test]
fn every_tool_of_the_table_is_listed_in_order_with_its_security_scheme() {
    let core = Core::new();
    let r = ask(&core, &agent(), "tools/list", json!({}));
    let listed = r["result"]["tools"].as_array().unwrap();
    assert_eq!(listed.len(), TOOLS.len());
    for (tool, entry) in TOOLS.iter().zip(listed) {
        let mut want = serde_json::to_value(tool.spec()).unwrap();
        want["securitySchemes"] = json!([{"type": "oauth2", "scopes": [tool.scope]}]);
        if tool.name == "edit_note_tab" {
            want["_meta"] = json!({"ui": {"resourceUri": "ui://cairn/merge"}});
        }
        assert_eq!(entry, &want, "{}", tool.name);
        assert_eq!(entry["inputSchema"]["additionalProperties"], false, "{}", tool.name);
    }
    assert!(core.calls().is_empty());
}

#[test]
fn tools_list_matches_the_saved_wire_fixture() {
    let core = Core::new();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/wire/tools_list.json");
    let r = reply(&core, &agent(), &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    if std::env::var_os("CAIRN_REGENERATE_FIXTURES").is_some() {
        std::fs::write(&path, serde_json::to_string_pretty(&r).unwrap() + "\n").unwrap();
    }
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(r, saved, "tools/list differs from {}", path.display());
}
