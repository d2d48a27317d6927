//! Which claims exclude each other: tabs coexist, one tab conflicts, the whole note
//! excludes every tab claim (and the other way round).
use crate::common::*;
use serde_json::json;

#[test]
fn tab_claims_on_two_tabs_coexist() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    let deck = w.create_tab(&ada, &note, "slides", "Deck");
    let a = w.claim_ok(&ada, &note, Some("markdown"));
    let b = w.claim_ok(&bot, &note, Some(&deck));
    assert_ne!(a, b);
    let board = w.board(&ada);
    let mut held: Vec<(String, String)> =
        board.iter().map(|c| (c["tab_id"].as_str().unwrap().to_string(), c["held_by"].as_str().unwrap().to_string())).collect();
    held.sort();
    let mut expected = vec![("markdown".to_string(), "ADA".to_string()), (deck.clone(), "CLAUDE".to_string())];
    expected.sort();
    assert_eq!(held, expected);
}

#[test]
fn two_claims_on_one_tab_conflict_and_the_refusal_names_the_holder_and_the_expiry() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    let granted = w.claim(&ada, &note, Some("markdown"));
    assert_eq!(granted["renewed"], false);
    assert_eq!(granted["held_by"], "ADA");
    assert_eq!(granted["actor_type"], "human");
    assert_eq!(granted["tab_id"], "markdown");
    assert_eq!(granted["ttl_seconds"], 600);
    assert_eq!(granted["since"], "2026-01-01T00:00:00.000020Z");
    assert_eq!(granted["expires_at"], "2026-01-01T00:10:00.000020Z");
    let r = w.refused(&bot, "claim_note", json!({"note_id": note, "tab_id": "markdown"}));
    assert_eq!(r["error"], "claim_conflict");
    assert_eq!(r["claim_id"], granted["claim_id"]);
    assert_eq!(r["held_by"], "ADA");
    assert_eq!(r["actor_type"], "human");
    assert_eq!(r["since"], granted["since"]);
    assert_eq!(r["expires_at"], granted["expires_at"]);
    assert_eq!(r["next_step"], "wait until expires_at or work on another target; do not write around the claim");
    assert_eq!(w.board(&ada).len(), 1, "the refused claim was not recorded");
}

#[test]
fn a_whole_note_claim_blocks_every_tab_claim() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    let deck = w.create_tab(&ada, &note, "slides", "Deck");
    let whole = w.claim(&ada, &note, None);
    assert_eq!(whole["tab_id"], serde_json::Value::Null);
    for tab in [Some("markdown"), Some(deck.as_str()), None] {
        let r = w.claim(&bot, &note, tab);
        assert_eq!(r["error"], "claim_conflict", "{tab:?}");
        assert_eq!(r["claim_id"], whole["claim_id"]);
        assert_eq!(r["tab_id"], serde_json::Value::Null);
    }
}

#[test]
fn a_tab_claim_blocks_a_whole_note_claim_even_for_its_own_holder() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Plan", true);
    let tab_claim = w.claim_ok(&bot, &note, Some("markdown"));
    let r = w.claim(&ada, &note, None);
    assert_eq!(r["error"], "claim_conflict");
    assert_eq!(r["claim_id"], tab_claim);
    assert_eq!(r["tab_id"], "markdown");
    // The holder itself cannot stack a whole-note claim on its tab claim either.
    let own = w.claim(&bot, &note, None);
    assert_eq!(own["error"], "claim_conflict");
    assert_eq!(own["held_by_you"], true);
    assert!(own["next_step"].as_str().unwrap().contains("release_claim"));
    // Released, the note is free for a whole-note claim.
    w.ok(&bot, "release_claim", json!({"claim_id": tab_claim}));
    w.claim_ok(&ada, &note, None);
}

#[test]
fn a_claim_names_an_existing_claimable_target() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let r = w.claim(&ada, &note, Some("slides-9-zzzzzzzz"));
    assert_eq!(r["error"], "not_found");
    for fixed in ["files", "sources"] {
        let r = w.claim(&ada, &note, Some(fixed));
        assert_eq!(r["error"], "invalid_argument", "{fixed}");
        assert_eq!(r["field"], "tab_id");
    }
    let r = w.claim(&ada, "note-missing", None);
    assert_eq!(r["error"], "not_found");
    assert!(w.board(&ada).is_empty());
}
