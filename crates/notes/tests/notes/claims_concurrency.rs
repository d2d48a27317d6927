//! Two actors claiming one target at once: exactly one wins (the head CAS decides).
use std::sync::Barrier;

use crate::common::*;
use cairn_notes::{ActorType, Identity, SimEnv};
use serde_json::{Value, json};

fn claim(kv: &TestKv, seed: u64, who: &Identity, args: Value, barrier: &Barrier) -> Value {
    let mut env = SimEnv::new(seed);
    barrier.wait();
    checked_call(kv, &mut env, who, "claim_note", args)["structuredContent"].clone()
}

#[test]
fn exactly_one_of_two_concurrent_claimers_wins() {
    let mut w = World::new();
    let note = w.note(&human("acme"), "Race", true);
    let deck = w.create_tab(&human("acme"), &note, "slides", "Deck");
    let a = identity("acme", "agent-a", ActorType::Agent);
    let b = identity("acme", "agent-b", ActorType::Agent);
    let mut wins = [0usize; 2];
    for round in 0..120u64 {
        // Same whole note, same tab, or whole note against a tab: always exclusive.
        let (ta, tb) = match round % 3 {
            0 => (json!({"note_id": note}), json!({"note_id": note})),
            1 => (json!({"note_id": note, "tab_id": deck}), json!({"note_id": note, "tab_id": deck})),
            _ => (json!({"note_id": note}), json!({"note_id": note, "tab_id": "markdown"})),
        };
        let barrier = Barrier::new(2);
        let kv = &w.kv;
        let (ra, rb) = std::thread::scope(|s| {
            let ha = s.spawn(|| claim(kv, 2 * round + 1, &a, ta, &barrier));
            let hb = s.spawn(|| claim(kv, 2 * round + 2, &b, tb, &barrier));
            (ha.join().unwrap(), hb.join().unwrap())
        });
        let (winner, loser, who) = match (ra.get("error").is_none(), rb.get("error").is_none()) {
            (true, false) => (ra, rb, &a),
            (false, true) => (rb, ra, &b),
            other => panic!("round {round}: exactly one must win, got {other:?}: {ra} / {rb}"),
        };
        wins[if std::ptr::eq(who, &a) { 0 } else { 1 }] += 1;
        assert_eq!(loser["error"], "claim_conflict", "round {round}");
        assert_eq!(loser["claim_id"], winner["claim_id"], "round {round}");
        let board = w.board(&a);
        assert_eq!(board.len(), 1, "round {round}: one claim stored");
        assert_eq!(board[0]["claim_id"], winner["claim_id"]);
        w.ok(who, "release_claim", json!({"claim_id": winner["claim_id"]}));
    }
    assert_eq!(wins[0] + wins[1], 120);
}

#[test]
fn claimers_and_writers_racing_never_write_under_someone_elses_claim() {
    let mut w = World::new();
    let note = w.note(&human("acme"), "Race", true);
    let kv = &w.kv;
    // Each worker: claim the note, append its line while holding it, release. A worker
    // that writes without holding the claim would be refused if anyone else held it.
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let note = note.clone();
            s.spawn(move || {
                let who = identity("acme", &format!("w{t}"), ActorType::Agent);
                let mut env = SimEnv::new(50 + t);
                let call = |env: &mut SimEnv, tool: &str, args: Value| checked_call(kv, env, &who, tool, args)["structuredContent"].clone();
                for i in 0..15 {
                    let claim = loop {
                        let c = call(&mut env, "claim_note", json!({"note_id": note}));
                        if c.get("error").is_none() {
                            break c;
                        }
                        assert_eq!(c["error"], "claim_conflict");
                        std::thread::yield_now();
                    };
                    let read = call(&mut env, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
                    let text = format!("{}w{t}-{i}\n", read["text"].as_str().unwrap());
                    let r = call(
                        &mut env,
                        "edit_note_tab",
                        json!({"note_id": note, "tab_id": "markdown",
                        "expected_version": read["version"], "idempotency_key": format!("w{t}-{i}"),
                        "operation": "replace_text", "text": text}),
                    );
                    assert!(r.get("error").is_none(), "a holder's write with a fresh read passes: {r}");
                    let rel = call(&mut env, "release_claim", json!({"claim_id": claim["claim_id"]}));
                    assert_eq!(rel["released"], true);
                }
            });
        }
    });
    let text = w.tab(&human("acme"), &note, "markdown")["text"].as_str().unwrap().to_string();
    assert_eq!(text.lines().count(), 45, "no line lost");
}
