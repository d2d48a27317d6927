//! A tool component is one answer ([`answer`]: check the arguments, call
//! the core, encode its result) behind two doors:
//!
//! - **HTTP** ([`serve`]), for a tool deployed apart: `POST /tools/<name>`
//!   with the router's signed identity in `cairn-identity` and the
//!   arguments as the JSON body. The front door screens it first; 401
//!   without a valid identity (signed for this tool and this call, not
//!   expired, not seen before: each identity is single-use, its nonce kept
//!   in the `cache` store until it expires), counted against the client
//!   address's budget of refusals (so identities cannot be guessed faster
//!   than it allows), 405 for another method. The
//!   route answers only where tools are called over HTTP (the `tool_transport`
//!   variable is `http`); where the router is composed with its tools, it
//!   is 404.
//! - **Composed** ([`call`]): the `cairn:platform/tool` export
//!   (`wit/tools.wit`) the router calls in its own instance when the
//!   application composes it. The caller is the router's verified
//!   principal, unsigned: only the composing component can reach it.
//!
//! Both give the same answer: the MCP `CallToolResult` (a refusal is a
//! result with `isError: true`, its code named beside it: the
//! `cairn-tool-refusal` header, the `refusal` field), or a failure: bad
//! arguments (400), the store unreachable or full (503, retry later), a
//! bug or corrupt data (500), typed on the composed door
//! (`cairn:platform/tool`'s `failure`).

use crate::bindings::{Answer, Caller, Failure};
use crate::http::{Request, Response};
use crate::kv::GuestStore;
use crate::notes::{HostEnv, identity};
use cairn_auth::Principal;
use cairn_notes::Tool;
use spin_sdk::http::Method;

fn error_body(code: &str, message: &str) -> String {
    serde_json::json!({ "error": code, "message": message }).to_string()
}

/// Why a call ended without a tool's answer.
pub enum NoAnswer {
    /// The arguments are not a JSON object.
    BadArguments,
    /// The core failed: the store (unreachable, full) or corrupt data.
    Failed(cairn_notes::Failure),
}

const BAD_ARGUMENTS: &str = "the body must be a JSON object of arguments";

/// One call of `tool` for `principal` on the JSON arguments `body`.
/// The tool is given by its `TOOL`, so the component links that tool alone.
pub fn answer(tool: &'static Tool, principal: &Principal, body: &[u8]) -> Result<cairn_notes::Answer, NoAnswer> {
    let args: serde_json::Value = match serde_json::from_slice(body) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        Ok(serde_json::Value::Null) if body.is_empty() => serde_json::json!({}),
        _ => return Err(NoAnswer::BadArguments),
    };
    let store = GuestStore::new();
    cairn_notes::answer(&store, &mut HostEnv, &identity(principal), tool, args).map_err(NoAnswer::Failed)
}

/// The header naming the refusal code of a `200` whose result is a refusal.
pub const REFUSAL_HEADER: &str = "cairn-tool-refusal";

/// The HTTP door: serve one `POST /tools/<tool>`.
pub async fn serve(tool: &'static Tool, req: spin_sdk::http::Request) -> Response {
    crate::config::run_as(cairn_config::Reader::Tools);
    if !crate::config::config().is_ok_and(|c| c.tools.transport == cairn_config::ToolTransport::Http) {
        return crate::respond::error(404, "not_found", "no such route");
    }
    let front = match crate::door::FrontDoor::open() {
        Ok(g) => g,
        Err(r) => return r,
    };
    let req = match front.read(req).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    if let Err(r) = front.screen(&req) {
        return r;
    }
    let mut refusal = None;
    let (status, body) = if *req.method() != Method::POST {
        (405, error_body("method_not_allowed", "tools answer POST only"))
    } else {
        match caller(tool, &req, front.cache()) {
            Ok(principal) => match answer(tool, &principal, req.body()) {
                Ok(a) => {
                    refusal = a.refusal;
                    (200, a.json)
                }
                Err(NoAnswer::BadArguments) => (400, error_body("invalid_body", BAD_ARGUMENTS)),
                Err(NoAnswer::Failed(e)) => (e.http_status(), error_body(e.code(), &e.to_string())),
            },
            Err(cairn_auth::identity::Refused::WeakSecret) => (500, error_body("misconfigured", &cairn_auth::identity::Refused::WeakSecret.to_string())),
            // A forged or replayed identity counts against the address's
            // budget, as every refusal before anyone is known does.
            Err(why) => {
                let a = crate::door::arrival(&req);
                let door = front.door();
                return crate::door::respond(&door.refused(&a, cairn_door::Refusal::new(cairn_door::Code::Unauthorized, why.to_string())));
            }
        }
    };
    let mut r = Response::new(status, body).with_header("content-type", "application/json");
    if let Some(code) = refusal {
        r.set_header(REFUSAL_HEADER, code.as_str());
    }
    if status == 503 {
        r.set_header("retry-after", "1");
    }
    r
}

