//! A tool component is this one function: check the router's signed
//! identity, parse the arguments, call the core, return its result.
//!
//! Wire (private route, reached as `http://<component-id>.spin.internal/`):
//! `POST /` with the `cairn-identity` header and the tool's arguments as the
//! JSON body; the answer is the MCP `CallToolResult` (a refusal is a result
//! with `isError: true`). 401 without a valid identity, 400 for a body that
//! is not a JSON object; a store failure is 503 with `Retry-After` when
//! trying again may work (unreachable, full), else 500.

use crate::kv::GuestStore;
use crate::notes::{HostEnv, identity};
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
    let store = GuestStore::new();
    match cairn_notes::call_tool(&store, &mut HostEnv, &identity(&principal), tool, args) {
        Ok(result) => respond::json(200, &result),
        Err(e) => respond::failure(&e),
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
