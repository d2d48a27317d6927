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
