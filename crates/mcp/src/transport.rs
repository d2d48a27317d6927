//! How a tool is reached, and the stores behind the tools: the one thing
//! this crate leaves to its caller. The router implements [`Tools`] with
//! its composed slots or HTTP; the tests with the notes core in the same
//! process.

use cairn_auth::Principal;
use cairn_kv::Store;
use cairn_notes::tools::Tool;

/// Why a tool call came back without a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable(pub String);

/// The transport to the tools.
///
/// Components serve one request at a time on one thread, so the future
/// need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait Tools {
    /// Calls `tool` with `arguments` (a JSON object, as the caller wrote
    /// it) as `who`; the `CallToolResult` as the tool wrote it. A refusal
    /// is a result (`isError: true`), never an `Err`.
    async fn call(&self, tool: &'static Tool, arguments: &str, who: &Principal) -> Result<String, ToolError>;

    /// The stores behind the tools, where the caller has them at hand (the
    /// router does): subscriptions ([`crate::subscriptions`]) are kept in
    /// `cache` and looked at in `notes`. `None`: `resources/subscribe` is
    /// not offered here.
    fn stores(&self) -> Option<Stores<'_>> {
        None
    }
}

/// The stores behind the tools, and the wall clock.
pub struct Stores<'a> {
    /// The notes store (heads are read through `cairn_notes::watch`).
    pub notes: &'a dyn Store,
    /// The `cache` store.
    pub cache: &'a dyn Store,
    /// Microseconds since the epoch, now.
    pub now_us: u64,
}
