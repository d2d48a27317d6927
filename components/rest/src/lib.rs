//! `/api/v1`: notes for people, with the same guarantees as the agents'
//! tools (same core, same bearer tokens, same checks).
//!
//! The routes, each with its scope and what it does, are one table in the
//! core: [`cairn_notes::rest::ROUTES`] (and `docs/rest.md` for readers).
//! This component is the front door around it: the door, the route, the
//! route's scope, the route's answer.
//!
//! Operators (not tenants): `POST /api/v1/sweep-claims?tenant=a&tenant=b`
//! with `Authorization: Bearer <sweep_token>` releases lapsed claims with
//! reason `expired`, sweeps history past retention
//! ([`cairn_notes::sweep_history`]), runs a round of the search merge
//! ([`cairn_notes::search::merge`]), deletes the authorization server's
//! spent or expired links, sessions and grants ([`cairn_oauth::sweep`]) and
//! drops the `cache` store's expired records, for Spin deployments where an
//! external scheduler calls it every minute (the embedded host does all of
//! it by itself);
//! `GET /api/v1/operator/refusals` reads the refusal summary. Both are 404
//! while the `sweep_token` variable is empty; a wrong token is a refusal
//! counted against the client address's budget, as at every door.
//!
//! Every call passes the front door first ([`cairn_guest::door`]) and
//! counts against its subject's budget, shared with the subject's MCP
//! messages: an agent gets nothing more here than over MCP.
//!
//! A route that streams (the editor's `events`) answers with Server-Sent
//! Events (`events`), under one of the subject's stream leases.
//!
//! An `Idempotency-Key` header is used when the body carries no
//! `idempotency_key`. Browser origins are refused unless allow-listed.

mod events;

use cairn_guest::cairn_door::{Code, Refusal};
use cairn_guest::door::FrontDoor;
use cairn_guest::http::{Request, Response};
use cairn_guest::kv::GuestStore;
use cairn_guest::notes::{HostEnv, identity};
use cairn_guest::respond;
use cairn_notes::rest::{self, Incoming, NoRoute, RestReply};
use serde_json::json;

#[spin_sdk::http_service]
async fn handle(req: spin_sdk::http::Request) -> Response {
    cairn_guest::config::run_as(cairn_guest::cairn_config::Reader::Rest);
    let front = match FrontDoor::open() {
        Ok(g) => g,
        Err(r) => return r,
    };
    let req = match front.read(req).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    let path = req.path().trim_end_matches('/');
    if path.starts_with("/api/v1/operator/") || path == "/api/v1/sweep-claims" {
        if let Err(r) = front.screen(&req) {
            return r;
        }
        return operator(&front, &req);
    }
    // The front door: limits, origin, the address's budget, the token.
    let admitted = match front.admit(&req).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let principal = &admitted.principal;
    let (route, params) = match rest::route(req.method().as_ref(), req.path()) {
        Ok(found) => found,
        Err(NoRoute::NotFound) => return respond::error(404, "not_found", "no such route"),
        Err(NoRoute::MethodNotAllowed { allow }) => {
            let mut r = respond::error(405, "method_not_allowed", "see the route table in docs/rest.md");
            r.set_header("allow", &allow.join(", "));
            return r;
        }
    };
    // The subject's budget (shared with its MCP messages), then the route's scope.
    if let Err(r) = front.charge(principal, 1, "rest") {
        return r;
    }
    if let Err(r) = front.require(&admitted, route.scope, "rest") {
        return r;
    }
    let query = query(req.query());
    if route.streams() {
        return events::open(&front, principal, req.path(), query);
    }
    let started = std::time::Instant::now();
    let idempotency_key = req.header("idempotency-key");
    let incoming = Incoming { params, query: &query, body: req.body(), idempotency_key };
    let reply = route.serve(&GuestStore::new(), &mut HostEnv, &identity(principal), incoming);
    front.charge_work(principal, started);
    match reply {
        Ok(RestReply { status, body }) => respond::json(status, &body),
        Err(e) => respond::failure(&e),
    }
}

