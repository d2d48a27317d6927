//! `/api/v1`: notes for people, with the same guarantees as the agents'
//! tools (same core, same bearer tokens, same checks).
//!
//! | method and path | scope | what |
//! |---|---|---|
//! | `POST /api/v1/notes` | notes:write | create a note (`title`, `approved_for_agents`) |
//! | `GET /api/v1/notes/{note}` | notes:read | the note, its tabs and versions |
//! | `PUT /api/v1/notes/{note}/tabs/{tab}` | notes:write | write a tab with `expected_version`; a stale save gets 409 with the current version |
//! | `DELETE /api/v1/notes/{note}/tabs/{tab}` | notes:delete | delete a slides/sheet tab (`expected_version`) |
//! | `POST /api/v1/notes/{note}/files` | notes:write | attach file metadata |
//!
//! An `Idempotency-Key` header is used when the body carries no
//! `idempotency_key`. Browser origins are refused unless allow-listed.

use cairn_guest::auth::{Config, audit_refusal};
use cairn_guest::kv::Bucket;
use cairn_guest::notes::{GuestKv, HostEnv, identity};
use cairn_guest::respond;
use cairn_notes::rest::{self, RestReply};
use serde_json::{Value, json};
use spin_sdk::http::{Method, Request, Response};
use spin_sdk::http_component;

#[http_component]
fn handle(req: Request) -> Response {
    let bucket = Bucket::open("default").ok();
    if let Err(why) = cairn_guest::auth::check_origin(&req) {
        audit_refusal(bucket.as_ref(), None, json!({"reason": "origin", "detail": why, "api": "rest"}));
        return respond::error(403, "forbidden_origin", &why);
    }
    let cfg = match Config::load() {
        Ok(c) => c,
        Err(e) => return respond::error(500, "misconfigured", &e),
    };
    let now_s = cairn_guest::notes::now_us() / 1_000_000;
    let cache = Bucket::open("cache").ok();
    let principal = match cfg.authenticate(&req, cache.as_ref().or(bucket.as_ref()), now_s) {
        Ok(p) => p,
        Err(e) => {
            audit_refusal(bucket.as_ref(), None, json!({"reason": "token", "detail": e.to_string(), "api": "rest"}));
            return cfg.unauthorized(&e);
        }
    };
    let path = req.path().trim_end_matches('/').to_string();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let method = req.method().clone();
    let scope = match (&method, segments.as_slice()) {
        (Method::Get, ["api", "v1", "notes", _]) => cairn_auth::scopes::READ,
        (Method::Post, ["api", "v1", "notes"])
        | (Method::Put, ["api", "v1", "notes", _, "tabs", _])
        | (Method::Post, ["api", "v1", "notes", _, "files"]) => cairn_auth::scopes::WRITE,
        (Method::Delete, ["api", "v1", "notes", _, "tabs", _]) => cairn_auth::scopes::DELETE,
        (_, ["api", "v1", "notes", ..]) => return respond::error(405, "method_not_allowed", "see the API table in the README"),
        _ => return respond::error(404, "not_found", "no such route"),
    };
    if !principal.has_scope(scope) {
        audit_refusal(bucket.as_ref(), Some(&principal.tenant), json!({"reason": "scope", "scope": scope, "api": "rest"}));
        return cfg.insufficient_scope(scope);
    }
    let mut body: Value = if req.body().is_empty() {
        json!({})
    } else {
        match serde_json::from_slice(req.body()) {
            Ok(v @ Value::Object(_)) => v,
            _ => return respond::error(400, "invalid_body", "the body must be a JSON object"),
        }
    };
    if let Some(key) = req.header("idempotency-key").and_then(|v| v.as_str()) {
        if body.get("idempotency_key").is_none() && !matches!(method, Method::Post if segments.len() == 3) {
            body["idempotency_key"] = json!(key);
        }
    }
    let kv = match GuestKv::open() {
        Ok(kv) => kv,
        Err(e) => return respond::error(500, "store_unavailable", &e.to_string()),
    };
    let who = identity(&principal);
    let env = &mut HostEnv;
    let reply = match (&method, segments.as_slice()) {
        (Method::Post, [_, _, _]) => rest::create_note(&kv, env, &who, body),
        (Method::Get, [_, _, _, note]) => rest::get_note(&kv, &who, note),
        (Method::Put, [_, _, _, note, _, tab]) => rest::write_tab(&kv, env, &who, note, tab, body),
        (Method::Delete, [_, _, _, note, _, tab]) => rest::delete_tab(&kv, env, &who, note, tab, body),
        (Method::Post, [_, _, _, note, _]) => rest::attach_file(&kv, env, &who, note, body),
        _ => return respond::error(404, "not_found", "no such route"),
    };
    match reply {
        Ok(RestReply { status, body }) => respond::json(status, &body),
        Err(e) => respond::error(500, "store_failed", &e.to_string()),
    }
}
