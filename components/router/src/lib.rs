//! The router: the only door agents use.
//!
//! - `POST /mcp`: MCP over Streamable HTTP, stateless, JSON responses.
//!   In order, before anything runs: Origin allow-list (403), body size
//!   (413), bearer token (401 with an RFC 9728 challenge), JSON (-32700),
//!   batch shape (1–10 messages, else -32600 for the whole request), rate
//!   limit per token counted per message (429 with Retry-After), scopes of
//!   every tool called (403 `insufficient_scope`). Then each message in order.
//! - `GET`/`DELETE /mcp`: 405 (no sessions, no server-initiated stream).
//! - `GET /.well-known/oauth-protected-resource[/mcp]`: RFC 9728 metadata.
//!
//! Modules: `mcp` (JSON-RPC framing, the MCP methods, tool calls on either
//! road) and `resources` (notes and tabs as MCP resources, read through the
//! same tools, so the same tenants, scopes and agent visibility hold).
//!
//! `tools/call` goes to the tool's own component at
//! `http://<component-id>.spin.internal/`, or at the URL in the variable
//! `tool_url_<tool>` when tools are deployed apart, with the caller's
//! identity signed into `cairn-identity`. The token never leaves the router.

mod mcp;
mod resources;

use cairn_guest::auth::{Config, audit_refusal};
use cairn_guest::kv::Bucket;
use cairn_guest::respond;
use serde_json::{Value, json};
use spin_sdk::http::{Method, Request, Response};
use spin_sdk::http_component;

#[http_component]
async fn handle(req: Request) -> Response {
    let path = req.path().trim_end_matches('/').to_string();
    match (req.method().clone(), path.as_str()) {
        (Method::Get, "/.well-known/oauth-protected-resource" | "/.well-known/oauth-protected-resource/mcp") => {
            match Config::load() {
                Ok(cfg) => respond::json(200, &cfg.metadata()),
                Err(e) => respond::error(500, "misconfigured", &e),
            }
        }
        (Method::Post, "/mcp") => post_mcp(req).await,
        (_, "/mcp") => {
            let mut r = respond::error(405, "method_not_allowed", "this server is stateless: POST JSON-RPC to /mcp");
            r.set_header("allow", "POST");
            r
        }
        _ => respond::error(404, "not_found", "no such route"),
    }
}

fn setting(name: &str, default: u64) -> u64 {
    cairn_guest::variable(name).and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

async fn post_mcp(req: Request) -> Response {
    let bucket = Bucket::open("default").ok();
    let bucket = bucket.as_ref();
    // Counters and verified tokens may be lost on restart: keep them in the
    // `cache` store when the host has one, else in `default`.
    let cache = Bucket::open("cache").ok();
    let cache = cache.as_ref().or(bucket);

    // 1. Origin and Host: browsers only from the allow-list, no DNS rebinding;
    //    cookies are never credentials.
    if let Err(why) = cairn_guest::auth::check_origin(&req) {
        audit_refusal(bucket, None, json!({"reason": "origin", "detail": why}));
        return respond::error(403, "forbidden_origin", &why);
    }
    // 2. Size, before parsing.
    let limit = setting("max_body_bytes", 1 << 20) as usize;
    if req.body().len() > limit {
        return respond::error(413, "body_too_large", &format!("the request body exceeds {limit} bytes"));
    }
    // 3. Token.
    let cfg = match Config::load() {
        Ok(c) => c,
        Err(e) => return respond::error(500, "misconfigured", &e),
    };
    let now_s = cairn_guest::notes::now_us() / 1_000_000;
    let (principal, token_id) = match cfg.authenticate(&req, cache, now_s).await {
        Ok(p) => p,
        Err(e) => {
            audit_refusal(bucket, None, json!({"reason": "token", "detail": e.to_string()}));
            return cfg.refusal(&e);
        }
    };
    // 4. JSON and batch shape. Messages stay borrowed slices of the body, so
    //    a tool's arguments reach it as the caller wrote them.
    let body = match std::str::from_utf8(req.body()) {
        Ok(b) => b,
        Err(e) => return respond::json(400, &mcp::error(Value::Null, mcp::PARSE_ERROR, &format!("parse error: the body is not UTF-8: {e}"))),
    };
    let (messages, batch) = match mcp::split(body) {
        Ok(m) => m,
        Err(reply) => return respond::json(400, &reply),
    };
    if let Err(r) = mcp::check_headers(&req, &messages) {
        return respond::json(400, &r);
    }
    // 5. Rate limit, per token, per message.
    if let Some(b) = cache {
        let per_minute = setting("rate_limit_per_minute", 60) as i64;
        let minute = now_s / 60;
        let key = cairn_notes::keys::rate_limit(&token_id, minute);
        match b.increment(&key, messages.len() as i64) {
            Ok(count) if count > per_minute => {
                audit_refusal(bucket, Some(&principal.tenant), json!({"reason": "rate", "sub": principal.subject}));
                let mut r = respond::error(429, "rate_limited", &format!("at most {per_minute} messages a minute per token"));
                r.set_header("retry-after", (60 - now_s % 60).max(1).to_string());
                return r;
            }
            Ok(count) if count == messages.len() as i64 => {
                let _ = b.delete(&cairn_notes::keys::rate_limit(&token_id, minute.saturating_sub(1)));
            }
            _ => {}
        }
    }
    // 6. Scopes of every tool this request calls, before anything runs.
    for m in &messages {
        if let Some(scope) = m.needed_scope() {
            if !principal.has_scope(scope) {
                audit_refusal(bucket, Some(&principal.tenant), json!({"reason": "scope", "sub": principal.subject, "scope": scope}));
                return cfg.insufficient_scope(scope);
            }
        }
    }
    // 7. Run, in order.
    let mut replies = Vec::new();
    for m in &messages {
        match mcp::handle_message(m, &principal).await {
            Ok(Some(reply)) => replies.push(reply),
            Ok(None) => {}
            // A tool or the store is out of reach: no result can be trusted
            // to have happened or not, so the caller retries the request
            // (with the same idempotency keys) once the store is back.
            Err(mcp::Unavailable(why)) => {
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

