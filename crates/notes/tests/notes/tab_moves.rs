//! People rename and move tabs (`rest::update_tab`): conditional on the note's version,
//! repeatable with a key, claim-aware, and the tab keeps its id and content version.
use crate::common::*;
use cairn_notes::Identity;
use cairn_notes::rest::{self, RestReply};
use serde_json::{Value, json};

fn update(w: &mut World, who: &Identity, note: &str, tab: &str, args: Value) -> RestReply {
    rest::update_tab(&w.kv, &mut w.env, who, note, tab, args).unwrap()
}

fn strip(w: &mut World, who: &Identity, note: &str) -> Vec<(String, String)> {
    let tabs = w.ok(who, "list_note_tabs", json!({"note_id": note}));
    tabs["tabs"].as_array().unwrap().iter().map(|t| (t["tab_id"].as_str().unwrap().to_string(), t["label"].as_str().unwrap().to_string())).collect()
}

#[test]
fn rename_and_move_keep_the_tab_id_and_its_content_version() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let deck = w.create_tab(&ada, &note, "slides", "Pitch");
    let before = w.tab(&ada, &note, &deck);
    let v = w.version(&ada, &note);
    let r = update(&mut w, &ada, &note, &deck, json!({"expected_version": v, "label": "Roadmap", "position": 0}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["tab_id"], deck.as_str());
    assert_eq!(r.body["label"], "Roadmap");
    assert_eq!(r.body["position"], 0);
    assert_eq!(r.body["version"], v + 1, "the strip changed: the note's version moves");
    let s = strip(&mut w, &ada, &note);
    assert_eq!(s[0], (deck.clone(), "Roadmap".to_string()));
    assert_eq!(s[1].0, "markdown");
    let after = w.tab(&ada, &note, &deck);
    assert_eq!(after["tab_version"], before["tab_version"], "content untouched: the tab's own version stays");
    assert_eq!(after["content_hash"], before["content_hash"]);
}

#[test]
fn a_stale_rename_is_refused_and_nothing_written() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let deck = w.create_tab(&ada, &note, "slides", "Pitch");
    let v = w.version(&ada, &note);
    w.create_tab(&ada, &note, "sheet", "Numbers");
    let before = w.kv.notes_state();
    let r = update(&mut w, &ada, &note, &deck, json!({"expected_version": v, "label": "Budget"}));
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.body["error"], "version_conflict");
    assert_eq!(r.body["current_version"], v + 1);
    assert_eq!(w.kv.notes_state(), before, "a refused rename writes nothing");
}

#[test]
fn a_repeated_update_with_its_key_is_replayed_not_moved_twice() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let a = w.create_tab(&ada, &note, "slides", "A");
    w.create_tab(&ada, &note, "slides", "B");
    let v = w.version(&ada, &note);
    let args = json!({"expected_version": v, "position": 4, "idempotency_key": "move-a"});
    let first = update(&mut w, &ada, &note, &a, args.clone());
    assert_eq!(first.status, 200, "{}", first.body);
    let order = strip(&mut w, &ada, &note);
    let again = update(&mut w, &ada, &note, &a, args);
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body["replayed"], true);
    assert_eq!(again.body["version"], first.body["version"]);
    assert_eq!(strip(&mut w, &ada, &note), order, "the replay moved nothing");
    assert_eq!(order[4].0, a);
}

#[test]
fn fixed_tabs_move_but_keep_their_labels() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let v = w.version(&ada, &note);
    let r = update(&mut w, &ada, &note, "sources", json!({"expected_version": v, "label": "Links"}));
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.body["field"], "label");
    let r = update(&mut w, &ada, &note, "sources", json!({"expected_version": v, "position": 0}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(strip(&mut w, &ada, &note)[0].0, "sources");
}

#[test]
fn bad_updates_name_what_is_wrong() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let deck = w.create_tab(&ada, &note, "slides", "Pitch");
    let v = w.version(&ada, &note);
    let before = w.kv.notes_state();
    for (args, field, says) in [
        (json!({"expected_version": v, "position": 4}), "position", "0 to 3"),
        (json!({"expected_version": v}), "label", "label, a new position"),
        (json!({"expected_version": v, "label": ""}), "label", ""),
        (json!({"expected_version": v, "label": "x".repeat(101)}), "label", ""),
        (json!({"expected_version": v, "colour": "red"}), "colour", ""),
    ] {
        let r = update(&mut w, &ada, &note, &deck, args.clone());
        assert_eq!(r.status, 400, "{args}: {}", r.body);
        assert_eq!(r.body["error"], "invalid_argument", "{args}: {}", r.body);
        assert!(r.body.to_string().contains(field), "{args}: names {field}: {}", r.body);
        assert!(r.body["message"].as_str().unwrap().contains(says), "{args}: {}", r.body);
    }
    let r = update(&mut w, &ada, &note, "slides-9-zzzzzzzz", json!({"expected_version": v, "label": "B"}));
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(w.kv.notes_state(), before, "nothing was written by any refused update");
}

#[test]
fn a_tab_claimed_by_someone_else_cannot_be_renamed_or_moved() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    let deck = w.create_tab(&ada, &note, "slides", "Pitch");
    w.claim_ok(&bot, &note, Some(&deck));
    let v = w.version(&ada, &note);
    let r = update(&mut w, &ada, &note, &deck, json!({"expected_version": v, "position": 0}));
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.body["error"], "claim_conflict");
    assert_eq!(strip(&mut w, &ada, &note)[3].0, deck, "not moved");
}
