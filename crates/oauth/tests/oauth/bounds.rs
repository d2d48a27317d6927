//! Every record a caller can cause is bounded by a stated figure, written
//! only when something changes, and swept once it can never be used again.
use crate::common::*;
use cairn_auth::Role;
use cairn_kv::{Observed, Store};
use cairn_oauth::people::{INVITE_SECONDS, MAX_OPEN_INVITES, MAX_PEOPLE};
use cairn_oauth::sweep::{self, BUDGET};
use cairn_oauth::{Route, people};
use serde_json::json;

fn invite(w: &World, name: &str) -> cairn_oauth::Reply {
    w.json(Route::Invite, &json!({"name": name, "role": "member"}), Some(&person("Ada", Role::Admin)))
}

fn secret_of(r: &cairn_oauth::Reply) -> String {
    body(r)["link"].as_str().unwrap().split_once("/#/sign-in/").unwrap().1.to_string()
}

#[test]
fn invitations_past_the_open_bound_are_refused_and_nothing_is_written() {
    let w = World::new();
    let made: Vec<String> = (0..MAX_OPEN_INVITES)
        .map(|i| {
            let r = invite(&w, &format!("P{i}"));
            assert_eq!(r.status, 201, "{i}: {}", text(&r));
            secret_of(&r)
        })
        .collect();
    let links = keys_under(&w, "oauth/link/").len();
    let over = invite(&w, "One too many");
    assert_eq!((over.status, body(&over)["error"].as_str()), (409, Some("limit_reached")), "{}", text(&over));
    assert!(body(&over)["error_description"].as_str().unwrap().contains(&format!("{MAX_OPEN_INVITES} invitations open")), "{}", text(&over));
    assert_eq!(keys_under(&w, "oauth/link/").len(), links, "a refused invitation wrote a link");
    // One used: one more may be made. All expired: as many again.
    assert_eq!(w.json(Route::SessionStart, &json!({"link": made[0]}), None).status, 200);
    assert_eq!(invite(&w, "Next").status, 201);
    assert_eq!(invite(&w, "Over again").status, 409);
    w.later(INVITE_SECONDS);
    assert_eq!(invite(&w, "After they expired").status, 201);
}

#[test]
fn a_tenant_with_the_most_people_cannot_invite_more() {
    let w = World::new();
    for i in 0..MAX_PEOPLE {
        let p = json!({"tenant": "acme", "sub": format!("p-{i:04}"), "name": "Someone", "role": "member"}).to_string();
        w.store.set("default", &format!("t/acme/oauth/person/p-{i:04}"), p.as_bytes()).unwrap();
    }
    let r = invite(&w, "One more");
    assert_eq!((r.status, body(&r)["error"].as_str()), (409, Some("limit_reached")), "{}", text(&r));
    assert!(body(&r)["error_description"].as_str().unwrap().contains(&format!("{MAX_PEOPLE} people")));
    assert!(keys_under(&w, "oauth/link/").is_empty());
}

fn stamp(w: &World, key: &str) -> Observed {
    w.store.read("default", key).unwrap().observed
}

#[test]
fn revoking_a_spent_code_or_rotated_token_a_thousand_times_writes_the_grant_once() {
    let w = World::new();
    let id = w.register("App");
    let (code, verifier) = w.approved_code(&id, &person("Ada", Role::Member));
    let t = body(&w.exchange(&id, &code, &verifier));
    let rotated = t["refresh_token"].as_str().unwrap().to_string();
    assert_eq!(w.refresh(&id, &rotated).status, 200);
    let key = keys_under(&w, "t/acme/oauth/grant/").pop().unwrap();
    for token in [&code, &rotated] {
        assert_eq!(w.form(Route::Revoke, &[("token", token)]).status, 200);
        let before = stamp(&w, &key);
        for _ in 0..1_000 {
            assert_eq!(w.form(Route::Revoke, &[("token", token)]).status, 200);
        }
        assert_eq!(stamp(&w, &key), before, "a revocation that changed nothing rewrote the grant");
    }
    // A spent code presented to the token endpoint again writes nothing either, once revoked.
    let before = stamp(&w, &key);
    assert_eq!(body(&w.exchange(&id, &code, &verifier))["error"], "invalid_grant");
    assert_eq!(stamp(&w, &key), before);
}

#[test]
fn the_sweep_deletes_spent_and_expired_links_sessions_and_dead_grants_and_keeps_the_rest() {
    let w = World::new();
    let ada = person("Ada", Role::Admin);
    // A link spent (its session kept), an invitation left to expire, one still open.
    let first = people::first_link(&w.store, w.now.get(), &|| 42).unwrap().unwrap();
    assert_eq!(w.json(Route::SessionStart, &json!({"link": first.secret}), None).status, 200);
    invite(&w, "Expires");
    // Grants: one live, one revoked, one never exchanged.
    let id = w.register("App");
    let (code, verifier) = w.approved_code(&id, &ada);
    let live = body(&w.exchange(&id, &code, &verifier));
    let (code, verifier) = w.approved_code(&id, &ada);
    let revoked = body(&w.exchange(&id, &code, &verifier));
    w.form(Route::Revoke, &[("token", revoked["refresh_token"].as_str().unwrap())]);
    w.approved_code(&id, &ada);
    let swept = |w: &World| {
        let mut s = sweep::tenant(&w.store, "acme", w.now.get(), BUDGET).unwrap();
        s += sweep::tenant(&w.store, "local", w.now.get(), BUDGET).unwrap();
        s.links = sweep::links(&w.store, w.now.get(), BUDGET).unwrap();
        s
    };
    let now = swept(&w);
    assert_eq!((now.links, now.grants, now.sessions, now.index_entries), (1, 1, 0, 1), "{now:?}");
    // Past the codes' minute: the grant never exchanged goes; the live one stays and refreshes.
    w.later(cairn_oauth::grants::CODE_SECONDS);
    assert_eq!(swept(&w).grants, 1);
    let r = w.refresh(&id, live["refresh_token"].as_str().unwrap());
    assert_eq!(r.status, 200, "{}", text(&r));
    let open = invite(&w, "Open");
    assert_eq!(open.status, 201);
    // Past the first invitation's life (not the second's), then the session's and the grant's idle lifetime.
    w.later(INVITE_SECONDS - 30);
    assert_eq!(swept(&w).links, 1, "the expired invitation went, the open one is not yet expired");
    w.later(people::SESSION_SECONDS);
    let late = swept(&w);
    assert_eq!((late.links, late.sessions, late.grants), (1, 1, 1), "{late:?}");
    for prefix in ["oauth/link/", "t/local/oauth/session/", "t/acme/oauth/grant/"] {
        assert!(keys_under(&w, prefix).is_empty(), "{prefix}: {:?}", keys_under(&w, prefix));
    }
    assert_eq!(body(&w.get(Route::Apps, "", Some(&ada)))["apps"], json!([]));
    assert_eq!(swept(&w), sweep::Swept::default(), "nothing left to sweep");
}
