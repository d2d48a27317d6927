//! `/api/v1`: notes for people, with the same guarantees as the agents'
//! tools (same core, same bearer tokens, same checks).
//!
//! | method and path | scope | what |
//! |---|---|---|
//! | `POST /api/v1/notes` | notes:write | create a note (`title`, `approved_for_agents`) |
//! | `GET /api/v1/notes?cursor=&limit=` | notes:read | the notes you can see (the `list_notes` tool) |
//! | `GET /api/v1/notes/{note}` | notes:read | the note, its tabs and versions |
//! | `PATCH /api/v1/notes/{note}` | notes:write | approve for agents (`approved_for_agents`) and/or rename (`title`) with `expected_version` |
//! | `GET /api/v1/notes/{note}/tabs/{tab}[?at_version=]` | notes:read | a tab's content (the `read_note_tab` tool) |
//! | `GET /api/v1/notes/{note}/tabs/{tab}/range?range=A1:C3[&sheet_id=]` | notes:read | sheet cells (the `read_sheet_range` tool) |
//! | `POST /api/v1/notes/{note}/tabs/{tab}/edit` | notes:write | any `edit_note_tab` operation (the tool's arguments, ids from the path) |
//! | `POST /api/v1/notes/{note}/tabs` | notes:write | a new slides or sheet tab (the `create_note_tab` tool): 201 |
//! | `POST /api/v1/notes/{note}/sources` | notes:write | cite a page (the `add_note_source` tool): 201 added, 200 already attached |
//! | `GET /api/v1/notes/{note}/attachments[?kind=&cursor=&limit=]` | notes:read | files and sources, metadata only (the `list_note_attachments` tool) |
//! | `PUT /api/v1/notes/{note}/tabs/{tab}` | notes:write | write a tab with `expected_version`; a stale save gets 409 with the current version |
//! | `PATCH /api/v1/notes/{note}/tabs/{tab}` | notes:write | rename a slides/sheet tab (`label`) and/or move a tab (`position`, 0-based) with `expected_version`; the tab keeps its id |
//! | `DELETE /api/v1/notes/{note}/tabs/{tab}` | notes:delete | delete a slides/sheet tab (`expected_version`) |
//! | `POST /api/v1/notes/{note}/files` | notes:write | attach file metadata |
//! | `POST /api/v1/notes/{note}/claims` | notes:write | claim the note or a tab (`tab_id`, `ttl_seconds`): 201 granted, 200 renewed (heartbeat), 409 held by someone else |
//! | `GET /api/v1/claims[?note_id=…]` | notes:read | presence: the live claims of your tenant |
//! | `GET /api/v1/search?q=…[&tab_type=&limit=&cursor=]` | notes:read | full-text search (the `search_notes` tool) |
//! | `POST /api/v1/claims/{claim}/renew` | notes:write | extend a live claim you hold |
//! | `DELETE /api/v1/claims/{claim}` | notes:write | release (idempotent) |
//! | `POST /api/v1/claims/{claim}/notes` | notes:write | post an ephemeral claim note (`text` ≤ 2,000) |
//! | `POST /api/v1/claims/{claim}/force-release` | notes:write | people with role admin only (a role check, not a scope) |
//!
//! Operators (not tenants): `POST /api/v1/sweep-claims?tenant=a&tenant=b`
//! with `Authorization: Bearer <sweep_token>` releases lapsed claims with
//! reason `expired`, sweeps history past retention
//! ([`cairn_notes::sweep_history`]), runs a round of the search merge
//! ([`cairn_notes::search::merge`]) and drops the `cache` store's expired
//! records, for Spin deployments where an external scheduler calls it every
//! minute (the embedded host does all of it by itself);
//! `GET /api/v1/operator/refusals` reads the refusal summary. Both are 404
//! while the `sweep_token` variable is empty.
//!
//! Every call passes the front door first ([`cairn_guest::door`]) and
//! counts against its subject's budget, shared with the subject's MCP
//! messages: an agent gets nothing more here than over MCP.
//!
//! An `Idempotency-Key` header is used when the body carries no
//! `idempotency_key`. Browser origins are refused unless allow-listed.

