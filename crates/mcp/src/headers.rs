//! The 2026-07-28 headers: when present, they must agree with the body.
//!
//! - `MCP-Protocol-Version`: a revision spoken here.
//! - `Mcp-Method` (a request of one message): its method.
//! - `Mcp-Name` (a request of one message): the tool of a `tools/call`,
//!   the URI of a `resources/read`.
//!
//! Headers are read through a function from a lowercase name to the
//! header's value, so any HTTP layer can supply them.

use serde_json::Value;

use crate::message::Message;
use crate::rpc::{INVALID_REQUEST, error};
use crate::version::{supported, supported_list};

/// `Ok` when every header present agrees with `messages`; otherwise the
/// error reply for the whole request.
pub fn check(header: impl Fn(&str) -> Option<String>, messages: &[Message]) -> Result<(), Value> {
    if let Some(v) = header("mcp-protocol-version")
        && !supported(&v)
    {
        return Err(error(Value::Null, INVALID_REQUEST, &format!("unsupported MCP-Protocol-Version {v}; supported: {}", supported_list())));
    }
    if let [single] = messages {
        if let Some(m) = header("mcp-method")
            && single.method() != Some(m.as_str())
        {
            return Err(error(single.id_value(), INVALID_REQUEST, "the Mcp-Method header does not match the body's method"));
        }
        if let Some(n) = header("mcp-name")
            && single.name_for_header() != Some(n.as_str())
        {
            return Err(error(single.id_value(), INVALID_REQUEST, "the Mcp-Name header does not match params.name (params.uri for resources/read)"));
        }
    }
    Ok(())
}
