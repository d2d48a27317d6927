//! The one place Cairn components reach the host.
//!
//! A component is a WASI 0.3 component: its HTTP handler and outbound HTTP
//! come from `spin-sdk` 7 (`wasi:http@0.3.0`), its store and variables from
//! Cairn's own bindings of Spin's interfaces ([`bindings`]), so every
//! component keeps to Spin's platform world. This crate wraps them:
//!
//! - [`http`]: a request read whole (within a cap) and a response.
//! - [`config`]: Cairn's configuration, read once per instance.
//! - [`door`]: the front door ([`cairn_door`]) every public entry runs first.
//! - [`fetch`]: a bounded `GET` of a document a stranger names.
//! - [`auth`]: bearer tokens for the public components (router, REST).
//! - [`kv`]: the host's stores (`wasi:keyvalue` store, atomics and batch) as
//!   a [`cairn_kv::Store`], the contract the core and the conformance checks use.
//! - [`respond`]: JSON responses, request helpers, failures as 5xx.
//! - [`notes`]: the core's environment: the host's clock and randomness, and
//!   the verified principal as the core's identity.
//! - [`tool`]: the whole body of a tool component ([`tool_component!`]):
//!   one answer behind two doors, `POST /tools/<name>` and the
//!   `cairn:platform/tool` export the router is composed with.
//! - [`bindings`]: bindings of Cairn's own WIT (the tool export, the router's
//!   slots) and the `cairn:platform/tool` types, the caller and the answer.
//! - [`slots`]: the router's calls into the tools composed with it.
//! - [`random_u64`] and [`variable`]: randomness and application variables.

pub mod auth;
pub mod bindings;
pub mod config;
pub mod door;
pub mod fetch;
pub mod http;
pub mod kv;
pub mod notes;
pub mod respond;
pub mod slots;
pub mod tool;

pub use cairn_config;
pub use cairn_door;
pub use cairn_notes;
pub use spin_sdk;

/// 64 random bits from the host (`wasi:random@0.3.0`), without pulling
/// `getrandom` (whose WASI imports Spin need not offer).
pub fn random_u64() -> u64 {
    spin_sdk::wasip3::random::random::get_random_u64()
}

/// An application variable, `None` when it is undefined or empty.
pub fn variable(name: &str) -> Option<String> {
    bindings::imports::fermyon::spin::variables::get(name).ok().filter(|v| !v.is_empty())
}

pub use cairn_auth::constant_time_eq;

/// Drops the `cache` store's expired records (see [`cairn_door::cache`]):
/// what the operators' sweep route does on hosts without their own timer.
pub fn sweep_cache(front: &door::FrontDoor, now_s: u64) -> serde_json::Value {
    match cairn_door::cache::sweep(front.cache(), now_s, front.settings().window_minutes, 10_000) {
        Ok(s) => serde_json::json!({"counters": s.counters, "tokens": s.tokens, "other": s.other}),
        Err(e) => serde_json::json!({"error": e.to_string()}),
    }
}
