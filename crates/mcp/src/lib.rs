//! `cairn-mcp`: every rule of MCP as Cairn speaks it (Streamable HTTP,
//! stateless, JSON responses): what a request body may be, which revision
//! it speaks, what each method answers, the scopes a request needs, and the
//! answer to the whole request. Pure Rust, no wasm dependencies: the router
//! component adapts it to HTTP and the front door, and it is tested
//! natively over the real notes core.
//!
//! The one thing it does not know is how a tool is reached (the router's
//! composed slot, or HTTP to a tool deployed apart): its caller implements
//! [`Tools`].
//!
//! Module map, bottom up (no module names one above it):
//! - [`rpc`]: JSON-RPC error codes and the error object.
//! - [`version`]: the revisions spoken, the one `initialize` settles on,
//!   and the revision a request names in its `_meta`.
//! - [`transport`]: [`Tools`] (how a tool is reached) and [`ToolError`] (how a
//!   call comes back without a result).
//! - [`message`]: one JSON-RPC [`Message`] borrowed from the body and the
//!   scope it needs; [`message::split`], a body into one message or a batch
//!   of 1 to [`message::MAX_BATCH`].
//! - [`headers`]: the 2026-07-28 headers, checked against the body.
//! - [`apps`]: MCP Apps: the merge view (`ui://cairn/merge`) and who is told of it.
//! - [`resources`]: notes and tabs as MCP resources, read through the read
//!   tools, and the merge view.
//! - [`completion`]: `completion/complete` for the resource templates'
//!   arguments, from what the caller may see.
//! - [`subscriptions`]: a subject's `resources/subscribe` book (2025-11-25),
//!   kept in the `cache` store instead of a session.
//! - [`feed`]: the change feed: `subscriptions/listen` streams and the
//!   `GET /mcp` stream of a subject's book; what a stream watches, its
//!   looks through the read tools, its frames, its leases.
//! - [`logging`]: `logging/setLevel`'s levels.
//! - [`methods`]: one message in, at most one reply out.
//! - [`request`]: a whole request: [`Request::read`], what it needs before
//!   it runs, and [`Request::run`]'s [`Answer`] (one reply or a batch's
//!   array, 202 when nothing needs a reply, 503 when a tool is out of reach).
//!
//! A request, in order (the caller adds the front door first, and the
//! budget and scope checks where marked):
//!
//! ```text
//! Request::read(body, header)   400 + JSON-RPC error: not UTF-8 or JSON (-32700),
//!                               not 1-10 messages (-32600), headers disagree (-32600)
//! request.messages().len()      the caller charges the subject's budget, one per message
//! request.scopes()              the caller checks each scope (403), before anything runs
//! request.run(tools, who)       every message in order → Answer
//! ```

#![warn(missing_docs)]

pub mod apps;
pub mod completion;
pub mod feed;
pub mod headers;
pub mod logging;
pub mod message;
pub mod methods;
pub mod request;
pub mod resources;
pub mod rpc;
pub mod subscriptions;
pub mod transport;
pub mod version;

pub use message::Message;
pub use request::{Answer, Request};
pub use transport::{Stores, ToolError, Tools, Unavailable};
