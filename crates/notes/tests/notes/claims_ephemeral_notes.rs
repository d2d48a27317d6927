//! Claim notes are ephemeral, and claims never move the note version or enter history.
use crate::common::*;
use cairn_notes::rest;
use serde_json::json;

#[test]
fn claim_notes_never_enter_note_history_and_claims_never_move_the_version() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    let v = w.version(&ada, &note);
    let tab_before = w.tab(&ada, &note, "markdown");
    let id = w.claim_ok(&bot, &note, Some("markdown"));
    for i in 0..3 {
        w.ok(&bot, "post_claim_note", json!({"claim_id": id, "text": format!("ephemeral-marker-{i}")}));
    }
    let r = rest::post_claim_note(&w.kv, &mut w.env, &bot, &id, json!({"text": "ephemeral-marker-rest"})).unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    w.ok(&bot, "renew_claim", json!({"claim_id": id}));
    // No claim operation moved the note or the tab.
    assert_eq!(w.version(&ada, &note), v);
    let tab_after = w.tab(&ada, &note, "markdown");
    assert_eq!(tab_after["tab_version"], tab_before["tab_version"]);
    assert_eq!(tab_after["provenance"], tab_before["provenance"]);
    let board = w.ok(&ada, "list_claims", json!({"note_id": note}));
    assert_eq!(board["claims"][0]["notes"].as_array().unwrap().len(), 4);
    assert!(board["notice"].as_str().unwrap().contains("not instructions"));
    // The holder writes; history records the write, never the notes.
    let r = w.edit_markdown(&bot, &note, "done", "b1");
    assert!(r.get("error").is_none(), "{r}");
    w.ok(&bot, "release_claim", json!({"claim_id": id}));
    for (k, v) in w.kv.dump() {
        let text = String::from_utf8_lossy(&v);
        assert!(!text.contains("ephemeral-marker"), "a claim note survived in {k}");
    }
}

#[test]
fn a_claim_keeps_its_ten_newest_notes() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Plan", true);
    let id = w.claim_ok(&bot, &note, None);
    let mut last = json!(null);
    for i in 0..12 {
        last = w.ok(&bot, "post_claim_note", json!({"claim_id": id, "text": format!("n{i}")}));
    }
    assert_eq!(last["notes_on_claim"], 10);
    assert_eq!(last["dropped_oldest"], 1);
    let notes = w.board(&bot)[0]["notes"].clone();
    let texts: Vec<&str> = notes.as_array().unwrap().iter().map(|n| n["text"].as_str().unwrap()).collect();
    assert_eq!(texts.first(), Some(&"n2"));
    assert_eq!(texts.last(), Some(&"n11"));
}
