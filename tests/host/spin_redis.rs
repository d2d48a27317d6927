//! Cairn on a real Spin with Spin's Redis store (`type = "redis"`, a test's
//! own `redis-server`). That store reports every compare-and-swap failed,
//! whether it landed or not: after `EXEC` it sends `UNWATCH <key>`, which
//! Redis refuses (docs/upstream/spin-redis-swap.md). Before Cairn knew its
//! landed swaps, four note creations answered 503 "nothing was written"
//! while the tenant's note list was rewritten 127 times. Here every answer
//! is the truth: creations 201 and listed exactly once, edits answered as
//! written (not as replays), claims, history, racing agents losing and
//! doubling no line, an app connecting through the own authorization
//! server, and the probe naming what the store breaks.
use crate::app::*;
use crate::spin::{creation_race, lost_and_doubled, probe, seed_race};
use crate::spin_harness::*;
use crate::spin_or_skip;
use serde_json::{Value, json};

fn on_redis(redis: &crate::redis::Server) -> Spin {
    Spin::start(SpinStart { stores: Stores::Redis(redis), ..SpinStart::default() })
}

/// A key of database 0, read with `redis-cli`.
fn redis_get(redis: &crate::redis::Server, key: &str) -> String {
    let out = std::process::Command::new("redis-cli").args(["-p", &redis.port.to_string(), "-n", "0", "--raw", "GET", key]).output().expect("redis-cli runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn on_spins_redis_store_creations_edits_claims_and_history_answer_the_truth() {
    spin_or_skip!();
    let redis = crate::redis::start();
    let spin = on_redis(&redis);
    let (bot, ada) = (spin.token(&agent()), spin.token(&person()));
    let made: Vec<String> = (0..4).map(|i| spin.create_note(&person(), &format!("Note {i}"))).collect();
    let listed = spin.call(&bot, "list_notes", json!({}))["structuredContent"].clone();
    let mut ids: Vec<&str> = listed["notes"].as_array().unwrap().iter().map(|n| n["note_id"].as_str().unwrap()).collect();
    ids.sort();
    let mut want: Vec<&str> = made.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(ids, want, "the note list holds exactly the notes created");
    let index: Value = serde_json::from_str(&redis_get(&redis, "t/acme/idx/notes")).expect("the note index in Redis");
    assert_eq!(index["tail"].as_array().map(Vec::len), Some(4), "each id once in the stored index: {index}");
    // An edit whose swap landed is answered as written, once.
    let note = &made[0];
    let read = spin.call(&bot, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}))["structuredContent"].clone();
    let wrote = spin.call(
        &bot,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": read["version"],
        "idempotency_key": "r-1", "operation": "replace_text", "text": "on redis"}),
    )["structuredContent"]
        .clone();
    assert!(wrote.get("error").is_none() && wrote.get("replayed").is_none_or(|r| r == false), "{wrote}");
    assert_eq!(wrote["version"], 2, "{wrote}");
    // Claims: granted, exclusive, listed, released.
    let claim = spin.call(&bot, "claim_note", json!({"note_id": note, "tab_id": "markdown"}))["structuredContent"].clone();
    let claim_id = claim["claim_id"].as_str().unwrap_or_else(|| panic!("{claim}")).to_string();
    let theirs = spin.call(&ada, "claim_note", json!({"note_id": note, "tab_id": "markdown"}))["structuredContent"].clone();
    assert!(theirs.get("error").is_some(), "{theirs}");
    let released = spin.call(&bot, "release_claim", json!({"claim_id": claim_id}))["structuredContent"].clone();
    assert!(released.get("error").is_none(), "{released}");
    let history = spin.call(&bot, "list_note_history", json!({"note_id": note}))["structuredContent"].clone();
    let versions: Vec<u64> = history["entries"].as_array().unwrap().iter().map(|e| e["version"].as_u64().unwrap()).collect();
    assert_eq!(versions, vec![2, 1], "one history entry per write: {history}");
    assert!(!spin.log().contains("nothing was written"), "a refusal said nothing was written:\n{}", spin.log());
}

#[test]
fn racing_agents_and_creators_lose_and_double_nothing_on_spins_redis_store() {
    spin_or_skip!();
    let redis = crate::redis::start();
    let spin = on_redis(&redis);
    let agents: Vec<Who> = (0..4).map(|i| Who { sub: Box::leak(format!("agent-{i}").into_boxed_str()), ..agent() }).collect();
    let (acked, text, conflicts) = seed_race(&spin, &agents, 5);
    let (lost, doubled) = lost_and_doubled(&acked, &text);
    eprintln!("seed race on Spin's Redis store: {} lines acknowledged, {conflicts} version conflicts re-applied", acked.len());
    assert_eq!((lost.len(), doubled.len()), (0, 0), "lost {lost:?}, doubled {doubled:?}");
    assert_eq!(acked.len(), 20);
    let (made, listed) = creation_race(&spin, "racers", 4, 3);
    assert_eq!((made.len(), &listed), (12, &made), "the note list holds exactly the notes created");
}

#[test]
fn the_probe_names_what_spins_redis_store_breaks_and_an_app_still_connects() {
    spin_or_skip!();
    let redis = crate::redis::start();
    let spin = on_redis(&redis);
    let report = probe(&spin);
    let rule = |name: &str| report["checks"].as_array().unwrap().iter().find(|c| c["rule"] == name).cloned().unwrap_or_else(|| panic!("{report}"));
    assert_eq!(rule("lost_swap_is_never_reported_as_success")["pass"], false, "{report}");
    assert!(rule("lost_swap_is_never_reported_as_success")["detail"].as_str().unwrap().contains("swap failed without contention"), "{report}");
    assert_eq!(rule("increment_refuses_a_value_that_is_not_a_counter")["run"], false);
    assert_eq!(report["keeps_cas_promise"], false);
    // The own authorization server's records change by compare-and-swap too.
    let client = crate::own_oauth::register(&spin, crate::own_oauth::CALLBACK);
    let person = Who { scope: "notes:read notes:write notes:delete audit:read", ..person() };
    let app = crate::own_oauth::connect(&spin, &spin.token(&person), &client, crate::own_oauth::CALLBACK);
    let listed = spin.call(app["access_token"].as_str().unwrap(), "list_notes", json!({}));
    assert!(listed["structuredContent"]["notes"].is_array(), "{listed}");
    assert!(!spin.host_panicked(), "{}", spin.log());
}
