//! Quotas are checked against exact usage at write time, with or without a
//! sweep: the tenant's counter moves before each commit, never passes the
//! quota, and never falls below what the notes store by their own count.
use std::sync::Arc;

use crate::common::*;
use cairn_kv::memory::MemoryStore;
use cairn_notes::env::{Quotas, Retention};
use cairn_notes::quota::{counted_bytes, stored_by_notes};
use cairn_notes::{SimEnv, Store, rest};
use serde_json::{Value, json};

fn replace(w: &mut World, who: &cairn_notes::Identity, note: &str, text: String, key: &str) -> Value {
    let v = w.version(who, note);
    w.call(
        who,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": v, "idempotency_key": key,
        "operation": "replace_text", "text": text}),
    )
}

/// The counter never under-counts the notes, and never passes `quota`.
fn assert_counted(store: &dyn Store, quota: u64) -> (u64, u64) {
    let (counted, stored) = (counted_bytes(store, "acme").unwrap(), stored_by_notes(store, "acme").unwrap());
    assert!(counted >= stored, "the counter ({counted}) never falls below what the notes store ({stored})");
    assert!(counted <= quota, "the counter ({counted}) never passes the quota ({quota})");
    (counted, stored)
}

#[test]
fn the_bytes_quota_holds_with_no_sweep_ever_run() {
    let mut w = World::new();
    let ada = human("acme");
    w.env.quotas = Quotas { bytes: 50_000, ..Quotas::default() };
    let note = w.note(&ada, "Growing", true);
    let mut refused = None;
    for i in 0..10 {
        let r = replace(&mut w, &ada, &note, format!("{i}{}", "x".repeat(9_000)), &format!("k{i}"));
        if r["isError"] == true {
            refused = Some((i, r["structuredContent"].clone()));
            break;
        }
    }
    let (i, r) = refused.expect("a tenant writing 90 KB under a 50 KB quota is refused before the end");
    assert_eq!((i, r["error"].as_str(), r["quota"].as_str()), (5, Some("quota_exceeded"), Some("quota_bytes")), "{r}");
    assert_eq!(r["used"], 45_005, "five versions of 9,001 bytes: {r}");
    let (counted, stored) = assert_counted(&w.kv, 50_000);
    assert_eq!(counted, stored, "no write in flight: the counter is exact");
}

#[test]
fn racing_writers_never_pass_the_bytes_quota() {
    let store = Arc::new(MemoryStore::new());
    let ada = human("acme");
    let mut env = SimEnv::new(1);
    let notes: Vec<String> = (0..8).map(|i| create_note(store.as_ref(), &mut env, &ada, &format!("n{i}"), true)).collect();
    let quota = 100_000;
    let threads: Vec<_> = notes
        .into_iter()
        .enumerate()
        .map(|(t, note)| {
            let (store, who) = (store.clone(), ada.clone());
            std::thread::spawn(move || {
                let mut env = SimEnv::new(100 + t as u64);
                env.quotas = Quotas { bytes: quota, ..Quotas::default() };
                let mut acked = 0;
                for i in 0..40 {
                    let v = checked_call(store.as_ref(), &mut env, &who, "list_note_tabs", json!({"note_id": note}))["structuredContent"]["version"].clone();
                    let r = checked_call(store.as_ref(), &mut env, &who, "edit_note_tab", json!({"note_id": note, "tab_id": "markdown",
                        "expected_version": v, "idempotency_key": format!("t{t}-{i}"), "operation": "replace_text", "text": format!("{t}-{i}-{}", "y".repeat(1_500))}));
                    match r["structuredContent"]["error"].as_str() {
                        None => acked += 1,
                        Some("quota_exceeded") => {}
                        Some(other) => panic!("unexpected refusal {other}: {r}"),
                    }
                }
                acked
            })
        })
        .collect();
    let acked: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let (counted, stored) = assert_counted(store.as_ref(), quota);
    assert_eq!(counted, stored, "every writer finished: the counter is exact");
    assert!((50..8 * 40).contains(&acked), "the quota stopped the writers part way: {acked} acknowledged");
}

