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
    let r = cairn.call(
        &a,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": 3,
        "idempotency_key": "late", "operation": "append_text", "text": "agent", "rebase": true}),
    );
    assert_eq!(r["structuredContent"]["error"], "version_conflict", "{r}");
    let r = cairn.call(
        &a,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": 4,
        "idempotency_key": "now", "operation": "append_text", "text": "agent"}),
    );
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

/// Writes the markdown tab `n` times over REST; the note's version after.
fn write_versions(cairn: &crate::harness::Cairn, token: &str, note: &str, n: u64) -> u64 {
    let tab = format!("/api/v1/notes/{note}/tabs/markdown");
    for v in 1..=n {
        let r = cairn.rest(token, "PUT", &tab, Some(&json!({"expected_version": v, "text": format!("version {v}\n")})));
        assert_eq!(r.status, 200, "{}", r.text());
    }
    n + 1
}

#[test]
fn the_hosts_own_sweep_drops_history_past_retention_and_keeps_what_is_retained() {
    use crate::harness::{Cairn, Start, scratch};
    let state = scratch("history-sweep");
    let jwks: &str = Box::leak(key().jwks().into_boxed_str());
    let env = vec![
        ("SPIN_VARIABLE_JWKS", jwks),
        ("SPIN_VARIABLE_ISSUER", ISSUER),
        ("SPIN_VARIABLE_HISTORY_KEEP_VERSIONS", "3"),
        ("SPIN_VARIABLE_HISTORY_KEEP_DAYS", "0"),
    ];
    require_app();
    // Written while no sweep runs; then a host that sweeps every second starts on the same store.
    let first = Cairn::start(Start { state_dir: Some(state.clone()), env: env.clone(), args: vec!["--sweep-interval-secs", "3600"], ..Start::default() });
    let note = first.create_note(&person(), "Swept by the host", true);
    let top = write_versions(&first, &first.token(&person()), &note, 12);
    drop(first);
    let cairn = Cairn::start(Start { state_dir: Some(state), env, args: vec!["--sweep-interval-secs", "1"], ..Start::default() });
    let log = cairn.wait_for_log("history_blobs");
    let swept = |field: &str| -> u64 {
        log.split_whitespace().find_map(|w| w.strip_prefix(&format!("{field}="))).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("no {field} in: {log}"))
    };
    assert!(swept("history_entries") >= 8 && swept("history_blobs") >= 8, "{log}");
    let p = cairn.token(&person());
    let tab = format!("/api/v1/notes/{note}/tabs/markdown");
    for v in top - 2..=top {
        let r = cairn.rest(&p, "GET", &format!("{tab}/versions/{v}"), None);
        assert_eq!(r.status, 200, "version {v}: {}", r.text());
        assert_eq!(r.json()["text"], format!("version {}\n", v - 1));
    }
    let gone = cairn.rest(&p, "GET", &format!("{tab}/versions/2"), None);
    assert_eq!(gone.status, 404, "{}", gone.text());
    assert!(gone.text().contains("past retention"), "{}", gone.text());
    let h = cairn.rest(&p, "GET", &format!("/api/v1/notes/{note}/history?limit=50"), None).json();
    let listed: Vec<u64> = h["entries"].as_array().unwrap().iter().map(|e| e["version"].as_u64().unwrap()).collect();
    assert_eq!(listed, (top - 2..=top).rev().collect::<Vec<_>>(), "{h}");
    // The note still takes writes on top of what is left.
    let r = cairn.rest(&p, "PUT", &tab, Some(&json!({"expected_version": top, "text": "after the sweep\n"})));
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn the_operator_sweep_route_sweeps_history_too() {
    let env = vec![("SPIN_VARIABLE_HISTORY_KEEP_VERSIONS", "2"), ("SPIN_VARIABLE_HISTORY_KEEP_DAYS", "0"), ("SPIN_VARIABLE_SWEEP_TOKEN", "op-secret")];
    // A sweep interval longer than the test: only the route sweeps.
    let cairn = start_with(env, vec!["--sweep-interval-secs", "3600"]);
    let p = cairn.token(&person());
    let note = cairn.create_note(&person(), "Swept by the route", true);
    write_versions(&cairn, &p, &note, 15);
    let r = cairn.rest("op-secret", "POST", "/api/v1/sweep-claims?tenant=acme", None);
    assert_eq!(r.status, 200, "{}", r.text());
    let h = &r.json()["history"]["acme"];
    assert_eq!(h["notes"], 1, "{h}");
    assert!(h["entries"].as_u64().unwrap() >= 10 && h["blobs"].as_u64().unwrap() >= 10, "{h}");
    let again = cairn.rest("op-secret", "POST", "/api/v1/sweep-claims?tenant=acme", None).json();
    assert_eq!(again["history"]["acme"]["notes"], 0, "nothing more to sweep: {again}");
}
