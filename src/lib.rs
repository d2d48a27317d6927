//! Cairn's embedded host: runs the Spin application described by `spin.toml`
//! on one machine. Split by job, as Spin splits loader, factors and trigger:
//!
//! - [`manifest`]: reads and validates `spin.toml` (manifest version 2).
//! - [`variables`]: application and component variables, `SPIN_VARIABLE_*`.
//! - [`engine`]: the wasmtime engine, the precompile cache, the linker.
//! - [`instance`]: the shared application, an instance's host state and limits, serving a request.
//! - [`pool`]: instances reused as Spin reuses them, each serving one partition (tenant).
//! - [`tenancy`]: Cairn's partitioner: the tenant of a verified credential.
//! - [`compose`]: component dependencies, composed into the dependent at load.
//! - [`answers`]: the application's hook on what its components answer (Cairn's: tool calls, refusals, delays).
//! - [`outbound`]: outbound HTTP from guests: the allow-list, `*.spin.internal`
//!   chaining in-process, plain HTTP elsewhere.
//! - [`kv_host`]: host side of `wasi:keyvalue` and Spin's key-value.
//! - [`variables_host`]: host side of Spin's variables.
//! - [`stores`]: which backend holds each store label (runtime config, `--store`).
//! - [`server`]: the HTTP listener, routing, logs, graceful shutdown.
//! - [`connection_threads`]: the threads that serve connections, each connection on one.
//! - [`sweep`]: the periodic sweep of delete markers and lapsed claims.
//! - [`clock`]: the system clock and randomness as the notes core's `Env`.
//! - [`local`]: the local signing key and identity secret in the state dir.
//! - [`logs`]: the log subscriber.
//! - [`metrics`]: Prometheus metrics (`GET /metrics`) and the metered store.
//! - [`wiring`]: every tool's wiring derived from the core's tool table
//!   (the `cairn-wiring` crate: what `cairn generate` writes and checks).
//! - [`cmd`]: the CLI commands (`up`, `build`, `token`, `generate`, …), one file each.
//!
//! Bindings for the WIT contract in `wit/` are generated here, once.

pub mod answers;
pub mod clock;
pub mod cmd;
pub mod compose;
pub mod connection_threads;
pub mod engine;
pub mod instance;
pub mod kv_host;
pub mod local;
pub mod logs;
pub mod manifest;
pub mod metrics;
pub mod outbound;
pub mod pool;
pub mod server;
pub mod stores;
pub mod sweep;
pub mod tenancy;
pub mod variables;
pub mod variables_host;
pub use cairn_wiring as wiring;

/// Host bindings of `cairn:platform/host` (`wit/cairn.wit`).
pub mod bindings {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "cairn:platform/host",
        // The store calls that may wait (see `cairn_kv::Store::waits`) are
        // async, so a waiting call gives its thread back to other requests.
        imports: {
            "wasi:keyvalue/store.[method]bucket.get": async | trappable,
            "wasi:keyvalue/store.[method]bucket.set": async | trappable,
            "wasi:keyvalue/store.[method]bucket.delete": async | trappable,
            "wasi:keyvalue/store.[method]bucket.exists": async | trappable,
            "wasi:keyvalue/store.[method]bucket.list-keys": async | trappable,
            "wasi:keyvalue/atomics.increment": async | trappable,
            "wasi:keyvalue/atomics.swap": async | trappable,
            "wasi:keyvalue/atomics.[static]cas.new": async | trappable,
            "wasi:keyvalue/batch.get-many": async | trappable,
            "wasi:keyvalue/batch.set-many": async | trappable,
            "wasi:keyvalue/batch.delete-many": async | trappable,
            "fermyon:spin/key-value.[method]store.get": async | trappable,
            "fermyon:spin/key-value.[method]store.set": async | trappable,
            "fermyon:spin/key-value.[method]store.delete": async | trappable,
            "fermyon:spin/key-value.[method]store.exists": async | trappable,
            "fermyon:spin/key-value.[method]store.get-keys": async | trappable,
            default: trappable,
        },
        with: {
            "wasi:keyvalue/store.bucket": crate::kv_host::Bucket,
            "wasi:keyvalue/atomics.cas": crate::kv_host::CasHandle,
            "fermyon:spin/key-value.store": crate::kv_host::Bucket,
        },
    });
}
