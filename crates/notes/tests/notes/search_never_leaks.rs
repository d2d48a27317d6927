//! Search never shows what the caller may not read: deleted tabs, notes not
//! approved for agents (or withdrawn), other tenants, words since replaced.
use crate::common::*;
use cairn_notes::rest;
use serde_json::{Value, json};

fn search(w: &mut World, who: &cairn_notes::Identity, query: &str) -> Value {
    w.ok(who, "search_notes", json!({"query": query}))
}

fn count(r: &Value) -> usize {
    r["hits"].as_array().unwrap().len()
}

/// Every text the result shows (titles, labels, snippets).
fn shown(r: &Value) -> String {
    r.to_string()
}

#[test]
fn a_deleted_tab_is_never_a_hit_nor_in_a_snippet() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Deck", true);
    let v = w.version(&ada, &note);
    let deck = w.ok(
        &ada,
        "create_note_tab",
        json!({"note_id": note, "expected_version": v, "idempotency_key": "d",
        "tab_type": "slides", "label": "Old deck", "slides": [{"title": "obsidian secret"}]}),
    )["tab_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(count(&search(&mut w, &ada, "obsidian")), 1);
    let v = w.version(&ada, &note);
    let r = rest::delete_tab(&w.kv, &mut w.env, &ada, &note, &deck, json!({"expected_version": v})).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let r = search(&mut w, &ada, "obsidian");
    assert_eq!(count(&r), 0);
    assert!(!shown(&r).contains("obsidian secret"));
}

#[test]
fn agents_never_find_notes_not_approved_for_them_or_withdrawn() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let hidden = w.note(&ada, "Private basalt", false);
    w.write_text(&ada, &hidden, "basalt plans", "k1");
    let open = w.note(&ada, "Open", true);
    w.write_text(&ada, &open, "granite plans", "k1");
    assert_eq!(count(&search(&mut w, &ada, "basalt")), 1, "people see every note of their tenant");
    let r = search(&mut w, &bot, "basalt");
    assert_eq!(count(&r), 0);
    assert!(!shown(&r).contains("basalt plans") && !shown(&r).contains("Private"));
    assert_eq!(count(&search(&mut w, &bot, "plans")), 1, "only the approved note");
    assert_eq!(count(&search(&mut w, &bot, "granite")), 1);
    let v = w.version(&ada, &open);
    let r = rest::update_note(&w.kv, &mut w.env, &ada, &open, json!({"expected_version": v, "approved_for_agents": false})).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(count(&search(&mut w, &bot, "granite")), 0, "withdrawn from agents: gone at once");
    assert_eq!(count(&search(&mut w, &ada, "granite")), 1);
}

#[test]
fn another_tenant_never_finds_anything_of_this_one() {
    let mut w = World::new();
    let ada = human("acme");
    let eve = human("evilcorp");
    let note = w.note(&ada, "Acme quartz", true);
    w.write_text(&ada, &note, "quartz merger terms", "k1");
    let r = search(&mut w, &eve, "quartz");
    assert_eq!(count(&r), 0);
    assert!(!shown(&r).contains("merger"));
    assert_eq!(count(&search(&mut w, &ada, "quartz")), 1);
}

#[test]
fn words_replaced_by_an_edit_no_longer_find_the_tab() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Draft", true);
    w.write_text(&ada, &note, "the pumice budget", "k1");
    assert_eq!(count(&search(&mut w, &ada, "pumice")), 1);
    w.write_text(&ada, &note, "the slate budget", "k2");
    assert_eq!(count(&search(&mut w, &ada, "pumice")), 0);
    assert_eq!(count(&search(&mut w, &ada, "slate")), 1);
    assert_eq!(count(&search(&mut w, &ada, "budget")), 1);
}

#[test]
fn a_refused_write_makes_nothing_findable() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Draft", true);
    let r = w.call(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": 99,
        "idempotency_key": "k", "operation": "replace_text", "text": "feldspar"}),
    );
    assert_eq!(r["structuredContent"]["error"], "version_conflict");
    assert_eq!(count(&search(&mut w, &ada, "feldspar")), 0);
}

#[test]
fn a_lost_swap_leaves_a_marker_that_never_becomes_a_hit() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Draft", true);
    let v = w.version(&ada, &note);
    // Every head swap lost: the write's dirty marker is written, its head never is.
    w.kv.faults().lose_swaps_of(Some("/note/"));
    let r = w.call(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": v,
        "idempotency_key": "k", "operation": "replace_text", "text": "gneiss"}),
    );
    w.kv.faults().lose_swaps_of(None);
    assert_eq!(r["structuredContent"]["error"], "busy", "{r}");
    let left = cairn_notes::search::check(&w.kv, "acme").unwrap();
    assert_eq!(left.dirty, 1, "the lost write left its marker behind: {left:?}");
    assert_eq!(count(&search(&mut w, &ada, "gneiss")), 0, "the note is proved against what was committed");
    cairn_notes::search::merge(&w.kv, &mut w.env, "acme", usize::MAX).unwrap();
    assert_eq!(count(&search(&mut w, &ada, "gneiss")), 0, "nor does a merge index it");
}
