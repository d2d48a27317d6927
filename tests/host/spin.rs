//! Cairn on a real Spin (`../shared/spin/`, Spin 4.1.0-pre0) with Spin's
//! SQLite store: the same `.wasm` files and `spin.toml` the embedded host
//! runs. The probe reports the store's broken rules without breaking it;
//! an agent works end to end over MCP and a person over REST (notes, claims,
//! history); racing agents lose no line; the own authorization server is
//! discovered and connects an app; tools deployed apart on a second Spin
//! answer the router's signed calls.
//!
//! Spin's SQLite store compares values, not versions, and turns a swap on
//! an absent key into an upsert (docs/upstream/spin-sqlite-swap.md). Cairn
//! holds anyway: every head carries its own increasing `rev` (no two
//! commits write the same bytes) and new keys come from unique ids; the
//! race proves it against this very store.
use crate::app::*;
use crate::spin_harness::*;
use crate::spin_or_skip;
use serde_json::{Value, json};
use std::collections::HashMap;

/// `n` agents of tenant acme, each with its own subject.
fn agents(n: usize) -> Vec<Who<'static>> {
    (0..n).map(|i| Who { sub: Box::leak(format!("agent-{i}").into_boxed_str()), ..agent() }).collect()
}

/// The seed race on `spin`: each agent appends `lines` lines to one note,
/// reading the tab, writing it back with the version it read, and reading
/// and re-applying on a version conflict (a new idempotency key each
/// attempt). Returns (lines acknowledged, the final text, conflicts met).
pub(crate) fn seed_race(spin: &Spin, agents: &[Who], lines: usize) -> (Vec<String>, String, usize) {
    let note = spin.create_note(&person(), "Seed race");
    let results: Vec<(Vec<String>, usize)> = std::thread::scope(|s| {
        let hs: Vec<_> = agents
            .iter()
            .map(|who| {
                let (token, note) = (spin.token(who), note.clone());
                s.spawn(move || append_lines(spin, &token, &note, who.sub, lines))
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let read = spin.call(&spin.token(&person()), "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "max_chars": 1_000_000}));
    let text = read["structuredContent"]["text"].as_str().unwrap().to_string();
    let conflicts = results.iter().map(|(_, c)| c).sum();
    (results.into_iter().flat_map(|(a, _)| a).collect(), text, conflicts)
}

/// One agent's loop of [`seed_race`]: its acknowledged lines and conflicts.
fn append_lines(spin: &Spin, token: &str, note: &str, tag: &str, lines: usize) -> (Vec<String>, usize) {
    let (mut acked, mut conflicts) = (Vec::new(), 0);
    for i in 0..lines {
        let line = format!("{tag}-{i}");
        for attempt in 0..50 {
            let read = spin.call(token, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "max_chars": 1_000_000}))["structuredContent"].clone();
            let text = read["text"].as_str().unwrap();
            let next = if text.is_empty() { line.clone() } else { format!("{text}\n{line}") };
            let r = spin.call(
                token,
                "edit_note_tab",
                json!({"note_id": note, "tab_id": "markdown", "expected_version": read["version"],
                "idempotency_key": format!("{tag}-{i}-{attempt}"), "operation": "replace_text", "text": next}),
            )["structuredContent"]
                .clone();
            match r["error"].as_str() {
                None => {
                    acked.push(line.clone());
                    break;
                }
                Some("version_conflict") => conflicts += 1,
                Some(other) => panic!("{tag}: refused {other}: {r}"),
            }
        }
    }
    (acked, conflicts)
}

/// `creators` people of a tenant of their own create `each` notes at once
/// (REST). Returns the ids answered 201 and the ids `list_notes` lists,
/// both sorted: the note list is the one record every creation rewrites,
/// and on a fresh tenant the first creations race on its absent key.
pub(crate) fn creation_race(spin: &Spin, tenant: &'static str, creators: usize, each: usize) -> (Vec<String>, Vec<String>) {
    let mut made: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..creators)
            .map(|c| {
                let who = Who { tenant, sub: Box::leak(format!("creator-{c}").into_boxed_str()), ..person() };
                s.spawn(move || (0..each).map(|i| spin.create_note(&who, &format!("{} {i}", who.sub))).collect::<Vec<_>>())
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    made.sort();
    let reader = Who { tenant, ..agent() };
    let page = spin.call(&spin.token(&reader), "list_notes", json!({"limit": 50}))["structuredContent"].clone();
    let mut listed: Vec<String> = page["notes"].as_array().unwrap().iter().map(|n| n["note_id"].as_str().unwrap().to_string()).collect();
    listed.sort();
    (made, listed)
}

/// Lines acknowledged but missing from `text`, and lines found more than once.
pub(crate) fn lost_and_doubled(acked: &[String], text: &str) -> (Vec<String>, Vec<String>) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for l in text.lines() {
        *seen.entry(l).or_default() += 1;
    }
    let lost = acked.iter().filter(|l| !seen.contains_key(l.as_str())).cloned().collect();
    let doubled = seen.iter().filter(|(_, n)| **n > 1).map(|(l, _)| l.to_string()).collect();
    (lost, doubled)
}

/// GET the probe with the operator's token.
pub(crate) fn probe(spin: &Spin) -> Value {
    let r = spin.request("GET", "/.well-known/cairn/kv-probe", &[("authorization", &format!("Bearer {PROBE_TOKEN}"))], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

#[test]
fn the_probe_names_what_spins_sqlite_store_breaks_and_leaves_it_working() {
    spin_or_skip!();
    let spin = Spin::start(SpinStart::default());
    let report = probe(&spin);
    let checks = report["checks"].as_array().unwrap();
    let by_rule = |rule: &str| checks.iter().find(|c| c["rule"] == rule).unwrap_or_else(|| panic!("no {rule} in {report}")).clone();
    // The increment of a text value panics Spin's SQLite store: not run, and why.
    let harmful = by_rule("increment_refuses_a_value_that_is_not_a_counter");
    assert_eq!((harmful["run"].as_bool(), harmful["pass"].is_null()), (Some(false), true), "{harmful}");
    assert!(harmful["detail"].as_str().unwrap().contains("Spin's SQLite store panics"), "{harmful}");
    // What the store breaks, named: it upserts absent keys and compares values.
    for rule in ["one_of_two_creators_wins", "no_aba_after_delete_and_recreate", "same_bytes_rewrite_is_a_write"] {
        assert_eq!(by_rule(rule)["pass"], false, "{rule} passed on Spin's SQLite store: {report}");
    }
    assert_eq!(by_rule("increment_is_an_8_byte_counter")["pass"], true, "{report}");
    assert_eq!(report["keeps_cas_promise"], false, "{report}");
    assert_eq!(report["vouched"], false);
    // The store still works for every component: a person creates a note, the probe runs again.
    spin.create_note(&person(), "After the probe");
    assert_eq!(probe(&spin)["checks"].as_array().unwrap().len(), checks.len());
    assert!(!spin.host_panicked(), "the probe broke Spin's store:\n{}", spin.log());
}

#[test]
fn an_agent_and_a_person_work_end_to_end_on_spin() {
    spin_or_skip!();
    let spin = Spin::start(SpinStart::default());
    let (bot, ada) = (spin.token(&agent()), spin.token(&person()));
    let init = spin.mcp(
        &bot,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "spin-test", "version": "1"}}}),
    );
    assert_eq!(init.status, 200, "{}", init.text());
    assert_eq!(init.json()["result"]["serverInfo"]["name"].as_str().map(|n| n.contains("airn")), Some(true), "{}", init.text());
    let tools = spin.mcp(&bot, &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).json();
    assert_eq!(tools["result"]["tools"].as_array().map(Vec::len), Some(cairn_notes::tools::TOOLS.len()), "{tools}");
    // A person creates a note (REST); the agent writes and reads it (MCP, composed tools).
    let note = spin.create_note(&person(), "Launch brief");
    let read = spin.call(&bot, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}))["structuredContent"].clone();
    let wrote = spin.call(
        &bot,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": read["version"],
        "idempotency_key": "w-1", "operation": "replace_text", "text": "# Launch\nship it"}),
    )["structuredContent"]
        .clone();
    assert!(wrote.get("error").is_none(), "{wrote}");
    let again = spin.call(&bot, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}))["structuredContent"].clone();
    assert_eq!(again["text"], "# Launch\nship it");
    let tab = spin.rest(&ada, "GET", &format!("/api/v1/notes/{note}/tabs/markdown"), None);
    assert_eq!(tab.status, 200, "{}", tab.text());
    assert!(tab.text().contains("ship it"), "{}", tab.text());
    // Claims: one holder, listed, released.
    let claim = spin.call(&bot, "claim_note", json!({"note_id": note, "tab_id": "markdown"}))["structuredContent"].clone();
    let claim_id = claim["claim_id"].as_str().unwrap_or_else(|| panic!("{claim}")).to_string();
    let theirs =
        spin.call(&spin.token(&Who { sub: "another-agent", ..agent() }), "claim_note", json!({"note_id": note, "tab_id": "markdown"}))["structuredContent"]
            .clone();
    assert!(theirs.get("error").is_some(), "a second holder was granted the tab: {theirs}");
    let board = spin.call(&bot, "list_claims", json!({"note_id": note}))["structuredContent"].clone();
    assert_eq!(board["claims"].as_array().map(Vec::len), Some(1), "{board}");
    let released = spin.call(&bot, "release_claim", json!({"claim_id": claim_id}))["structuredContent"].clone();
    assert!(released.get("error").is_none(), "{released}");
    // History: the creation and the write, newest first.
    let history = spin.call(&bot, "list_note_history", json!({"note_id": note}))["structuredContent"].clone();
    let versions: Vec<u64> = history["entries"].as_array().unwrap().iter().map(|e| e["version"].as_u64().unwrap()).collect();
    assert_eq!(versions, vec![2, 1], "{history}");
}

