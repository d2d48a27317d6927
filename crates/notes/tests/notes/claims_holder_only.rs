//! Only the holder (same tenant and subject) may renew, release or post on a claim.
use crate::common::*;
use cairn_notes::{ActorType, rest};
use serde_json::json;

#[test]
fn only_the_holder_may_renew_release_or_post() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Plan", true);
    let c = w.claim(&bot, &note, Some("markdown"));
    let id = c["claim_id"].clone();
    // Others of the same tenant: another agent subject, and a person (even an admin).
    let others = [identity("acme", "codex", ActorType::Agent), human("acme"), admin("acme", "root", ActorType::Human)];
    for other in &others {
        for (tool, args) in [
            ("renew_claim", json!({"claim_id": id})),
            ("release_claim", json!({"claim_id": id})),
            ("post_claim_note", json!({"claim_id": id, "text": "mine now"})),
        ] {
            let r = w.refused(other, tool, args);
            assert_eq!(r["error"], "forbidden", "{} {tool}", other.subject);
            assert_eq!(r["held_by"], "CLAUDE");
            assert_eq!(r["expires_at"], c["expires_at"]);
        }
        let r = rest::release_claim(&w.kv, &mut w.env, other, id.as_str().unwrap()).unwrap();
        assert_eq!(r.status, 403);
    }
    let board = w.board(&bot);
    assert_eq!(board.len(), 1, "the claim is untouched");
    assert_eq!(board[0]["expires_at"], c["expires_at"]);
    assert_eq!(board[0]["notes"].as_array().unwrap().len(), 0);
    // The same subject under another display name is the holder.
    let mut renamed = bot.clone();
    renamed.display_name = "Claude (restarted)".into();
    w.ok(&renamed, "post_claim_note", json!({"claim_id": id, "text": "still on it"}));
    w.ok(&renamed, "renew_claim", json!({"claim_id": id}));
    let r = w.ok(&renamed, "release_claim", json!({"claim_id": id}));
    assert_eq!(r["released"], true);
}
