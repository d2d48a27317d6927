//! The history sweep: what is past retention (both rules) leaves the store,
//! every retained version still reads exactly as it did, and no write racing
//! the sweep ever loses a blob it committed.
use std::collections::BTreeMap;

use crate::common::*;
use cairn_notes::env::{Identity, Retention};
use cairn_notes::{HistorySweep, SimEnv, Store, rest, sweep_history};
use serde_json::{Value, json};

const DAY: u64 = 24 * 3600 * SECOND;

fn retention(versions: u64) -> Retention {
    Retention { versions, days: 1, ..Retention::default() }
}

/// The host's periodic work: the search index caught up (its dirty markers
/// are keys of the note too), then the history sweep.
fn sweep(w: &mut World) -> HistorySweep {
    cairn_notes::search::merge(&w.kv, &mut w.env, "acme", usize::MAX).expect("no store failure");
    sweep_history(&w.kv, &mut w.env, "acme").expect("no store failure")
}

/// A sweep's work, without the usage it counted (what it found, not what it did).
fn idle(s: HistorySweep) -> HistorySweep {
    HistorySweep { bytes: 0, ..s }
}

/// Every key of one note (its head, entries, blobs, records), and their bytes.
fn note_keys(w: &World, note: &str) -> BTreeMap<String, usize> {
    w.kv.dump().into_iter().filter(|(k, _)| k.contains(&format!("/{note}"))).map(|(k, v)| (k, v.len())).collect()
}

fn read_at(w: &mut World, who: &Identity, note: &str, tab: &str, v: u64) -> Value {
    w.call(who, "read_note_tab", json!({"note_id": note, "tab_id": tab, "at_version": v}))["structuredContent"].clone()
}

fn edit(w: &mut World, who: &Identity, note: &str, tab: &str, op: Value) {
    let v = w.version(who, note);
    let mut args = json!({"note_id": note, "tab_id": tab, "expected_version": v, "idempotency_key": format!("k{v}-{tab}")});
    for (k, x) in op.as_object().unwrap() {
        args[k] = x.clone();
    }
    let r = w.call(who, "edit_note_tab", args);
    assert_eq!(r["isError"], false, "{r}");
}

/// A note with a markdown tab written `n` times, and a sheet and a slides
/// tab changed only near the start.
fn busy_note(w: &mut World, who: &Identity, n: usize) -> (String, String, String) {
    let note = w.note(who, "Swept", true);
    let sheet = w.create_tab(who, &note, "sheet", "Numbers");
    let slides = w.create_tab(who, &note, "slides", "Deck");
    let sheet_id = w.tab(who, &note, &sheet)["sheets"][0]["sheet_id"].clone();
    edit(w, who, &note, &sheet, json!({"operation": "sheet_set_range", "sheet_id": sheet_id, "start_row": 0, "start_col": 0, "values": [[1, 2], [3, 4]]}));
    edit(w, who, &note, &slides, json!({"operation": "slide_add", "title": "Intro", "body": "Why"}));
    for i in 0..n {
        edit(w, who, &note, "markdown", json!({"operation": "replace_text", "text": format!("draft {i}\n{}", "x".repeat(300))}));
    }
    (note, sheet, slides)
}

/// Every tab at every version, as read now (refusals included).
fn every_read(w: &mut World, who: &Identity, note: &str, tabs: &[&str]) -> BTreeMap<(String, u64), Value> {
    let top = w.version(who, note);
    let mut out = BTreeMap::new();
    for v in 1..=top {
        for t in tabs {
            out.insert((t.to_string(), v), read_at(w, who, note, t, v));
        }
    }
    out
}

#[test]
fn a_sweep_drops_what_is_past_retention_and_every_retained_version_reads_as_before() {
    let mut w = World::new();
    w.env.retention = retention(5);
    let ada = human("acme");
    let (note, sheet, slides) = busy_note(&mut w, &ada, 40);
    let tabs = ["markdown", sheet.as_str(), slides.as_str()];
    let before = every_read(&mut w, &ada, &note, &tabs);
    let stored = note_keys(&w, &note);
    w.advance_s(2 * DAY / SECOND);
    let done = sweep(&mut w);
    assert_eq!(done.notes, 1, "{done:?}");
    assert!(done.entries > 25 && done.blobs > 25, "{done:?}");
    let after = every_read(&mut w, &ada, &note, &tabs);
    let top = w.version(&ada, &note);
    for ((tab, v), was) in &before {
        let now = &after[&(tab.clone(), *v)];
        if top - v < 5 {
            assert_eq!(now, was, "{tab} at {v}: a retained version changed");
        } else {
            assert_eq!(now["error"], "not_found", "{tab} at {v}: {now}");
            assert!(now["message"].as_str().unwrap().contains("past retention"), "{now}");
        }
    }
    let left = note_keys(&w, &note);
    assert!(left.len() * 3 < stored.len(), "{} keys before the sweep, {} after", stored.len(), left.len());
    // Nothing else to do until more versions leave retention.
    assert_eq!(idle(sweep(&mut w)), HistorySweep::default());
}

