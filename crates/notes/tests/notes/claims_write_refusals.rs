//! Writes are refused with claim_conflict while another actor holds their target.
use cairn_notes::rest;
use crate::common::*;
use serde_json::{Value, json};

fn edit(note: &str, tab: &str, v: u64, key: &str) -> Value {
    json!({"note_id": note, "tab_id": tab, "expected_version": v, "idempotency_key": key,
           "operation": "replace_tab_data", "data": {"slides": [{"title": key}]}})
}

fn assert_conflict(r: &Value, claim: &Value) {
    assert_eq!(r["error"], "claim_conflict", "{r}");
    assert_eq!(r["claim_id"], claim["claim_id"]);
    assert_eq!(r["held_by"], claim["held_by"]);
    assert_eq!(r["actor_type"], claim["actor_type"]);
    assert_eq!(r["since"], claim["since"]);
    assert_eq!(r["expires_at"], claim["expires_at"]);
    assert!(r["current_version"].is_u64());
    assert!(
        r["next_step"]
            .as_str()
            .unwrap()
            .contains("do not write around the claim")
    );
}

#[test]
fn writes_are_refused_while_another_actor_holds_the_target() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    let deck = w.create_tab(&ada, &note, "slides", "Deck");
    let other = w.create_tab(&ada, &note, "slides", "Other");
    let v = w.version(&ada, &note);

    // A tab claim blocks writes to that tab only.
    let tab_claim = w.claim(&bot, &note, Some(&deck));
    let before = w.version(&ada, &note);
    assert_conflict(
        &w.refused(&ada, "edit_note_tab", edit(&note, &deck, v, "e1")),
        &tab_claim,
    );
    let r = rest::write_tab(
        &w.kv,
        &mut w.env,
        &ada,
        &note,
        &deck,
        json!({"expected_version": v, "data": {"slides": []}}),
    )
    .unwrap();
    assert_eq!(r.status, 409);
    assert_conflict(&r.body, &tab_claim);
    let r = rest::delete_tab(
        &w.kv,
        &mut w.env,
        &ada,
        &note,
        &deck,
        json!({"expected_version": v}),
    )
    .unwrap();
    assert_eq!(r.status, 409);
    assert_conflict(&r.body, &tab_claim);
    assert_eq!(w.version(&ada, &note), before, "nothing was written");
    // … while other tabs and note-level writes pass.
    w.ok(&ada, "edit_note_tab", edit(&note, &other, v, "e2"));
    let v = w.version(&ada, &note);
    w.ok(&ada, "create_note_tab", json!({"note_id": note, "expected_version": v, "idempotency_key": "c1", "tab_type": "sheet"}));
    let v = w.version(&ada, &note);
    w.ok(
        &ada,
        "add_note_source",
        json!({"note_id": note, "expected_version": v, "idempotency_key": "s1",
        "title": "Report", "url": "https://example.org/r"}),
    );
    w.ok(
        &bot,
        "release_claim",
        json!({"claim_id": tab_claim["claim_id"]}),
    );

    // A whole-note claim blocks every write in the note.
    let whole = w.claim(&bot, &note, None);
    let v = w.version(&ada, &note);
    assert_conflict(
        &w.refused(&ada, "edit_note_tab", edit(&note, &other, v, "e3")),
        &whole,
    );
    assert_conflict(&w.edit_markdown(&ada, &note, "x", "e4"), &whole);
    assert_conflict(
        &w.refused(
            &ada,
            "create_note_tab",
            json!({"note_id": note, "expected_version": v,
        "idempotency_key": "c2", "tab_type": "slides"}),
        ),
        &whole,
    );
    assert_conflict(
        &w.refused(
            &ada,
            "add_note_source",
            json!({"note_id": note, "expected_version": v,
        "idempotency_key": "s2", "title": "Other", "url": "https://example.org/other"}),
        ),
        &whole,
    );
    // Even the answer "already attached" waits for the claim.
    assert_conflict(
        &w.refused(
            &ada,
            "add_note_source",
            json!({"note_id": note, "expected_version": v,
        "idempotency_key": "s3", "title": "Report", "url": "https://example.org/r"}),
        ),
        &whole,
    );
    let r = rest::attach_file(&w.kv, &mut w.env, &ada, &note,
        json!({"expected_version": v, "name": "a.pdf", "media_type": "application/pdf", "size_bytes": 1})).unwrap();
    assert_eq!(r.status, 409);
    assert_conflict(&r.body, &whole);
    let r = rest::delete_tab(
        &w.kv,
        &mut w.env,
        &ada,
        &note,
        &other,
        json!({"expected_version": v}),
    )
    .unwrap();
    assert_conflict(&r.body, &whole);
    assert_eq!(w.version(&ada, &note), v, "nothing was written");
}

#[test]
fn tab_claims_do_not_block_note_level_writes_that_touch_the_fixed_tabs() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    w.claim_ok(&bot, &note, Some("markdown"));
    let v = w.version(&ada, &note);
    w.ok(
        &ada,
        "add_note_source",
        json!({"note_id": note, "expected_version": v, "idempotency_key": "s1",
        "title": "Report", "url": "https://example.org/r"}),
    );
    let r = rest::attach_file(&w.kv, &mut w.env, &ada, &note,
        json!({"expected_version": v + 1, "name": "a.pdf", "media_type": "application/pdf", "size_bytes": 1})).unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
}

#[test]
fn the_claim_check_comes_after_the_idempotency_key_and_before_the_version() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    let deck = w.create_tab(&ada, &note, "slides", "Deck");
    let first = w.ok(&ada, "edit_note_tab", edit(&note, &deck, 2, "lost-reply"));
    let claim = w.claim(&bot, &note, Some(&deck));
    // A resend after a lost reply still gets the first result, although a claim appeared.
    let again = w.ok(&ada, "edit_note_tab", edit(&note, &deck, 2, "lost-reply"));
    assert_eq!(again["replayed"], true);
    assert_eq!(again["version"], first["version"]);
    // A stale new write learns about the claim (the version is checked after it).
    assert_conflict(
        &w.refused(&ada, "edit_note_tab", edit(&note, &deck, 1, "stale")),
        &claim,
    );
}
