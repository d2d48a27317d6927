//! Cairn's embedded host: runs the Spin application described by `spin.toml`
//! on one machine.
//!
//! - [`manifest`]: reads and validates `spin.toml` (manifest version 2).
//! - [`variables`]: application and component variables, `SPIN_VARIABLE_*`.
//! - [`runtime`]: the engine, the precompile cache, one request's instance.
//! - [`kv_host`]: host side of `wasi:keyvalue` and Spin's key-value/variables.
//! - [`local`]: the local signing key and identity secret in the state dir.
//! - [`native`]: the notes core in-process, the benchmarks' baseline.
//! - [`outbound`]: plain-HTTP calls to allowed hosts outside the application.
//! - [`server`]: the HTTP listener, routing, logs, graceful shutdown.
//! - [`build`]: `cairn build`, the manifest's build commands.
//! - [`compat`]: `cairn compat`, component imports against Spin's platform world.
//! - [`bench`]: `cairn bench host`, the host against native hyper.
//! - [`bench_notes`]: `cairn bench notes|router`, the tools against the core natively.
//! - [`experiments`]: `cairn bench race|…|throughput|all`, the seed posts' experiments over HTTP.
//! - [`charts`]: SVG charts of the experiments for `docs/results.md`.
//!
//! Bindings for the WIT contract in `wit/` are generated here, once.

pub mod bench;
pub mod bench_notes;
pub mod build;
pub mod charts;
pub mod compat;
pub mod experiments;
pub mod kv_host;
pub mod local;
pub mod manifest;
pub mod native;
pub mod outbound;
pub mod runtime;
pub mod server;
pub mod variables;

/// Host bindings of `cairn:platform/host` (`wit/cairn.wit`).
pub mod bindings {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "cairn:platform/host",
        imports: { default: trappable },
        with: {
            "wasi:keyvalue/store.bucket": crate::kv_host::Bucket,
            "wasi:keyvalue/atomics.cas": crate::kv_host::CasHandle,
            "fermyon:spin/key-value.store": crate::kv_host::Bucket,
        },
    });
}