use cairn_guest::door::Gate;
use cairn_guest::kv::GuestStore;
use cairn_guest::notes::{HostEnv, identity};
use cairn_guest::respond;
use cairn_notes::rest::{self, RestReply};
use serde_json::{Value, json};
use spin_sdk::http::{Method, Request, Response};
use spin_sdk::http_component;

#[http_component]
async fn handle(req: Request) -> Response {
    let gate = match Gate::open() {
        Ok(g) => g,
        Err(r) => return r,
    };
    if req.path().trim_end_matches('/').starts_with("/api/v1/operator/") || req.path().trim_end_matches('/') == "/api/v1/sweep-claims" {
        if let Err(r) = gate.screen(&req) {
            return r;
        }
        return operator(&gate, &req);
    }
    // The front door: limits, origin, the address's budget, the token.
    let admitted = match gate.admit(&req).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let principal = &admitted.principal;
    let path = req.path().trim_end_matches('/').to_string();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let method = req.method().clone();
    let scope = match (&method, segments.as_slice()) {
        (Method::Get, ["api", "v1", "notes"] | ["api", "v1", "notes", _])
        | (Method::Get, ["api", "v1", "notes", _, "history" | "attachments"])
        | (Method::Get, ["api", "v1", "notes", _, "tabs", _] | ["api", "v1", "notes", _, "tabs", _, "range" | "diff"])
        | (Method::Get, ["api", "v1", "notes", _, "tabs", _, "versions", _]) => cairn_notes::scopes::READ,
        (Method::Post, ["api", "v1", "notes", _, "tabs", _, "restore" | "edit"]) => cairn_notes::scopes::WRITE,
        (Method::Post, ["api", "v1", "notes", _, "tabs", _, "merge"]) => cairn_notes::scopes::READ,
        (Method::Post, ["api", "v1", "notes"])
        | (Method::Patch, ["api", "v1", "notes", _])
        | (Method::Put | Method::Patch, ["api", "v1", "notes", _, "tabs", _])
        | (Method::Post, ["api", "v1", "notes", _, "files" | "tabs" | "sources"]) => cairn_notes::scopes::WRITE,
        (Method::Delete, ["api", "v1", "notes", _, "tabs", _]) => cairn_notes::scopes::DELETE,
        (Method::Get, ["api", "v1", "claims" | "search"]) => cairn_notes::scopes::READ,
        (Method::Get, ["api", "v1", "audit"]) => cairn_notes::scopes::AUDIT,
        (Method::Post, ["api", "v1", "notes", _, "claims"])
        | (Method::Post, ["api", "v1", "claims", _, "renew" | "notes" | "force-release"])
        | (Method::Delete, ["api", "v1", "claims", _]) => cairn_notes::scopes::WRITE,
        (_, ["api", "v1", "claims", ..]) => return respond::error(405, "method_not_allowed", "see the route table in docs/rest.md"),
        (_, ["api", "v1", "notes", ..]) => return respond::error(405, "method_not_allowed", "see the route table in docs/rest.md"),
        _ => return respond::error(404, "not_found", "no such route"),
    };
    // The subject's budget (shared with its MCP messages), then the scope.
    if let Err(r) = gate.charge(principal, 1, "rest") {
        return r;
    }
    if let Err(r) = gate.require(&admitted, scope, "rest") {
        return r;
    }
    let started = std::time::Instant::now();
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
    let response = dispatch(&req, principal, &method, &segments, scope, body);
    gate.charge_work(principal, started);
    response
}

