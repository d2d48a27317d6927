//! Crashes of the only host, on its own SQLite store: SIGKILL under a
//! 16-client edit load, then a restart on the same state dir. Clients resend
//! every call that got no answer with the same idempotency key, so every
//! acknowledged line is there exactly once and every in-flight edit lands
//! exactly once. And a kill during claim traffic: after the restart no
//! target is held twice, and no claim outlives its TTL.
use crate::app::*;
use crate::harness::*;
use crate::scale_out::AUDIENCE;
use crate::scale_out_faults::{Seen, check_notes, clients_on};
use serde_json::json;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A host on `state` with a fixed audience, so tokens outlive a restart on another port.
fn host_on(state: &std::path::Path) -> Cairn {
    require_app();
    let jwks: &'static str = Box::leak(key().jwks().into_boxed_str());
    let env = vec![
        ("SPIN_VARIABLE_JWKS", jwks),
        ("SPIN_VARIABLE_ISSUER", ISSUER),
        ("SPIN_VARIABLE_AUDIENCE", AUDIENCE),
        ("SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE", "1000000"),
    ];
    Cairn::start(Start { state_dir: Some(state.to_path_buf()), env, ..Start::default() })
}

#[test]
fn sigkill_under_16_clients_then_a_restart_loses_no_acknowledged_edit_and_lands_each_resent_one_once() {
    let state = scratch("crash-sqlite");
    let mut first = host_on(&state);
    let token = first.token(&agent());
    let notes: Vec<(String, String)> = (0..16).map(|c| (first.create_note(&person(), &format!("crash {c}"), true), format!("c{c}"))).collect();
    let addrs = Arc::new(Mutex::new(vec![first.addr]));
    let (stop, workers) = clients_on(addrs.clone(), &token, &notes);
    std::thread::sleep(Duration::from_millis(1500));
    first.kill();
    std::thread::sleep(Duration::from_millis(300));
    let second = host_on(&state);
    *addrs.lock().unwrap() = vec![second.addr];
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, Ordering::SeqCst);
    let seen: Vec<Seen> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    for (c, s) in seen.iter().enumerate() {
        assert!(s.errors.is_empty(), "client {c}: {:?}", s.errors);
    }
    assert!(seen.iter().any(|s| s.dead_connections > 0), "no client noticed the kill: it came too late");
    let acked = check_notes(&second, &token, &notes, &seen);
    let resent: usize = seen.iter().map(|s| s.dead_connections + s.unavailable).sum();
    eprintln!("crash: {acked} edits acknowledged and checked once each; {resent} calls resent after the kill");
    assert!(acked > 32, "only {acked} edits acknowledged under load");
}

#[test]
fn sigkill_during_claim_traffic_leaves_no_target_held_twice_and_no_claim_past_its_ttl() {
    let state = scratch("crash-claims");
    let mut first = host_on(&state);
    let note = first.create_note(&person(), "Contended", true);
    let stop = Arc::new(AtomicBool::new(false));
    let addr: Arc<Mutex<SocketAddr>> = Arc::new(Mutex::new(first.addr));
    let tokens: Vec<String> = (0..8).map(|i| first.token(&Who { sub: Box::leak(format!("bot-{i}").into_boxed_str()), ..agent() })).collect();
    let workers: Vec<_> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let (t, note, stop, addr) = (t.clone(), note.clone(), stop.clone(), addr.clone());
            std::thread::spawn(move || {
                let mut granted = 0;
                while !stop.load(Ordering::SeqCst) {
                    let target =
                        if i % 3 == 0 { json!({"note_id": note, "ttl_seconds": 2}) } else { json!({"note_id": note, "tab_id": "markdown", "ttl_seconds": 2}) };
                    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "claim_note", "arguments": target}}).to_string();
                    let at = *addr.lock().unwrap();
                    let auth = format!("Bearer {t}");
                    if let Ok(r) = try_request(at, "POST", "/mcp", &[("authorization", &auth), ("content-type", "application/json")], body.as_bytes())
                        && r.status == 200
                        && r.json()["result"]["isError"] == false
                    {
                        granted += 1;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                granted
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1200));
    first.kill();
    let second = host_on(&state);
    *addr.lock().unwrap() = second.addr;
    let p = second.token(&person());
    for _ in 0..10 {
        let board = second.call(&p, "list_claims", json!({"note_id": note}))["structuredContent"]["claims"].clone();
        let claims = board.as_array().unwrap();
        let whole = claims.iter().filter(|c| c["tab_id"].is_null()).count();
        let tab = claims.iter().filter(|c| c["tab_id"] == "markdown").count();
        assert!(whole + tab <= 1, "overlapping live claims after the restart: {board}");
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::SeqCst);
    let granted: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    assert!(granted > 0, "no claim was ever granted: the race proved nothing");
    eprintln!("crash: {granted} claims granted around the kill");
    // Two seconds of TTL and nobody renewing: nothing is held any more.
    std::thread::sleep(Duration::from_millis(2500));
    let board = second.call(&p, "list_claims", json!({"note_id": note}))["structuredContent"].clone();
    assert_eq!(board["claims"], json!([]), "a claim outlived its TTL: {board}");
}
