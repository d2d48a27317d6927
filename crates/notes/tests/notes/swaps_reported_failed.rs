//! On a store that reports every swap failed, landed or not (Spin's Redis
//! backend at `94a8fc8a`: it sends `UNWATCH <key>` after `EXEC`, which Redis
//! refuses), every answer is still the truth: a note created is answered 201
//! and listed once, an edit that landed is answered as written (not as a
//! replay, not as a conflict), claims are granted and released, the search
//! index catches up, and racing writers lose and double no line.
//!
//! The store behind the wrapper keeps the promise; only its answers lie, as
//! Spin's do. Components do not vouch for such a store, so they confirm
//! their commits (`commit_check` on).
use std::collections::HashMap;
use std::sync::Arc;

use crate::common::*;
use cairn_kv::Store;
use cairn_kv::faults::{Control, Faulty};
use cairn_kv::memory::MemoryStore;
use cairn_notes::{ActorType, SimEnv};
use serde_json::{Value, json};

/// A world whose store reports every swap failed from now on.
fn lying_world() -> World {
    let w = World::new();
    w.kv.faults().set_vouched(false);
    w.kv.faults().report_every_swap_failed(true);
    w
}

#[test]
fn notes_created_while_every_swap_is_reported_failed_are_answered_201_and_listed_exactly_once() {
    let mut w = lying_world();
    let ada = human("acme");
    let made: Vec<String> = (0..5).map(|i| w.note(&ada, &format!("Note {i}"), true)).collect();
    let listed = w.ok(&ada, "list_notes", json!({}));
    let mut ids: Vec<String> = listed["notes"].as_array().unwrap().iter().map(|n| n["note_id"].as_str().unwrap().to_string()).collect();
    ids.sort();
    let mut want = made.clone();
    want.sort();
    assert_eq!(ids, want, "the note list holds exactly the notes created, each once");
    let index = w.kv.dump().into_iter().find(|(k, _)| k == "t/acme/idx/notes").expect("a note index").1;
    let index: Value = serde_json::from_slice(&index).unwrap();
    assert_eq!(index["tail"].as_array().unwrap().len(), made.len(), "no id twice in the index: {index}");
}

#[test]
fn an_edit_whose_swap_landed_but_was_reported_failed_is_answered_as_written_once() {
    let mut w = lying_world();
    let ada = human("acme");
    let note = w.note(&ada, "Brief", true);
    let before = w.version(&ada, &note);
    let args = json!({"note_id": note, "tab_id": "markdown", "expected_version": before, "idempotency_key": "k-1",
        "operation": "replace_text", "text": "first line"});
    let r = w.call(&ada, "edit_note_tab", args.clone())["structuredContent"].clone();
    assert!(r.get("error").is_none(), "refused: {r}");
    assert_eq!(num(&r["version"]), before + 1, "{r}");
    assert!(r.get("replayed").is_none_or(|v| v == false), "answered as a replay of itself: {r}");
    let history = w.ok(&ada, "list_note_history", json!({"note_id": note}));
    let writes = history["entries"].as_array().unwrap().iter().filter(|e| e["action"] != "create_note").count();
    assert_eq!(writes, 1, "one write, one history entry: {history}");
    // The same key again is a replay, answered with the same result.
    let again = w.call(&ada, "edit_note_tab", args)["structuredContent"].clone();
    assert_eq!(again["replayed"], true, "{again}");
    assert_eq!(w.tab(&ada, &note, "markdown")["text"], "first line");
}

#[test]
fn claims_are_granted_listed_and_released_while_every_swap_is_reported_failed() {
    let mut w = lying_world();
    let (ada, bot) = (human("acme"), agent("acme"));
    let note = w.note(&ada, "Claimed", true);
    let claim = w.claim_ok(&bot, &note, Some("markdown"));
    assert_eq!(w.board(&ada).len(), 1, "one claim on the board");
    let held = w.claim(&ada, &note, Some("markdown"));
    assert!(held.get("error").is_some(), "a second holder was granted the same tab: {held}");
    let released = w.ok(&bot, "release_claim", json!({"claim_id": claim}));
    assert!(released.get("error").is_none(), "{released}");
    assert!(w.board(&ada).is_empty(), "the claim is gone");
}

#[test]
fn the_search_index_catches_up_while_every_swap_is_reported_failed() {
    let mut w = lying_world();
    let ada = human("acme");
    let note = w.note(&ada, "Launch", true);
    w.write_text(&ada, &note, "the quarterly zeppelin review", "k-1");
    let merged = cairn_notes::search::merge(&w.kv, &mut w.env, "acme", usize::MAX).expect("no store failure");
    assert_eq!(merged.still_dirty, 0, "the merge left the note dirty: {merged:?}");
    let found = w.ok(&ada, "search_notes", json!({"query": "zeppelin"}));
    let hits = found["hits"].as_array().unwrap();
    assert!(hits.iter().any(|h| h["note_id"] == note.as_str()), "{found}");
}

