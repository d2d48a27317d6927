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
    assert!(error_page(&r).contains("invalid_scope"), "{}", text(&r));
}

#[test]
fn a_person_grants_an_app_only_the_scopes_their_own_token_holds() {
    let w = World::new();
    let id = w.register("App");
    let (r, verifier) = w.authorize(&id, &[("redirect_uri", CALLBACK), ("scope", "notes:read notes:write")], None, None);
    let request = consent_request(&r);
    let mut reader = person("Rea", Role::Member);
    reader.scopes = vec!["notes:read".into()];
    let v = body(&w.get(Route::ConsentView, &query(&[("request", &request)]), Some(&reader)));
    assert_eq!((v["scopes"].clone(), v["withheld"].clone()), (json!(["notes:read"]), json!(["notes:write"])), "{v}");
    assert!(v["withheld_reason"].as_str().unwrap().contains("you do not hold notes:write"), "{v}");
    let a = w.json(Route::ConsentAnswer, &json!({"request": request, "approve": true}), Some(&reader));
    let code = params_of(body(&a)["redirect_to"].as_str().unwrap())["code"].clone();
    let t = body(&w.exchange(&id, &code, &verifier));
    assert_eq!(t["scope"], "notes:read", "{t}");
    assert_eq!(claims(t["access_token"].as_str().unwrap())["scope"], "notes:read");
    // Holding none of what the app asks for: refused, nothing granted.
    let (r, _) = w.authorize(&id, &[("redirect_uri", CALLBACK), ("scope", "notes:write")], None, None);
    let mut auditor = person("Aud", Role::Member);
    auditor.scopes = vec!["audit:read".into()];
    let keys = w.store.list_keys("default", None, 100).unwrap().len();
    let a = w.json(Route::ConsentAnswer, &json!({"request": consent_request(&r), "approve": true}), Some(&auditor));
    assert_eq!((a.status, body(&a)["error"].as_str()), (400, Some("invalid_scope")), "{}", text(&a));
    assert!(body(&a)["error_description"].as_str().unwrap().contains("you hold none of the scopes"), "{}", text(&a));
    assert_eq!(w.store.list_keys("default", None, 100).unwrap().len(), keys, "a refused approval wrote something");
}
