//! Claims never cross tenants, and agents see claims only on notes approved for agents.
use crate::common::*;
use cairn_notes::{ActorType, rest};
use serde_json::json;

#[test]
fn claims_never_cross_tenants() {
    let mut w = World::new();
    let acme_bot = agent("acme");
    let note = w.note(&human("acme"), "Plan", true);
    let id = w.claim_ok(&acme_bot, &note, None);
    // The same subject name in another tenant is a stranger.
    let beta_bot = agent("beta");
    let beta_admin = admin("beta", "root", ActorType::Human);
    for (tool, args) in [
        ("renew_claim", json!({"claim_id": id})),
        ("release_claim", json!({"claim_id": id})),
        ("post_claim_note", json!({"claim_id": id, "text": "hello"})),
        ("claim_note", json!({"note_id": note})),
        ("list_claims", json!({"note_id": note})),
    ] {
        let r = w.refused(&beta_bot, tool, args);
        assert_eq!(r["error"], "not_found", "{tool}");
    }
    let r = rest::force_release_claim(&w.kv, &mut w.env, &beta_admin, &id).unwrap();
    assert_eq!(r.status, 404);
    let beta_note = w.note(&beta_admin, "Theirs", true);
    w.claim_ok(&beta_bot, &beta_note, None);
    let acme_board = w.board(&acme_bot);
    let beta_board = w.board(&beta_bot);
    assert_eq!(acme_board.len(), 1);
    assert_eq!(acme_board[0]["claim_id"], id.as_str());
    assert_eq!(beta_board.len(), 1);
    assert_eq!(beta_board[0]["note_id"], beta_note.as_str());
    assert_eq!(w.board(&acme_bot)[0]["renewed"], false, "untouched by beta");
    for (k, _) in w.kv.dump() {
        assert!(k.starts_with("t/acme/") || k.starts_with("t/beta/"), "{k}");
    }
}

#[test]
fn agents_see_claims_only_on_notes_approved_for_agents() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let hidden = w.note(&ada, "People only", false);
    let open = w.note(&ada, "Shared", true);
    let hidden_claim = w.claim_ok(&ada, &hidden, None);
    w.claim_ok(&ada, &open, None);
    let board = w.board(&bot);
    assert_eq!(board.len(), 1);
    assert_eq!(board[0]["note_id"], open.as_str());
    assert_eq!(w.board(&ada).len(), 2);
    assert_eq!(w.refused(&bot, "list_claims", json!({"note_id": hidden}))["error"], "not_found");
    assert_eq!(w.claim(&bot, &hidden, None)["error"], "not_found");
    assert_eq!(w.refused(&bot, "renew_claim", json!({"claim_id": hidden_claim}))["error"], "not_found");
}
