//! End-to-end tests of the embedded host: each module is one behaviour,
//! run against the real `cairn` binary over real HTTP on loopback.
//!
//! The components must be built first (`cargo run --release -- build`, and
//! `-f tests/fixtures/spin.toml` for the fixture); `scripts/test.sh` does both.

mod app;
mod harness;
mod interop;
mod redis;
mod sources;

mod cache;
mod claims;
mod cluster;
mod compat;
mod composition;
mod concurrency;
mod configuration;
mod crash;
mod deploy;
mod exhaustion;
mod feed;
mod front_door;
mod full_disk;
mod fuzz_config;
mod fuzz_http;
mod guessing;
mod history;
mod kv_probe;
mod limits;
mod local_sign_in;
mod manifest;
mod mcp_protocol;
mod metrics;
mod notes_e2e;
mod oauth;
mod one_build;
mod outbound;
mod own_oauth;
mod real_issuer;
mod resources;
mod reuse;
mod routing;
mod scale_out;
mod scale_out_faults;
mod search;
mod secrets_in_logs;
mod shutdown;
mod spin;
mod spin_harness;
mod spin_redis;
mod spin_routes;
mod stalled_uploads;
mod store_config;
mod structure;
mod tenants;
mod tools_apart;
mod tools_manifest;
mod variables;
mod waiting_store;
pub mod wire;
