//! `cairn up` on its own key: the people's editor at `/`, a one-time
//! sign-in link for the first person (its whole flow is in `own_oauth.rs`),
//! and `cairn token` minting for the server the state dir serves (whatever
//! port it listens on).
use crate::app::require_app;
use crate::harness::{Cairn, Start, require_built};
use serde_json::json;

fn start_local() -> Cairn {
    require_app();
    require_built(&["ui.wasm"]);
    Cairn::start(Start::default())
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

#[test]
fn cairn_up_prints_a_one_time_link_for_the_first_person_until_someone_uses_it() {
    let cairn = start_local();
    let log = cairn.wait_for_log("#/sign-in/");
    assert!(log.contains(&format!("Open http://{}/ in a browser", cairn.addr)), "{log}");
    assert!(!log.contains("#token="), "no token in any URL: {log}");
    let link = log.lines().find(|l| l.contains("#/sign-in/")).unwrap().trim().to_string();
    assert!(link.starts_with(&format!("http://{}/#/sign-in/", cairn.addr)), "{link}");
    let secret = link.split_once("#/sign-in/").unwrap().1;
    let r = cairn.request("POST", "/oauth/session", &[("content-type", "application/json")], json!({"link": secret}).to_string().as_bytes());
    assert_eq!((r.status, r.json()["role"].as_str()), (200, Some("admin")), "{}", r.text());
    let r = cairn.request("POST", "/oauth/session", &[("content-type", "application/json")], json!({"link": secret}).to_string().as_bytes());
    assert_eq!(r.json()["error"], "invalid_link", "a link works once");
    let state = cairn.state_dir.clone();
    drop(cairn);
    // Someone signed in: the next start prints no link, unless the operator asks for one.
    let again = Cairn::start(Start { state_dir: Some(state.clone()), ..Start::default() });
    let log = again.wait_for_log("People sign in");
    assert!(!log.contains("#/sign-in/") && log.contains("--sign-in-link"), "{log}");
    drop(again);
    let forced = Cairn::start(Start { state_dir: Some(state), args: vec!["--sign-in-link"], ..Start::default() });
    assert!(forced.wait_for_log("#/sign-in/").contains("#/sign-in/"));
}

#[test]
fn the_editor_is_served_at_the_root_and_other_paths_answer_a_json_404() {
    let cairn = start_local();
    let page = cairn.get("/");
    assert_eq!(page.status, 200);
    assert!(page.header("content-type").unwrap().starts_with("text/html"));
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'") && !csp.contains("unsafe"), "{csp}");
    assert!(page.text().contains("/ui/app.js"));
    let missing = cairn.get("/no/such/page");
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"], "not_found");
    assert_eq!(cairn.request("POST", "/", &[], b"").status, 405);
}

#[test]
fn cairn_token_mints_for_the_audience_this_state_dir_serves() {
    let cairn = start_local();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["token", "--tenant", "local", "--sub", "ci"])
        .arg("--state-dir")
        .arg(&cairn.state_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let token = String::from_utf8(out.stdout).unwrap();
    let auth = bearer(token.trim());
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let r = cairn.request("POST", "/mcp", &[("authorization", &auth), ("content-type", "application/json")], body.as_bytes());
    assert_eq!(r.status, 200, "a token minted without --audience is refused: {}", r.text());
    assert!(r.json()["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()));
}
