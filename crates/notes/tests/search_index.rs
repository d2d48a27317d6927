//! The search index keeps its invariant: every word of every committed tab
//! has its entry (checked by `search::check`), under racing writers that add
//! and remove the same words, on a store that lies, and after a rebuild.
mod common;
use std::sync::Arc;

use cairn_kv::Store;
use cairn_kv::faults::Faulty;
use cairn_kv::memory::MemoryStore;
use cairn_notes::search::{check, reindex};
use cairn_notes::{ActorType, DELIVERY_BOUND, Identity, SimEnv};
use common::*;
use serde_json::{Value, json};

const WORDS: [&str; 8] = ["amber", "basalt", "cobalt", "dolomite", "ember", "flint", "garnet", "hematite"];

fn call(store: &dyn Store, env: &mut SimEnv, who: &Identity, tool: &str, args: Value) -> Value {
    checked_call(store, env, who, tool, args)["structuredContent"].clone()
}

/// Writers rewrite the markdown tabs of `notes` notes with random subsets
/// of [`WORDS`] (so words leave and come back while others add them),
/// re-reading on a conflict; `start` runs once the notes exist, before the
/// writers do. Returns the notes.
fn race(store: &dyn Store, notes: usize, writers: usize, writes: usize, seed: u64, start: impl FnOnce()) -> Vec<String> {
    let ada = human("acme");
    let mut env = SimEnv::new(seed);
    let ids: Vec<String> = (0..notes)
        .map(|i| {
            let r = cairn_notes::rest::create_note(store, &mut env, &ada, json!({"title": format!("Rocks {i}"), "approved_for_agents": true})).unwrap();
            r.body["note_id"].as_str().unwrap().to_string()
        })
        .collect();
    start();
    std::thread::scope(|s| {
        for t in 0..writers {
            let ids = &ids;
            s.spawn(move || {
                let who = identity("acme", &format!("w{t}"), ActorType::Agent);
                let mut env = SimEnv::new(seed * 100 + t as u64);
                let mut rng = seed * 7919 + t as u64 * 104_729 + 1;
                let mut next = || {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng
                };
                for i in 0..writes {
                    let note = &ids[(next() as usize) % ids.len()];
                    let bits = next();
                    let text: Vec<&str> = WORDS.iter().enumerate().filter(|(k, _)| bits >> k & 1 == 1).map(|(_, w)| *w).collect();
                    for attempt in 0.. {
                        let read = call(store, &mut env, &who, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
                        let r = call(store, &mut env, &who, "edit_note_tab", json!({"note_id": note, "tab_id": "markdown",
                            "expected_version": read["version"], "idempotency_key": format!("w{t}-{i}-{attempt}"),
                            "operation": "replace_text", "text": text.join(" ")}));
                        match r["error"].as_str() {
                            None => break,
                            Some("version_conflict") | Some("busy") => std::thread::yield_now(),
                            Some(other) => panic!("unexpected refusal {other}: {r}"),
                        }
                    }
                }
            });
        }
    });
    ids
}

/// Every word finds exactly the notes whose text holds it now.
fn assert_search_matches_the_notes(store: &dyn Store, notes: &[String]) {
    let ada = human("acme");
    let mut env = SimEnv::new(1);
    for word in WORDS {
        let mut holding: Vec<String> = notes
            .iter()
            .filter(|n| {
                let t = call(store, &mut env, &ada, "read_note_tab", json!({"note_id": n, "tab_id": "markdown"}));
                t["text"].as_str().unwrap().split(' ').any(|w| w == word)
            })
            .cloned()
            .collect();
        let r = call(store, &mut env, &ada, "search_notes", json!({"query": word, "limit": 20}));
        let mut found: Vec<String> = r["hits"].as_array().unwrap().iter().map(|h| h["note_id"].as_str().unwrap().to_string()).collect();
        holding.sort();
        found.sort();
        assert_eq!(found, holding, "{word}");
    }
}

#[test]
fn racing_writers_that_add_and_remove_the_same_words_leave_no_committed_word_unindexed() {
    for seed in 1..=4 {
        // A slow swap widens the window between a commit and its cleanup,
        // where another writer adds back a word the commit removed.
        let (store, ctl) = Faulty::new(Arc::new(MemoryStore::new()));
        ctl.set_swap_latency(std::time::Duration::from_micros(300));
        let notes = race(&store, 2, 4, 40, seed, || {});
        let report = check(&store, "acme").unwrap();
        assert_eq!(report.missing, 0, "seed {seed}: {report:?}");
        assert_eq!(report.notes, 2);
        assert_search_matches_the_notes(&store, &notes);
    }
}

#[test]
fn on_a_store_that_lies_writers_that_confirm_leave_no_committed_word_unindexed() {
    let mut lies = 0;
    for seed in 1..=4 {
        let (faulty, ctl) = Faulty::new(Arc::new(MemoryStore::new()));
        ctl.set_vouched(false);
        let store = Arc::new(faulty);
        let notes = race(store.as_ref(), 2, 3, 25, seed, || {
            ctl.lie_like_spin_redis(150, seed);
            ctl.bound_blind_writes(DELIVERY_BOUND);
            ctl.set_swap_latency(std::time::Duration::from_micros(200));
        });
        lies += ctl.lies_told().0;
        ctl.tell_the_truth();
        let report = check(store.as_ref(), "acme").unwrap();
        assert_eq!(report.missing, 0, "seed {seed}: {report:?}");
        assert_search_matches_the_notes(store.as_ref(), &notes);
    }
    assert!(lies > 0, "the store never lied: the test proved nothing");
}

#[test]
fn a_wiped_index_is_found_incomplete_by_check_and_rebuilt_by_reindex() {
    let mut w = World::new();
    let ada = human("acme");
    let a = w.note(&ada, "Alpha", true);
    w.write_text(&ada, &a, "amber basalt", "k1");
    let b = w.note(&ada, "Beta", true);
    w.write_text(&ada, &b, "cobalt", "k1");
    assert_eq!(check(&w.kv, "acme").unwrap().missing, 0);
    let index: Vec<String> = w.kv.dump().into_iter().map(|(k, _)| k).filter(|k| k.contains("/srch/")).collect();
    assert!(!index.is_empty());
    for k in &index {
        w.kv.delete("default", k).unwrap();
    }
    let before = check(&w.kv, "acme").unwrap();
    assert!(before.missing > 0, "{before:?}");
    assert_eq!(w.ok(&ada, "search_notes", json!({"query": "amber"}))["hits"].as_array().unwrap().len(), 0);
    let fixed = reindex(&w.kv, "acme").unwrap();
    assert_eq!(fixed.missing, before.missing, "reindex reports what it found");
    assert_eq!(check(&w.kv, "acme").unwrap().missing, 0);
    assert_eq!(w.ok(&ada, "search_notes", json!({"query": "amber"}))["hits"][0]["note_id"], a.as_str());
    assert_eq!(w.ok(&ada, "search_notes", json!({"query": "cobalt"}))["hits"][0]["note_id"], b.as_str());
}

#[test]
fn reindex_removes_entries_no_committed_tab_holds_and_keeps_the_rest() {
    let mut w = World::new();
    let ada = human("acme");
    let a = w.note(&ada, "Alpha", true);
    w.write_text(&ada, &a, "amber basalt", "k1");
    assert_eq!(check(&w.kv, "acme").unwrap().stale, 0);
    // What a crash between a commit and its cleanup leaves: the entries of
    // words the commit removed (put back here as they were before it).
    let stale_before: Vec<(String, Vec<u8>)> = w.kv.dump().into_iter().filter(|(k, _)| k.contains("/srch/")).collect();
    w.write_text(&ada, &a, "cobalt", "k2");
    for (k, v) in &stale_before {
        if k.contains("/amber/") {
            w.kv.set("default", k, v).unwrap();
        }
    }
    let found = check(&w.kv, "acme").unwrap();
    assert!(found.stale > 0, "{found:?}");
    assert_eq!(found.missing, 0);
    assert_eq!(w.ok(&ada, "search_notes", json!({"query": "amber"}))["hits"].as_array().unwrap().len(), 0, "a stale entry is never a hit");
    reindex(&w.kv, "acme").unwrap();
    let after = check(&w.kv, "acme").unwrap();
    assert_eq!((after.stale, after.missing), (0, 0), "{after:?}");
    assert_eq!(w.ok(&ada, "search_notes", json!({"query": "cobalt"}))["hits"].as_array().unwrap().len(), 1);
}

#[test]
fn a_restore_makes_the_old_words_findable_again() {
    let mut w = World::new();
    let ada = human("acme");
    let a = w.note(&ada, "Alpha", true);
    w.write_text(&ada, &a, "garnet", "k1");
    let v = w.version(&ada, &a);
    w.write_text(&ada, &a, "flint", "k2");
    assert_eq!(w.ok(&ada, "search_notes", json!({"query": "garnet"}))["hits"].as_array().unwrap().len(), 0);
    let now = w.version(&ada, &a);
    let r = cairn_notes::rest::restore_tab(&w.kv, &mut w.env, &ada, &a, "markdown", json!({"from_version": v, "expected_version": now})).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(w.ok(&ada, "search_notes", json!({"query": "garnet"}))["hits"].as_array().unwrap().len(), 1);
    assert_eq!(w.ok(&ada, "search_notes", json!({"query": "flint"}))["hits"].as_array().unwrap().len(), 0);
}

#[test]
fn an_index_write_a_store_reports_done_but_drops_is_redone_before_the_write_is_acknowledged() {
    let (faulty, ctl) = Faulty::new(Arc::new(MemoryStore::new()));
    ctl.set_vouched(false);
    let ada = human("acme");
    let mut env = SimEnv::new(3);
    let r = cairn_notes::rest::create_note(&faulty, &mut env, &ada, json!({"title": "Rocks", "approved_for_agents": true})).unwrap();
    let note = r.body["note_id"].as_str().unwrap().to_string();
    // One new word: the edit's first swap is that word's posting record.
    ctl.drop_next_swaps(1);
    let r = call(&faulty, &mut env, &ada, "edit_note_tab", json!({"note_id": note, "tab_id": "markdown",
        "expected_version": 1, "idempotency_key": "k", "operation": "replace_text", "text": "obsidian"}));
    assert!(r.get("error").is_none(), "{r}");
    assert_eq!(check(&faulty, "acme").unwrap().missing, 0);
    let hits = call(&faulty, &mut env, &ada, "search_notes", json!({"query": "obsidian"}));
    assert_eq!(hits["hits"].as_array().unwrap().len(), 1, "{hits}");
}
