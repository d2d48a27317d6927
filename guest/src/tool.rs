//! A tool component is this one function: check the router's signed
//! identity, parse the arguments, call the core, return its result.
//!
//! Wire (private route, reached as `http://<component-id>.spin.internal/`):
//! `POST /` with the `cairn-identity` header and the tool's arguments as the
//! JSON body; the answer is the MCP `CallToolResult` (a refusal is a result
//! with `isError: true`). 401 without a valid identity, 400 for a body that
//! is not a JSON object, 500 when the store fails.

use crate::notes::{GuestKv, HostEnv, identity};
use crate::respond;
use spin_sdk::http::{Method, Request, Response};

/// Serve one call of `tool`.
pub fn serve(tool: &str, req: Request) -> Response {
    if *req.method() != Method::Post {
        return respond::error(405, "method_not_allowed", "tools answer POST only");
    }
    let Some(principal) = caller(&req) else {
        return respond::error(401, "unauthenticated", "missing or invalid cairn-identity: tools are reached through the router");
    };
    let args: serde_json::Value = match serde_json::from_slice(req.body()) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        Ok(serde_json::Value::Null) if req.body().is_empty() => serde_json::json!({}),
        _ => return respond::error(400, "invalid_body", "the body must be a JSON object of arguments"),
    };
    let kv = match GuestKv::open() {
        Ok(kv) => kv,
        Err(e) => return respond::error(500, "store_unavailable", &e.to_string()),
    };
    match cairn_notes::call_tool(&kv, &mut HostEnv, &identity(&principal), tool, args) {
        Ok(result) => respond::json(200, &result),
        Err(e) => respond::error(500, "store_failed", &e.to_string()),
    }
}

/// The principal the router signed into `cairn-identity`, if it verifies.
pub fn caller(req: &Request) -> Option<cairn_auth::Principal> {
    let secret = crate::variable("identity_secret")?;
    let value = req.header(cairn_auth::identity::HEADER)?.as_str()?;
    cairn_auth::identity::verify(value, &secret)
}

/// Define a tool component: `cairn_guest::tool_component!("list_note_tabs");`
#[macro_export]
macro_rules! tool_component {
    ($name:literal) => {
        #[$crate::spin_sdk::http_component]
        fn handle(req: $crate::spin_sdk::http::Request) -> $crate::spin_sdk::http::Response {
            $crate::tool::serve($name, req)
        }
    };
}
