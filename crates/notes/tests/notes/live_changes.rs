//! What an open page polls to stay live: `GET …/changes?since=<etag>` says
//! nothing when nothing a page shows moved, and the new state when a write or
//! a claim did.
use crate::common::*;
use cairn_notes::rest;
use serde_json::{Value, json};

fn poll(w: &mut World, who: &cairn_notes::Identity, note: &str, since: Option<&str>) -> (u16, Value) {
    let r = rest::changes(&w.kv, &mut w.env, who, note, since).unwrap();
    (r.status, r.body)
}

#[test]
fn an_unchanged_note_answers_changed_false_and_nothing_else() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Live", true);
    let (status, first) = poll(&mut w, &ada, &note, None);
    assert_eq!((status, first["changed"].as_bool()), (200, Some(true)));
    assert_eq!(first["tabs"][0]["tab_id"], "markdown");
    let etag = first["etag"].as_str().unwrap().to_string();
    let (_, again) = poll(&mut w, &ada, &note, Some(&etag));
    assert_eq!((again["changed"].as_bool(), again.get("tabs"), again["etag"].as_str()), (Some(false), None, Some(etag.as_str())));
    assert_eq!(again["poll_after_ms"], 1000);
}

#[test]
fn an_agents_write_moves_the_etag_and_names_the_tab_and_the_writer() {
    let mut w = World::new();
    let (ada, bot) = (human("acme"), agent("acme"));
    let note = w.note(&ada, "Live", true);
    let (_, first) = poll(&mut w, &ada, &note, None);
    let etag = first["etag"].as_str().unwrap().to_string();
    w.write_text(&bot, &note, "the agent's line\n", "bot-1");
    let (_, moved) = poll(&mut w, &ada, &note, Some(&etag));
    assert_eq!(moved["changed"], true);
    assert_eq!(moved["version"].as_u64(), first["version"].as_u64().map(|v| v + 1));
    let tab = &moved["tabs"][0];
    assert_eq!((tab["tab_version"].as_u64(), tab["updated_by"].as_str(), tab["updated_by_actor"].as_str()), (Some(2), Some("CLAUDE"), Some("agent")));
}

#[test]
fn a_claim_granted_or_released_moves_the_etag() {
    let mut w = World::new();
    let (ada, bot) = (human("acme"), agent("acme"));
    let note = w.note(&ada, "Live", true);
    let etag = |w: &mut World| poll(w, &ada, &note, None).1["etag"].as_str().unwrap().to_string();
    let before = etag(&mut w);
    let claim = w.claim_ok(&bot, &note, Some("markdown"));
    let (_, held) = poll(&mut w, &ada, &note, Some(&before));
    assert_eq!((held["changed"].as_bool(), held["claims"][0]["claim_id"].as_str()), (Some(true), Some(claim.as_str())));
    let during = etag(&mut w);
    w.ok(&bot, "release_claim", json!({"claim_id": claim}));
    assert_ne!(etag(&mut w), during);
}

#[test]
fn a_note_you_cannot_see_or_a_bad_etag_is_refused() {
    let mut w = World::new();
    let (ada, bot) = (human("acme"), agent("acme"));
    let hidden = w.note(&ada, "Not for agents", false);
    assert_eq!(poll(&mut w, &bot, &hidden, None).0, 404);
    assert_eq!(poll(&mut w, &human("globex"), &hidden, None).0, 404);
    let (status, bad) = poll(&mut w, &ada, &hidden, Some("not-an-etag"));
    assert_eq!((status, bad["field"].as_str()), (400, Some("since")));
}
