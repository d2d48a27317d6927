//! JSON-RPC and MCP: one message in, at most one reply out.

use cairn_auth::Principal;
use serde_json::{Value, json};
use spin_sdk::http::{Method, Request, Response};

/// Invalid JSON.
pub const PARSE_ERROR: i64 = -32700;
/// Not a valid JSON-RPC request, or a batch of the wrong size.
pub const INVALID_REQUEST: i64 = -32600;
/// Unknown method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Bad params or unknown tool.
pub const INVALID_PARAMS: i64 = -32602;
/// A tool component failed (not a refusal: those are results).
pub const INTERNAL_ERROR: i64 = -32603;
/// Most messages in one batch.
pub const MAX_BATCH: usize = 10;
/// Protocol revisions spoken here, newest first.
pub const VERSIONS: [&str; 4] = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"];
/// The newest revision that uses the `initialize` handshake.
const LATEST_HANDSHAKE: &str = "2025-11-25";
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// A JSON-RPC error object.
pub fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// A JSON-RPC response around an already serialized result object; on the
/// stateless revision the result is marked complete.
fn result_text(id: &Value, result: &str, stateless: bool) -> String {
    let result = match (stateless, result.strip_prefix('{')) {
        (true, Some("}")) => r#"{"resultType":"complete"}"#.to_string(),
        (true, Some(rest)) => format!(r#"{{"resultType":"complete",{rest}"#),
        _ => result.to_string(),
    };
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
}

/// The scope a message needs before anything runs (`tools/call` of a known tool).
pub fn needed_scope(m: &Value) -> Option<&'static str> {
    if m.get("method")?.as_str()? != "tools/call" {
        return None;
    }
    cairn_notes::tools::find(m.get("params")?.get("name")?.as_str()?).map(|t| t.scope)
}

/// The 2026-07-28 headers, when present, must agree with the body.
pub fn check_headers(req: &Request, messages: &[Value]) -> Result<(), Value> {
    if let Some(v) = req.header("mcp-protocol-version").and_then(|v| v.as_str()) {
        if !VERSIONS.contains(&v) {
            return Err(error(Value::Null, INVALID_REQUEST, &format!("unsupported MCP-Protocol-Version {v}; supported: {}", VERSIONS.join(", "))));
        }
    }
    if let [single] = messages {
        if let Some(m) = req.header("mcp-method").and_then(|v| v.as_str()) {
            if single.get("method").and_then(Value::as_str) != Some(m) {
                return Err(error(single.get("id").cloned().unwrap_or(Value::Null), INVALID_REQUEST, "the Mcp-Method header does not match the body's method"));
            }
        }
        if let Some(n) = req.header("mcp-name").and_then(|v| v.as_str()) {
            if single.pointer("/params/name").and_then(Value::as_str) != Some(n) {
                return Err(error(single.get("id").cloned().unwrap_or(Value::Null), INVALID_REQUEST, "the Mcp-Name header does not match params.name"));
            }
        }
    }
    Ok(())
}

fn valid_id(id: &Value) -> bool {
    matches!(id, Value::String(_)) || id.as_i64().is_some() || id.as_u64().is_some()
}

fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}})
}

const INSTRUCTIONS: &str = "Cairn holds notes that people and agents edit together. Read before you write; every write \
carries the version you read and an idempotency key. On a conflict, read again and redo your change on what is there now.";

fn server_info() -> Value {
    json!({"name": "cairn", "title": "Cairn", "version": env!("CARGO_PKG_VERSION")})
}

/// Handle one message; its serialized reply, `None` for notifications and
/// client responses.
/// client responses; `Err` when the request cannot be served right now.
pub async fn handle_message(m: Value, who: &Principal) -> Result<Option<String>, Unavailable> {
    Ok(handle(m, who).await?.map(|r| match r {
        Reply::Value(v) => v.to_string(),
        Reply::Text(t) => t,
    }))
}

enum Reply {
    Value(Value),
    Text(String),
}

