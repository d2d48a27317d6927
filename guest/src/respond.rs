//! Responses.

use crate::http::{Request, Response};

/// A JSON response with this status.
pub fn json(status: u16, body: &serde_json::Value) -> Response {
    Response::new(status, body.to_string()).with_header("content-type", "application/json")
}

/// A JSON error body `{"error": code, "message": message}`.
pub fn error(status: u16, code: &str, message: &str) -> Response {
    json(status, &serde_json::json!({ "error": code, "message": message }))
}

/// The bearer token of a request, if it has one.
pub fn bearer(req: &Request) -> Option<&str> {
    let value = req.header("authorization")?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The answer to a store or host failure: 503 with `Retry-After` when trying
/// again later may work (the store is unreachable or full), else 500. The
/// body names the failure, never a stack.
pub fn failure(e: &cairn_notes::Failure) -> Response {
    let mut r = error(e.http_status(), e.code(), &e.to_string());
    if e.http_status() == 503 {
        r.set_header("retry-after", "1");
    }
    r
}
