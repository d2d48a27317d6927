//! The whole application with test credentials: a test signing key whose
//! JWKS is handed to the router and REST components through
//! `SPIN_VARIABLE_JWKS`, tokens minted per test, an MCP and REST client.

use crate::harness::*;
use cairn_auth::mint::{LocalKey, TokenSpec};
use cairn_auth::{Actor, Role};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};

/// The issuer the tests' tokens carry.
pub const ISSUER: &str = "https://issuer.test";

/// The trusted test key.
pub fn key() -> LocalKey {
    LocalKey::from_seed([7u8; 32])
}

/// A key nobody trusts.
pub fn stranger() -> LocalKey {
    LocalKey::from_seed([9u8; 32])
}

/// Every component built: the router, the REST API and every tool of the
/// core's table.
pub fn require_app() {
    let mut wasm: Vec<String> = vec!["router.wasm".into(), "rest.wasm".into()];
    wasm.extend(cairn_notes::tools::TOOLS.iter().map(|t| format!("{}.wasm", t.name)));
    require_built(&wasm.iter().map(String::as_str).collect::<Vec<_>>());
}

/// Start the application with the test key and extra environment.
pub fn start_with(env: Vec<(&str, &str)>, args: Vec<&str>) -> Cairn {
    require_app();
    let jwks = key().jwks();
    let jwks: &'static str = Box::leak(jwks.into_boxed_str());
    let mut all = vec![("SPIN_VARIABLE_JWKS", jwks), ("SPIN_VARIABLE_ISSUER", ISSUER)];
    all.extend(env);
    Cairn::start(Start { env: all, args, ..Start::default() })
}

/// Start the application with defaults.
pub fn start() -> Cairn {
    start_with(vec![], vec![])
}

/// Who a token is for.
pub struct Who<'a> {
    pub tenant: &'a str,
    pub sub: &'a str,
    pub actor: Actor,
    pub role: Role,
    pub scope: &'a str,
}

/// An agent of tenant `acme` with read and write.
pub fn agent() -> Who<'static> {
    Who { tenant: "acme", sub: "agent-1", actor: Actor::Agent, role: Role::Member, scope: "notes:read notes:write" }
}

/// A person of tenant `acme` with every scope.
pub fn person() -> Who<'static> {
    Who { tenant: "acme", sub: "ada", actor: Actor::Human, role: Role::Member, scope: "notes:read notes:write notes:delete" }
}

impl Who<'_> {
    /// The token of `who` for `issuer` and `audience`, valid ten minutes from now.
    pub fn spec(&self, issuer: &str, audience: &str) -> TokenSpec {
        TokenSpec {
            issuer: issuer.into(),
            audience: audience.into(),
            tenant: self.tenant.into(),
            subject: self.sub.into(),
            name: Some(format!("{} ({})", self.sub, self.tenant)),
            actor: self.actor,
            role: self.role,
            scope: self.scope.into(),
            now: now(),
            ttl: 600,
        }
    }
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

impl Cairn {
    /// The audience tokens must carry.
    pub fn audience(&self) -> String {
        self.audience.clone().unwrap_or_else(|| format!("http://{}/mcp", self.addr))
    }

    /// The claims of a valid token for `who`.
    pub fn claims(&self, who: &Who) -> Value {
        who.spec(ISSUER, &self.audience()).claims()
    }

    /// A valid token for `who`.
    pub fn token(&self, who: &Who) -> String {
        key().sign(&self.claims(who))
    }

    /// POST a JSON-RPC body to /mcp.
    pub fn mcp(&self, token: &str, body: &Value) -> Reply {
        let auth = format!("Bearer {token}");
        self.request(
            "POST",
            "/mcp",
            &[("authorization", &auth), ("content-type", "application/json"), ("accept", "application/json, text/event-stream")],
            body.to_string().as_bytes(),
        )
    }

    /// `tools/call`, returning the CallToolResult (panics on a JSON-RPC
    /// error, or on a structuredContent outside the tool's `outputSchema`).
    pub fn call(&self, token: &str, tool: &str, args: Value) -> Value {
        static ID: AtomicU64 = AtomicU64::new(1);
        let id = ID.fetch_add(1, Ordering::SeqCst);
        let r = self.mcp(token, &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}}));
        assert_eq!(r.status, 200, "{tool}: {}", r.text());
        let v = r.json();
        assert!(v.get("error").is_none(), "{tool}: {v}");
        assert_valid_output(tool, &v["result"]);
        v["result"].clone()
    }

    /// A REST call with a JSON body.
    pub fn rest(&self, token: &str, method: &str, path: &str, body: Option<&Value>) -> Reply {
        let auth = format!("Bearer {token}");
        let text = body.map(|b| b.to_string()).unwrap_or_default();
        self.request(method, path, &[("authorization", &auth), ("content-type", "application/json")], text.as_bytes())
    }

    /// Create a note through REST as `who`; returns its id.
    pub fn create_note(&self, who: &Who, title: &str, approved: bool) -> String {
        let r = self.rest(&self.token(who), "POST", "/api/v1/notes", Some(&json!({"title": title, "approved_for_agents": approved})));
        assert_eq!(r.status, 201, "{}", r.text());
        r.json()["note_id"].as_str().unwrap().to_string()
    }
}

/// Panics unless a CallToolResult's structuredContent validates against the
/// published `outputSchema` of `tool` (success and refusal alike).
pub fn assert_valid_output(tool: &str, result: &Value) {
    use std::collections::HashMap;
    use std::sync::OnceLock;
    static VALIDATORS: OnceLock<HashMap<&'static str, jsonschema::Validator>> = OnceLock::new();
    let validators = VALIDATORS.get_or_init(|| {
        cairn_notes::tools::TOOLS.iter().map(|t| (t.name, jsonschema::validator_for(&(t.output_schema)()).expect("a valid output schema"))).collect()
    });
    let Some(v) = validators.get(tool) else { return };
    let content = &result["structuredContent"];
    if let Err(e) = v.validate(content) {
        panic!("{tool}: structuredContent does not match its outputSchema at {}: {e}\n{content}", e.instance_path());
    }
}
