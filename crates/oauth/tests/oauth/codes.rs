//! Codes: PKCE S256 required, once, for one client, redirect and resource.
use crate::common::*;
use cairn_auth::Role;
use cairn_oauth::Route;

/// A refusal before the person saw anything, for a client anyone could
/// have registered: a page naming the error, never a redirect to its URI.
fn refused(r: &cairn_oauth::Reply) -> String {
    error_page(r)
}

#[test]
fn pkce_with_s256_is_required() {
    let w = World::new();
    let id = w.register("App");
    let without = query(&[("response_type", "code"), ("client_id", &id), ("redirect_uri", CALLBACK), ("state", "s-1")]);
    let r = w.get(Route::Authorize, &without, None);
    assert!(refused(&r).contains("invalid_request"), "{}", text(&r));
    let (_, challenge) = pkce();
    let plain = query(&[
        ("response_type", "code"),
        ("client_id", &id),
        ("redirect_uri", CALLBACK),
        ("state", "s-1"),
        ("code_challenge", &challenge),
        ("code_challenge_method", "plain"),
    ]);
    let why = refused(&w.get(Route::Authorize, &plain, None));
    assert!(why.contains("invalid_request") && why.contains("S256"), "{why}");
    let (r, _) = w.authorize(&id, &[("redirect_uri", CALLBACK), ("response_type", "token")], None, None);
    assert_eq!(r.status, 400, "a repeated parameter is refused: {}", text(&r));
}

#[test]
fn a_missing_or_wrong_verifier_issues_nothing_and_the_right_one_works() {
    let w = World::new();
    let id = w.register("App");
    let (code, verifier) = w.approved_code(&id, &person("Ada", Role::Member));
    let missing = w.form(Route::Token, &[("grant_type", "authorization_code"), ("code", &code), ("client_id", &id), ("redirect_uri", CALLBACK)]);
    assert_eq!((missing.status, body(&missing)["error"].as_str()), (400, Some("invalid_request")));
    let wrong = w.exchange(&id, &code, "another-verifier-of-forty-three-or-more-characters-0123");
    assert_eq!(body(&wrong)["error"], "invalid_grant");
    assert!(body(&wrong)["error_description"].as_str().unwrap().contains("PKCE"));
    let ok = w.exchange(&id, &code, &verifier);
    assert_eq!(ok.status, 200, "a wrong verifier did not burn the code: {}", text(&ok));
    assert_eq!(header(&ok, "cache-control"), Some("no-store"));
}

#[test]
fn a_code_works_once_and_its_second_use_revokes_what_it_issued() {
    let w = World::new();
    let id = w.register("App");
    let (code, verifier) = w.approved_code(&id, &person("Ada", Role::Member));
    let first = w.exchange(&id, &code, &verifier);
    assert_eq!(first.status, 200);
    let second = w.exchange(&id, &code, &verifier);
    assert_eq!(body(&second)["error"], "invalid_grant");
    assert!(body(&second)["error_description"].as_str().unwrap().contains("used already"));
    let refresh = w.refresh(&id, body(&first)["refresh_token"].as_str().unwrap());
    assert_eq!(body(&refresh)["error"], "invalid_grant", "the first exchange's refresh token was revoked: {}", text(&refresh));
}

#[test]
fn a_code_expires_and_is_bound_to_its_client_and_redirect() {
    let w = World::new();
    let (id, other) = (w.register("App"), w.register("Other"));
    let (code, verifier) = w.approved_code(&id, &person("Ada", Role::Member));
    assert_eq!(body(&w.exchange(&other, &code, &verifier))["error"], "invalid_grant");
    let elsewhere = w.form(
        Route::Token,
        &[("grant_type", "authorization_code"), ("code", &code), ("client_id", &id), ("redirect_uri", "http://127.0.0.1:9000/x"), ("code_verifier", &verifier)],
    );
    assert_eq!(body(&elsewhere)["error"], "invalid_grant");
    w.later(61);
    let late = w.exchange(&id, &code, &verifier);
    assert!(body(&late)["error_description"].as_str().unwrap().contains("expired"), "{}", text(&late));
}

#[test]
fn a_token_for_another_resource_is_refused_invalid_target() {
    let w = World::new();
    let id = w.register("App");
    let (r, _) = w.authorize(&id, &[("redirect_uri", CALLBACK), ("resource", "https://other.example/mcp")], None, None);
    assert!(refused(&r).contains("invalid_target"), "{}", text(&r));
    let (code, verifier) = w.approved_code(&id, &person("Ada", Role::Member));
    let r = w.form(
        Route::Token,
        &[("grant_type", "authorization_code"), ("code", &code), ("client_id", &id), ("code_verifier", &verifier), ("resource", "https://other.example/mcp")],
    );
    assert_eq!((r.status, body(&r)["error"].as_str()), (400, Some("invalid_target")));
    let r = w
        .form(Route::Token, &[("grant_type", "authorization_code"), ("code", &code), ("client_id", &id), ("code_verifier", &verifier), ("resource", RESOURCE)]);
    assert_eq!(r.status, 200, "{}", text(&r));
}

#[test]
fn an_app_acts_as_an_agent_for_cairns_resource_with_agent_scopes_only() {
    let w = World::new();
    let id = w.register("Claude");
    let (r, verifier) = w.authorize(&id, &[("redirect_uri", CALLBACK), ("scope", "notes:read notes:write notes:delete audit:read")], None, None);
    let request = consent_request(&r);
    let a = w.json(Route::ConsentAnswer, &serde_json::json!({"request": request, "approve": true}), Some(&person("Ada", Role::Admin)));
    let code = params_of(body(&a)["redirect_to"].as_str().unwrap())["code"].clone();
    let t = body(&w.exchange(&id, &code, &verifier));
    assert_eq!(t["scope"], "notes:read notes:write");
    assert_eq!(t["expires_in"], 600);
    let c = claims(t["access_token"].as_str().unwrap());
    assert_eq!((c["iss"].as_str(), c["aud"].as_str(), c["actor"].as_str(), c["role"].as_str()), (Some(ISSUER), Some(RESOURCE), Some("agent"), Some("member")));
    assert_eq!((c["name"].as_str(), c["tenant"].as_str()), (Some("Claude for Ada"), Some("acme")));
    assert!(c["sub"].as_str().unwrap().starts_with("app-") && c["sub"] != "ada", "{c}");
    assert_eq!(c["exp"].as_u64().unwrap() - c["iat"].as_u64().unwrap(), 600);
    // The router's own check accepts it.
    let v = cairn_auth::jwt::Verifier::from_jwks(&w.key.jwks(), ISSUER, RESOURCE).unwrap();
    assert!(v.verify(t["access_token"].as_str().unwrap()).is_ok());
}