#[test]
fn racing_agents_and_creators_lose_nothing_on_spins_sqlite_store() {
    spin_or_skip!();
    let spin = Spin::start(SpinStart::default());
    let (acked, text, conflicts) = seed_race(&spin, &agents(4), 6);
    let (lost, doubled) = lost_and_doubled(&acked, &text);
    eprintln!("seed race on Spin's SQLite store: {} lines acknowledged, {conflicts} version conflicts re-applied", acked.len());
    assert_eq!((lost.len(), doubled.len()), (0, 0), "lost {lost:?}, doubled {doubled:?}");
    assert_eq!(acked.len(), 24, "every line acknowledged");
    // Spin's SQLite store upserts a swap on an absent key: the creators of a
    // fresh tenant's first notes all swap its absent note list.
    let (made, listed) = creation_race(&spin, "racers", 4, 3);
    assert_eq!((made.len(), &listed), (12, &made), "the note list holds exactly the notes created");
}

#[test]
fn the_own_authorization_server_is_discovered_and_connects_an_app_on_spin() {
    spin_or_skip!();
    let spin = Spin::start(SpinStart::default());
    let r = spin.request("POST", "/mcp", &[("content-type", "application/json")], b"{}");
    assert_eq!(r.status, 401, "{}", r.text());
    let challenge = r.header("www-authenticate").unwrap_or_default().to_string();
    assert!(challenge.contains(&format!("{}/.well-known/oauth-protected-resource/mcp", spin.origin)), "{challenge}");
    let prm = spin.get("/.well-known/oauth-protected-resource/mcp").json();
    assert_eq!((prm["resource"].as_str(), &prm["authorization_servers"]), (Some(spin.audience().as_str()), &json!([spin.origin])), "{prm}");
    let meta = spin.get("/.well-known/oauth-authorization-server").json();
    assert_eq!(meta["issuer"].as_str(), Some(spin.origin.as_str()), "{meta}");
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(spin.get("/oauth/jwks").json()["keys"][0]["kty"], "OKP");
    // An app registers, a person consents, the app calls tools with what it got.
    let client = crate::own_oauth::register(&spin, crate::own_oauth::CALLBACK);
    let person = Who { scope: "notes:read notes:write notes:delete audit:read", ..person() };
    let app = crate::own_oauth::connect(&spin, &spin.token(&person), &client, crate::own_oauth::CALLBACK);
    let listed = spin.call(app["access_token"].as_str().unwrap(), "list_notes", json!({}));
    assert!(listed["structuredContent"]["notes"].is_array(), "{listed}");
}

