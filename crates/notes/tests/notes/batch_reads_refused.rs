//! On a host store whose batch read fails (Spin's Redis store at `94a8fc8a`
//! sends `KEYS <key>…` for `get-many`: Redis refuses several keys, and one
//! key that exists panics Spin's host), the core reads one key with a plain
//! read and several keys one by one after the batch failed: notes are read,
//! edited, searched and their history listed. A store someone vouches for
//! gets no such second try: its failure is the answer.
use crate::common::*;
use cairn_kv::memory::MemoryStore;
use cairn_kv::{Observed, Read, Store, Swap};
use cairn_notes::SimEnv;
use serde_json::json;

/// Memory, except that every batch read fails as Spin's Redis store's does.
struct NoBatchReads {
    inner: MemoryStore,
    vouched: bool,
}

impl Store for NoBatchReads {
    fn read(&self, b: &str, k: &str) -> cairn_kv::Result<Read> {
        self.inner.read(b, k)
    }
    fn swap(&self, b: &str, k: &str, o: Observed, v: &[u8]) -> cairn_kv::Result<Swap> {
        self.inner.swap(b, k, o, v)
    }
    fn set_many(&self, b: &str, p: &[(&str, &[u8])]) -> cairn_kv::Result<()> {
        self.inner.set_many(b, p)
    }
    fn get_many(&self, _: &str, keys: &[&str]) -> cairn_kv::Result<Vec<Option<Vec<u8>>>> {
        assert!(keys.len() != 1, "a batch read of one key: on Spin's Redis store its host panics");
        Err(cairn_kv::Error::Backend("An error was signalled by the server - ResponseError: wrong number of arguments for 'keys' command".into()))
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
    fn vouched(&self) -> bool {
        self.vouched
    }
}

/// Creates a note with a few versions of its markdown tab on `store`.
fn written(store: &NoBatchReads, env: &mut SimEnv) -> String {
    let ada = human("acme");
    let note = create_note(store, env, &ada, "Batch", true);
    for (i, text) in ["one", "one\ntwo", "one\ntwo\nthree"].into_iter().enumerate() {
        let r = checked_call(
            store,
            env,
            &ada,
            "edit_note_tab",
            json!({"note_id": note, "tab_id": "markdown", "expected_version": i as u64 + 1,
            "idempotency_key": format!("k-{i}"), "operation": "replace_text", "text": text}),
        );
        assert!(r["structuredContent"].get("error").is_none(), "{}", r["structuredContent"]);
    }
    note
}

#[test]
fn notes_are_read_edited_and_listed_when_the_hosts_batch_read_fails() {
    let store = NoBatchReads { inner: MemoryStore::new(), vouched: false };
    let mut env = SimEnv::new(11);
    let ada = human("acme");
    let note = written(&store, &mut env);
    let tab = checked_call(&store, &mut env, &ada, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    assert_eq!(tab["structuredContent"]["text"], "one\ntwo\nthree");
    let history = checked_call(&store, &mut env, &ada, "list_note_history", json!({"note_id": note}));
    assert_eq!(history["structuredContent"]["entries"].as_array().map(Vec::len), Some(4), "{}", history["structuredContent"]);
    let old = checked_call(&store, &mut env, &ada, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "at_version": 2}));
    assert_eq!(old["structuredContent"]["text"], "one", "{}", old["structuredContent"]);
    let found = checked_call(&store, &mut env, &ada, "search_notes", json!({"query": "three"}));
    assert_eq!(found["structuredContent"]["hits"].as_array().map(Vec::len), Some(1), "{}", found["structuredContent"]);
}

#[test]
fn a_vouched_stores_failed_batch_read_is_the_answer() {
    let store = NoBatchReads { inner: MemoryStore::new(), vouched: true };
    let mut env = SimEnv::new(12);
    let ada = human("acme");
    let note = create_note(&store, &mut env, &ada, "Batch", true);
    let out = cairn_notes::call_tool_value(&store, &mut env, &ada, "search_notes", json!({"query": "batch"}));
    assert!(out.is_err(), "the store's failure was hidden: {out:?} ({note})");
}