#[test]
fn a_tab_unchanged_since_before_the_floor_still_reads_at_every_retained_version() {
    let mut w = World::new();
    w.env.retention = retention(3);
    let ada = human("acme");
    let (note, sheet, slides) = busy_note(&mut w, &ada, 20);
    let top = w.version(&ada, &note);
    let cells = json!({"note_id": note, "tab_id": sheet, "start_row": 0, "start_col": 0, "num_rows": 2, "num_cols": 2});
    w.advance_s(2 * DAY / SECOND);
    sweep(&mut w);
    for v in top - 2..=top {
        assert_eq!(read_at(&mut w, &ada, &note, &slides, v)["slides"][0]["title"], "Intro", "slides at {v}");
        assert_eq!(read_at(&mut w, &ada, &note, &sheet, v)["sheets"][0]["rows"], 2, "sheet at {v}");
    }
    // The sheet's row blocks are kept: its cells still read.
    assert_eq!(w.ok(&ada, "read_sheet_range", cells)["values"], json!([[1, 2], [3, 4]]));
}

#[test]
fn the_age_rule_keeps_every_version_younger_than_its_days_whatever_the_count() {
    let mut w = World::new();
    w.env.retention = retention(2);
    let ada = human("acme");
    let (note, _, _) = busy_note(&mut w, &ada, 10);
    // Less than a day since the writes: every version stays, and reads.
    w.advance_s(DAY / SECOND - 3600);
    assert_eq!(idle(sweep(&mut w)), HistorySweep::default());
    assert_eq!(read_at(&mut w, &ada, &note, "markdown", 6)["text"].as_str().map(|t| t.starts_with("draft 0")), Some(true));
    // Past the day but inside the clock margin: unreadable, still kept.
    w.advance_s(3600 + 60);
    assert_eq!(idle(sweep(&mut w)), HistorySweep::default());
    w.advance_s(3600);
    assert_eq!(sweep(&mut w).notes, 1);
}

#[test]
fn a_restore_after_the_sweep_brings_back_a_retained_version_and_its_content_survives_the_next_sweeps() {
    let mut w = World::new();
    w.env.retention = retention(6);
    let ada = human("acme");
    let (note, _, slides) = busy_note(&mut w, &ada, 12);
    let top = w.version(&ada, &note);
    let old = read_at(&mut w, &ada, &note, "markdown", top - 4)["text"].clone();
    w.advance_s(2 * DAY / SECOND);
    sweep(&mut w);
    let r =
        rest::restore_tab(&w.kv, &mut w.env, &ada, &note, "markdown", json!({"from_version": top - 4, "expected_version": top, "idempotency_key": "restore"}))
            .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    for i in 0..10 {
        for _ in 0..3 {
            edit(&mut w, &ada, &note, &slides, json!({"operation": "slide_add", "title": format!("t{i}")}));
        }
        w.advance_s(2 * DAY / SECOND);
        sweep(&mut w);
    }
    assert_eq!(w.tab(&ada, &note, "markdown")["text"], old, "the restored text still reads after the sweeps");
}

#[test]
fn a_deleted_tab_reads_within_retention_and_its_content_goes_after() {
    let mut w = World::new();
    w.env.retention = retention(4);
    let ada = human("acme");
    let note = w.note(&ada, "Deleted", true);
    let slides = w.create_tab(&ada, &note, "slides", "Doomed");
    edit(&mut w, &ada, &note, &slides, json!({"operation": "slide_add", "title": "Only copy"}));
    let with_slide = w.version(&ada, &note);
    let r = rest::delete_tab(&w.kv, &mut w.env, &ada, &note, &slides, json!({"expected_version": with_slide, "idempotency_key": "del"})).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    w.advance_s(2 * DAY / SECOND);
    sweep(&mut w);
    assert_eq!(read_at(&mut w, &ada, &note, &slides, with_slide)["slides"][0]["title"], "Only copy", "within retention");
    for i in 0..6 {
        edit(&mut w, &ada, &note, "markdown", json!({"operation": "replace_text", "text": format!("v{i}")}));
    }
    let slide_blobs = |w: &World| w.kv.dump().iter().filter(|(k, v)| k.contains("/blob/") && String::from_utf8_lossy(v).contains("Only copy")).count();
    assert!(slide_blobs(&w) > 0);
    w.advance_s(2 * DAY / SECOND);
    sweep(&mut w);
    let gone = read_at(&mut w, &ada, &note, &slides, with_slide);
    assert_eq!(gone["error"], "not_found", "{gone}");
    assert_eq!(slide_blobs(&w), 0, "the deleted tab's content left the store");
}