/// The composed door: `cairn:platform/tool#call` for `tool`.
pub fn call(tool: &'static Tool, caller: Caller, arguments: &str) -> Result<Answer, Failure> {
    crate::config::run_as(cairn_config::Reader::Tools);
    match answer(tool, &caller.principal(), arguments.as_bytes()) {
        Ok(a) => Ok(Answer { json: a.json, refusal: a.refusal.map(|c| c.as_str().to_string()) }),
        Err(NoAnswer::BadArguments) => Err(Failure::InvalidArguments(BAD_ARGUMENTS.to_string())),
        Err(NoAnswer::Failed(e)) if e.http_status() == 503 => Err(Failure::Unavailable(e.to_string())),
        Err(NoAnswer::Failed(e)) => Err(Failure::Internal(e.to_string())),
    }
}

/// The principal the router signed into `cairn-identity` for this very call
/// (this tool, method, path, body), if it verifies, has not expired and
/// was not seen before: its nonce is created in `cache` if absent, so a
/// second use of the same header (here or on any host sharing the store)
/// finds it there and is refused.
pub fn caller(tool: &'static Tool, req: &Request, cache: &GuestStore) -> Result<Principal, cairn_auth::identity::Refused> {
    use cairn_auth::identity::{Call, Refused};
    use cairn_kv::{Observed, Store, Swap};
    let secret = crate::config::config().ok().and_then(|c| c.tools.identity_secret.clone()).unwrap_or_default();
    let value = req.header(cairn_auth::identity::HEADER).ok_or(Refused::Invalid)?;
    let method = if *req.method() == Method::POST { "POST" } else { "OTHER" };
    let call = Call { tool: tool.name, method, path: req.path(), body: req.body() };
    let v = cairn_auth::identity::verify(value, &secret, &call, crate::notes::now_us() / 1_000_000)?;
    if v.nonce.is_empty() || v.nonce.len() > 64 {
        return Err(Refused::Invalid);
    }
    let key = cairn_door::cache::identity_nonce(v.expires / 60, &v.nonce);
    let seen = match cache.read(cairn_door::budget::CACHE, &key) {
        Ok(r) => match r.observed {
            Observed::Absent(_) => !matches!(cache.swap(cairn_door::budget::CACHE, &key, r.observed, b"1"), Ok(Swap::Done)),
            Observed::Present(_) => true,
        },
        // A store that cannot say: refuse rather than risk a replay.
        Err(_) => true,
    };
    if seen {
        return Err(Refused::Replayed);
    }
    Ok(v.principal)
}

/// Define a tool component, both doors: `cairn_guest::tool_component!(list_note_tabs);`
/// (the tool's module in `cairn_notes::tools`, whose `TOOL` it serves).
#[macro_export]
macro_rules! tool_component {
    ($name:ident) => {
        #[$crate::spin_sdk::http_service]
        async fn handle(req: $crate::spin_sdk::http::Request) -> $crate::http::Response {
            $crate::tool::serve(&$crate::cairn_notes::tools::$name::TOOL, req).await
        }

        struct Tool;

        impl $crate::bindings::tool_library::exports::cairn::platform::tool::Guest for Tool {
            fn call(caller: $crate::bindings::Caller, arguments: String) -> Result<$crate::bindings::Answer, $crate::bindings::Failure> {
                $crate::tool::call(&$crate::cairn_notes::tools::$name::TOOL, caller, &arguments)
            }
        }

        $crate::bindings::tool_library::export_tool_library!(Tool);
    };
}