/// The route's operation, on the body (an object), for `principal`.
fn dispatch(req: &Request, principal: &cairn_auth::Principal, method: &Method, segments: &[&str], scope: &str, body: Value) -> Response {
    let kv = GuestStore::new();
    let who = identity(principal);
    let env = &mut HostEnv;
    let q = query(req.query());
    let get = |k: &str| q.get(k).map(String::as_str);
    let reply = match (method, segments) {
        (Method::Post, [_, _, _]) => rest::create_note(&kv, env, &who, body),
        (Method::Get, [_, _, "notes"]) => rest::list_notes(&kv, env, &who, get("cursor"), get("limit")),
        (Method::Get, [_, _, _, note]) => rest::get_note(&kv, &who, note),
        (Method::Patch, [_, _, "notes", note]) => rest::update_note(&kv, env, &who, note, body),
        (Method::Get, [_, _, "notes", note, "tabs", tab]) => rest::read_tab(&kv, env, &who, note, tab, get("at_version")),
        (Method::Get, [_, _, "notes", note, "tabs", tab, "range"]) => rest::read_range(&kv, env, &who, note, tab, get("range"), get("sheet_id")),
        (Method::Post, [_, _, "notes", note, "tabs", tab, "edit"]) => rest::edit_tab(&kv, env, &who, note, tab, body),
        (Method::Post, [_, _, "notes", note, "tabs"]) => rest::create_tab(&kv, env, &who, note, body),
        (Method::Post, [_, _, "notes", note, "sources"]) => rest::add_source(&kv, env, &who, note, body),
        (Method::Get, [_, _, "notes", note, "attachments"]) => rest::list_attachments(&kv, env, &who, note, get("kind"), get("cursor"), get("limit")),
        (Method::Put, [_, _, _, note, _, tab]) => rest::write_tab(&kv, env, &who, note, tab, body),
        (Method::Patch, [_, _, _, note, _, tab]) => rest::update_tab(&kv, env, &who, note, tab, body),
        (Method::Delete, [_, _, _, note, _, tab]) => rest::delete_tab(&kv, env, &who, note, tab, body),
        (Method::Post, [_, _, "notes", note, "files"]) => rest::attach_file(&kv, env, &who, note, body),
        (Method::Get, [_, _, "notes", note, "history"]) => rest::note_history(&kv, env, &who, note, get("tab_id"), get("before"), get("limit")),
        (Method::Get, [_, _, "notes", note, "tabs", tab, "versions", v]) => rest::tab_version(&kv, env, &who, note, tab, v),
        (Method::Get, [_, _, "notes", note, "tabs", tab, "diff"]) => rest::tab_diff(&kv, env, &who, note, tab, get("from"), get("to")),
        (Method::Post, [_, _, "notes", note, "tabs", tab, "restore"]) => rest::restore_tab(&kv, env, &who, note, tab, body),
        (Method::Post, [_, _, "notes", note, "tabs", tab, "merge"]) => rest::merge_draft(&kv, env, &who, note, tab, body),
        (Method::Post, [_, _, "notes", note, "claims"]) => rest::claim_note(&kv, env, &who, note, body),
        (Method::Get, [_, _, "audit"]) => rest::audit(&kv, env, &who, get("note_id"), get("since"), get("cursor"), get("limit")),
        (Method::Get, [_, _, "claims"]) => rest::list_claims(&kv, env, &who, get("note_id")),
        (Method::Get, [_, _, "search"]) => rest::search(&kv, env, &who, get("q"), get("tab_type"), get("limit"), get("cursor")),
        (Method::Post, [_, _, "claims", claim, "renew"]) => rest::renew_claim(&kv, env, &who, claim, body),
        (Method::Post, [_, _, "claims", claim, "notes"]) => rest::post_claim_note(&kv, env, &who, claim, body),
        (Method::Post, [_, _, "claims", claim, "force-release"]) => rest::force_release_claim(&kv, env, &who, claim),
        (Method::Delete, [_, _, "claims", claim]) => rest::release_claim(&kv, env, &who, claim),
        _ => return respond::error(404, "not_found", "no such route"),
    };
    // Refused writes go into the audit trail (reads, merge included, write nothing).
    // The routes served by a write tool (edit, new tab, source) are recorded by the tool
    // call itself, under the tool's name.
    let by_tool = matches!((method, segments), (Method::Post, [_, _, "notes", _, "tabs" | "sources"] | [_, _, "notes", _, "tabs", _, "edit"]));
    if scope != cairn_notes::scopes::READ
        && scope != cairn_notes::scopes::AUDIT
        && !by_tool
        && let Ok(r) = &reply
    {
        let note = match segments {
            [_, _, "notes", note, ..] => Some(*note),
            _ => None,
        };
        let route = format!("{} /{}", method_name(method), route_pattern(segments));
        rest::record_refusal(&kv, env, &who, &route, note, r);
    }
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
fn operator(gate: &Gate, req: &Request) -> Response {
    let Some(token) = cairn_guest::variable("sweep_token") else {
        return respond::error(404, "not_found", "no such route");
    };
    match respond::bearer(req) {
        Some(t) if cairn_guest::constant_time_eq(t.as_bytes(), token.as_bytes()) => {}
        _ => return respond::error(401, "unauthorized", "operator routes need the operator's sweep_token"),
    }
    let now_s = cairn_guest::notes::now_us() / 1_000_000;
    if req.path().trim_end_matches('/') == "/api/v1/operator/refusals" {
        let minutes = query(req.query()).get("minutes").and_then(|m| m.parse::<u64>().ok()).unwrap_or(10).clamp(1, gate.settings().window_minutes);
        return match cairn_guest::cairn_door::summary::read(gate.cache(), now_s, minutes, 20, 20_000) {
            Ok(s) => respond::json(200, &s.to_json()),
            Err(e) => respond::error(503, "unavailable", &format!("the cache store cannot be read: {e}")),
        };
    }
    let kv = GuestStore::new();
    let mut released = serde_json::Map::new();
    let mut history = serde_json::Map::new();
    let mut search = serde_json::Map::new();
    for tenant in req.query().split('&').filter_map(|p| p.strip_prefix("tenant=")) {
        match cairn_notes::sweep_expired_claims(&kv, &mut HostEnv, tenant) {
            Ok(n) => released.insert(tenant.to_string(), json!(n)),
            Err(e) => return respond::error(400, "sweep_failed", &format!("tenant {tenant}: {e}")),
        };
        match cairn_notes::sweep_history(&kv, &mut HostEnv, tenant) {
            Ok(h) => history.insert(tenant.to_string(), json!({"notes": h.notes, "entries": h.entries, "blobs": h.blobs, "idempotency": h.idempotency, "audit": h.audit, "stored_bytes": h.bytes})),
            Err(e) => return respond::error(400, "sweep_failed", &format!("tenant {tenant}: history: {e}")),
        };
        match cairn_notes::search::merge(&kv, &mut HostEnv, tenant, cairn_notes::search::MERGE_BUDGET) {
            Ok(m) => search.insert(tenant.to_string(), json!({"merged": m.transitions, "still_dirty": m.still_dirty})),
            Err(e) => return respond::error(400, "sweep_failed", &format!("tenant {tenant}: search merge: {e}")),
        };
    }
    let cache = cairn_guest::sweep_cache(gate, now_s);
    respond::json(200, &json!({"released": released, "history": history, "search": search, "cache": cache}))
}

/// The query string's parameters (`a=1&b=2`), percent-decoded (`A1%3AC3` is `A1:C3`).
fn query(q: &str) -> std::collections::BTreeMap<String, String> {
    form_urlencoded::parse(q.as_bytes()).into_owned().collect()
}

fn method_name(m: &Method) -> &'static str {
    match m {
        Method::Get => "GET",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Patch => "PATCH",
        Method::Delete => "DELETE",
        _ => "OTHER",
    }
}

/// The route a path matched, with its ids replaced (`api/v1/notes/{note}/tabs/{tab}`),
/// so the audit trail names routes, not values.
fn route_pattern(segments: &[&str]) -> String {
    segments
        .iter()
        .enumerate()
        .map(|(i, s)| match (i, segments.get(i.wrapping_sub(1))) {
            (_, Some(&"notes")) => "{note}",
            (_, Some(&"tabs")) => "{tab}",
            (_, Some(&"claims")) => "{claim}",
            (_, Some(&"versions")) => "{version}",
            _ => s,
        })
        .collect::<Vec<_>>()
        .join("/")
}
