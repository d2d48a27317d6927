//! Claims through the real HTTP path: agents over MCP, people over REST.
use crate::app::*;
use serde_json::{Value, json};
use std::sync::{Arc, Barrier};

fn sc(v: &Value) -> &Value {
    &v["structuredContent"]
}

fn second_agent() -> Who<'static> {
    Who { sub: "agent-2", ..agent() }
}

#[test]
fn of_two_concurrent_claimers_exactly_one_wins_every_round() {
    let cairn = Arc::new(start_with(vec![("SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE", "1000000")], vec![]));
    let note = cairn.create_note(&person(), "contested", true);
    let tokens = [cairn.token(&agent()), cairn.token(&second_agent())];
    for round in 0..50 {
        let target = if round % 2 == 0 { json!({"note_id": note}) } else { json!({"note_id": note, "tab_id": "markdown"}) };
        let barrier = Arc::new(Barrier::new(2));
        let results: Vec<Value> = tokens
            .iter()
            .cloned()
            .map(|t| {
                let (cairn, barrier, target) = (cairn.clone(), barrier.clone(), target.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    cairn.call(&t, "claim_note", target)
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect();
        let winners: Vec<&Value> = results.iter().filter(|r| r["isError"] == false).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        let loser = results.iter().find(|r| r["isError"] == true).unwrap();
        assert_eq!(sc(loser)["error"], "claim_conflict", "{loser}");
        let claim = sc(winners[0])["claim_id"].as_str().unwrap().to_string();
        assert_eq!(sc(loser)["claim_id"], claim.as_str());
        let holder = if results[0]["isError"] == false { &tokens[0] } else { &tokens[1] };
        let released = cairn.call(holder, "release_claim", json!({"claim_id": claim}));
        assert_eq!(released["isError"], false, "{released}");
    }
}

#[test]
fn a_conflict_names_the_holder_and_a_persons_write_waits_for_the_agents_claim() {
    let cairn = start();
    let note = cairn.create_note(&person(), "brief", true);
    let t = cairn.token(&agent());
    let claim = cairn.call(&t, "claim_note", json!({"note_id": note, "ttl_seconds": 300}));
    let claim_id = sc(&claim)["claim_id"].as_str().unwrap().to_string();
    assert_eq!(sc(&claim)["actor_type"], "agent");

    let other = cairn.call(&cairn.token(&second_agent()), "claim_note", json!({"note_id": note, "tab_id": "markdown"}));
    let c = sc(&other);
    assert_eq!(c["error"], "claim_conflict");
    for field in ["claim_id", "held_by", "actor_type", "since", "expires_at", "next_step"] {
        assert!(!c[field].is_null(), "conflict lacks {field}: {c}");
    }

    let p = cairn.token(&person());
    let version = cairn.rest(&p, "GET", &format!("/api/v1/notes/{note}"), None).json()["version"].as_u64().unwrap();
    let save = cairn.rest(&p, "PUT", &format!("/api/v1/notes/{note}/tabs/markdown"), Some(&json!({"expected_version": version, "text": "mine"})));
    assert_eq!(save.status, 409, "{}", save.text());
    assert_eq!(save.json()["error"], "claim_conflict");
    assert_eq!(save.json()["claim_id"], claim_id.as_str());

    // The holder's own write passes.
    let own = cairn.call(
        &t,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": version,
        "idempotency_key": "holder", "operation": "replace_text", "text": "agent's draft"}),
    );
    assert_eq!(own["isError"], false, "{own}");
    cairn.call(&t, "post_claim_note", json!({"claim_id": claim_id, "text": "rewriting the intro"}));
    let board = cairn.rest(&p, "GET", "/api/v1/claims", None).json();
    assert!(board.to_string().contains("rewriting the intro"), "{board}");

    let released = cairn.call(&t, "release_claim", json!({"claim_id": claim_id}));
    assert_eq!(released["isError"], false);
    let again = cairn.call(&t, "release_claim", json!({"claim_id": claim_id}));
    assert_eq!(sc(&again)["already_released"], true, "{again}");
    let board = cairn.rest(&p, "GET", "/api/v1/claims", None).json();
    assert!(!board.to_string().contains("rewriting the intro"), "claim notes outlived the claim: {board}");
    let version = cairn.rest(&p, "GET", &format!("/api/v1/notes/{note}"), None).json()["version"].as_u64().unwrap();
    let save = cairn.rest(&p, "PUT", &format!("/api/v1/notes/{note}/tabs/markdown"), Some(&json!({"expected_version": version, "text": "mine"})));
    assert_eq!(save.status, 200, "{}", save.text());
}

#[test]
fn claims_on_two_tabs_coexist_and_a_reclaim_is_a_heartbeat() {
    let cairn = start();
    let note = cairn.create_note(&person(), "two tabs", true);
    let t = cairn.token(&agent());
    let v = sc(&cairn.call(&t, "list_note_tabs", json!({"note_id": note})))["version"].as_u64().unwrap();
    let sheet = cairn.call(&t, "create_note_tab", json!({"note_id": note, "expected_version": v, "idempotency_key": "s", "tab_type": "sheet"}));
    let sheet_tab = sc(&sheet)["tab_id"].as_str().unwrap().to_string();
    let mine = cairn.call(&t, "claim_note", json!({"note_id": note, "tab_id": "markdown"}));
    let theirs = cairn.call(&cairn.token(&second_agent()), "claim_note", json!({"note_id": note, "tab_id": sheet_tab}));
    assert_eq!(theirs["isError"], false, "{theirs}");
    let again = cairn.call(&t, "claim_note", json!({"note_id": note, "tab_id": "markdown"}));
    assert_eq!(sc(&again)["claim_id"], sc(&mine)["claim_id"]);
    assert_eq!(sc(&again)["renewed"], true);
}

#[test]
fn forced_release_is_for_human_admins_only_whatever_the_scopes() {
    let cairn = start();
    let note = cairn.create_note(&person(), "locked", true);
    let claim = cairn.call(&cairn.token(&agent()), "claim_note", json!({"note_id": note}));
    let id = sc(&claim)["claim_id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/claims/{id}/force-release");
    let broad_agent = Who { sub: "agent-9", role: cairn_auth::Role::Admin, scope: "notes:read notes:write notes:delete audit:read", ..agent() };
    assert_eq!(cairn.rest(&cairn.token(&broad_agent), "POST", &path, None).status, 403);
    assert_eq!(cairn.rest(&cairn.token(&person()), "POST", &path, None).status, 403);
    let admin = Who { sub: "root", role: cairn_auth::Role::Admin, ..person() };
    let forced = cairn.rest(&cairn.token(&admin), "POST", &path, None);
    assert_eq!(forced.status, 200, "{}", forced.text());
    let board = cairn.rest(&cairn.token(&person()), "GET", &format!("/api/v1/claims?note_id={note}"), None).json();
    assert!(!board.to_string().contains(&id), "{board}");
}

#[test]
fn a_lapsed_claim_never_blocks_and_the_sweep_releases_it() {
    let cairn = start_with(vec![], vec!["--sweep-interval-secs", "1"]);
    let note = cairn.create_note(&person(), "short lease", true);
    let t = cairn.token(&agent());
    let claim = cairn.call(&t, "claim_note", json!({"note_id": note, "ttl_seconds": 1}));
    assert_eq!(claim["isError"], false);
    std::thread::sleep(std::time::Duration::from_millis(3500));
    let other = cairn.call(&cairn.token(&second_agent()), "claim_note", json!({"note_id": note}));
    assert_eq!(other["isError"], false, "a lapsed claim blocked: {other}");
    let log = cairn.wait_for_log("expired_claims=");
    assert!(log.contains("expired_claims=1"), "{log}");
}

#[test]
fn claims_and_presence_never_cross_tenants() {
    let cairn = start();
    let note = cairn.create_note(&person(), "acme", true);
    let claim = cairn.call(&cairn.token(&agent()), "claim_note", json!({"note_id": note}));
    let id = sc(&claim)["claim_id"].as_str().unwrap().to_string();
    let foreign = Who { tenant: "globex", ..agent() };
    let ft = cairn.token(&foreign);
    assert_eq!(sc(&cairn.call(&ft, "release_claim", json!({"claim_id": id})))["error"], "not_found");
    assert_eq!(sc(&cairn.call(&ft, "claim_note", json!({"note_id": note})))["error"], "not_found");
    let board = cairn.call(&ft, "list_claims", json!({}));
    assert!(!board.to_string().contains(&id), "{board}");
}

#[test]
fn the_operator_sweep_route_is_hidden_without_its_token() {
    let cairn = start();
    assert_eq!(cairn.rest("x", "POST", "/api/v1/sweep-claims?tenant=acme", None).status, 404);
    let cairn = start_with(vec![("SPIN_VARIABLE_SWEEP_TOKEN", "ops")], vec![]);
    assert_eq!(cairn.rest("wrong", "POST", "/api/v1/sweep-claims?tenant=acme", None).status, 401);
    let r = cairn.rest("ops", "POST", "/api/v1/sweep-claims?tenant=acme", None);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["released"]["acme"], 0);
}
