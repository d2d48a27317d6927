//! The MCP layer's guarantees, natively, over the real notes core: one
//! module per behaviour, each test named for the guarantee it checks.
//! `common` holds the shared world: the core on the in-memory store as the
//! `Tools` the protocol reaches, the callers, and a request posted as the
//! router posts it.

mod common;

mod apps;
mod batches;
mod completions;
mod feed;
mod headers;
mod json_rpc;
mod notifications;
mod resources;
mod scopes;
mod subscriptions;
mod tool_calls;
mod tools_list;
mod unavailable;
mod versions;