#[test]
fn the_store_stays_flat_as_history_grows_under_periodic_sweeps() {
    let mut w = World::new();
    w.env.retention = retention(10);
    let ada = human("acme");
    let note = w.note(&ada, "Long-lived", true);
    let mut sizes = Vec::new();
    for round in 0..6 {
        for i in 0..50 {
            edit(&mut w, &ada, &note, "markdown", json!({"operation": "replace_text", "text": format!("round {round} line {i} {}", "y".repeat(500))}));
        }
        w.advance_s(2 * DAY / SECOND);
        sweep(&mut w);
        let keys = note_keys(&w, &note);
        sizes.push((keys.len(), keys.values().sum::<usize>()));
    }
    let (first, last) = (sizes[1], sizes[5]);
    assert!(last.0 <= first.0 + 2 && last.1 <= first.1 + first.1 / 10, "the note grew from {first:?} to {last:?} across sweeps: {sizes:?}");
}

#[test]
fn a_sweep_leaves_other_notes_other_tenants_and_shared_blobs_alone() {
    let mut w = World::new();
    w.env.retention = retention(2);
    let ada = human("acme");
    let (note, _, _) = busy_note(&mut w, &ada, 10);
    // Another note still inside its age window, another tenant, and a blob
    // from before generations (tenant-wide, shared).
    w.advance_s(2 * DAY / SECOND);
    let (young, _, _) = busy_note(&mut w, &ada, 10);
    let bob = human("globex");
    let (theirs, _, _) = busy_note(&mut w, &bob, 10);
    w.kv.set("default", "t/acme/blob/legacy-shared", b"kept").unwrap();
    cairn_notes::search::merge(&w.kv, &mut w.env, "acme", usize::MAX).unwrap();
    let keep_young = note_keys(&w, &young);
    let keep_theirs = note_keys(&w, &theirs);
    assert_eq!(sweep(&mut w).notes, 1);
    assert!(note_keys(&w, &note).len() < 20);
    assert_eq!(note_keys(&w, &young), keep_young, "a note inside its window is untouched");
    assert_eq!(note_keys(&w, &theirs), keep_theirs, "another tenant is untouched");
    assert_eq!(w.kv.get("default", "t/acme/blob/legacy-shared").unwrap().as_deref(), Some(&b"kept"[..]));
}

