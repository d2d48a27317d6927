//! `cairn-bench`: Cairn's benchmarks and the seed posts' experiments. Every
//! one prints ratios against a baseline measured in the same run; none is a
//! timed test. Lives outside the server: the `cairn` binary links none of it.
//!
//! - [`stack`]: the application in this process with bench tokens, an HTTP
//!   client, seeded notes, the closed-loop client (whole stack or core natively).
//! - [`measure`]: series, percentiles, a GET load generator, printed tables.
//! - [`append`]: the seed workload (read, then write the text plus a line), verified.
//! - [`attack`]: the attack suite: what each attack costs a real host, and an honest agent beside it.
//! - [`hosts`]: hosts as separate `cairn up` processes sharing a state dir.
//! - [`scale`]: the append workload on 1–3 hosts on one Redis against SQLite.
//! - [`cluster`]: the same on three hosts on Redis Clusters of 1–3 primaries.
//! - [`spin`]: the same `.wasm` files on a real Spin beside the embedded host.
//! - [`feed`]: the change feed: an edit to agents listening on 1 and 3 hosts, idle subscriptions' cost.
//! - [`host`]: the trivial component through the host against native hyper.
//! - [`native`]: the native server: the same core, store, MCP layer and
//!   front door served natively over HTTP, no components (the baseline).
//! - [`notes`]: edits and reads through the stack against the core natively.
//! - [`peer`]: the Python and TypeScript peers (official MCP SDKs + SQLite) as processes.
//! - [`perf`]: the performance report: the append workload, reads, tab and
//!   store sizes, where the time goes, memory and start.
//! - [`search`]: `search_notes` latency at 1,000 and 10,000 notes and the index's cost to an edit.
//! - [`experiments`]: one file per experiment, picked by [`experiments::Experiment`].
//! - [`charts`]: SVG charts of the experiments for `docs/results.md`.

pub mod append;
pub mod attack;
pub mod charts;
pub mod cluster;
pub mod experiments;
pub mod feed;
pub mod host;
pub mod hosts;
pub mod measure;
pub mod native;
pub mod notes;
pub mod peer;
pub mod perf;
pub mod scale;
pub mod search;
pub mod spin;
pub mod stack;

/// A fresh nonce for a signed identity (each one is accepted once).
pub fn nonce() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("bench-{}-{:x}-{}", std::process::id(), cairn::clock::now_us(), NEXT.fetch_add(1, Ordering::Relaxed))
}