#[test]
fn tools_deployed_apart_on_a_second_spin_answer_the_routers_signed_calls() {
    spin_or_skip!();
    // The router and REST on one Spin, every tool on another, both on one
    // Redis for the notes; each keeps `cache` (where a tool records each
    // identity it accepted) in SQLite, since Spin's Redis store reports
    // every compare-and-swap failed (scripts/spin-up.sh refuses it).
    let redis = crate::redis::start();
    let tool_ids: Vec<&str> = cairn_notes::tools::TOOLS.iter().map(|t| Box::leak(t.name.replace('_', "-").into_boxed_str()) as &str).collect();
    let http = vec![("tool_transport".to_string(), "http".to_string())];
    let tools = Spin::start(SpinStart { stores: Stores::RedisWithLocalCache(&redis), components: tool_ids, env: http.clone(), ..SpinStart::default() });
    let mut env = http;
    for t in cairn_notes::tools::TOOLS {
        env.push((format!("tool_url_{}", t.name), tools.origin.clone()));
    }
    let router = Spin::start(SpinStart { stores: Stores::RedisWithLocalCache(&redis), components: vec!["router", "rest"], env, ..SpinStart::default() });
    assert_eq!(tools.get("/mcp").status, 404, "no router on the tool host");
    let note = router.create_note(&person(), "Apart");
    let bot = router.token(&agent());
    let read = router.call(&bot, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}))["structuredContent"].clone();
    assert!(read.get("error").is_none(), "{read}");
    let wrote = router.call(
        &bot,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": read["version"],
        "idempotency_key": "apart-1", "operation": "replace_text", "text": "written across two Spins"}),
    )["structuredContent"]
        .clone();
    assert!(wrote.get("error").is_none(), "{wrote}");
    let back = router.rest(&router.token(&person()), "GET", &format!("/api/v1/notes/{note}/tabs/markdown"), None);
    assert!(back.text().contains("written across two Spins"), "{}", back.text());
    assert_eq!(tools.served_by("/tools/edit_note_tab"), ["edit-note-tab"], "the write ran on the tool host");
    assert!(router.served_by("/tools/edit_note_tab").is_empty());
    // A tool host refuses a call without the router's signed identity.
    let unsigned = tools.request(
        "POST",
        "/tools/read_note_tab",
        &[("authorization", &format!("Bearer {bot}")), ("content-type", "application/json")],
        json!({"note_id": note, "tab_id": "markdown"}).to_string().as_bytes(),
    );
    assert_eq!(unsigned.status, 401, "{}", unsigned.text());
}

#[test]
fn spin_up_refuses_cache_on_spins_redis_store_where_every_call_would_be_refused() {
    // No Spin needed: the script refuses before it looks for one.
    let state = crate::harness::scratch("spin-refused");
    let out = std::process::Command::new("bash")
        .arg(crate::harness::root().join("scripts/spin-up.sh"))
        .args(["--redis", "redis://127.0.0.1:9", "--state-dir"])
        .arg(&state)
        .env("SPIN_VARIABLE_TOOL_TRANSPORT", "http")
        .env("CAIRN_SPIN", "/nonexistent/spin")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(said.contains("reports every compare-and-swap failed") && said.contains("--cache sqlite"), "{said}");
}