/// Operators' routes, for the bearer of the `sweep_token` variable (404
/// while it is empty):
/// - `POST /api/v1/sweep-claims?tenant=a&tenant=b`: lapsed claims, history
///   past retention and a round of the search merge, per tenant, and the
///   `cache` store's expired records, for hosts without their own timer;
/// - `GET /api/v1/operator/refusals[?minutes=]`: the summary of refusals
///   before authentication (per code, the busiest addresses).
fn operator(front: &FrontDoor, req: &Request) -> Response {
    let Some(token) = cairn_guest::config::config().ok().and_then(|c| c.operators.sweep_token.as_deref()) else {
        return respond::error(404, "not_found", "no such route");
    };
    match respond::bearer(req) {
        Some(t) if cairn_guest::constant_time_eq(t.as_bytes(), token.as_bytes()) => {}
        // Counted against the address's budget: a token is not guessed faster than it allows.
        _ => {
            let refusal = Refusal::new(Code::Unauthorized, "operator routes need the operator's sweep_token");
            return cairn_guest::door::respond(&front.door().refused(&cairn_guest::door::arrival(req), refusal));
        }
    }
    let now_s = cairn_guest::notes::now_us() / 1_000_000;
    if req.path().trim_end_matches('/') == "/api/v1/operator/refusals" {
        let minutes = query(req.query()).get("minutes").and_then(|m| m.parse::<u64>().ok()).unwrap_or(10).clamp(1, front.settings().window_minutes);
        return match cairn_guest::cairn_door::summary::read(front.cache(), now_s, minutes, 20, 20_000) {
            Ok(s) => respond::json(200, &s.to_json()),
            Err(e) => respond::error(503, "unavailable", &format!("the cache store cannot be read: {e}")),
        };
    }
    let kv = GuestStore::new();
    let mut released = serde_json::Map::new();
    let mut history = serde_json::Map::new();
    let mut search = serde_json::Map::new();
    let mut oauth = serde_json::Map::new();
    for tenant in req.query().split('&').filter_map(|p| p.strip_prefix("tenant=")) {
        match cairn_notes::sweep_expired_claims(&kv, &mut HostEnv, tenant) {
            Ok(n) => released.insert(tenant.to_string(), json!(n)),
            Err(e) => return respond::error(400, "sweep_failed", &format!("tenant {tenant}: {e}")),
        };
        match cairn_notes::sweep_history(&kv, &mut HostEnv, tenant) {
            Ok(h) => history.insert(
                tenant.to_string(),
                json!({"notes": h.notes, "entries": h.entries, "blobs": h.blobs, "idempotency": h.idempotency, "audit": h.audit, "stored_bytes": h.bytes}),
            ),
            Err(e) => return respond::error(400, "sweep_failed", &format!("tenant {tenant}: history: {e}")),
        };
        match cairn_notes::search::merge(&kv, &mut HostEnv, tenant, cairn_notes::search::MERGE_BUDGET) {
            Ok(m) => search.insert(tenant.to_string(), json!({"merged": m.transitions, "still_dirty": m.still_dirty})),
            Err(e) => return respond::error(400, "sweep_failed", &format!("tenant {tenant}: search merge: {e}")),
        };
        match cairn_oauth::sweep::tenant(&kv, tenant, now_s, cairn_oauth::sweep::BUDGET) {
            Ok(o) => oauth.insert(tenant.to_string(), json!({"sessions": o.sessions, "grants": o.grants, "index_entries": o.index_entries})),
            Err(e) => return respond::error(400, "sweep_failed", &format!("tenant {tenant}: sign-in records: {e}")),
        };
    }
    let links = cairn_oauth::sweep::links(&kv, now_s, cairn_oauth::sweep::BUDGET).map_err(|e| e.to_string());
    oauth.insert("links".into(), links.map_or_else(|e| json!({"error": e}), |n| json!(n)));
    let cache = cairn_guest::sweep_cache(front, now_s);
    respond::json(200, &json!({"released": released, "history": history, "search": search, "oauth": oauth, "cache": cache}))
}

/// The query string's parameters (`a=1&b=2`), percent-decoded (`A1%3AC3` is `A1:C3`).
fn query(q: &str) -> rest::Query {
    form_urlencoded::parse(q.as_bytes()).into_owned().collect()
}
