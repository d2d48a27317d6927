//! People: one-time links, sessions, the editor's sign-in, invitations.
use crate::common::*;
use cairn_auth::Role;
use cairn_oauth::people;
use cairn_oauth::{Request, Route};
use serde_json::json;

fn use_link(w: &World, secret: &str) -> cairn_oauth::Reply {
    w.json(Route::SessionStart, &json!({"link": secret}), None)
}

fn cookie_of(r: &cairn_oauth::Reply) -> String {
    let set = header(r, "set-cookie").unwrap();
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Lax") && set.contains("Path=/oauth"), "{set}");
    set.split(';').next().unwrap().to_string()
}

#[test]
fn a_one_time_link_signs_in_once_and_never_again() {
    let w = World::new();
    let link = people::first_link(&w.store, w.now.get(), &|| 42).unwrap().expect("a fresh install offers a first link");
    let first = use_link(&w, &link.secret);
    assert_eq!(first.status, 200, "{}", text(&first));
    assert_eq!((body(&first)["tenant"].as_str(), body(&first)["role"].as_str()), (Some("local"), Some("admin")));
    cookie_of(&first);
    let again = use_link(&w, &link.secret);
    assert_eq!((again.status, body(&again)["error"].as_str()), (400, Some("invalid_link")));
    assert!(header(&again, "set-cookie").is_none());
    assert_eq!(people::first_link(&w.store, w.now.get(), &|| 43).unwrap(), None, "once used, no more first links");
    assert!(people::admin_link(&w.store, w.now.get(), &|| 44).is_ok(), "the operator can still ask for one");
}

#[test]
fn an_expired_or_unknown_link_signs_nobody_in() {
    let w = World::new();
    let link = people::first_link(&w.store, w.now.get(), &|| 42).unwrap().unwrap();
    w.later(people::FIRST_LINK_SECONDS);
    assert_eq!(body(&use_link(&w, &link.secret))["error"], "invalid_link");
    assert_eq!(body(&use_link(&w, "made-up"))["error"], "invalid_link");
    assert!(people::first_person_pending(&w.store).unwrap(), "nobody signed in");
}

fn editor_authorize(w: &World, cookie: Option<&str>) -> (cairn_oauth::Reply, String) {
    let redirect = format!("{ISSUER}/");
    w.authorize(cairn_oauth::clients::EDITOR, &[("redirect_uri", &redirect)], cookie, None)
}

#[test]
fn the_editor_gets_a_code_only_with_a_session_and_signs_in_as_the_person() {
    let w = World::new();
    let (r, _) = editor_authorize(&w, None);
    let to = header(&r, "location").unwrap();
    assert!(to.starts_with(&format!("{ISSUER}/?")), "{to}");
    assert_eq!(params_of(to)["error"], "login_required");
    let link = people::first_link(&w.store, w.now.get(), &|| 42).unwrap().unwrap();
    let cookie = cookie_of(&use_link(&w, &link.secret));
    let view = w.serve(Route::SessionView, &Request { cookie: Some(&cookie), ..Request::default() }, None, None);
    assert_eq!(body(&view)["signed_in"], true);
    let (r, verifier) = editor_authorize(&w, Some(&cookie));
    let code = params_of(header(&r, "location").unwrap())["code"].clone();
    let t = body(&w.form(Route::Token, &[("grant_type", "authorization_code"), ("code", &code), ("client_id", "cairn-editor"), ("code_verifier", &verifier)]));
    let c = claims(t["access_token"].as_str().unwrap());
    assert_eq!((c["actor"].as_str(), c["role"].as_str(), c["sub"].as_str()), (Some("human"), Some("admin"), Some("local-person")));
    assert_eq!(c["scope"], "notes:read notes:write notes:delete audit:read");
    // Ending the session: no more codes for the editor.
    let end = w.serve(Route::SessionEnd, &Request { cookie: Some(&cookie), ..Request::default() }, None, None);
    assert_eq!(end.status, 204);
    assert!(header(&end, "set-cookie").unwrap().contains("Max-Age=0"));
    let (r, _) = editor_authorize(&w, Some(&cookie));
    assert_eq!(params_of(header(&r, "location").unwrap())["error"], "login_required");
}

#[test]
fn an_admin_invites_someone_once_and_members_and_agents_cannot() {
    let w = World::new();
    let admin = person("Ada", Role::Admin);
    let r = w.json(Route::Invite, &json!({"name": "Bo", "role": "member"}), Some(&admin));
    assert_eq!(r.status, 201, "{}", text(&r));
    let link = body(&r)["link"].as_str().unwrap().to_string();
    let secret = link.split_once("/#/sign-in/").unwrap().1;
    let used = body(&use_link(&w, secret));
    assert_eq!((used["name"].as_str(), used["tenant"].as_str(), used["role"].as_str()), (Some("Bo"), Some("acme"), Some("member")));
    assert_eq!(body(&use_link(&w, secret))["error"], "invalid_link");
    for who in [person("Cy", Role::Member), agent()] {
        let r = w.json(Route::Invite, &json!({"name": "Eve", "role": "admin"}), Some(&who));
        assert_eq!(r.status, 403, "{}", text(&r));
    }
    let r = w.json(Route::Invite, &json!({"name": "", "role": "member"}), Some(&admin));
    assert_eq!(body(&r)["error"], "invalid_request");
    let r = w.json(Route::Invite, &json!({"name": "Dee", "role": "owner"}), Some(&admin));
    assert!(body(&r)["error_description"].as_str().unwrap().contains("member or admin"));
}
