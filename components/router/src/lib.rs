//! The router: the only door agents use.
//!
//! - `POST /mcp`: MCP over Streamable HTTP, stateless, JSON responses.
//!   In order, before anything runs: the front door (`cairn_door`: limits,
//!   origin, the client address's budget, the bearer token with its RFC 9728
//!   challenge), JSON (-32700), batch shape (1–10 messages, else -32600 for
//!   the whole request), the subject's budget counted per message (429 with
//!   Retry-After), scopes of every tool called (403 `insufficient_scope`).
//!   Then each message in order.
//! - `GET`/`DELETE /mcp`: 405 (no sessions, no server-initiated stream).
//! - `GET /.well-known/oauth-protected-resource[/mcp]`: RFC 9728 metadata.
//!
//! Modules: `rpc` (JSON-RPC error codes), `road` (a tool call on either
//! road: the composed slot or HTTP), `resources` (notes and tabs as MCP
//! resources, read through the same tools, so the same tenants, scopes and
//! agent visibility hold) and `mcp` (JSON-RPC framing and the MCP methods).
//!
//! `tools/call` goes to the tool's own component at
//! `http://<component-id>.spin.internal/`, or at the URL in the variable
//! `tool_url_<tool>` when tools are deployed apart, with the caller's
//! identity signed into `cairn-identity`. The token never leaves the router.

mod mcp;
mod resources;
mod road;
mod rpc;

use cairn_guest::door::Gate;
use cairn_guest::respond;
use serde_json::Value;
use spin_sdk::http::{Method, Request, Response};
use spin_sdk::http_component;

#[http_component]
async fn handle(req: Request) -> Response {
    let gate = match Gate::open() {
        Ok(g) => g,
        Err(r) => return r,
    };
    let path = req.path().trim_end_matches('/').to_string();
    match (req.method().clone(), path.as_str()) {
        (Method::Post, "/mcp") => post_mcp(&gate, req).await,
        _ => {
            // Public metadata and method refusals: limits and origin, no store call.
            if let Err(r) = gate.screen_limits(&req) {
                return r;
            }
            match (req.method(), path.as_str()) {
                (Method::Get, "/.well-known/oauth-protected-resource" | "/.well-known/oauth-protected-resource/mcp") => {
                    match cairn_guest::auth::Config::load() {
                        Ok(cfg) => respond::json(200, &cfg.metadata()),
                        Err(e) => respond::error(500, "misconfigured", &e),
                    }
                }
                (_, "/mcp") => {
                    let mut r = respond::error(405, "method_not_allowed", "this server is stateless: POST JSON-RPC to /mcp");
                    r.set_header("allow", "POST");
                    r
                }
                _ => respond::error(404, "not_found", "no such route"),
            }
        }
    }
}

async fn post_mcp(gate: &Gate, req: Request) -> Response {
    // 1–4. The front door: limits, origin, the address's budget, the token.
    let admitted = match gate.admit(&req).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let principal = &admitted.principal;
    // JSON and batch shape. Messages stay borrowed slices of the body, so
    // a tool's arguments reach it as the caller wrote them.
    let body = match std::str::from_utf8(req.body()) {
        Ok(b) => b,
        Err(e) => return respond::json(400, &rpc::error(Value::Null, rpc::PARSE_ERROR, &format!("parse error: the body is not UTF-8: {e}"))),
    };
    let (messages, batch) = match mcp::split(body) {
        Ok(m) => m,
        Err(reply) => return respond::json(400, &reply),
    };
    if let Err(r) = mcp::check_headers(&req, &messages) {
        return respond::json(400, &r);
    }
    // 5. The subject's budget, every message counted.
    if let Err(r) = gate.charge(principal, messages.len(), "mcp") {
        return r;
    }
    // 6. Scopes of every tool this request calls, before anything runs.
    for m in &messages {
        if let Some(scope) = m.needed_scope() {
            if let Err(r) = gate.require(&admitted, scope, "mcp") {
                return r;
            }
        }
    }
    // 7. Run, in order; then charge the subject for the time it took.
    let started = std::time::Instant::now();
    let reply = run(&messages, batch, principal).await;
    gate.charge_work(principal, started);
    reply
}

/// Every message in order: the response (202 when none needs a reply).
async fn run(messages: &[mcp::Message<'_>], batch: bool, principal: &cairn_auth::Principal) -> Response {
    let mut replies = Vec::new();
    for m in messages {
        match mcp::handle_message(m, principal).await {
            Ok(Some(reply)) => replies.push(reply),
            Ok(None) => {}
            // A tool or the store is out of reach: no result can be trusted
            // to have happened or not, so the caller retries the request
            // (with the same idempotency keys) once the store is back.
            Err(road::Unavailable(why)) => {
                let mut r = respond::error(503, "unavailable", &format!("{why}; retry the request (same idempotency keys) shortly"));
                r.set_header("retry-after", "1");
                return r;
            }
        }
    }
    if replies.is_empty() {
        return Response::builder().status(202).body(Vec::<u8>::new()).build();
    }
    let body = if batch { format!("[{}]", replies.join(",")) } else { replies.pop().unwrap_or_default() };
    Response::builder().status(200).header("content-type", "application/json").body(body).build()
}
