//! Every reader decodes a note's head through `Head::decode`, which checks
//! in every build the structure every commit keeps. A head that breaks it
//! (here: a tab listed twice, as no commit writes) is refused as
//! `corrupt_record` by a read, a write, the search index's merge and the
//! history sweep alike, and nothing is written on it.

use crate::common::*;
use cairn_notes::{Failure, Store, call_tool_value, search, sweep_history};
use serde_json::{Value, json};

/// A note whose stored head lists its markdown tab twice.
fn tampered(w: &mut World) -> String {
    let ada = human("acme");
    let note = w.note(&ada, "Plans", true);
    w.write_text(&ada, &note, "first line", "k1");
    let key = format!("t/acme/note/{note}");
    let raw = w.kv.get("default", &key).unwrap().expect("the head is stored");
    let mut head: Value = serde_json::from_slice(&raw).unwrap();
    let tabs = head["tabs"].as_array_mut().unwrap();
    let first = tabs[0].clone();
    tabs.push(first);
    w.kv.set_many("default", &[(key.as_str(), serde_json::to_vec(&head).unwrap().as_slice())]).unwrap();
    note
}

fn assert_corrupt(r: Result<impl std::fmt::Debug, Failure>) {
    match r {
        Err(f) => {
            assert_eq!(f.code(), "corrupt_record", "{f}");
            assert!(f.to_string().contains("tab ids repeat"), "the refusal names the broken rule: {f}");
        }
        Ok(v) => panic!("a head with a repeated tab id was acted on: {v:?}"),
    }
}

#[test]
fn a_head_breaking_its_rules_is_refused_by_reads_and_writes_and_nothing_is_written() {
    let mut w = World::new();
    let note = tampered(&mut w);
    let before = w.kv.notes_state();
    let ada = human("acme");
    let read = json!({"note_id": note, "tab_id": "markdown"});
    assert_corrupt(call_tool_value(&w.kv, &mut w.env, &ada, "read_note_tab", read));
    let edit = json!({"note_id": note, "tab_id": "markdown", "expected_version": 2, "idempotency_key": "k2",
        "operation": "append_text", "text": "second line"});
    assert_corrupt(call_tool_value(&w.kv, &mut w.env, &ada, "edit_note_tab", edit));
    assert_eq!(w.kv.notes_state(), before, "nothing was written on a corrupt head");
}

#[test]
fn a_head_breaking_its_rules_stops_the_index_merge_and_the_history_sweep() {
    let mut w = World::new();
    tampered(&mut w);
    assert_corrupt(search::merge(&w.kv, &mut w.env, "acme", usize::MAX));
    assert_corrupt(sweep_history(&w.kv, &mut w.env, "acme"));
}
