//! History over the wire: people list, read, diff and restore versions
//! through REST; agents read them with `list_note_history` and
//! `read_note_tab` `at_version`, and patch with `rebase`.
use crate::app::*;
use serde_json::json;

#[test]
fn people_list_read_diff_and_restore_versions_over_rest() {
    let cairn = start();
    let p = cairn.token(&person());
    let note = cairn.create_note(&person(), "History brief", true);
    let tab = format!("/api/v1/notes/{note}/tabs/markdown");
    for (v, text) in [(1, "first\n"), (2, "first\nsecond\n")] {
        let r = cairn.rest(&p, "PUT", &tab, Some(&json!({"expected_version": v, "text": text})));
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let h = cairn.rest(&p, "GET", &format!("/api/v1/notes/{note}/history?limit=2"), None);
    assert_eq!(h.status, 200, "{}", h.text());
    let versions: Vec<u64> = h.json()["entries"].as_array().unwrap().iter().map(|e| e["version"].as_u64().unwrap()).collect();
    assert_eq!(versions, [3, 2]);
    assert_eq!(h.json()["next_before"], 1);

    let old = cairn.rest(&p, "GET", &format!("{tab}/versions/2"), None);
    assert_eq!(old.status, 200, "{}", old.text());
    assert_eq!(old.json()["text"], "first\n");
    assert_eq!(cairn.rest(&p, "GET", &format!("{tab}/versions/9"), None).status, 400);

    let d = cairn.rest(&p, "GET", &format!("{tab}/diff?from=2&to=3"), None);
    assert_eq!(d.status, 200, "{}", d.text());
    assert!(d.json()["unified"].as_str().unwrap().contains("+second"), "{}", d.text());
    assert_eq!(cairn.rest(&p, "GET", &format!("{tab}/diff?from=3&to=2"), None).status, 400);

    let stale = cairn.rest(&p, "POST", &format!("{tab}/restore"), Some(&json!({"from_version": 2, "expected_version": 2})));
    assert_eq!(stale.status, 409, "{}", stale.text());
    let r = cairn.rest(&p, "POST", &format!("{tab}/restore"), Some(&json!({"from_version": 2, "expected_version": 3, "idempotency_key": "undo"})));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["version"], 4);

    // The agent sees the same history and reads the restored-over version.
    let a = cairn.token(&agent());
    let listed = cairn.call(&a, "list_note_history", json!({"note_id": note, "tab_id": "markdown"}));
    assert_eq!(listed["structuredContent"]["entries"][0]["action"], "restore", "{listed}");
    let then = cairn.call(&a, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "at_version": 3}));
    assert_eq!(then["structuredContent"]["text"], "first\nsecond\n", "{then}");
    // A rebased append over the restore (it changed line 2; the append borders
    // only the last line of version 3, which the restore removed: refused).
    let r = cairn.call(&a, "edit_note_tab", json!({"note_id": note, "tab_id": "markdown", "expected_version": 3,
        "idempotency_key": "late", "operation": "append_text", "text": "agent", "rebase": true}));
    assert_eq!(r["structuredContent"]["error"], "version_conflict", "{r}");
    let r = cairn.call(&a, "edit_note_tab", json!({"note_id": note, "tab_id": "markdown", "expected_version": 4,
        "idempotency_key": "now", "operation": "append_text", "text": "agent"}));
    assert_eq!(r["isError"], false, "{r}");
}

#[test]
fn history_routes_need_their_scopes() {
    let cairn = start();
    let note = cairn.create_note(&person(), "Scoped", true);
    let reader = Who { scope: "notes:read", ..person() };
    let t = cairn.token(&reader);
    assert_eq!(cairn.rest(&t, "GET", &format!("/api/v1/notes/{note}/history"), None).status, 200);
    let r = cairn.rest(&t, "POST", &format!("/api/v1/notes/{note}/tabs/markdown/restore"), Some(&json!({"from_version": 1, "expected_version": 1})));
    assert_eq!(r.status, 403, "{}", r.text());
}

#[test]
fn the_audit_route_shows_refused_and_committed_writes_to_auditors_only() {
    let cairn = start();
    let note = cairn.create_note(&person(), "Audited", true);
    let p = cairn.token(&person());
    let tab = format!("/api/v1/notes/{note}/tabs/markdown");
    assert_eq!(cairn.rest(&p, "PUT", &tab, Some(&json!({"expected_version": 1, "text": "x"}))).status, 200);
    assert_eq!(cairn.rest(&p, "PUT", &tab, Some(&json!({"expected_version": 1, "text": "y"}))).status, 409);
    let path = format!("/api/v1/audit?note_id={note}");
    assert_eq!(cairn.rest(&p, "GET", &path, None).status, 403, "notes scopes are not audit:read");
    let auditor = cairn.token(&Who { scope: "audit:read", ..person() });
    let r = cairn.rest(&auditor, "GET", &path, None);
    assert_eq!(r.status, 200, "{}", r.text());
    let events = r.json()["events"].as_array().unwrap().clone();
    assert!(events.iter().any(|e| e["outcome"] == "committed" && e["version"] == 2), "{events:?}");
    let refused = events.iter().find(|e| e["outcome"] == "version_conflict").expect("the stale save is in the trail");
    assert_eq!(refused["tool"], "PUT /api/v1/notes/{note}/tabs/{tab}");
    assert!(!r.text().contains("\"y\""), "{}", r.text());
}

#[test]
fn retention_comes_from_the_hosts_variables() {
    let cairn = start_with(vec![("SPIN_VARIABLE_HISTORY_KEEP_VERSIONS", "2"), ("SPIN_VARIABLE_HISTORY_KEEP_DAYS", "0")], vec![]);
    let p = cairn.token(&person());
    let note = cairn.create_note(&person(), "Short memory", true);
    let tab = format!("/api/v1/notes/{note}/tabs/markdown");
    for (v, text) in [(1, "a\n"), (2, "b\n"), (3, "c\n")] {
        assert_eq!(cairn.rest(&p, "PUT", &tab, Some(&json!({"expected_version": v, "text": text}))).status, 200);
    }
    // The newest two versions (3 and 4) read; version 2 is past retention.
    assert_eq!(cairn.rest(&p, "GET", &format!("{tab}/versions/3"), None).json()["text"], "b\n");
    let gone = cairn.rest(&p, "GET", &format!("{tab}/versions/2"), None);
    assert_eq!(gone.status, 404, "{}", gone.text());
    assert_eq!(gone.json()["field"], "at_version");
    // Through the composed tool too (it inherits the router's variables).
    let a = cairn.token(&agent());
    let r = cairn.call(&a, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "at_version": 2}));
    assert_eq!(r["structuredContent"]["error"], "not_found", "{r}");
}
