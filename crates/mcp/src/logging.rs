//! `logging/setLevel`: the levels of RFC 5424 as MCP names them.
//!
//! Cairn keeps no session, so a level set with `logging/setLevel` (the
//! 2025 revisions) or sent as `_meta.logLevel` with a request (2026-07-28)
//! is checked and acknowledged, and holds for nothing beyond the request
//! that carries it. Cairn answers with JSON, never a stream, so it sends no
//! `notifications/message`: every refusal is in the tool's result itself.

use serde_json::{Value, json};

/// The levels, least severe first.
pub const LEVELS: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/// The result of `logging/setLevel` for `params`: `{}` for a known level,
/// else what is wrong with it (an invalid-params error).
pub fn set_level(params: &Value) -> Result<Value, String> {
    match params.get("level").and_then(Value::as_str) {
        Some(level) if LEVELS.contains(&level) => Ok(json!({})),
        Some(level) => Err(format!("unknown log level {level:?}: use one of {}", LEVELS.join(", "))),
        None => Err(format!("params.level must be one of {}", LEVELS.join(", "))),
    }
}
