//! Search over the wire: agents call `search_notes` over MCP, people
//! `GET /api/v1/search`, both under the same scopes, tenants and agent
//! visibility; `cairn reindex` checks and rebuilds the index of a store.
use crate::app::*;
use crate::harness::{Cairn, Start};
use serde_json::json;

/// The application again, on a state dir an earlier host used.
fn start_with_state(state: std::path::PathBuf) -> Cairn {
    let jwks: &'static str = Box::leak(key().jwks().into_boxed_str());
    Cairn::start(Start { state_dir: Some(state), env: vec![("SPIN_VARIABLE_JWKS", jwks), ("SPIN_VARIABLE_ISSUER", ISSUER)], ..Start::default() })
}

fn hits(v: &serde_json::Value) -> usize {
    v["hits"].as_array().unwrap().len()
}

#[test]
fn agents_search_over_mcp_and_people_over_rest_each_seeing_only_what_they_may() {
    let cairn = start();
    let (a, p) = (cairn.token(&agent()), cairn.token(&person()));
    let open = cairn.create_note(&person(), "Launch brief", true);
    let hidden = cairn.create_note(&person(), "Launch budget (private)", false);
    for note in [&open, &hidden] {
        let r =
            cairn.rest(&p, "PUT", &format!("/api/v1/notes/{note}/tabs/markdown"), Some(&json!({"expected_version": 1, "text": "The launch moves to Friday."})));
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let r = cairn.call(&a, "search_notes", json!({"query": "launch friday"}));
    assert_eq!(r["isError"], false, "{r}");
    let s = &r["structuredContent"];
    assert_eq!(hits(s), 1, "the agent sees the approved note only: {s}");
    assert_eq!(s["hits"][0]["note_id"], open.as_str());
    assert!(s["hits"][0]["snippet"].as_str().unwrap().contains("launch moves"), "{s}");

    let r = cairn.rest(&p, "GET", "/api/v1/search?q=launch%20friday", None);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(hits(&r.json()), 2, "people see both: {}", r.text());
    let r = cairn.rest(&p, "GET", "/api/v1/search?q=launch&tab_type=markdown&limit=1", None);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(hits(&r.json()), 1);
    assert!(r.json()["next_cursor"].is_string());

    let r = cairn.rest(&p, "GET", "/api/v1/search", None);
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["field"], "q");
    let r = cairn.rest(&p, "GET", "/api/v1/search?q=%22open", None);
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["field"], "query");

    let other = Who { tenant: "globex", ..person() };
    let r = cairn.rest(&cairn.token(&other), "GET", "/api/v1/search?q=launch", None);
    assert_eq!(r.status, 200);
    assert_eq!(hits(&r.json()), 0, "another tenant finds nothing");

    let no_read = Who { scope: "notes:write", ..agent() };
    let r = cairn.mcp(
        &cairn.token(&no_read),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "search_notes", "arguments": {"query": "launch"}}}),
    );
    assert_eq!(r.status, 403, "search needs notes:read: {}", r.text());
}

#[test]
fn reindex_checks_and_rebuilds_the_index_of_a_stopped_hosts_store() {
    let cairn = start();
    let p = cairn.token(&person());
    let note = cairn.create_note(&person(), "Pumice", true);
    let r = cairn.rest(&p, "PUT", &format!("/api/v1/notes/{note}/tabs/markdown"), Some(&json!({"expected_version": 1, "text": "obsidian and basalt"})));
    assert_eq!(r.status, 200, "{}", r.text());
    let state = cairn.state_dir.clone();
    let reindex = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_cairn")).arg("reindex").arg("--state-dir").arg(&state).args(args).output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr))
    };
    // The embedded SQLite store belongs to one process at a time: a running host says so.
    let (ok, out) = reindex(&["--check"]);
    assert!(!ok && out.contains("in use by another process"), "{out}");
    let (status, _) = cairn.terminate();
    assert!(status.success());
    let (ok, out) = reindex(&["--check", "--tenant", "acme"]);
    assert!(ok, "{out}");
    assert!(out.contains("tenant acme: checked 1 notes") && out.contains("missing 0"), "{out}");
    let (ok, out) = reindex(&[]);
    assert!(ok, "{out}");
    assert!(out.contains("tenant acme: reindexed"), "{out}");
    let (ok, out) = reindex(&["--tenant", "Not A Tenant"]);
    assert!(!ok && out.contains("is not a tenant id"), "{out}");
    let again = start_with_state(state);
    let r = again.rest(&again.token(&person()), "GET", "/api/v1/search?q=obsidian", None);
    assert_eq!(hits(&r.json()), 1, "{}", r.text());
}

#[test]
fn the_hosts_background_merge_catches_the_index_up_without_a_query() {
    use crate::metrics::{sample, scrape};
    let cairn = start_with(vec![("SPIN_VARIABLE_METRICS_TOKEN", "scrape-me")], vec![]);
    let p = cairn.token(&person());
    for (i, word) in ["feldspar", "gypsum", "quartz"].iter().enumerate() {
        let note = cairn.create_note(&person(), &format!("Rock {i}"), true);
        let r = cairn.rest(&p, "PUT", &format!("/api/v1/notes/{note}/tabs/markdown"), Some(&json!({"expected_version": 1, "text": word})));
        assert_eq!(r.status, 200, "{}", r.text());
    }
    // No query has run: only the background merge can bring the postings up.
    let waiting = std::time::Instant::now();
    let text = loop {
        let text = scrape(&cairn);
        if sample(&text, "cairn_search_merge_transitions_total", &[]) >= 3.0 && sample(&text, "cairn_search_dirty_notes", &[]) == 0.0 {
            break text;
        }
        assert!(waiting.elapsed().as_secs() < 20, "the merge never caught up: {text}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(sample(&text, "cairn_search_markers_cleared_total", &[]) >= 3.0, "{text}");
    let state = cairn.state_dir.clone();
    let (status, _) = cairn.terminate();
    assert!(status.success());
    let out =
        std::process::Command::new(env!("CARGO_BIN_EXE_cairn")).args(["reindex", "--check", "--tenant", "acme", "--state-dir"]).arg(&state).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success() && said.contains("missing 0, dirty 0"), "{said}");
}
