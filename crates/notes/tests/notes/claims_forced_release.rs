//! Forced release: human admins only (a role check), audited with who did it.
use crate::common::*;
use cairn_notes::{ActorType, rest};

#[test]
fn forced_release_is_for_human_admins_only() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Plan", true);
    let id = w.claim_ok(&bot, &note, Some("markdown"));
    for not_allowed in [
        human("acme"),                                  // a person without the admin role
        admin("acme", "ops-bot", ActorType::Agent),     // an admin agent
        identity("acme", "claude-2", ActorType::Agent), // another agent
    ] {
        let r = rest::force_release_claim(&w.kv, &mut w.env, &not_allowed, &id).unwrap();
        assert_eq!(r.status, 403, "{}", not_allowed.subject);
        assert_eq!(r.body["error"], "forbidden");
        assert_eq!(w.board(&bot).len(), 1, "the claim survives");
    }
    let root = admin("acme", "root", ActorType::Human);
    let r = rest::force_release_claim(&w.kv, &mut w.env, &root, &id).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["released"], true);
    assert_eq!(r.body["reason"], "forced");
    assert_eq!(r.body["forced_by"], "ROOT");
    assert_eq!(r.body["held_by"], "CLAUDE");
    assert!(w.board(&bot).is_empty());
    let audit = w.claim_audit("acme");
    let forced: Vec<_> = audit.iter().filter(|a| a["event"] == "forced").collect();
    assert_eq!(forced.len(), 1);
    assert_eq!(forced[0]["claim_id"], id.as_str());
    assert_eq!(forced[0]["by"]["subject"], "root");
    assert_eq!(forced[0]["holder"]["subject"], "claude");
    let denied = audit.iter().filter(|a| a["action"] == "force_release_claim" && a["error"] == "forbidden").count();
    assert_eq!(denied, 3, "every denied attempt is audited");
    // The holder learns why its claim ended.
    let r = rest::release_claim(&w.kv, &mut w.env, &bot, &id).unwrap();
    assert_eq!(r.body["already_released"], true);
    assert_eq!(r.body["reason"], "forced");
}
