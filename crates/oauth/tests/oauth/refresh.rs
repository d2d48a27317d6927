//! Refresh tokens: single use, rotated; reuse, revocation and idleness end the grant.
use crate::common::*;
use cairn_auth::Role;
use cairn_oauth::Route;
use serde_json::json;

fn connected(w: &World, id: &str) -> serde_json::Value {
    let (code, verifier) = w.approved_code(id, &person("Ada", Role::Member));
    body(&w.exchange(id, &code, &verifier))
}

#[test]
fn each_refresh_gives_a_new_refresh_token() {
    let w = World::new();
    let id = w.register("App");
    let t = connected(&w, &id);
    let r1 = body(&w.refresh(&id, t["refresh_token"].as_str().unwrap()));
    let r2 = body(&w.refresh(&id, r1["refresh_token"].as_str().unwrap()));
    assert!(r2["access_token"].is_string(), "{r2}");
    assert_ne!(r1["refresh_token"], t["refresh_token"]);
    assert_ne!(r2["refresh_token"], r1["refresh_token"]);
}

#[test]
fn reusing_a_refresh_token_revokes_the_whole_family() {
    let w = World::new();
    let id = w.register("App");
    let t = connected(&w, &id);
    let old = t["refresh_token"].as_str().unwrap();
    let newer = body(&w.refresh(&id, old));
    // Past the grace for retries, the old token again is taken as theft.
    w.later(cairn_oauth::grants::REUSE_GRACE_SECONDS + 1);
    let reuse = w.refresh(&id, old);
    assert_eq!(body(&reuse)["error"], "invalid_grant");
    assert!(body(&reuse)["error_description"].as_str().unwrap().contains("stolen"));
    let after = w.refresh(&id, newer["refresh_token"].as_str().unwrap());
    assert_eq!(body(&after)["error"], "invalid_grant", "the newest token of the family died too");
    // The person sees nothing connected any more.
    let apps = w.get(Route::Apps, "", Some(&person("Ada", Role::Member)));
    assert_eq!(body(&apps)["apps"], json!([]));
}

#[test]
fn a_refresh_retried_at_once_gets_the_same_successor_and_no_second_branch() {
    let w = World::new();
    let id = w.register("App");
    let t = connected(&w, &id);
    let rt1 = t["refresh_token"].as_str().unwrap();
    let first = body(&w.refresh(&id, rt1));
    let retry = body(&w.refresh(&id, rt1));
    assert_eq!(retry["refresh_token"], first["refresh_token"], "a lost answer, asked again, gets the same successor");
    assert!(retry["access_token"].is_string());
    // Once the successor is used, the first token is spent for good: theft.
    let rt2 = first["refresh_token"].as_str().unwrap();
    let third = body(&w.refresh(&id, rt2));
    assert!(third["refresh_token"].is_string(), "{third}");
    assert_eq!(body(&w.refresh(&id, rt1))["error"], "invalid_grant");
    assert_eq!(body(&w.refresh(&id, third["refresh_token"].as_str().unwrap()))["error"], "invalid_grant", "and the family ended");
}

#[test]
fn revoking_a_refresh_token_or_an_access_token_ends_the_grant() {
    let w = World::new();
    let id = w.register("App");
    for hint in ["refresh_token", "access_token"] {
        let t = connected(&w, &id);
        let r = w.form(Route::Revoke, &[("token", t[hint].as_str().unwrap()), ("client_id", &id)]);
        assert_eq!(r.status, 200, "{}", text(&r));
        assert_eq!(body(&w.refresh(&id, t["refresh_token"].as_str().unwrap()))["error"], "invalid_grant", "{hint}");
    }
    // Whatever is sent, revocation answers 200 (RFC 7009 §2.2).
    assert_eq!(w.form(Route::Revoke, &[("token", "nonsense")]).status, 200);
    assert_eq!(w.form(Route::Revoke, &[("token", "acme.0123456789abcdef.guess")]).status, 200);
}

#[test]
fn disconnecting_an_app_stops_its_refresh_at_once() {
    let w = World::new();
    let (id, other) = (w.register("App"), w.register("Other app"));
    let t = connected(&w, &id);
    let kept = connected(&w, &other);
    let ada = person("Ada", Role::Member);
    let apps = body(&w.get(Route::Apps, "", Some(&ada)));
    let names: Vec<&str> = apps["apps"].as_array().unwrap().iter().map(|a| a["client_name"].as_str().unwrap()).collect();
    assert_eq!(names, ["App", "Other app"], "{apps}");
    assert_eq!(apps["apps"][0]["agent_name"], "App for Ada");
    let r = w.json(Route::AppsRevoke, &json!({"client_id": id}), Some(&ada));
    assert_eq!(body(&r)["revoked"], 1);
    assert_eq!(body(&w.refresh(&id, t["refresh_token"].as_str().unwrap()))["error"], "invalid_grant");
    assert!(body(&w.refresh(&other, kept["refresh_token"].as_str().unwrap()))["access_token"].is_string(), "only that app");
    // Someone else cannot disconnect Ada's apps: theirs is another list.
    let bo = person("Bo", Role::Admin);
    assert_eq!(body(&w.json(Route::AppsRevoke, &json!({"client_id": other}), Some(&bo)))["revoked"], 0);
}

#[test]
fn a_refresh_may_narrow_the_scopes_but_never_widen_them() {
    let w = World::new();
    let id = w.register("App");
    let t = connected(&w, &id);
    let wide = w.form(
        Route::Token,
        &[("grant_type", "refresh_token"), ("refresh_token", t["refresh_token"].as_str().unwrap()), ("client_id", &id), ("scope", "notes:read audit:read")],
    );
    assert_eq!(body(&wide)["error"], "invalid_scope");
    let narrow = body(&w.form(
        Route::Token,
        &[("grant_type", "refresh_token"), ("refresh_token", t["refresh_token"].as_str().unwrap()), ("client_id", &id), ("scope", "notes:read")],
    ));
    assert_eq!(narrow["scope"], "notes:read", "{narrow}");
}

#[test]
fn a_grant_unused_for_thirty_days_ends() {
    let w = World::new();
    let id = w.register("App");
    let t = connected(&w, &id);
    w.later(30 * 86_400);
    let r = w.refresh(&id, t["refresh_token"].as_str().unwrap());
    assert!(body(&r)["error_description"].as_str().unwrap().contains("unused too long"), "{}", text(&r));
}

#[test]
fn the_token_endpoint_refuses_what_it_does_not_offer_naming_it() {
    let w = World::new();
    let r = w.form(Route::Token, &[("grant_type", "client_credentials"), ("client_id", "x")]);
    assert_eq!(body(&r)["error"], "unsupported_grant_type");
    let r = w.json(Route::Token, &json!({"grant_type": "refresh_token"}), None);
    assert!(body(&r)["error_description"].as_str().unwrap().contains("x-www-form-urlencoded"));
    let r = w.form(Route::Token, &[("grant_type", "refresh_token"), ("refresh_token", "local.0123456789abcdef.x")]);
    assert_eq!(body(&r)["error_description"], "client_id is missing");
}