/// Two writers append `lines` lines each to one note through a store that
/// reports every swap failed, re-reading on a conflict. Returns the lines
/// acknowledged and the final text.
fn race(seed: u64, lines: usize) -> (Vec<String>, String) {
    let (faulty, ctl): (Faulty, Arc<Control>) = Faulty::new(Arc::new(MemoryStore::new()));
    let store = Arc::new(faulty);
    ctl.set_vouched(false);
    ctl.report_every_swap_failed(true);
    let mut env = SimEnv::new(seed);
    let ada = human("acme");
    let note = create_note(store.as_ref(), &mut env, &ada, "Raced", true);
    let acked: Vec<String> = std::thread::scope(|s| {
        let writers: Vec<_> = [(ActorType::Agent, "agent"), (ActorType::Human, "person")]
            .into_iter()
            .enumerate()
            .map(|(n, (actor, tag))| {
                let (store, note) = (store.clone(), note.clone());
                s.spawn(move || append_lines(store.as_ref(), &note, identity("acme", tag, actor), SimEnv::new(seed * 10 + n as u64), lines))
            })
            .collect();
        writers.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let read = checked_call(store.as_ref(), &mut env, &ada, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    (acked, read["structuredContent"]["text"].as_str().unwrap().to_string())
}

/// One writer's loop: read, append its line, write with the version read; a
/// version conflict reads again (a new key: a new write).
fn append_lines(store: &dyn Store, note: &str, who: cairn_notes::Identity, mut env: SimEnv, lines: usize) -> Vec<String> {
    let tag = who.subject.clone();
    let mut acked = Vec::new();
    for i in 0..lines {
        let line = format!("{tag}-{i}");
        for attempt in 0.. {
            let read = checked_call(store, &mut env, &who, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}))["structuredContent"].clone();
            let text = read["text"].as_str().unwrap();
            let next = if text.is_empty() { line.clone() } else { format!("{text}\n{line}") };
            let r = checked_call(
                store,
                &mut env,
                &who,
                "edit_note_tab",
                json!({"note_id": note, "tab_id": "markdown",
                "expected_version": read["version"], "idempotency_key": format!("{tag}-{i}-{attempt}"),
                "operation": "replace_text", "text": next}),
            )["structuredContent"]
                .clone();
            match r["error"].as_str() {
                None => {
                    acked.push(line.clone());
                    break;
                }
                Some("version_conflict") => continue,
                Some(other) => panic!("unexpected refusal {other}: {r}"),
            }
        }
    }
    acked
}

#[test]
fn racing_writers_lose_and_double_no_line_while_every_swap_is_reported_failed() {
    for seed in 1..=4 {
        let (acked, text) = race(seed, 25);
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for l in text.lines() {
            *seen.entry(l).or_default() += 1;
        }
        let lost: Vec<&String> = acked.iter().filter(|l| !seen.contains_key(l.as_str())).collect();
        let doubled: Vec<(&&str, &usize)> = seen.iter().filter(|(_, n)| **n > 1).collect();
        assert_eq!((lost.len(), doubled.len()), (0, 0), "seed {seed}: lost {lost:?}, doubled {doubled:?}");
        assert_eq!(acked.len(), 50, "seed {seed}: every line acknowledged");
        assert_eq!(seen.len(), 50, "seed {seed}: no line that was not acknowledged");
    }
}

/// A store that reports every swap failed, and runs `between` once, after
/// a swap of a key containing `fragment` landed and before the fresh read
/// it answers with: another writer committing in that instant.
/// What runs between a swap's read and its write, once.
type Between = Box<dyn FnOnce(&Overtaken) + Send>;

struct Overtaken {
    inner: MemoryStore,
    fragment: String,
    between: std::sync::Mutex<Option<Between>>,
}

impl Store for Overtaken {
    fn read(&self, b: &str, k: &str) -> cairn_kv::Result<cairn_kv::Read> {
        self.inner.read(b, k)
    }
    fn swap(&self, b: &str, k: &str, o: cairn_kv::Observed, v: &[u8]) -> cairn_kv::Result<cairn_kv::Swap> {
        let landed = self.inner.swap(b, k, o, v)?;
        if matches!(landed, cairn_kv::Swap::Done) && k.contains(&self.fragment) {
            let hook = self.between.lock().unwrap().take();
            if let Some(hook) = hook {
                hook(self);
            }
        }
        Ok(cairn_kv::Swap::Failed(self.inner.read(b, k)?))
    }
    fn set_many(&self, b: &str, p: &[(&str, &[u8])]) -> cairn_kv::Result<()> {
        self.inner.set_many(b, p)
    }
    fn get_many(&self, b: &str, k: &[&str]) -> cairn_kv::Result<Vec<Option<Vec<u8>>>> {
        self.inner.get_many(b, k)
    }
    fn delete_many(&self, b: &str, k: &[&str]) -> cairn_kv::Result<()> {
        self.inner.delete_many(b, k)
    }
    fn increment(&self, b: &str, k: &str, d: i64) -> cairn_kv::Result<i64> {
        self.inner.increment(b, k, d)
    }
    fn list_keys(&self, b: &str, after: Option<&str>, limit: usize) -> cairn_kv::Result<Vec<String>> {
        self.inner.list_keys(b, after, limit)
    }
    fn sweep(&self, older_than_ms: u64) -> cairn_kv::Result<usize> {
        self.inner.sweep(older_than_ms)
    }
    fn close(&self) -> cairn_kv::Result<()> {
        self.inner.close()
    }
}

#[test]
fn an_edit_overtaken_right_after_its_reported_failed_swap_landed_is_answered_as_written() {
    let store = Overtaken { inner: MemoryStore::new(), fragment: "/note/".into(), between: Default::default() };
    let mut env = SimEnv::new(3);
    let (ada, bot) = (human("acme"), agent("acme"));
    let note = create_note(&store, &mut env, &ada, "Brief", true);
    let tab = |store: &Overtaken, env: &mut SimEnv| {
        checked_call(store, env, &ada, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}))["structuredContent"].clone()
    };
    let before = num(&tab(&store, &mut env)["version"]);
    // Right after ada's swap lands, the agent appends on top of it.
    let (n, agent_at) = (note.clone(), before + 1);
    *store.between.lock().unwrap() = Some(Box::new(move |s: &Overtaken| {
        let r = checked_call(
            s,
            &mut SimEnv::new(4),
            &bot,
            "edit_note_tab",
            json!({"note_id": n, "tab_id": "markdown",
            "expected_version": agent_at, "idempotency_key": "bot-1", "operation": "append_text", "text": "\nagent line"}),
        );
        assert!(r["structuredContent"].get("error").is_none(), "the agent's append: {}", r["structuredContent"]);
    }));
    let r = checked_call(
        &store,
        &mut env,
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown",
        "expected_version": before, "idempotency_key": "ada-1", "operation": "replace_text", "text": "ada line"}),
    )["structuredContent"]
        .clone();
    assert!(store.between.lock().unwrap().is_none(), "the agent never wrote in between: the test proved nothing");
    assert!(r.get("error").is_none(), "refused: {r}");
    assert_eq!(num(&r["version"]), before + 1, "{r}");
    assert!(r.get("replayed").is_none_or(|v| v == false), "answered as a replay of itself: {r}");
    let text = tab(&store, &mut env)["text"].as_str().unwrap().to_string();
    assert!(text.starts_with("ada line") && text.contains("agent line"), "both writes are in the text: {text:?}");
}

