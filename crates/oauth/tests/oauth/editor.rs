//! The editor's sign-in: a code only at the issuer's own page, matched
//! exactly, and one grant per session however often it signs in, so the
//! editor never crowds out a person's connected apps.
use crate::common::*;
use cairn_auth::{Actor, Principal, Role};
use cairn_oauth::grants::MAX_GRANTS;
use cairn_oauth::{Route, people};
use serde_json::json;

/// The first person signed in: their session cookie.
fn session(w: &World) -> String {
    let link = people::first_link(&w.store, w.now.get(), &|| 42).unwrap().unwrap();
    let r = w.json(Route::SessionStart, &json!({"link": link.secret}), None);
    assert_eq!(r.status, 200, "{}", text(&r));
    header(&r, "set-cookie").unwrap().split(';').next().unwrap().to_string()
}

/// The first person as their editor token names them.
fn first_person() -> Principal {
    let scopes = cairn_oauth::PERSON_SCOPES.iter().map(|s| s.to_string()).collect();
    Principal {
        tenant: "local".into(),
        subject: "local-person".into(),
        name: "Local person".into(),
        actor: Actor::Human,
        role: Role::Admin,
        scopes,
        exp: u64::MAX,
    }
}

fn sign_in(w: &World, cookie: &str, redirect: &str) -> (cairn_oauth::Reply, String) {
    w.authorize(cairn_oauth::clients::EDITOR, &[("redirect_uri", redirect)], Some(cookie), None)
}

fn exchange(w: &World, r: &cairn_oauth::Reply, verifier: &str) -> serde_json::Value {
    let code = params_of(header(r, "location").unwrap())["code"].clone();
    let t = w.form(Route::Token, &[("grant_type", "authorization_code"), ("code", &code), ("client_id", "cairn-editor"), ("code_verifier", verifier)]);
    assert_eq!(t.status, 200, "{}", text(&t));
    body(&t)
}

#[test]
fn the_editor_gets_a_code_only_at_the_issuers_own_page_never_at_another_port() {
    let w = World::new();
    let cookie = session(&w);
    // The attack: a local program listening on a port asks for the editor's code there.
    for elsewhere in [
        "http://127.0.0.1:9/",
        "http://127.0.0.1:3001/",
        "http://127.0.0.1:9/callback",
        "http://localhost:3000/",
        "http://[::1]:3000/",
        &format!("{ISSUER}/x"),
        &format!("{ISSUER}/?x=1"),
    ] {
        let (r, _) = sign_in(&w, &cookie, elsewhere);
        let page = error_page(&r);
        assert!(page.contains("not one this client registered"), "{elsewhere}: {page}");
        assert!(!page.contains("code="), "{page}");
    }
    assert!(keys_under(&w, "t/local/oauth/grant/").is_empty(), "no grant, so no code, was made");
    // The issuer's own page, exactly, gets its code.
    let (r, verifier) = sign_in(&w, &cookie, &format!("{ISSUER}/"));
    assert!(header(&r, "location").unwrap().starts_with(&format!("{ISSUER}/?code=")));
    let t = exchange(&w, &r, &verifier);
    assert!(t["access_token"].is_string());
}

#[test]
fn three_hundred_editor_sign_ins_make_one_grant_and_keep_every_connected_app() {
    let w = World::new();
    let cookie = session(&w);
    let me = first_person();
    let apps: Vec<String> = (0..5).map(|i| w.register(&format!("App {i}"))).collect();
    for app in &apps {
        let (code, verifier) = w.approved_code(app, &me);
        assert_eq!(w.exchange(app, &code, &verifier).status, 200);
    }
    let redirect = format!("{ISSUER}/");
    let mut last = None;
    for _ in 0..300 {
        let (r, verifier) = sign_in(&w, &cookie, &redirect);
        assert_eq!(r.status, 302, "{}", text(&r));
        last = Some((r, verifier));
    }
    assert_eq!(keys_under(&w, "t/local/oauth/grant/").len(), apps.len() + 1, "one grant per app and one for the editor's session");
    let listed = body(&w.get(Route::Apps, "", Some(&me)));
    assert_eq!(listed["apps"].as_array().map(Vec::len), Some(apps.len()), "{listed}");
    let (r, verifier) = last.unwrap();
    assert!(exchange(&w, &r, &verifier)["refresh_token"].is_string(), "the latest sign-in's code works");
}

// The figure the test above crosses (300 sign-ins) must pass the bound.
const _: () = assert!(MAX_GRANTS < 300, "the figure this test crosses");

#[test]
fn a_new_sign_in_replaces_the_sessions_refresh_token_and_revoking_the_old_one_ends_nothing() {
    let w = World::new();
    let cookie = session(&w);
    let redirect = format!("{ISSUER}/");
    // Two tabs sign in at once: both codes work.
    let (a, va) = sign_in(&w, &cookie, &redirect);
    let (b, vb) = sign_in(&w, &cookie, &redirect);
    let first = exchange(&w, &a, &va);
    let second = exchange(&w, &b, &vb);
    // The editor revokes the refresh token it held before (as the page does): the new one lives on.
    let old = first["refresh_token"].as_str().unwrap();
    assert_eq!(w.form(Route::Revoke, &[("token", old)]).status, 200);
    let r =
        w.form(Route::Token, &[("grant_type", "refresh_token"), ("refresh_token", second["refresh_token"].as_str().unwrap()), ("client_id", "cairn-editor")]);
    assert_eq!(r.status, 200, "{}", text(&r));
    assert_eq!(
        body(&w.form(Route::Token, &[("grant_type", "refresh_token"), ("refresh_token", old), ("client_id", "cairn-editor")]))["error"],
        "invalid_grant"
    );
    // Revoking the current one signs this session's editor out; the next sign-in starts afresh.
    let current = body(&r)["refresh_token"].as_str().unwrap().to_string();
    assert_eq!(w.form(Route::Revoke, &[("token", &current)]).status, 200);
    let (c, vc) = sign_in(&w, &cookie, &redirect);
    assert!(exchange(&w, &c, &vc)["access_token"].is_string());
    assert_eq!(keys_under(&w, "t/local/oauth/grant/").len(), 1);
}