#[test]
fn writes_racing_the_sweep_never_lose_a_blob_they_committed() {
    let kv = TestKv::new();
    kv.faults().set_swap_latency(std::time::Duration::from_micros(100));
    let ada = human("acme");
    let mut env = SimEnv::new(3);
    let note =
        rest::create_note(&kv, &mut env, &ada, json!({"title": "Raced", "approved_for_agents": true})).unwrap().body["note_id"].as_str().unwrap().to_string();
    let done = std::sync::atomic::AtomicBool::new(false);
    let sweeps = std::thread::scope(|s| {
        let sweeper = s.spawn(|| {
            let mut env = SimEnv::new(9);
            env.retention = Retention { versions: 2, days: 0, ..Retention::default() };
            env.advance_us(DAY); // ahead of the writer's clock by more than the margin
            let mut moved = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                moved += sweep_history(&kv, &mut env, "acme").unwrap().notes;
            }
            moved
        });
        let mut env = SimEnv::new(5);
        for i in 0..300 {
            let last;
            loop {
                let read = checked_call(&kv, &mut env, &ada, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
                let v = read["structuredContent"]["version"].clone();
                // Every other write repeats an earlier text: the same hash again.
                let text = format!("text {}", if i % 2 == 0 { i % 7 } else { i });
                let r = checked_call(
                    &kv,
                    &mut env,
                    &ada,
                    "edit_note_tab",
                    json!({"note_id": note, "tab_id": "markdown",
                    "expected_version": v, "idempotency_key": format!("w{i}-{v}"), "operation": "replace_text", "text": text}),
                );
                if r["isError"] == false {
                    last = text;
                    break;
                }
                assert_eq!(r["structuredContent"]["error"], "version_conflict", "{r}");
            }
            let now = checked_call(&kv, &mut env, &ada, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
            assert_eq!(now["structuredContent"]["text"], last.as_str(), "write {i}: the committed text reads back");
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        sweeper.join().unwrap()
    });
    assert!(sweeps > 20, "the sweep moved the floor only {sweeps} times: the race proved little");
}

/// What one tenant may store is bounded: notes and bytes by quotas, a
/// note's versions by `max_versions`, audit records by age and count.
mod quotas {
    use super::*;
    use cairn_notes::env::Quotas;

    #[test]
    fn a_note_past_the_notes_quota_is_refused_naming_the_quota_and_nothing_is_written() {
        let mut w = World::new();
        let ada = human("acme");
        w.env.quotas = Quotas { notes: 2, ..Quotas::default() };
        w.note(&ada, "one", true);
        w.note(&ada, "two", true);
        let before = w.kv.dump();
        let r = rest::create_note(&w.kv, &mut w.env, &ada, json!({"title": "three"})).unwrap();
        assert_eq!(
            (r.status, r.body["error"].as_str(), r.body["quota"].as_str(), r.body["limit"].as_u64()),
            (507, Some("quota_exceeded"), Some("quota_notes"), Some(2)),
            "{}",
            r.body
        );
        assert_eq!(w.kv.dump(), before, "nothing written");
    }

    #[test]
    fn a_write_past_the_bytes_quota_is_refused_and_the_sweep_counts_what_retention_keeps() {
        let mut w = World::new();
        let ada = human("acme");
        let note = w.note(&ada, "Big", true);
        w.env.quotas = Quotas { bytes: 40_000, ..Quotas::default() };
        w.env.retention = retention(2);
        for i in 0..3 {
            edit(&mut w, &ada, &note, "markdown", json!({"operation": "replace_text", "text": format!("{i}{}", "y".repeat(10_000))}));
        }
        let counted = sweep(&mut w);
        assert!(counted.bytes >= 20_000 && counted.bytes <= 31_000, "three versions of 10 KB written, one past retention (the day rule keeps it): {counted:?}");
        // Past the quota as counted by the sweep: refused, naming it, nothing written.
        let v = w.version(&ada, &note);
        let before = w.kv.notes_state();
        let r = w.refused(
            &ada,
            "edit_note_tab",
            json!({"note_id": note, "tab_id": "markdown", "expected_version": v, "idempotency_key": "big",
            "operation": "replace_text", "text": "z".repeat(15_000)}),
        );
        assert_eq!((r["error"].as_str(), r["quota"].as_str(), r["limit"].as_u64()), (Some("quota_exceeded"), Some("quota_bytes"), Some(40_000)), "{r}");
        assert_eq!(w.kv.notes_state(), before, "nothing written");
        // A write that stores nothing new still goes.
        let r = w.ok(
            &ada,
            "edit_note_tab",
            json!({"note_id": note, "tab_id": "markdown", "expected_version": v, "idempotency_key": "tiny",
            "operation": "replace_text", "text": "z"}),
        );
        assert_eq!(r["version"].as_u64(), Some(v + 1));
    }

    #[test]
    fn versions_past_max_versions_are_swept_whatever_their_age() {
        let mut w = World::new();
        let ada = human("acme");
        let note = w.note(&ada, "Fast", true);
        w.env.retention = Retention { versions: 3, days: 30, max_versions: 5 };
        for i in 0..12 {
            edit(&mut w, &ada, &note, "markdown", json!({"operation": "replace_text", "text": format!("v{i}")}));
        }
        sweep(&mut w);
        let v = w.version(&ada, &note);
        let r = read_at(&mut w, &ada, &note, "markdown", v - 5);
        assert_eq!(r["error"], "not_found", "younger than 30 days but past max_versions: {r}");
        assert!(r["message"].as_str().unwrap().contains("5 versions at most"), "{r}");
        assert_eq!(read_at(&mut w, &ada, &note, "markdown", v - 4)["text"], "v7");
        let h = w.ok(&ada, "list_note_history", json!({"note_id": note, "limit": 50}));
        assert_eq!(h["entries"].as_array().unwrap().len(), 5, "{h}");
    }

    #[test]
    fn audit_records_past_retention_are_swept_with_history() {
        let mut w = World::new();
        let ada = human("acme");
        let bot = agent("acme");
        let note = w.note(&ada, "Claimed", true);
        for _ in 0..3 {
            let c = w.ok(&bot, "claim_note", json!({"note_id": note}));
            w.ok(&bot, "release_claim", json!({"claim_id": c["claim_id"]}));
        }
        let claim_audit = |w: &World| w.kv.dump().into_iter().filter(|(k, _)| k.contains("/audit/claims/")).count();
        assert!(claim_audit(&w) >= 6);
        sweep(&mut w);
        assert!(claim_audit(&w) >= 6, "young records stay");
        w.env.advance_us(31 * DAY);
        sweep(&mut w);
        assert_eq!(claim_audit(&w), 0, "records past the retention's days go");
    }
}
