//! The transport from the router to a tool's component: the router's composed
//! slot for it, or HTTP with the caller's identity signed in for one call.

use cairn_auth::Principal;
use cairn_guest::kv::GuestStore;
use cairn_mcp::{Stores, ToolError, Tools};
use http_body_util::BodyExt;
use serde_json::Value;

/// The router's transport to its tools, as `cairn_mcp` asks for it, and the
/// stores behind them (opened on first use).
pub(crate) struct Transport {
    notes: GuestStore,
    cache: GuestStore,
}

impl Transport {
    pub(crate) fn new() -> Transport {
        Transport { notes: GuestStore::new(), cache: GuestStore::cache() }
    }

    /// The notes store behind the tools.
    pub(crate) fn notes(&self) -> &GuestStore {
        &self.notes
    }

    /// The `cache` store.
    pub(crate) fn cache(&self) -> &GuestStore {
        &self.cache
    }
}

impl Tools for Transport {
    async fn call(&self, tool: &'static cairn_notes::tools::Tool, arguments: &str, who: &Principal) -> Result<String, ToolError> {
        call(tool, arguments, who).await
    }

    fn stores(&self) -> Option<Stores<'_>> {
        Some(Stores { notes: &self.notes, cache: &self.cache, now_us: cairn_guest::notes::now_us() })
    }
}

/// Calls `tool` with `args` (a JSON object) as `who`, on whichever transport
/// reaches its component; the CallToolResult as the tool wrote it.
pub(crate) async fn call(tool: &cairn_notes::tools::Tool, args: &str, who: &Principal) -> Result<String, ToolError> {
    let name = tool.name;
    let component = tool.component();
    let own = format!("http://{component}.spin.internal");
    let config = cairn_guest::config::config().map_err(|e| ToolError::Internal(e.to_string()))?;
    let base = config.tools.urls.get(name).map_or(own.as_str(), String::as_str).trim_end_matches('/');
    // A tool of this application is called through the router's slot for
    // it (composed at load time), unless `tool_transport` asks for HTTP; a tool
    // deployed apart is always called at its URL.
    let composed = base == own && config.tools.transport != cairn_guest::cairn_config::ToolTransport::Http;
    if composed {
        use cairn_guest::bindings::{Caller, Failure};
        return match cairn_guest::slots::call_slot(&component, &Caller::of(who), args) {
            None => Err(ToolError::Internal(format!("the router has no slot for {name}"))),
            Some(Ok(answer)) => Ok(answer.json),
            Some(Err(Failure::Unavailable(msg))) => Err(ToolError::Unavailable(format!("tool {name}: {msg}"))),
            Some(Err(Failure::InvalidArguments(msg) | Failure::Internal(msg))) => Err(ToolError::Internal(format!("tool {name} failed: {msg}"))),
        };
    }
    let (status, body) = call_http(name, &format!("{base}/tools/{name}"), who, args).await?;
    if status != 200 {
        let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let msg = body.get("message").and_then(Value::as_str).unwrap_or("the tool failed");
        return Err(if status == 503 {
            ToolError::Unavailable(format!("tool {name}: {msg}"))
        } else {
            ToolError::Internal(format!("tool {name} failed: {msg}"))
        });
    }
    if !body.starts_with('{') {
        return Err(ToolError::Internal(format!("tool {name} answered with something other than a result object")));
    }
    Ok(body)
}

/// The path of an absolute URL (`http://host:port/tools/x` → `/tools/x`).
fn path_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.find('/').map_or("/", |i| &rest[i..])
}

/// A tool over HTTP at `url`, with the caller's identity signed in for
/// this one call to this one tool, under a fresh nonce.
async fn call_http(name: &str, url: &str, who: &Principal, args: &str) -> Result<(u16, String), ToolError> {
    let secret = cairn_guest::config::config().ok().and_then(|c| c.tools.identity_secret.clone());
    let secret = secret.ok_or(ToolError::Internal("the identity_secret variable is not set".to_string()))?;
    let nonce = format!("{:016x}{:016x}", cairn_guest::random_u64(), cairn_guest::random_u64());
    let call = cairn_auth::identity::Call { tool: name, method: "POST", path: path_of(url), body: args.as_bytes() };
    let identity =
        cairn_auth::identity::sign(who, &secret, &call, cairn_guest::notes::now_us() / 1_000_000, &nonce).map_err(|e| ToolError::Internal(e.to_string()))?;
    let req = spin_sdk::http::Request::builder()
        .method(spin_sdk::http::Method::POST)
        .uri(url)
        .header("content-type", "application/json")
        .header(cairn_auth::identity::HEADER, identity)
        .body(http_body_util::Full::new(bytes::Bytes::from(args.to_string())))
        .map_err(|e| ToolError::Internal(format!("tool {name}: {e}")))?;
    let resp = spin_sdk::http::send(req).await.map_err(|e| ToolError::Unavailable(format!("tool {name} is unreachable: {e:?}")))?;
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.map_err(|e| ToolError::Unavailable(format!("tool {name}'s answer broke off: {e}")))?.to_bytes();
    let body = String::from_utf8(bytes.to_vec()).map_err(|_| ToolError::Internal(format!("tool {name} answered with invalid UTF-8")))?;
    Ok((status, body))
}
