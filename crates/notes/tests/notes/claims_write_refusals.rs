//! Writes are refused with claim_conflict while another actor holds their target.
use crate::common::*;
use cairn_notes::Identity;
use cairn_notes::rest::{self, RestReply};
use serde_json::{Value, json};

fn edit(note: &str, tab: &str, v: u64, key: &str) -> Value {
    json!({"note_id": note, "tab_id": tab, "expected_version": v, "idempotency_key": key,
           "operation": "replace_tab_data", "data": {"slides": [{"title": key}]}})
}

/// A world with ada's note "Plan", approved for agents, and bot, an agent of her tenant.
fn plan() -> (World, Identity, Identity, String) {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    (w, ada, agent("acme"), note)
}

/// add_note_source's arguments: the page `url` cited as `title`.
fn source(note: &str, v: u64, key: &str, title: &str, url: &str) -> Value {
    json!({"note_id": note, "expected_version": v, "idempotency_key": key, "title": title, "url": url})
}

/// The people's delete of a tab.
fn delete(w: &mut World, who: &Identity, note: &str, tab: &str, v: u64) -> RestReply {
    rest::delete_tab(&w.kv, &mut w.env, who, note, tab, json!({"expected_version": v})).unwrap()
}

/// The people's attachment of a one-byte `a.pdf`.
fn attach(w: &mut World, who: &Identity, note: &str, v: u64) -> RestReply {
    let file = json!({"expected_version": v, "name": "a.pdf", "media_type": "application/pdf", "size_bytes": 1});
    rest::attach_file(&w.kv, &mut w.env, who, note, file).unwrap()
}

fn assert_conflict(r: &Value, claim: &Value) {
    assert_eq!(r["error"], "claim_conflict", "{r}");
    assert_eq!(r["claim_id"], claim["claim_id"]);
    assert_eq!(r["held_by"], claim["held_by"]);
    assert_eq!(r["actor_type"], claim["actor_type"]);
    assert_eq!(r["since"], claim["since"]);
    assert_eq!(r["expires_at"], claim["expires_at"]);
    assert!(r["current_version"].is_u64());
    assert!(r["next_step"].as_str().unwrap().contains("do not write around the claim"));
}

/// A people's write refused with 409 `claim_conflict`, naming `claim`.
fn assert_rest_conflict(r: RestReply, claim: &Value) {
    assert_eq!(r.status, 409);
    assert_conflict(&r.body, claim);
}

#[test]
fn writes_are_refused_while_another_actor_holds_the_target() {
    let (mut w, ada, bot, note) = plan();
    let deck = w.create_tab(&ada, &note, "slides", "Deck");
    let other = w.create_tab(&ada, &note, "slides", "Other");
    let v = w.version(&ada, &note);

    // A tab claim blocks writes to that tab only.
    let tab_claim = w.claim(&bot, &note, Some(&deck));
    let before = w.version(&ada, &note);
    assert_conflict(&w.refused(&ada, "edit_note_tab", edit(&note, &deck, v, "e1")), &tab_claim);
    let slides = json!({"expected_version": v, "data": {"slides": []}});
    assert_rest_conflict(rest::write_tab(&w.kv, &mut w.env, &ada, &note, &deck, slides).unwrap(), &tab_claim);
    assert_rest_conflict(delete(&mut w, &ada, &note, &deck, v), &tab_claim);
    assert_eq!(w.version(&ada, &note), before, "nothing was written");
    // … while other tabs and note-level writes pass.
    w.ok(&ada, "edit_note_tab", edit(&note, &other, v, "e2"));
    let v = w.version(&ada, &note);
    w.ok(&ada, "create_note_tab", json!({"note_id": note, "expected_version": v, "idempotency_key": "c1", "tab_type": "sheet"}));
    let v = w.version(&ada, &note);
    w.ok(&ada, "add_note_source", source(&note, v, "s1", "Report", "https://example.org/r"));
    w.ok(&bot, "release_claim", json!({"claim_id": tab_claim["claim_id"]}));

    // A whole-note claim blocks every write in the note.
    let whole = w.claim(&bot, &note, None);
    let v = w.version(&ada, &note);
    assert_conflict(&w.refused(&ada, "edit_note_tab", edit(&note, &other, v, "e3")), &whole);
    assert_conflict(&w.edit_markdown(&ada, &note, "x", "e4"), &whole);
    let tab = json!({"note_id": note, "expected_version": v, "idempotency_key": "c2", "tab_type": "slides"});
    assert_conflict(&w.refused(&ada, "create_note_tab", tab), &whole);
    assert_conflict(&w.refused(&ada, "add_note_source", source(&note, v, "s2", "Other", "https://example.org/other")), &whole);
    // Even the answer "already attached" waits for the claim.
    assert_conflict(&w.refused(&ada, "add_note_source", source(&note, v, "s3", "Report", "https://example.org/r")), &whole);
    assert_rest_conflict(attach(&mut w, &ada, &note, v), &whole);
    assert_conflict(&delete(&mut w, &ada, &note, &other, v).body, &whole);
    assert_eq!(w.version(&ada, &note), v, "nothing was written");
}

#[test]
fn tab_claims_do_not_block_note_level_writes_that_touch_the_fixed_tabs() {
    let (mut w, ada, bot, note) = plan();
    w.claim_ok(&bot, &note, Some("markdown"));
    let v = w.version(&ada, &note);
    w.ok(&ada, "add_note_source", source(&note, v, "s1", "Report", "https://example.org/r"));
    let r = attach(&mut w, &ada, &note, v + 1);
    assert_eq!(r.status, 201, "{}", r.body);
}

#[test]
fn the_claim_check_comes_after_the_idempotency_key_and_before_the_version() {
    let (mut w, ada, bot, note) = plan();
    let deck = w.create_tab(&ada, &note, "slides", "Deck");
    let first = w.ok(&ada, "edit_note_tab", edit(&note, &deck, 2, "lost-reply"));
    let claim = w.claim(&bot, &note, Some(&deck));
    // A resend after a lost reply still gets the first result, although a claim appeared.
    let again = w.ok(&ada, "edit_note_tab", edit(&note, &deck, 2, "lost-reply"));
    assert_eq!(again["replayed"], true);
    assert_eq!(again["version"], first["version"]);
    // A stale new write learns about the claim (the version is checked after it).
    assert_conflict(&w.refused(&ada, "edit_note_tab", edit(&note, &deck, 1, "stale")), &claim);
}
