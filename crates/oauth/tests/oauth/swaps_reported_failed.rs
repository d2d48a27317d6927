//! On a store that reports every swap failed, landed or not (Spin's Redis
//! backend at `94a8fc8a`), every record change of the authorization server
//! is idempotent: run again on a record that already holds it, it writes
//! nothing more and answers as done. So an app connects and refreshes
//! without revoking itself, a link signs in once, an invitation is counted
//! once, and the editor signs in — and nothing is written twice.
use crate::common::*;
use cairn_auth::Role;
use cairn_kv::Store;
use cairn_oauth::{Route, people};
use serde_json::{Value, json};

/// A world whose store reports every swap failed from now on.
fn lying() -> World {
    let w = World::new();
    w.faults.report_every_swap_failed(true);
    w
}

fn record(w: &World, key: &str) -> Value {
    serde_json::from_slice(&w.store.get("default", key).unwrap().unwrap_or_else(|| b"null".to_vec())).unwrap()
}

#[test]
fn an_app_connected_while_every_swap_is_reported_failed_gets_and_refreshes_its_tokens() {
    let w = lying();
    let id = w.register("App");
    let (code, verifier) = w.approved_code(&id, &person("Ada", Role::Member));
    let issued = w.exchange(&id, &code, &verifier);
    assert_eq!(issued.status, 200, "the exchange revoked itself: {}", text(&issued));
    let mut refresh = body(&issued)["refresh_token"].as_str().unwrap().to_string();
    for round in 0..3 {
        let r = w.refresh(&id, &refresh);
        assert_eq!(r.status, 200, "refresh {round}: {}", text(&r));
        refresh = body(&r)["refresh_token"].as_str().unwrap().to_string();
    }
    let grants = record(&w, "t/acme/oauth/grants/ada");
    assert_eq!(grants.as_array().map(Vec::len), Some(1), "the person's grants list the grant once: {grants}");
}

#[test]
fn a_one_time_link_signs_in_once_while_every_swap_is_reported_failed() {
    let w = lying();
    let link = people::first_link(&w.store, w.now.get(), &|| 42).unwrap().unwrap();
    let first = w.json(Route::SessionStart, &json!({"link": link.secret}), None);
    assert_eq!(first.status, 200, "{}", text(&first));
    let again = w.json(Route::SessionStart, &json!({"link": link.secret}), None);
    assert_eq!((again.status, body(&again)["error"].as_str()), (400, Some("invalid_link")), "{}", text(&again));
}

#[test]
fn an_invitation_is_counted_once_and_signs_in_once_while_every_swap_is_reported_failed() {
    let w = lying();
    let r = w.json(Route::Invite, &json!({"name": "Bo", "role": "member"}), Some(&person("Ada", Role::Admin)));
    assert_eq!(r.status, 201, "{}", text(&r));
    let open = record(&w, "t/acme/oauth/invites");
    assert_eq!(open.as_array().map(Vec::len), Some(1), "one open invitation: {open}");
    let link = body(&r)["link"].as_str().unwrap().to_string();
    let secret = link.split_once("/#/sign-in/").unwrap().1;
    let used = w.json(Route::SessionStart, &json!({"link": secret}), None);
    assert_eq!(used.status, 200, "{}", text(&used));
    assert_eq!(record(&w, "t/acme/oauth/invites"), json!([]), "the used invitation is no longer open");
    let again = w.json(Route::SessionStart, &json!({"link": secret}), None);
    assert_eq!(body(&again)["error"], "invalid_link");
}

#[test]
fn the_editor_signs_in_while_every_swap_is_reported_failed() {
    let w = lying();
    let link = people::first_link(&w.store, w.now.get(), &|| 42).unwrap().unwrap();
    let started = w.json(Route::SessionStart, &json!({"link": link.secret}), None);
    let cookie = header(&started, "set-cookie").expect("a session").split(';').next().unwrap().to_string();
    let (r, verifier) = w.authorize(cairn_oauth::clients::EDITOR, &[("redirect_uri", &format!("{ISSUER}/"))], Some(&cookie), None);
    let to = header(&r, "location").unwrap_or_default().to_string();
    let code = params_of(&to).get("code").cloned().unwrap_or_else(|| panic!("no code: {to} {}", text(&r)));
    let t = w.form(Route::Token, &[("grant_type", "authorization_code"), ("code", &code), ("client_id", "cairn-editor"), ("code_verifier", &verifier)]);
    assert_eq!(t.status, 200, "{}", text(&t));
    let grants = keys_under(&w, "t/local/oauth/grant/");
    assert_eq!(grants.len(), 1, "one editor grant: {grants:?}");
    let g = record(&w, &grants[0]);
    assert_eq!(g["code"].as_array().map(Vec::len), Some(0), "the exchanged code is gone and no copy of it is left: {g}");
}
