//! The router: the only door agents use.
//!
//! - `POST /mcp`: MCP over Streamable HTTP, stateless, JSON responses.
//!   In order, before anything runs: the front door (`cairn_door`: limits,
//!   origin, the client address's budget, the bearer token with its RFC 9728
//!   challenge), the body read as MCP (`cairn_mcp`: JSON -32700, batch shape
//!   1–10 messages else -32600 for the whole request, the MCP headers), the
//!   subject's budget counted per message (429 with Retry-After), scopes of
//!   every message (403 `insufficient_scope`). Then each message in order.
//!   A `subscriptions/listen` sent alone answers with a stream of its own
//!   (`feed`): Server-Sent Events until its lifetime is up.
//! - `GET /mcp` with `Accept: text/event-stream`: the stream of the
//!   subject's `resources/subscribe` book (`feed::follow`), after the same
//!   front door, budget (one message) and `notes:read`. `DELETE /mcp`: 405
//!   (no sessions).
//! - `GET /.well-known/oauth-protected-resource[/mcp]`: RFC 9728 metadata.
//!
//! Every protocol rule lives in `cairn_mcp`; this component is its adapter:
//! HTTP and the front door here, and `transport`, how a tool is reached (its
//! component at `http://<component-id>.spin.internal/`, or at the URL in the
//! variable `tool_url_<tool>` when tools are deployed apart, with the
//! caller's identity signed into `cairn-identity`; or the router's composed
//! slot). The token never leaves the router.

mod feed;
mod transport;

use cairn_guest::door::FrontDoor;
use cairn_guest::http::{Request, Response};
use cairn_guest::respond;
use cairn_mcp::Answer;
use spin_sdk::http::Method;

#[spin_sdk::http_service]
async fn handle(req: spin_sdk::http::Request) -> Response {
    cairn_guest::config::run_as_router();
    let front = match FrontDoor::open() {
        Ok(g) => g,
        Err(r) => return r,
    };
    let req = match front.read(req).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    let path = req.path().trim_end_matches('/').to_string();
    match (req.method().clone(), path.as_str()) {
        (Method::POST, "/mcp") => post_mcp(&front, req).await,
        (Method::GET, "/mcp") => get_mcp(&front, req).await,
        _ => {
            // Public metadata and method refusals: limits and origin, no store call.
            if let Err(r) = front.screen_limits(&req) {
                return r;
            }
            match (req.method(), path.as_str()) {
                (&Method::GET, "/.well-known/oauth-protected-resource" | "/.well-known/oauth-protected-resource/mcp") => {
                    match cairn_guest::auth::Config::load() {
                        Ok(cfg) => respond::json(200, &cfg.metadata()),
                        Err(e) => respond::error(500, "misconfigured", &e),
                    }
                }
                (_, "/mcp") => {
                    let mut r = respond::error(405, "method_not_allowed", "this server is stateless: POST JSON-RPC to /mcp");
                    r.set_header("allow", "GET, POST");
                    r
                }
                _ => respond::error(404, "not_found", "no such route"),
            }
        }
    }
}

/// `GET /mcp`: the stream of the caller's subscriptions, once it is let in
/// and may read.
async fn get_mcp(front: &FrontDoor, req: Request) -> Response {
    // The front door first, as on every route: nothing of the request is
    // looked at before it.
    let admitted = match front.admit(&req).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    if !req.header("accept").is_some_and(|a| a.contains("text/event-stream")) {
        return respond::error(406, "not_acceptable", "GET /mcp answers with a stream of notifications: send Accept: text/event-stream");
    }
    if let Err(r) = front.charge(&admitted.principal, 1, "mcp") {
        return r;
    }
    if let Err(r) = front.require(&admitted, cairn_notes::scopes::READ, "mcp") {
        return r;
    }
    feed::follow(front, &admitted.principal)
}

async fn post_mcp(front: &FrontDoor, req: Request) -> Response {
    // 1–4. The front door: limits, origin, the address's budget, the token.
    let admitted = match front.admit(&req).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let principal = &admitted.principal;
    // JSON, batch shape, MCP headers. Messages stay borrowed slices of the
    // body, so a tool's arguments reach it as the caller wrote them.
    let header = |name: &str| req.header(name).map(str::to_string);
    let request = match cairn_mcp::Request::read(req.body(), header) {
        Ok(r) => r,
        Err(reply) => return respond::json(400, &reply),
    };
    // 5. The subject's budget, every message counted.
    if let Err(r) = front.charge(principal, request.messages().len(), "mcp") {
        return r;
    }
    // 6. Scopes of every message, before anything runs.
    for scope in request.scopes() {
        if let Err(r) = front.require(&admitted, scope, "mcp") {
            return r;
        }
    }
    // 7. A listen sent alone is a stream of its own.
    if let Some(listen) = request.listen() {
        return match listen {
            Err(reply) => respond::json(200, &reply),
            Ok((id, _)) if !req.header("accept").is_some_and(|a| a.contains("text/event-stream")) => respond::json(
                200,
                &cairn_mcp::rpc::error(id, cairn_mcp::rpc::INVALID_REQUEST, "subscriptions/listen answers with a stream: send Accept: text/event-stream"),
            ),
            Ok((id, filter)) => feed::open(front, principal, id, filter),
        };
    }
    // 8. Run, in order; then charge the subject for the time it took.
    let started = std::time::Instant::now();
    let answer = request.run(&transport::Transport::new(), principal).await;
    let response = match answer {
        Answer::Reply(body) => Response::new(200, body).with_header("content-type", "application/json"),
        Answer::Accepted => Response::new(202, Vec::new()),
        Answer::Unavailable(why) => {
            let mut r = respond::error(503, "unavailable", &why);
            r.set_header("retry-after", "1");
            r
        }
    };
    front.charge_work(principal, started);
    response
}
