//! The sweep releases lapsed claims (reason expired) and costs one read when nothing is due.
use crate::common::*;
use cairn_notes::sweep_expired_claims;
use serde_json::{Value, json};

fn index(w: &World, tenant: &str) -> Value {
    let raw = w.kv.dump().into_iter().find(|(k, _)| k == &format!("t/{tenant}/claims/index")).map(|(_, v)| v).expect("the claim index exists");
    serde_json::from_slice(&raw).unwrap()
}

#[test]
fn sweep_releases_expired_claims() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let notes: Vec<String> = (0..4).map(|i| w.note(&ada, &format!("N{i}"), true)).collect();
    let short: Vec<String> =
        notes[..3].iter().map(|n| w.ok(&bot, "claim_note", json!({"note_id": n, "ttl_seconds": 30}))["claim_id"].as_str().unwrap().to_string()).collect();
    let long = w.ok(&ada, "claim_note", json!({"note_id": notes[3], "ttl_seconds": 3600}));
    assert_eq!(index(&w, "acme")["notes"].as_object().unwrap().len(), 4);
    // Nothing due yet: nothing released.
    assert_eq!(sweep_expired_claims(&w.kv, &mut w.env, "acme").unwrap(), 0);
    w.advance_s(31);
    assert_eq!(sweep_expired_claims(&w.kv, &mut w.env, "acme").unwrap(), 3);
    // Released with reason expired, and audited.
    let expired: Vec<String> = w
        .claim_audit("acme")
        .into_iter()
        .filter(|a| a["event"] == "expired" && a["reason"] == "expired")
        .map(|a| a["claim_id"].as_str().unwrap().to_string())
        .collect();
    let mut want = short.clone();
    want.sort();
    let mut got = expired.clone();
    got.sort();
    assert_eq!(got, want);
    // The heads no longer hold them; the index lists only the note still claimed.
    for n in &notes[..3] {
        let raw = w.kv.dump().into_iter().find(|(k, _)| k == &format!("t/acme/note/{n}")).unwrap().1;
        let head: Value = serde_json::from_slice(&raw).unwrap();
        assert_eq!(head["claims"], json!([]), "head of {n} still holds a claim");
    }
    let idx = index(&w, "acme");
    let listed: Vec<&String> = idx["notes"].as_object().unwrap().keys().collect();
    assert_eq!(listed, [&notes[3]]);
    let board = w.board(&ada);
    assert_eq!(board.len(), 1);
    assert_eq!(board[0]["claim_id"], long["claim_id"]);
    // A second sweep finds nothing more.
    assert_eq!(sweep_expired_claims(&w.kv, &mut w.env, "acme").unwrap(), 0);
    let r = w.ok(&bot, "release_claim", json!({"claim_id": short[0]}));
    assert_eq!(r["reason"], "expired");
}

#[test]
fn a_sweep_with_nothing_due_reads_only_the_tenant_claim_index() {
    let mut w = World::new();
    let ada = human("acme");
    for i in 0..20 {
        let n = w.note(&ada, &format!("N{i}"), true);
        w.claim_ok(&ada, &n, None);
    }
    w.kv.take_reads();
    assert_eq!(sweep_expired_claims(&w.kv, &mut w.env, "acme").unwrap(), 0);
    assert_eq!(w.kv.take_reads(), ["t/acme/claims/index"]);
    // A tenant that never claimed: the same single read.
    assert_eq!(sweep_expired_claims(&w.kv, &mut w.env, "quiet").unwrap(), 0);
    assert_eq!(w.kv.take_reads(), ["t/quiet/claims/index"]);
    assert!(sweep_expired_claims(&w.kv, &mut w.env, "Bad Tenant").is_err());
}

