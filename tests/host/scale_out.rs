//! Many hosts, one store: two `cairn up` processes on different ports share
//! one real Redis (and one state dir: signing key, identity secret, compile
//! cache), and every guarantee holds across them.
use crate::app::*;
use crate::harness::*;
use crate::redis::{self, Server as Redis};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Barrier;
use std::time::Duration;

/// The audience every host of a test serves: the URL a load balancer in front would have.
pub const AUDIENCE: &str = "http://cairn.test/mcp";

/// `n` hosts on `redis` (default on db 0, cache on db 1), one shared state dir.
pub fn hosts_on(redis: &Redis, n: usize, env: &[(&'static str, &'static str)], args: &[&'static str]) -> Vec<Cairn> {
    hosts_with(&redis::runtime_config(redis), n, env, args)
}

/// `n` hosts started at once with the runtime config at `rc`, one shared state dir.
pub fn hosts_with(rc: &std::path::Path, n: usize, env: &[(&'static str, &'static str)], args: &[&'static str]) -> Vec<Cairn> {
    require_app();
    let state = scratch("shared-state");
    let rc: &'static str = Box::leak(rc.display().to_string().into_boxed_str());
    let jwks: &'static str = Box::leak(key().jwks().into_boxed_str());
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let state = state.clone();
            let mut all = vec![
                ("SPIN_VARIABLE_JWKS", jwks),
                ("SPIN_VARIABLE_ISSUER", ISSUER),
                ("SPIN_VARIABLE_AUDIENCE", AUDIENCE),
                ("SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE", "1000000"),
            ];
            all.extend_from_slice(env);
            let mut a = vec!["--runtime-config-file", rc];
            a.extend_from_slice(args);
            std::thread::spawn(move || Cairn::start(Start { state_dir: Some(state), env: all, args: a, ..Start::default() }))
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

fn text_of(host: &Cairn, token: &str, note: &str) -> String {
    let r = host.call(token, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    r["structuredContent"]["text"].as_str().unwrap().to_string()
}

/// One editor appending `n` lines `{tag}-{i}`, re-reading and re-applying on
/// a conflict; writes go over MCP or, for `rest`, over the REST API.
fn append_lines(host: &Cairn, token: &str, note: &str, tag: &str, n: usize, rest: bool) {
    for i in 0..n {
        for attempt in 0.. {
            let read = host.call(token, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}))["structuredContent"].clone();
            let text = read["text"].as_str().unwrap();
            let next = if text.is_empty() { format!("{tag}-{i}") } else { format!("{text}\n{tag}-{i}") };
            let key = format!("{tag}-{i}-{attempt}");
            let landed = if rest {
                let body = json!({"expected_version": read["version"], "idempotency_key": key, "text": next});
                let r = host.rest(token, "PUT", &format!("/api/v1/notes/{note}/tabs/markdown"), Some(&body));
                assert!(r.status == 200 || r.status == 409, "PUT: {} {}", r.status, r.text());
                r.status == 200
            } else {
                let r = host.call(
                    token,
                    "edit_note_tab",
                    json!({"note_id": note, "tab_id": "markdown", "expected_version": read["version"],
                    "idempotency_key": key, "operation": "replace_text", "text": next}),
                );
                let s = &r["structuredContent"];
                assert!(r["isError"] == false || s["error"] == "version_conflict", "edit: {r}");
                r["isError"] == false
            };
            if landed {
                break;
            }
        }
    }
}

#[test]
fn the_seed_race_across_two_hosts_loses_no_line_with_reapply() {
    let redis = redis::start();
    let hosts = hosts_on(&redis, 2, &[], &[]);
    let (a, b) = (&hosts[0], &hosts[1]);
    let note = a.create_note(&person(), "Race across hosts", true);
    let (agent_token, person_token) = (a.token(&agent()), b.token(&person()));
    let lines = 25;
    std::thread::scope(|s| {
        s.spawn(|| append_lines(a, &agent_token, &note, "agent", lines, false));
        s.spawn(|| append_lines(b, &person_token, &note, "person", lines, true));
    });
    let text = text_of(b, &agent_token, &note);
    for tag in ["agent", "person"] {
        for i in 0..lines {
            assert_eq!(text.lines().filter(|l| *l == format!("{tag}-{i}")).count(), 1, "{tag}-{i} in:\n{text}");
        }
    }
    assert_eq!(text.lines().count(), 2 * lines);
}

#[test]
fn claims_raced_from_two_hosts_have_exactly_one_winner() {
    let redis = redis::start();
    let hosts = hosts_on(&redis, 2, &[], &[]);
    let bots = [Who { sub: "bot-a", ..agent() }, Who { sub: "bot-b", ..agent() }];
    for round in 0..50 {
        let note = hosts[0].create_note(&person(), &format!("round {round}"), true);
        let barrier = Barrier::new(2);
        let wins: usize = std::thread::scope(|s| {
            let hs: Vec<_> = (0..2)
                .map(|i| {
                    let (host, token, note, barrier) = (&hosts[i], hosts[i].token(&bots[i]), note.clone(), &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        let r = host.call(&token, "claim_note", json!({"note_id": note}));
                        (r["isError"] == false) as usize
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(wins, 1, "round {round}: {wins} winners");
        let board = hosts[1].call(&hosts[1].token(&person()), "list_claims", json!({"note_id": note}));
        assert_eq!(board["structuredContent"]["claims"].as_array().unwrap().len(), 1, "round {round}");
    }
}

#[test]
fn an_idempotency_key_replays_on_the_other_host() {
    let redis = redis::start();
    let hosts = hosts_on(&redis, 2, &[], &[]);
    let note = hosts[0].create_note(&person(), "Keyed", true);
    let token = hosts[0].token(&agent());
    let args = json!({"note_id": note, "tab_id": "markdown", "expected_version": 1, "idempotency_key": "once",
        "operation": "replace_text", "text": "written on A"});
    let first = hosts[0].call(&token, "edit_note_tab", args.clone());
    assert_eq!(first["structuredContent"]["replayed"], false, "{first}");
    let again = hosts[1].call(&token, "edit_note_tab", args);
    assert_eq!(again["structuredContent"]["replayed"], true, "{again}");
    assert_eq!(again["structuredContent"]["version"], first["structuredContent"]["version"]);
    assert_eq!(text_of(&hosts[1], &token, &note), "written on A");
}

#[test]
fn one_subjects_budget_holds_across_hosts() {
    let redis = redis::start();
    // Six a minute: ten at once, then one every ten seconds, on either host.
    let hosts = hosts_on(&redis, 2, &[("SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE", "6")], &[]);
    let token = hosts[0].token(&agent());
    let mut statuses = Vec::new();
    for i in 0..12 {
        let host = &hosts[i % 2];
        let r = host.mcp(&token, &json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "list_notes", "arguments": {}}}));
        statuses.push(r.status);
    }
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 10, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 2, "{statuses:?}");
}

/// Every key of `prefix` in the shared store, with its value.
fn store_keys(redis: &Redis, prefix: &str) -> Vec<(String, Value)> {
    use cairn_kv::Store;
    let store = cairn_kv_redis::RedisStore::open(&redis.url_db(0), cairn_kv_redis::Options::default()).unwrap();
    let keys = store.list_keys("default", Some(prefix), 100_000).unwrap();
    keys.into_iter()
        .filter(|k| k.starts_with(prefix))
        .map(|k| {
            let v = store.get("default", &k).unwrap().unwrap();
            let v = serde_json::from_slice(&v).unwrap_or(Value::Null);
            (k, v)
        })
        .collect()
}

#[test]
fn the_claim_sweep_runs_on_every_host_at_once_and_expires_each_claim_once() {
    let redis = redis::start();
    let hosts = hosts_on(&redis, 2, &[], &["--sweep-interval-secs", "1"]);
    let token = hosts[0].token(&agent());
    let mut claims = HashSet::new();
    for i in 0..12 {
        let note = hosts[i % 2].create_note(&person(), &format!("swept {i}"), true);
        let r = hosts[i % 2].call(&token, "claim_note", json!({"note_id": note, "ttl_seconds": 1}));
        claims.insert(r["structuredContent"]["claim_id"].as_str().unwrap().to_string());
    }
    std::thread::sleep(Duration::from_millis(3_500));
    let index = store_keys(&redis, "t/acme/claims/index");
    assert!(index.iter().all(|(_, v)| v["notes"].as_object().is_none_or(|m| m.is_empty())), "the sweeps left {index:?}");
    let expired: Vec<String> = store_keys(&redis, "t/acme/audit/claims/")
        .into_iter()
        .filter(|(_, v)| v["event"] == "expired")
        .map(|(_, v)| v["claim_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(expired.len(), claims.len(), "one expiry record per claim: {expired:?}");
    assert_eq!(expired.into_iter().collect::<HashSet<_>>(), claims);
    assert!(hosts.iter().any(|h| h.log().contains("swept")), "no host swept");
    for h in &hosts {
        let log = h.log();
        assert!(!log.contains("sweep failed"), "{log}");
    }
}

#[test]
fn a_sqlite_store_is_held_by_one_host_and_a_second_is_refused_clearly() {
    require_app();
    let state: PathBuf = scratch("sqlite-exclusive");
    let _first = Cairn::start(Start { state_dir: Some(state.clone()), ..Start::default() });
    let err = Cairn::try_start(Start { state_dir: Some(state), ..Start::default() }).err().expect("a second host started on the same SQLite file");
    assert!(err.contains("in use by another process"), "unclear refusal:\n{err}");
}

#[test]
fn a_page_polling_one_host_sees_an_agents_write_and_claim_on_another_within_two_seconds() {
    let redis = redis::start();
    let hosts = hosts_on(&redis, 2, &[], &[]);
    let (a, b) = (&hosts[0], &hosts[1]);
    let note = a.create_note(&person(), "Live across hosts", true);
    let (person_token, agent_token) = (a.token(&person()), b.token(&agent()));
    let changes = |since: &str| a.rest(&person_token, "GET", &format!("/api/v1/notes/{note}/changes?since={since}"), None).json();
    let first = a.rest(&person_token, "GET", &format!("/api/v1/notes/{note}/changes"), None).json();
    let etag = first["etag"].as_str().unwrap().to_string();
    assert_eq!(changes(&etag)["changed"], false);
    // Polls the first host every 100 ms until the state moves, at most 2 s.
    let wait_for_change = |since: &str| {
        let start = std::time::Instant::now();
        loop {
            let now = changes(since);
            if now["changed"] == true {
                return (now, start.elapsed());
            }
            assert!(start.elapsed() < Duration::from_secs(2), "no change seen on the other host within 2 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let r = b.call(
        &agent_token,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": first["version"],
        "idempotency_key": "live-1", "operation": "append_text", "text": "from the other host\n"}),
    );
    assert_eq!(r["isError"], false, "{r}");
    let (seen, _) = wait_for_change(&etag);
    let tab = &seen["tabs"][0];
    assert_eq!((tab["updated_by_actor"].as_str(), seen["version"].as_u64()), (Some("agent"), first["version"].as_u64().map(|v| v + 1)));
    let etag = seen["etag"].as_str().unwrap().to_string();
    let claim = b.call(&agent_token, "claim_note", json!({"note_id": note, "tab_id": "markdown", "section_id": "section", "ttl_seconds": 60}));
    assert_eq!(claim["structuredContent"]["error"], "not_found", "no heading yet: {claim}");
    let claim = b.call(&agent_token, "claim_note", json!({"note_id": note, "tab_id": "markdown", "ttl_seconds": 60}));
    assert_eq!(claim["isError"], false, "{claim}");
    let (seen, _) = wait_for_change(&etag);
    assert_eq!(seen["claims"][0]["actor_type"], "agent");
}
