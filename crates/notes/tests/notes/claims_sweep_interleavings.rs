//! The sweep and a claim interleaved at every store operation: the claim always stays on
//! the tenant's claim index, so the sweep and the presence board find it.
use std::cell::{Cell, RefCell};

use crate::common::*;
use cairn_kv::{Observed, Read, Store, Swap};
use cairn_notes::{ActorType, SimEnv, sweep_expired_claims};
use serde_json::{Value, json};

/// A store that runs `hook` (once) just before its `at`-th operation.
struct HookKv<'a> {
    inner: &'a TestKv,
    ops: Cell<usize>,
    at: usize,
    hook: RefCell<Option<Box<dyn FnOnce() + 'a>>>,
}

// The tests drive a HookKv from one thread only.
unsafe impl Send for HookKv<'_> {}
unsafe impl Sync for HookKv<'_> {}

impl<'a> HookKv<'a> {
    fn new(inner: &'a TestKv, at: usize, hook: impl FnOnce() + 'a) -> Self {
        HookKv { inner, ops: Cell::new(0), at, hook: RefCell::new(Some(Box::new(hook))) }
    }

    fn tick(&self) {
        let n = self.ops.get();
        self.ops.set(n + 1);
        if n == self.at {
            let hook = self.hook.borrow_mut().take();
            if let Some(h) = hook {
                h();
            }
        }
    }

    fn fired(&self) -> bool {
        self.hook.borrow().is_none()
    }
}

impl Store for HookKv<'_> {
    fn read(&self, bucket: &str, key: &str) -> cairn_kv::Result<Read> {
        self.tick();
        self.inner.read(bucket, key)
    }
    fn swap(&self, bucket: &str, key: &str, observed: Observed, value: &[u8]) -> cairn_kv::Result<Swap> {
        self.tick();
        self.inner.swap(bucket, key, observed, value)
    }
    fn set_many(&self, bucket: &str, pairs: &[(&str, &[u8])]) -> cairn_kv::Result<()> {
        self.tick();
        self.inner.set_many(bucket, pairs)
    }
    fn get_many(&self, bucket: &str, keys: &[&str]) -> cairn_kv::Result<Vec<Option<Vec<u8>>>> {
        self.tick();
        self.inner.get_many(bucket, keys)
    }
    fn delete_many(&self, bucket: &str, keys: &[&str]) -> cairn_kv::Result<()> {
        self.tick();
        self.inner.delete_many(bucket, keys)
    }
    fn increment(&self, bucket: &str, key: &str, delta: i64) -> cairn_kv::Result<i64> {
        self.tick();
        self.inner.increment(bucket, key, delta)
    }
    fn list_keys(&self, bucket: &str, after: Option<&str>, limit: usize) -> cairn_kv::Result<Vec<String>> {
        self.inner.list_keys(bucket, after, limit)
    }
    fn sweep(&self, older_than_ms: u64) -> cairn_kv::Result<usize> {
        self.inner.sweep(older_than_ms)
    }
    fn close(&self) -> cairn_kv::Result<()> {
        self.inner.close()
    }
    fn get(&self, bucket: &str, key: &str) -> cairn_kv::Result<Option<Vec<u8>>> {
        self.tick();
        self.inner.get(bucket, key)
    }
}

/// Every claim in a head is listed on the index with a due time no later than its expiry.
fn assert_indexed(kv: &TestKv, what: &str) -> usize {
    let dump = kv.dump();
    let idx: Value = dump.iter().find(|(k, _)| k == "t/acme/claims/index").map(|(_, v)| serde_json::from_slice(v).unwrap()).unwrap_or(json!({"notes": {}}));
    let mut claims = 0;
    for (k, v) in &dump {
        let Some(n) = k.strip_prefix("t/acme/note/") else {
            continue;
        };
        let head: Value = serde_json::from_slice(v).unwrap();
        for c in head["claims"].as_array().unwrap() {
            claims += 1;
            let ok = idx["notes"][n].as_u64().is_some_and(|d| d <= c["expires_at"].as_u64().unwrap());
            assert!(ok, "{what}: claim {} is not indexed in time; index {idx}", c["claim_id"]);
        }
    }
    claims
}

/// The states a sweep has work in: a lapsed claim still in its head, or an index entry
/// that is stale (the head holds no claim; allowed: the index may list more notes).
fn world(state: &str) -> (World, String) {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    match state {
        "lapsed" => {
            w.ok(&ada, "claim_note", json!({"note_id": note, "ttl_seconds": 1}));
            w.advance_s(2);
        }
        "stale" => {
            let idx = json!({"rev": 7, "notes": {note.clone(): 0}});
            w.kv.set("default", "t/acme/claims/index", idx.to_string().as_bytes()).unwrap();
        }
        _ => unreachable!(),
    }
    (w, note)
}

#[test]
fn a_sweep_between_any_two_steps_of_a_claim_keeps_the_claim_indexed() {
    for state in ["lapsed", "stale"] {
        for at in 0.. {
            let (w, note) = world(state);
            let now = w.env.now_us;
            let inner = &w.kv;
            let kv = HookKv::new(inner, at, move || {
                let mut env = SimEnv::new(5);
                env.now_us = now;
                sweep_expired_claims(inner, &mut env, "acme").unwrap();
            });
            let mut env = SimEnv::new(6);
            env.now_us = now;
            let bot = identity("acme", "bot", ActorType::Agent);
            let r = checked_call(&kv, &mut env, &bot, "claim_note", json!({"note_id": note}));
            assert_eq!(r["isError"], false, "{state} at {at}: {}", r["structuredContent"]);
            let fired = kv.fired();
            assert_eq!(assert_indexed(inner, &format!("{state}, sweep before op {at}")), 1);
            if !fired {
                assert!(at > 3, "the claim took at least a few store operations");
                break;
            }
        }
    }
}

#[test]
fn a_claim_between_any_two_steps_of_a_sweep_stays_indexed() {
    for state in ["lapsed", "stale"] {
        for at in 0.. {
            let (mut w, note) = world(state);
            let now = w.env.now_us;
            let inner = &w.kv;
            let kv = HookKv::new(inner, at, move || {
                let mut env = SimEnv::new(7);
                env.now_us = now;
                let bot = identity("acme", "bot", ActorType::Agent);
                let r = checked_call(inner, &mut env, &bot, "claim_note", json!({"note_id": note}));
                assert_eq!(r["isError"], false, "{}", r["structuredContent"]);
            });
            let mut env = SimEnv::new(8);
            env.now_us = now;
            sweep_expired_claims(&kv, &mut env, "acme").unwrap();
            let fired = kv.fired();
            drop(kv);
            let what = format!("{state}, claim before op {at}");
            if fired {
                assert_eq!(assert_indexed(&w.kv, &what), 1);
                assert_eq!(w.board(&human("acme")).len(), 1, "{what}");
            } else {
                assert_eq!(assert_indexed(&w.kv, &what), 0);
                assert!(at > 2, "the sweep took at least a few store operations");
                break;
            }
        }
    }
}
