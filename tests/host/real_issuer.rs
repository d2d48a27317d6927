//! A real authorization server: `oidc-provider` (tests/oidc) on loopback as
//! the issuer. Cairn finds its keys by discovery, caches them, follows a key
//! rotation without a restart, keeps serving while the issuer is away, maps
//! the issuer's own claim names, and refuses what a token must not carry.
use crate::app::require_app;
use crate::harness::{Cairn, Reply, Start, request, root, scratch};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The resource tokens are minted for (not loopback: no Host pinning needed).
const RESOURCE: &str = "https://cairn.test/mcp";

/// The test issuer (`tests/oidc/issuer.sh`), restartable on its port.
struct Issuer {
    child: Child,
    url: String,
    addr: SocketAddr,
    keys: PathBuf,
}

fn issuer_script() -> PathBuf {
    let script = root().join("tests/oidc/issuer.sh");
    assert!(
        root().join("tests/oidc/node_modules/oidc-provider").exists(),
        "the test issuer is not installed: run `npm ci --prefix tests/oidc` (scripts/test.sh does)"
    );
    script
}

impl Issuer {
    fn start(port: u16, keys: PathBuf) -> Issuer {
        let mut child = Command::new(issuer_script())
            .args(["--port", &port.to_string(), "--resource", RESOURCE, "--keys"])
            .arg(&keys)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the test issuer starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let ready: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("issuer ready line {line:?}: {e}"));
        let url = ready["issuer"].as_str().unwrap().to_string();
        let addr = url.trim_start_matches("http://").parse().unwrap();
        Issuer { child, url, addr, keys }
    }

    fn new(name: &str) -> Issuer {
        Issuer::start(0, scratch(name).join("issuer-keys.json"))
    }

    fn stop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let _ = self.child.wait();
    }

    /// Stop, run a key-file subcommand (`rotate`, `retire`), start again on the same port.
    fn restart_after(&mut self, subcommand: &str) {
        self.stop();
        let out = Command::new(issuer_script()).arg(subcommand).arg(&self.keys).output().unwrap();
        assert!(out.status.success(), "{subcommand}: {}", String::from_utf8_lossy(&out.stderr));
        *self = Issuer::start(self.addr.port(), self.keys.clone());
    }

    /// An access token by `client_credentials` (client_secret_post).
    fn token(&self, client: &str, secret: &str, resource: &str) -> String {
        let body = format!("grant_type=client_credentials&client_id={client}&client_secret={secret}&resource={}", urlencode(resource));
        let r = request(self.addr, "POST", "/token", &[("content-type", "application/x-www-form-urlencoded")], body.as_bytes());
        assert_eq!(r.status, 200, "token for {client}: {}", r.text());
        r.json()["access_token"].as_str().unwrap().to_string()
    }

    fn agent_token(&self) -> String {
        self.token("cairn-agent", "agent-secret", RESOURCE)
    }

    /// A token over `claims` signed with the issuer's own signing key.
    fn sign(&self, claims: &Value) -> String {
        let out = Command::new(issuer_script()).arg("sign").arg(&self.keys).arg(claims.to_string()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn urlencode(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() || b"-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// Cairn trusting the issuer by discovery, with its claim names mapped.
fn cairn_for(issuer: &Issuer, extra: &[(&'static str, &'static str)]) -> Cairn {
    require_app();
    let url: &'static str = Box::leak(issuer.url.clone().into_boxed_str());
    let mut env = vec![
        ("SPIN_VARIABLE_ISSUER", url),
        ("SPIN_VARIABLE_AUTH_ORIGIN", url),
        ("SPIN_VARIABLE_AUDIENCE", RESOURCE),
        ("SPIN_VARIABLE_TENANT_CLAIM", "org_id"),
        ("SPIN_VARIABLE_ACTOR_CLAIM", "cairn_actor"),
        ("SPIN_VARIABLE_ROLE_CLAIM", "cairn_role"),
    ];
    env.extend_from_slice(extra);
    Cairn::start(Start { env, ..Start::default() })
}

fn list_notes(cairn: &Cairn, token: &str) -> Reply {
    cairn.mcp(token, &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_notes", "arguments": {}}}))
}

fn assert_refused(r: &Reply, says: &str) {
    assert_eq!(r.status, 401, "{}", r.text());
    let challenge = r.header("www-authenticate").unwrap();
    assert!(challenge.contains("error=\"invalid_token\"") && challenge.contains("resource_metadata=\""), "{challenge}");
    assert!(r.text().contains(says), "wanted {says:?}: {}", r.text());
}

#[test]
fn an_agent_with_a_client_credentials_token_from_the_issuer_calls_tools() {
    let issuer = Issuer::new("issuer-agent");
    let cairn = cairn_for(&issuer, &[]);
    let token = issuer.agent_token();
    let r = list_notes(&cairn, &token);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["result"]["isError"], false, "{}", r.text());
    // The issuer's claims became the identity: the actor from cairn_actor
    // (an agent may not approve a note for agents, over REST as over MCP)
    // and the tenant from org_id (its note is listed there, to nobody else).
    let auth = format!("Bearer {token}");
    let approve = cairn.request("POST", "/api/v1/notes", &[("authorization", &auth)], br#"{"title":"by the issuer's agent","approved_for_agents":true}"#);
    assert_eq!((approve.status, approve.json()["error"].as_str()), (403, Some("forbidden")), "{}", approve.text());
    let made = cairn.request("POST", "/api/v1/notes", &[("authorization", &auth)], br#"{"title":"by the issuer's agent"}"#);
    assert_eq!(made.status, 201, "{}", made.text());
    assert_eq!(made.json()["approved_for_agents"], false);
}

#[test]
fn tokens_that_must_not_pass_are_refused_with_the_right_challenge() {
    let issuer = Issuer::new("issuer-refusals");
    let cairn = cairn_for(&issuer, &[]);
    let other = issuer.token("cairn-agent", "agent-secret", "http://127.0.0.1:1/other");
    assert_refused(&list_notes(&cairn, &other), "not meant for this resource");
    let expired = issuer.sign(&json!({"iss": issuer.url, "aud": RESOURCE, "sub": "late", "org_id": "acme",
        "iat": now() - 3600, "exp": now() - 600, "scope": "notes:read"}));
    assert_refused(&list_notes(&cairn, &expired), "expired");
    let stranger = cairn_auth::mint::EcKey::from_scalar([7; 32]);
    let forged = stranger.sign(&json!({"iss": issuer.url, "aud": RESOURCE, "sub": "x", "org_id": "acme", "exp": now() + 600, "scope": "notes:read"}));
    assert_refused(&list_notes(&cairn, &forged), "not signed by a trusted key");
    let no_org = issuer.token("cairn-agent-noorg", "noorg-secret", RESOURCE);
    assert_refused(&list_notes(&cairn, &no_org), "missing org_id");
}

#[test]
fn a_rotated_key_works_without_a_restart_and_a_retired_one_stops() {
    let mut issuer = Issuer::new("issuer-rotation");
    let cairn = cairn_for(&issuer, &[("SPIN_VARIABLE_JWKS_REFETCH_SECONDS", "1"), ("SPIN_VARIABLE_JWKS_CACHE_SECONDS", "3")]);
    let old = issuer.agent_token();
    assert_eq!(list_notes(&cairn, &old).status, 200);
    issuer.restart_after("rotate");
    std::thread::sleep(Duration::from_millis(1100));
    let new = issuer.agent_token();
    assert_ne!(cairn_auth::jwt::token_kid(&old), cairn_auth::jwt::token_kid(&new), "the issuer signs with the new key");
    assert_eq!(list_notes(&cairn, &new).status, 200, "a rotated-in key is fetched on its first token");
    assert_eq!(list_notes(&cairn, &old).status, 200, "the old key is still published");
    issuer.restart_after("retire");
    std::thread::sleep(Duration::from_millis(3100));
    assert_eq!(list_notes(&cairn, &new).status, 200);
    assert_refused(&list_notes(&cairn, &old), "not signed by a trusted key");
}

#[test]
fn the_cached_keys_keep_serving_while_the_issuer_is_away() {
    let mut issuer = Issuer::new("issuer-away");
    let cairn = cairn_for(&issuer, &[("SPIN_VARIABLE_JWKS_REFETCH_SECONDS", "1"), ("SPIN_VARIABLE_JWKS_CACHE_SECONDS", "1")]);
    assert_eq!(list_notes(&cairn, &issuer.agent_token()).status, 200);
    let later = issuer.sign(&json!({"iss": issuer.url, "aud": RESOURCE, "sub": "later", "org_id": "acme", "exp": now() + 600, "scope": "notes:read"}));
    issuer.stop();
    std::thread::sleep(Duration::from_millis(1200));
    let r = list_notes(&cairn, &later);
    assert_eq!(r.status, 200, "the issuer is down and the cache is stale, but its keys still verify: {}", r.text());
}

#[test]
fn with_the_issuer_away_and_no_keys_cached_a_call_is_refused_as_unavailable() {
    let mut issuer = Issuer::new("issuer-never");
    let token = issuer.agent_token();
    issuer.stop();
    let cairn = cairn_for(&issuer, &[]);
    let r = list_notes(&cairn, &token);
    assert_eq!(r.status, 503, "{}", r.text());
    assert_eq!(r.json()["error"], "issuer_unavailable");
    assert!(r.header("retry-after").is_some());
}