#[test]
fn an_attempt_whose_swap_was_lost_is_refunded() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Lossy", true);
    for i in 0..6 {
        w.kv.lose_next_swaps(2);
        let r = replace(&mut w, &ada, &note, format!("{i}{}", "z".repeat(2_000)), &format!("k{i}"));
        assert_eq!(r["isError"], false, "{r}");
    }
    // Every attempt whose swap was lost was charged, then refunded.
    let (counted, stored) = assert_counted(&w.kv, u64::MAX);
    assert_eq!(counted, stored);
}

#[test]
fn a_write_refused_after_its_charge_is_refunded() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Busy", true);
    // Every swap lost: the write ends `busy` after its attempts, each charged and refunded.
    w.kv.lose_next_swaps(1_000);
    let r = replace(&mut w, &ada, &note, "q".repeat(3_000), "k");
    assert_eq!(r["structuredContent"]["error"], "busy", "{r}");
    w.kv.lose_next_swaps(0);
    assert_eq!(counted_bytes(&w.kv, "acme").unwrap(), 0, "nothing stored, nothing counted");
}

#[test]
fn the_history_sweep_gives_back_what_it_frees() {
    let mut w = World::new();
    let ada = human("acme");
    w.env.retention = Retention { versions: 2, days: 0, ..Retention::default() };
    let note = w.note(&ada, "Old", true);
    for i in 0..6 {
        assert_eq!(replace(&mut w, &ada, &note, format!("{i}{}", "o".repeat(4_000)), &format!("k{i}"))["isError"], false);
    }
    let before = counted_bytes(&w.kv, "acme").unwrap();
    cairn_notes::search::merge(&w.kv, &mut w.env, "acme", usize::MAX).unwrap();
    cairn_notes::sweep_history(&w.kv, &mut w.env, "acme").unwrap();
    let (after, stored) = assert_counted(&w.kv, u64::MAX);
    assert_eq!(after, stored, "the counter follows the notes down");
    assert!(after <= before / 2, "half the versions left the store: {before} → {after}");
}

#[test]
fn content_from_before_the_counter_is_counted_by_the_first_charge() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Legacy", true);
    for i in 0..3 {
        assert_eq!(replace(&mut w, &ada, &note, format!("{i}{}", "l".repeat(5_000)), &format!("k{i}"))["isError"], false);
    }
    // A tenant whose content predates the counter: no counter at all.
    let counter = w.kv.dump().into_iter().map(|(k, _)| k).find(|k| k.ends_with("usage-bytes")).expect("the counter exists");
    w.kv.delete("default", &counter).unwrap();
    assert_eq!(counted_bytes(&w.kv, "acme").unwrap(), 0);
    assert_eq!(replace(&mut w, &ada, &note, "new".into(), "k-new")["isError"], false);
    let (counted, stored) = assert_counted(&w.kv, u64::MAX);
    assert_eq!(counted, stored, "the first charge counted the content from before");
}

#[test]
fn racing_creators_never_pass_the_notes_quota() {
    let store = Arc::new(MemoryStore::new());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                let mut env = SimEnv::new(t);
                env.quotas = Quotas { notes: 10, ..Quotas::default() };
                (0..10)
                    .filter(|i| rest::create_note(store.as_ref(), &mut env, &human("acme"), json!({"title": format!("{t}-{i}")})).unwrap().status == 201)
                    .count()
            })
        })
        .collect();
    let made: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(made, 10, "40 creations raced for 10 notes");
    let listed = rest::list_notes(store.as_ref(), &mut SimEnv::new(9), &human("acme"), None, Some("50")).unwrap();
    assert_eq!(listed.body["notes"].as_array().map(Vec::len), Some(10), "{}", listed.body);
}
