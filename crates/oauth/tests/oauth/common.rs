//! A server over a memory store, with a clock and randomness the test moves.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use cairn_auth::mint::LocalKey;
use cairn_auth::{Actor, Principal, Role};
use cairn_kv::faults::{Control, Faulty};
use cairn_kv::memory::MemoryStore;
use cairn_oauth::{Reply, Request, Route, Server, Settings};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::cell::Cell;
use std::collections::BTreeMap;

pub const ISSUER: &str = "http://127.0.0.1:3000";
pub const RESOURCE: &str = "http://127.0.0.1:3000/mcp";
pub const CALLBACK: &str = "http://127.0.0.1:9000/callback";

pub struct World {
    /// A memory store behind the fault switches ([`World::faults`]).
    pub store: Faulty,
    pub faults: std::sync::Arc<Control>,
    pub settings: Settings,
    pub key: LocalKey,
    pub now: Cell<u64>,
    counter: Cell<u64>,
}

impl World {
    pub fn new() -> Self {
        let get = |n: &str| (n == "audience").then(|| RESOURCE.to_string());
        let settings = Settings::of(&cairn_config::Config::read(&get, &[]).unwrap()).unwrap();
        let (store, faults) = Faulty::new(std::sync::Arc::new(MemoryStore::new()));
        World {
            store,
            faults,
            settings,
            key: LocalKey::from_seed([7; 32]),
            now: Cell::new(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()),
            counter: Cell::new(1),
        }
    }

    pub fn later(&self, seconds: u64) {
        self.now.set(self.now.get() + seconds);
    }

    pub fn serve(&self, route: Route, req: &Request, person: Option<&Principal>, document: Option<Result<Vec<u8>, String>>) -> Reply {
        let random = || {
            let n = self.counter.get();
            self.counter.set(n + 1);
            n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x1234_5678
        };
        Server { store: &self.store, settings: &self.settings, key: &self.key, now: self.now.get(), random: &random }.serve(route, req, person, document)
    }

    pub fn get(&self, route: Route, query: &str, person: Option<&Principal>) -> Reply {
        self.serve(route, &Request { query, ..Request::default() }, person, None)
    }

    pub fn json(&self, route: Route, body: &Value, person: Option<&Principal>) -> Reply {
        let body = body.to_string();
        self.serve(route, &Request { body: body.as_bytes(), content_type: Some("application/json"), ..Request::default() }, person, None)
    }

    pub fn form(&self, route: Route, pairs: &[(&str, &str)]) -> Reply {
        let body = query(pairs);
        self.serve(route, &Request { body: body.as_bytes(), content_type: Some("application/x-www-form-urlencoded"), ..Request::default() }, None, None)
    }

    /// Registers a client with one redirect URI; its id.
    pub fn register(&self, name: &str) -> String {
        let r = self.json(Route::Register, &serde_json::json!({"redirect_uris": [CALLBACK], "client_name": name}), None);
        assert_eq!(r.status, 201, "{}", text(&r));
        body(&r)["client_id"].as_str().unwrap().to_string()
    }

    /// The authorize answer for `client_id` with a fresh PKCE pair: the
    /// reply and the verifier.
    pub fn authorize(&self, client_id: &str, extra: &[(&str, &str)], cookie: Option<&str>, document: Option<Result<Vec<u8>, String>>) -> (Reply, String) {
        let (verifier, challenge) = pkce();
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", client_id),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("state", "s-1"),
        ];
        pairs.extend_from_slice(extra);
        let q = query(&pairs);
        (self.serve(Route::Authorize, &Request { query: &q, cookie, ..Request::default() }, None, document), verifier)
    }

    /// Through consent to a code for `client_id`, approved by `person`: (code, verifier).
    pub fn approved_code(&self, client_id: &str, person: &Principal) -> (String, String) {
        let (r, verifier) = self.authorize(client_id, &[("redirect_uri", CALLBACK)], None, None);
        let request = consent_request(&r);
        let a = self.json(Route::ConsentAnswer, &serde_json::json!({"request": request, "approve": true}), Some(person));
        assert_eq!(a.status, 200, "{}", text(&a));
        let to = body(&a)["redirect_to"].as_str().unwrap().to_string();
        (params_of(&to)["code"].clone(), verifier)
    }

    /// Code exchanged: the token answer.
    pub fn exchange(&self, client_id: &str, code: &str, verifier: &str) -> Reply {
        self.form(
            Route::Token,
            &[("grant_type", "authorization_code"), ("code", code), ("client_id", client_id), ("redirect_uri", CALLBACK), ("code_verifier", verifier)],
        )
    }

    pub fn refresh(&self, client_id: &str, token: &str) -> Reply {
        self.form(Route::Token, &[("grant_type", "refresh_token"), ("refresh_token", token), ("client_id", client_id)])
    }
}

/// A person as the editor's token names them: every scope a person holds.
pub fn person(name: &str, role: Role) -> Principal {
    let scopes = cairn_oauth::PERSON_SCOPES.iter().map(|s| s.to_string()).collect();
    Principal { tenant: "acme".into(), subject: name.to_lowercase(), name: name.into(), actor: Actor::Human, role, scopes, exp: u64::MAX }
}

pub fn agent() -> Principal {
    Principal { tenant: "acme".into(), subject: "bot".into(), name: "Bot".into(), actor: Actor::Agent, role: Role::Member, scopes: vec![], exp: u64::MAX }
}

pub fn pkce() -> (String, String) {
    let verifier = "a-verifier-of-forty-three-or-more-characters-0123456789".to_string();
    let challenge = B64.encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

pub fn query(pairs: &[(&str, &str)]) -> String {
    pairs.iter().map(|(k, v)| format!("{k}={}", cairn_oauth::wire::encode(v))).collect::<Vec<_>>().join("&")
}

pub fn text(r: &Reply) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

pub fn body(r: &Reply) -> Value {
    serde_json::from_slice(&r.body).unwrap_or(Value::Null)
}

pub fn header<'a>(r: &'a Reply, name: &str) -> Option<&'a str> {
    r.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

/// The query parameters of a URL.
pub fn params_of(url: &str) -> BTreeMap<String, String> {
    cairn_oauth::wire::params(url.split_once('?').map_or("", |(_, q)| q)).unwrap()
}

/// The error page of a refused authorization (never a redirect): its text.
pub fn error_page(r: &Reply) -> String {
    assert!((400..500).contains(&r.status), "{}: {}", r.status, text(r));
    assert!(r.content_type.starts_with("text/html") && header(r, "location").is_none(), "a refusal was sent away: {:?}", header(r, "location"));
    text(r)
}

/// Every key of the `default` store under `prefix`.
pub fn keys_under(w: &World, prefix: &str) -> Vec<String> {
    use cairn_kv::Store;
    w.store.list_prefix("default", prefix, None, 100_000).unwrap()
}

/// The sealed consent request an authorize answer sends the editor.
pub fn consent_request(r: &Reply) -> String {
    assert_eq!(r.status, 302, "{}", text(r));
    let to = header(r, "location").unwrap();
    to.split_once("/#/consent/").unwrap_or_else(|| panic!("not a consent redirect: {to}")).1.to_string()
}

/// The claims of a JWT, unverified (the router verifies; here we read).
pub fn claims(jwt: &str) -> Value {
    serde_json::from_slice(&B64.decode(jwt.split('.').nth(1).unwrap()).unwrap()).unwrap()
}