#[test]
fn a_creation_overtaken_right_after_its_reported_failed_listing_landed_is_listed_once() {
    let store = Overtaken { inner: MemoryStore::new(), fragment: "/idx/notes".into(), between: Default::default() };
    let mut env = SimEnv::new(5);
    let ada = human("acme");
    let first = create_note(&store, &mut env, &ada, "First", true);
    // Right after the second creation's listing lands, a third note is listed on top of it.
    let third = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let slot = third.clone();
    *store.between.lock().unwrap() = Some(Box::new(move |s: &Overtaken| {
        *slot.lock().unwrap() = create_note(s, &mut SimEnv::new(6), &human("acme"), "Third", true);
    }));
    let second = create_note(&store, &mut env, &ada, "Second", true);
    let third = third.lock().unwrap().clone();
    assert!(!third.is_empty(), "no note was created in between: the test proved nothing");
    let listed = checked_call(&store, &mut env, &ada, "list_notes", json!({}))["structuredContent"].clone();
    let mut ids: Vec<&str> = listed["notes"].as_array().unwrap().iter().map(|n| n["note_id"].as_str().unwrap()).collect();
    ids.sort();
    let mut want = vec![first.as_str(), second.as_str(), third.as_str()];
    want.sort();
    assert_eq!(ids, want, "each note listed once");
    let index: Value = serde_json::from_slice(&store.inner.get("default", "t/acme/idx/notes").unwrap().unwrap()).unwrap();
    assert_eq!(index["tail"].as_array().unwrap().len(), 3, "no id twice in the index: {index}");
}
