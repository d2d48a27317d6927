//! JSON-RPC's error codes as MCP uses them, and the error object.

use serde_json::{Value, json};

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
/// A resource that does not exist (or that the caller may not see).
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// A JSON-RPC error object.
pub fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Why a method has no result: the one name for it in this crate's methods
/// (resources, completion, subscriptions, the change feed's looks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MethodError {
    /// The caller's to fix, or not offered: a JSON-RPC error for this
    /// message, its code and message. Nothing was written.
    Rpc(i64, String),
    /// A tool or the store is out of reach: the request answers 503 and the
    /// caller retries.
    Unavailable(String),
}

impl MethodError {
    /// Bad params: -32602 naming what was wrong.
    pub fn params(message: impl Into<String>) -> MethodError {
        MethodError::Rpc(INVALID_PARAMS, message.into())
    }
}
