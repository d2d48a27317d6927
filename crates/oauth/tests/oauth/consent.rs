//! Consent: what the person is shown, their answer, and that nothing is
//! stored before it.
use crate::common::*;
use cairn_auth::Role;
use cairn_kv::Store;
use cairn_oauth::Route;
use serde_json::json;

#[test]
fn authorize_stores_nothing_until_a_person_approves() {
    let w = World::new();
    let id = w.register("App");
    for _ in 0..20 {
        let (r, _) = w.authorize(&id, &[("redirect_uri", CALLBACK)], None, None);
        consent_request(&r);
    }
    assert!(w.store.list_keys("default", None, 10).unwrap().is_empty());
}

#[test]
fn the_person_sees_the_app_where_it_goes_its_scopes_tenant_and_agent() {
    let w = World::new();
    let id = w.register("Claude");
    let (r, _) = w.authorize(&id, &[("redirect_uri", CALLBACK), ("scope", "notes:read")], None, None);
    let request = consent_request(&r);
    let v = body(&w.get(Route::ConsentView, &query(&[("request", &request)]), Some(&person("Ada", Role::Member))));
    assert_eq!(v["client_name"], "Claude");
    assert_eq!(v["registered_by"], "registration");
    assert_eq!((v["redirect_uri"].as_str(), v["redirect_host"].as_str()), (Some(CALLBACK), Some("127.0.0.1")));
    assert_eq!(v["scopes"], json!(["notes:read"]));
    assert_eq!((v["tenant"].as_str(), v["agent_name"].as_str()), (Some("acme"), Some("Claude for Ada")));
}

#[test]
fn a_denied_consent_sends_access_denied_with_the_state_and_issues_nothing() {
    let w = World::new();
    let id = w.register("App");
    let (r, _) = w.authorize(&id, &[("redirect_uri", CALLBACK)], None, None);
    let a = w.json(Route::ConsentAnswer, &json!({"request": consent_request(&r), "approve": false}), Some(&person("Ada", Role::Member)));
    let p = params_of(body(&a)["redirect_to"].as_str().unwrap());
    assert_eq!((p["error"].as_str(), p["state"].as_str(), p["iss"].as_str()), ("access_denied", "s-1", ISSUER));
    assert!(!p.contains_key("code"));
    assert!(w.store.list_keys("default", None, 10).unwrap().is_empty());
}

#[test]
fn an_altered_or_expired_consent_request_is_refused() {
    let w = World::new();
    let id = w.register("App");
    let (r, _) = w.authorize(&id, &[("redirect_uri", CALLBACK)], None, None);
    let request = consent_request(&r);
    let ada = person("Ada", Role::Member);
    let altered = format!("x{}", &request[1..]);
    let a = w.json(Route::ConsentAnswer, &json!({"request": altered, "approve": true}), Some(&ada));
    assert_eq!((a.status, body(&a)["error"].as_str()), (400, Some("invalid_request")));
    w.later(601);
    let a = w.json(Route::ConsentAnswer, &json!({"request": request, "approve": true}), Some(&ada));
    assert!(body(&a)["error_description"].as_str().unwrap().contains("expired"), "{}", text(&a));
}

#[test]
fn only_a_person_can_approve_an_app() {
    let w = World::new();
    let id = w.register("App");
    let (r, _) = w.authorize(&id, &[("redirect_uri", CALLBACK)], None, None);
    let request = consent_request(&r);
    let a = w.json(Route::ConsentAnswer, &json!({"request": request, "approve": true}), Some(&agent()));
    assert_eq!((a.status, body(&a)["error"].as_str()), (403, Some("access_denied")));
    let v = w.get(Route::ConsentView, &query(&[("request", &request)]), None);
    assert_eq!(v.status, 403);
}

#[test]
fn an_app_asking_only_for_scopes_it_cannot_have_gets_invalid_scope() {
    let w = World::new();
    let id = w.register("App");
    let (r, _) = w.authorize(&id, &[("redirect_uri", CALLBACK), ("scope", "audit:read")], None, None);
    let to = header(&r, "location").unwrap();
    assert_eq!(params_of(to)["error"], "invalid_scope");
}