async fn handle(m: Value, who: &Principal) -> Result<Option<Reply>, Unavailable> {
    let err = |id: Value, code, msg: &str| Ok(Some(Reply::Value(error(id, code, msg))));
    let Value::Object(obj) = &m else {
        return err(Value::Null, INVALID_REQUEST, "a JSON-RPC message is an object");
    };
    let id = obj.get("id").cloned();
    let Some(method) = obj.get("method").and_then(Value::as_str) else {
        // A response from the client (result/error): nothing to answer.
        if id.is_some() && (obj.contains_key("result") || obj.contains_key("error")) {
            return Ok(None);
        }
        return err(id.unwrap_or(Value::Null), INVALID_REQUEST, "missing method");
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return err(id.unwrap_or(Value::Null), INVALID_REQUEST, "jsonrpc must be \"2.0\"");
    }
    let Some(id) = id else {
        return Ok(None); // a notification
    };
    if !valid_id(&id) {
        return err(Value::Null, INVALID_REQUEST, "id must be a string or an integer");
    }
    let params = obj.get("params").cloned().unwrap_or(json!({}));
    if !params.is_object() {
        return err(id, INVALID_PARAMS, "params must be an object");
    }
    // 2026-07-28: the revision rides in every request's _meta.
    let stateless = match params.pointer(&format!("/_meta/{}", META_VERSION.replace('/', "~1"))).and_then(Value::as_str) {
        Some(v) if VERSIONS.contains(&v) => v == "2026-07-28",
        Some(v) => return err(id, INVALID_PARAMS, &format!("unsupported protocol version {v}; supported: {}", VERSIONS.join(", "))),
        None => false,
    };
    let mut reply = match method {
        "initialize" => {
            let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or(LATEST_HANDSHAKE);
            let version = if VERSIONS[1..].contains(&asked) { asked } else { LATEST_HANDSHAKE };
            Ok(json!({"protocolVersion": version, "capabilities": capabilities(), "serverInfo": server_info(), "instructions": INSTRUCTIONS}))
        }
        "server/discover" => Ok(json!({
            "supportedVersions": VERSIONS,
            "capabilities": capabilities(),
            "serverInfo": server_info(),
            "_meta": {"io.modelcontextprotocol/serverInfo": server_info()},
            "instructions": INSTRUCTIONS,
        })),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": list_tools()})),
        "tools/call" => {
            // The tool's result goes back as the tool wrote it: no parse and
            // re-serialize of what may be a megabyte of text.
            return Ok(Some(match call_tool(&params, who).await {
                Ok(raw) => Reply::Text(result_text(&id, &raw, stateless)),
                Err(ToolError::Params(msg)) => Reply::Value(error(id, INVALID_PARAMS, &msg)),
                Err(ToolError::Internal(msg)) => Reply::Value(error(id, INTERNAL_ERROR, &msg)),
                Err(ToolError::Unavailable(msg)) => return Err(Unavailable(msg)),
            }));
        }
        other => Err((METHOD_NOT_FOUND, format!("unknown method {other}"))),
    };
    if stateless || method == "server/discover" {
        if let Ok(Value::Object(r)) = &mut reply {
            r.insert("resultType".into(), json!("complete"));
            // Cache hints are required on cacheable results: listings change
            // with every deploy and are per caller, so never cache them.
            if matches!(method, "server/discover" | "tools/list") {
                r.insert("ttlMs".into(), json!(0));
                r.insert("cacheScope".into(), json!("private"));
            }
        }
    }
    Ok(Some(Reply::Value(match reply {
        Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
        Err((code, msg)) => error(id, code, &msg),
    })))
}

/// `tools/list`: the core's published tools with their OAuth requirements.
pub fn list_tools() -> Vec<Value> {
    cairn_notes::tools::TOOLS
        .iter()
        .map(|tool| {
            let mut v = serde_json::to_value(tool.spec()).unwrap_or(Value::Null);
            v["securitySchemes"] = json!([{"type": "oauth2", "scopes": [tool.scope]}]);
            v
        })
        .collect()
}

/// Why a tool call came back without a result.
enum ToolError {
    /// Bad params: a JSON-RPC error (-32602) for this message.
    Params(String),
    /// The tool failed (a host bug): a JSON-RPC error (-32603) for this message.
    Internal(String),
    /// The tool or its store cannot be reached right now: the whole request
    /// answers 503 with `Retry-After`.
    Unavailable(String),
}

/// The request cannot be served right now (a tool or its store is
/// unreachable): answer 503 with `Retry-After`, never a result.
pub struct Unavailable(pub String);

async fn call_tool(params: &Value, who: &Principal) -> Result<String, ToolError> {
    let name = params.get("name").and_then(Value::as_str).ok_or(ToolError::Params("params.name must be a tool name".to_string()))?;
    let tool = cairn_notes::tools::find(name).ok_or(ToolError::Params(format!("unknown tool {name}")))?;
    let mut args = params.get("arguments").cloned().unwrap_or(json!({}));
    if !args.is_object() {
        return Err(ToolError::Params("params.arguments must be an object".into()));
    }
    if let Some(a) = args.as_object_mut() {
        a.remove("_meta");
    }
    let base = cairn_guest::variable(&format!("tool_url_{name}")).unwrap_or_else(|| format!("http://{}.spin.internal", tool.component()));
    let url = format!("{}/tools/{name}", base.trim_end_matches('/'));
    let secret = cairn_guest::variable("identity_secret").ok_or(ToolError::Internal("the identity_secret variable is not set".to_string()))?;
    let req = Request::builder()
        .method(Method::Post)
        .uri(url)
        .header("content-type", "application/json")
        .header(cairn_auth::identity::HEADER, cairn_auth::identity::sign(who, &secret))
        .body(args.to_string())
        .build();
    let resp: Response = spin_sdk::http::send(req).await.map_err(|e| ToolError::Unavailable(format!("tool {name} is unreachable: {e}")))?;
    if *resp.status() != 200 {
        let status = *resp.status();
        let body: Value = serde_json::from_slice(resp.body()).unwrap_or(Value::Null);
        let msg = body.get("message").and_then(Value::as_str).unwrap_or("the tool failed");
        return Err(if status == 503 {
            ToolError::Unavailable(format!("tool {name}: {msg}"))
        } else {
            ToolError::Internal(format!("tool {name} failed: {msg}"))
        });
    }
    let raw = String::from_utf8(resp.into_body()).map_err(|_| ToolError::Internal(format!("tool {name} answered with invalid UTF-8")))?;
    if !raw.starts_with('{') {
        return Err(ToolError::Internal(format!("tool {name} answered with something other than a result object")));
    }
    Ok(raw)
}
