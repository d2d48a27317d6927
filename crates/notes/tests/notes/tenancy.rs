//! Tenants: every key is prefixed, and one tenant never sees another's notes.
use crate::common::*;
use cairn_notes::TenantKv;
use serde_json::json;

#[test]
fn tenant_a_cannot_see_tenant_b_note_and_gets_the_same_not_found_as_for_a_missing_note() {
    let mut w = World::new();
    let bob = human("beta");
    let note = w.note(&bob, "Secret", true);
    let alice = human("acme");
    let foreign = w.refused(&alice, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    let missing = w.refused(&alice, "read_note_tab", json!({"note_id": "note-does-not-exist", "tab_id": "markdown"}));
    assert_eq!(foreign["error"], "not_found");
    assert_eq!(foreign, missing, "no hint that the note exists elsewhere");
    for tool in ["list_note_tabs", "list_note_attachments"] {
        let r = w.refused(&alice, tool, json!({"note_id": note}));
        assert_eq!(r["error"], "not_found");
    }
    let r = w.refused(
        &alice,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": 1,
        "idempotency_key": "k", "operation": "replace_text", "text": "x"}),
    );
    assert_eq!(r["error"], "not_found");
    assert_eq!(w.ok(&alice, "list_notes", json!({}))["notes"].as_array().unwrap().len(), 0);
    assert_eq!(w.ok(&bob, "list_notes", json!({}))["notes"].as_array().unwrap().len(), 1);
}

#[test]
fn every_stored_key_is_under_the_callers_tenant_prefix() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    w.write_text(&ada, &note, "text", "k1");
    w.create_tab(&ada, &note, "sheet", "Numbers");
    for (k, _) in w.kv.dump() {
        assert!(k.starts_with("t/acme/"), "{k}");
    }
}

#[test]
fn invalid_tenant_ids_are_refused_before_any_store_access() {
    let kv = TestKv::new();
    let mut env = cairn_notes::SimEnv::new(1);
    for bad in ["", "ACME", "a/b", "a b", &"x".repeat(65), "../t"] {
        let who = identity(bad, "ada", cairn_notes::ActorType::Human);
        let r = checked_call(&kv, &mut env, &who, "list_notes", json!({}));
        assert_eq!(r["isError"], true, "{bad:?}");
        assert_eq!(r["structuredContent"]["field"], "identity.tenant");
        assert!(TenantKv::new(&kv, bad).is_none());
    }
    assert!(kv.take_reads().is_empty());
    assert!(TenantKv::new(&kv, "acme_1-x").is_some());
}