#[test]
fn a_note_claimed_again_after_a_sweep_stays_on_the_board_and_gets_swept_again() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    w.ok(&ada, "claim_note", json!({"note_id": note, "ttl_seconds": 10}));
    w.advance_s(11);
    assert_eq!(sweep_expired_claims(&w.kv, &mut w.env, "acme").unwrap(), 1);
    assert!(index(&w, "acme")["notes"].as_object().unwrap().is_empty());
    // Claimed again: back on the index, so the board and the sweep find it.
    w.ok(&ada, "claim_note", json!({"note_id": note, "ttl_seconds": 10}));
    assert_eq!(w.board(&ada).len(), 1);
    w.advance_s(11);
    assert_eq!(sweep_expired_claims(&w.kv, &mut w.env, "acme").unwrap(), 1);
    // A heartbeat that outlives the indexed due time only makes the sweep look early.
    let c = w.ok(&ada, "claim_note", json!({"note_id": note, "ttl_seconds": 10}));
    w.advance_s(5);
    w.ok(&ada, "renew_claim", json!({"claim_id": c["claim_id"], "ttl_seconds": 100}));
    w.advance_s(6);
    assert_eq!(sweep_expired_claims(&w.kv, &mut w.env, "acme").unwrap(), 0);
    assert_eq!(w.board(&ada).len(), 1);
    w.advance_s(100);
    assert_eq!(sweep_expired_claims(&w.kv, &mut w.env, "acme").unwrap(), 1);
    assert!(w.board(&ada).is_empty());
}

#[test]
fn sweeping_while_others_claim_never_takes_a_claimed_note_off_the_index() {
    use cairn_notes::{ActorType, SimEnv};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let mut w = World::new();
    let ada = human("acme");
    let notes: Vec<String> = (0..4).map(|i| w.note(&ada, &format!("N{i}"), true)).collect();
    let start = w.env.now_us;
    let kv = &w.kv;
    let done = AtomicBool::new(false);
    let sweeps = AtomicUsize::new(0);
    let swept = std::thread::scope(|s| {
        let sweeper = s.spawn(|| {
            let mut env = SimEnv::new(99);
            env.now_us = start;
            let mut swept = 0;
            while !done.load(Ordering::Relaxed) {
                env.now_us += 250_000;
                swept += sweep_expired_claims(kv, &mut env, "acme").unwrap();
                sweeps.fetch_add(1, Ordering::SeqCst);
            }
            swept
        });
        let claimers: Vec<_> = (0..2u64)
            .map(|t| {
                let notes = notes.clone();
                let sweeps = &sweeps;
                s.spawn(move || {
                    let who = identity("acme", &format!("c{t}"), ActorType::Agent);
                    let mut env = SimEnv::new(t + 1);
                    env.now_us = start;
                    for round in 0..80u64 {
                        // At least one sweep between two rounds, and sweeps during them.
                        let seen = sweeps.load(Ordering::SeqCst);
                        while sweeps.load(Ordering::SeqCst) == seen {
                            std::thread::yield_now();
                        }
                        env.now_us += 200_000;
                        let n = &notes[((round / 3 + t) % 4) as usize];
                        let c = checked_call(kv, &mut env, &who, "claim_note", json!({"note_id": n, "ttl_seconds": 1 + round % 3}));
                        let c = &c["structuredContent"];
                        if c.get("error").is_none() && round % 5 == 0 {
                            checked_call(kv, &mut env, &who, "release_claim", json!({"claim_id": c["claim_id"]}));
                        }
                    }
                })
            })
            .collect();
        for c in claimers {
            c.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        sweeper.join().unwrap()
    });
    assert!(swept > 0, "the sweeper released claims during the race");
    // Every claim left in a head is listed on the index with a due time no later than
    // its expiry, so the sweep will find it and the board shows it while it lives.
    let idx = index(&w, "acme");
    let mut claims_in_heads = 0;
    for (k, v) in w.kv.dump() {
        let Some(n) = k.strip_prefix("t/acme/note/") else {
            continue;
        };
        let head: Value = serde_json::from_slice(&v).unwrap();
        for c in head["claims"].as_array().unwrap() {
            claims_in_heads += 1;
            let due = idx["notes"][n].as_u64();
            assert!(due.is_some_and(|d| d <= c["expires_at"].as_u64().unwrap()), "claim {} of {n} is not indexed in time (index: {idx})", c["claim_id"]);
        }
    }
    // Seen from the start time, every claim in a head is live: the board lists them all.
    w.env.now_us = start;
    assert_eq!(w.board(&ada).len(), claims_in_heads);
}
