//! The search index keeps its invariant (see `cairn_notes::index`): every
//! word of every committed tab is findable at once, through the postings or
//! through the note's dirty marker, under racing writers that add and remove
//! the same words, racing merges, a store that lies, a merge that dies half
//! way, a writer that dies between its marker and its commit, and after a
//! rebuild; and a merge leaves postings that `search::check` finds complete.
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::common::*;
use cairn_kv::Store;
use cairn_kv::faults::Faulty;
use cairn_kv::memory::MemoryStore;
use cairn_notes::search::{check, merge, reindex};
use cairn_notes::{ActorType, DELIVERY_BOUND, Identity, SimEnv};
use serde_json::{Value, json};

const WORDS: [&str; 8] = ["amber", "basalt", "cobalt", "dolomite", "ember", "flint", "garnet", "hematite"];

fn call(store: &dyn Store, env: &mut SimEnv, who: &Identity, tool: &str, args: Value) -> Value {
    checked_call(store, env, who, tool, args)["structuredContent"].clone()
}

fn merge_all(store: &dyn Store, env: &mut SimEnv) -> cairn_notes::search::MergeReport {
    merge(store, env, "acme", usize::MAX).expect("no store failure")
}

/// Writers rewrite the markdown tabs of `notes` notes with random subsets
/// of [`WORDS`] (so words leave and come back while others add them),
/// re-reading on a conflict; `start` runs once the notes exist, before the
/// writers do, and `beside` runs on its own thread while they write (it is
/// told when they are done). Returns the notes.
fn race(
    store: &dyn Store,
    notes: usize,
    writers: usize,
    writes: usize,
    seed: u64,
    start: impl FnOnce(),
    beside: impl FnOnce(&AtomicBool) + Send,
) -> Vec<String> {
    let ada = human("acme");
    let mut env = SimEnv::new(seed);
    let ids: Vec<String> = (0..notes).map(|i| create_note(store, &mut env, &ada, &format!("Rocks {i}"), true)).collect();
    start();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let done = &done;
        let side = s.spawn(move || beside(done));
        let handles: Vec<_> = (0..writers)
            .map(|t| {
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
                            let r = call(
                                store,
                                &mut env,
                                &who,
                                "edit_note_tab",
                                json!({"note_id": note, "tab_id": "markdown",
                                "expected_version": read["version"], "idempotency_key": format!("w{t}-{i}-{attempt}"),
                                "operation": "replace_text", "text": text.join(" ")}),
                            );
                            match r["error"].as_str() {
                                None => break,
                                Some("version_conflict") | Some("busy") => std::thread::yield_now(),
                                Some(other) => panic!("unexpected refusal {other}: {r}"),
                            }
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        done.store(true, Ordering::SeqCst);
        side.join().unwrap();
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

/// Merges over and over until told to stop, on its own clock.
fn keep_merging(store: &dyn Store, seed: u64, done: &AtomicBool) {
    let mut env = SimEnv::new(seed);
    while !done.load(Ordering::SeqCst) {
        merge_all(store, &mut env);
        std::thread::yield_now();
    }
}

#[test]
fn a_committed_word_is_found_before_any_merge_and_after_it() {
    let mut w = World::new();
    let ada = human("acme");
    let a = w.note(&ada, "Alpha", true);
    w.write_text(&ada, &a, "amber basalt", "k1");
    let before = check(&w.kv, "acme").unwrap();
    assert_eq!((before.dirty, before.missing), (1, 0), "dirty, so nothing counts as missing: {before:?}");
    assert_eq!(w.ok(&ada, "search_notes", json!({"query": "amber"}))["hits"][0]["note_id"], a.as_str(), "found through its marker");
    let merged = merge_all(&w.kv, &mut w.env);
    assert_eq!((merged.transitions, merged.still_dirty), (1, 0), "{merged:?}");
    let after = check(&w.kv, "acme").unwrap();
    assert_eq!((after.dirty, after.missing, after.stale), (0, 0, 0), "{after:?}");
    assert_eq!(w.ok(&ada, "search_notes", json!({"query": "amber"}))["hits"][0]["note_id"], a.as_str(), "found through the postings");
    assert!(w.kv.dump().iter().all(|(k, _)| !k.contains("/srch/dirty/")), "every marker cleared");
    // A second merge has nothing to do.
    assert_eq!(merge_all(&w.kv, &mut w.env), Default::default());
}

#[test]
fn racing_writers_that_add_and_remove_the_same_words_leave_every_committed_word_findable() {
    for seed in 1..=4 {
        let (store, ctl) = Faulty::new(Arc::new(MemoryStore::new()));
        ctl.set_swap_latency(std::time::Duration::from_micros(300));
        let notes = race(&store, 2, 4, 40, seed, || {}, |_| {});
        assert_search_matches_the_notes(&store, &notes);
        merge_all(&store, &mut SimEnv::new(seed));
        let report = check(&store, "acme").unwrap();
        assert_eq!((report.missing, report.dirty, report.notes), (0, 0, 2), "seed {seed}: {report:?}");
        assert_search_matches_the_notes(&store, &notes);
    }
}

#[test]
fn merges_racing_writers_and_each_other_lose_no_committed_word() {
    for seed in 1..=4 {
        // A slow swap widens every window: between a marker and its commit,
        // a claim and its postings, a removal and a newer transition's adds.
        let (store, ctl) = Faulty::new(Arc::new(MemoryStore::new()));
        ctl.set_swap_latency(std::time::Duration::from_micros(200));
        let store = &store;
        let notes = race(
            store,
            3,
            3,
            40,
            seed,
            || {},
            |done| {
                std::thread::scope(|s| {
                    for m in 0..2 {
                        s.spawn(move || keep_merging(store, seed * 10 + m, done));
                    }
                })
            },
        );
        // Whatever the merges left dirty is still findable; once caught up,
        // the postings alone hold every committed word.
        assert_search_matches_the_notes(store, &notes);
        merge_all(store, &mut SimEnv::new(seed));
        let report = check(store, "acme").unwrap();
        assert_eq!((report.missing, report.dirty), (0, 0), "seed {seed}: {report:?}");
        assert_search_matches_the_notes(store, &notes);
    }
}

#[test]
fn on_a_store_that_lies_writers_that_confirm_leave_every_committed_word_findable() {
    let mut lies = 0;
    for seed in 1..=4 {
        let (faulty, ctl) = Faulty::new(Arc::new(MemoryStore::new()));
        ctl.set_vouched(false);
        let store = Arc::new(faulty);
        let notes = race(
            store.as_ref(),
            2,
            3,
            25,
            seed,
            || {
                ctl.lie_like_spin_redis(150, seed);
                ctl.bound_blind_writes(DELIVERY_BOUND);
                ctl.set_swap_latency(std::time::Duration::from_micros(200));
            },
            |_| {},
        );
        lies += ctl.lies_told().0;
        ctl.tell_the_truth();
        assert_search_matches_the_notes(store.as_ref(), &notes);
        merge_all(store.as_ref(), &mut SimEnv::new(seed));
        let report = check(store.as_ref(), "acme").unwrap();
        assert_eq!((report.missing, report.dirty), (0, 0), "seed {seed}: {report:?}");
        assert_search_matches_the_notes(store.as_ref(), &notes);
    }
    assert!(lies > 0, "the store never lied: the test proved nothing");
}

#[test]
fn a_write_whose_marker_cannot_be_written_is_refused_and_nothing_is_written() {
    let (faulty, ctl) = Faulty::new(Arc::new(MemoryStore::new()));
    let ada = human("acme");
    let mut env = SimEnv::new(3);
    let note = create_note(&faulty, &mut env, &ada, "Rocks", true);
    ctl.fail_writes_of(Some("/srch/dirty/"));
    let args = json!({"note_id": note, "tab_id": "markdown", "expected_version": 1, "idempotency_key": "k",
        "operation": "replace_text", "text": "obsidian"});
    let failed = cairn_notes::call_tool(&faulty, &mut env, &ada, "edit_note_tab", args.clone());
    assert!(matches!(failed, Err(cairn_notes::Failure::Store(cairn_kv::Error::Unavailable(_)))), "{failed:?}");
    ctl.fail_writes_of(None);
    let tab = call(&faulty, &mut env, &ada, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    assert_eq!((tab["version"].as_u64(), tab["text"].as_str()), (Some(1), Some("")), "nothing was committed");
    // The same call, sent again once the store is back, lands once.
    let r = call(&faulty, &mut env, &ada, "edit_note_tab", args);
    assert_eq!(r["version"], 2, "{r}");
    assert_eq!(call(&faulty, &mut env, &ada, "search_notes", json!({"query": "obsidian"}))["hits"].as_array().unwrap().len(), 1);
}

#[test]
fn a_merge_that_dies_half_way_is_taken_over_and_nothing_is_lost() {
    let (faulty, ctl) = Faulty::new(Arc::new(MemoryStore::new()));
    let ada = human("acme");
    let mut env = SimEnv::new(4);
    let note = create_note(&faulty, &mut env, &ada, "Rocks", true);
    let write = |env: &mut SimEnv, v: u64, text: &str| {
        let r = call(
            &faulty,
            env,
            &ada,
            "edit_note_tab",
            json!({"note_id": note, "tab_id": "markdown", "expected_version": v,
            "idempotency_key": format!("k{v}"), "operation": "replace_text", "text": text}),
        );
        assert!(r.get("error").is_none(), "{r}");
    };
    write(&mut env, 1, "amber basalt cobalt");
    merge_all(&faulty, &mut env);
    // The next merge claims its transition, then dies after its first
    // postings write: "ember" may be in, "amber" may be out, the record says applying.
    write(&mut env, 2, "basalt cobalt ember flint");
    ctl.fail_writes_of(Some("/srch/t/flint"));
    assert!(merge(&faulty, &mut env, "acme", usize::MAX).is_err());
    ctl.fail_writes_of(None);
    let stuck = check(&faulty, "acme").unwrap();
    assert_eq!(stuck.dirty, 1, "its marker stays: {stuck:?}");
    assert_eq!(call(&faulty, &mut env, &ada, "search_notes", json!({"query": "flint"}))["hits"].as_array().unwrap().len(), 1, "still found");
    // Another merge soon after leaves it to its (presumed live) merger.
    let soon = merge_all(&faulty, &mut env);
    assert_eq!((soon.in_progress, soon.transitions), (1, 0), "{soon:?}");
    // Past the stuck bound it takes over, re-adding every word.
    env.advance_us(31_000_000);
    let later = merge_all(&faulty, &mut env);
    assert_eq!((later.taken_over, later.still_dirty), (1, 0), "{later:?}");
    let report = check(&faulty, "acme").unwrap();
    assert_eq!((report.missing, report.dirty), (0, 0), "{report:?}");
    for (word, n) in [("flint", 1), ("ember", 1), ("amber", 0), ("basalt", 1)] {
        assert_eq!(call(&faulty, &mut env, &ada, "search_notes", json!({"query": word}))["hits"].as_array().unwrap().len(), n, "{word}");
    }
}

#[test]
fn a_marker_whose_commit_never_landed_is_fenced_off_and_then_cleared() {
    let mut w = World::new();
    let ada = human("acme");
    let a = w.note(&ada, "Alpha", true);
    w.write_text(&ada, &a, "amber", "k1");
    merge_all(&w.kv, &mut w.env);
    // What a writer that died between its marker and its swap leaves: a
    // marker one revision ahead of the head.
    let head: Value = serde_json::from_slice(&w.kv.get("default", &format!("t/acme/note/{a}")).unwrap().unwrap()).unwrap();
    let ahead = head["rev"].as_u64().unwrap() + 1;
    w.kv.set("default", &format!("t/acme/srch/dirty/{a}/{ahead:016x}"), w.env.now_us.to_string().as_bytes()).unwrap();
    // Young: its writer may still land it; the note stays dirty (and found).
    let young = merge_all(&w.kv, &mut w.env);
    assert_eq!((young.fenced, young.still_dirty), (0, 1), "{young:?}");
    assert_eq!(w.ok(&ada, "search_notes", json!({"query": "amber"}))["hits"].as_array().unwrap().len(), 1);
    // Old: fenced by an empty commit of the head, then cleared.
    w.advance_s(121);
    let old = merge_all(&w.kv, &mut w.env);
    assert_eq!(old.fenced, 1, "{old:?}");
    let fenced: Value = serde_json::from_slice(&w.kv.get("default", &format!("t/acme/note/{a}")).unwrap().unwrap()).unwrap();
    assert_eq!(fenced["rev"].as_u64(), Some(ahead), "the fence is one commit");
    assert_eq!(fenced["version"], head["version"], "and changes no content version");
    let after = merge_all(&w.kv, &mut w.env);
    assert_eq!(after.still_dirty, 0, "{after:?}");
    let report = check(&w.kv, "acme").unwrap();
    assert_eq!((report.missing, report.dirty), (0, 0), "{report:?}");
}

#[test]
fn a_wiped_index_is_found_incomplete_by_check_and_rebuilt_by_reindex() {
    let mut w = World::new();
    let ada = human("acme");
    let a = w.note(&ada, "Alpha", true);
    w.write_text(&ada, &a, "amber basalt", "k1");
    let b = w.note(&ada, "Beta", true);
    w.write_text(&ada, &b, "cobalt", "k1");
    merge_all(&w.kv, &mut w.env);
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
    // What reindex wrote is what a merge would have: the next has nothing to do.
    assert_eq!(merge_all(&w.kv, &mut w.env).transitions, 0);
}

#[test]
fn reindex_removes_entries_no_committed_tab_holds_and_keeps_the_rest() {
    let mut w = World::new();
    let ada = human("acme");
    let a = w.note(&ada, "Alpha", true);
    w.write_text(&ada, &a, "amber basalt", "k1");
    merge_all(&w.kv, &mut w.env);
    assert_eq!(check(&w.kv, "acme").unwrap().stale, 0);
    // Leftovers (from an index written before note records existed, or a
    // transition away from a tab too large to keep the terms of): the
    // entries of words the note no longer has, put back as they were.
    let stale_before: Vec<(String, Vec<u8>)> = w.kv.dump().into_iter().filter(|(k, _)| k.contains("/srch/t/amber/")).collect();
    w.write_text(&ada, &a, "cobalt", "k2");
    merge_all(&w.kv, &mut w.env);
    for (k, v) in &stale_before {
        w.kv.set("default", k, v).unwrap();
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
    merge_all(&w.kv, &mut w.env);
    assert_eq!(w.ok(&ada, "search_notes", json!({"query": "garnet"}))["hits"].as_array().unwrap().len(), 0);
    let now = w.version(&ada, &a);
    let r = cairn_notes::rest::restore_tab(&w.kv, &mut w.env, &ada, &a, "markdown", json!({"from_version": v, "expected_version": now})).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    for _ in 0..2 {
        assert_eq!(w.ok(&ada, "search_notes", json!({"query": "garnet"}))["hits"].as_array().unwrap().len(), 1);
        assert_eq!(w.ok(&ada, "search_notes", json!({"query": "flint"}))["hits"].as_array().unwrap().len(), 0);
        merge_all(&w.kv, &mut w.env);
    }
}

#[test]
fn a_claim_leaves_no_marker_and_a_title_change_leaves_one() {
    let mut w = World::new();
    let ada = human("acme");
    let a = w.note(&ada, "Alpha", true);
    merge_all(&w.kv, &mut w.env);
    w.claim_ok(&ada, &a, Some("markdown"));
    assert_eq!(check(&w.kv, "acme").unwrap().dirty, 0, "a claim changes no words");
    let r = cairn_notes::rest::update_note(&w.kv, &mut w.env, &ada, &a, json!({"title": "Granite plan", "expected_version": 1})).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(check(&w.kv, "acme").unwrap().dirty, 1, "the title is a field of the markdown tab");
    assert_eq!(w.ok(&ada, "search_notes", json!({"query": "granite"}))["hits"].as_array().unwrap().len(), 1);
}

#[test]
fn a_slow_merge_taken_over_never_removes_what_the_newer_transition_added() {
    let (faulty, ctl) = Faulty::new(Arc::new(MemoryStore::new()));
    let store = &faulty;
    let ada = human("acme");
    let mut env = SimEnv::new(5);
    let note = create_note(store, &mut env, &ada, "Rocks", true);
    let write = |env: &mut SimEnv, text: &str| {
        let v = call(store, env, &ada, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}))["version"].clone();
        let r = call(
            store,
            env,
            &ada,
            "edit_note_tab",
            json!({"note_id": note, "tab_id": "markdown", "expected_version": v,
            "idempotency_key": format!("k{v}"), "operation": "replace_text", "text": text}),
        );
        assert!(r.get("error").is_none(), "{r}");
    };
    write(&mut env, "amber basalt");
    merge_all(store, &mut env);
    // Merge A brings the note to "basalt" and stops right before it removes "amber".
    write(&mut env, "basalt");
    ctl.hold_next_write_of("/srch/t/amber/");
    std::thread::scope(|s| {
        let slow = s.spawn(|| merge(store, &mut SimEnv::new(6), "acme", usize::MAX).expect("no store failure"));
        let waiting = std::time::Instant::now();
        while !ctl.is_holding() {
            assert!(waiting.elapsed().as_secs() < 10, "merge A never reached its removal of amber");
            std::thread::yield_now();
        }
        // Meanwhile "amber" comes back, and merge B, finding A's transition
        // stuck, takes over: every word of the newest head is re-added.
        write(&mut env, "amber basalt");
        env.advance_us(31_000_000);
        let b = merge_all(store, &mut env);
        // A wakes up and carries on with its removal: an entry newer than its transition stays.
        ctl.release_held();
        slow.join().unwrap();
        assert_eq!(b.taken_over, 1, "{b:?}");
    });
    let report = check(store, "acme").unwrap();
    assert_eq!((report.missing, report.dirty), (0, 0), "{report:?}");
    assert_eq!(call(store, &mut env, &ada, "search_notes", json!({"query": "amber"}))["hits"].as_array().unwrap().len(), 1);
}
