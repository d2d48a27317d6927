//! `cairn up`: serve the application in `spin.toml` until Ctrl-C or SIGTERM.

use crate::instance::Limits;
use crate::server;
use crate::stores::{StoreKind, Stores};
use anyhow::Result;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `cairn up`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The application manifest.
    #[arg(long, short = 'f', default_value = "spin.toml")]
    pub manifest: PathBuf,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:3000")]
    pub listen: SocketAddr,
    /// Directory for the store and the compiled-component cache.
    #[arg(long, default_value = ".cairn")]
    pub state_dir: PathBuf,
    /// Where compiled components are cached (default: `<state-dir>/cache`).
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    /// Run `cairn build` first.
    #[arg(long)]
    pub build: bool,
    /// Backend of the `default` key-value store: sqlite, memory, or a
    /// redis://host:port[/db] URL (a shortcut for a runtime config entry).
    #[arg(long)]
    pub store: Option<StoreKind>,
    /// A Spin runtime config file: `[key_value_store.<label>]` tables choose
    /// each store's backend (type redis, spin or memory).
    #[arg(long)]
    pub runtime_config_file: Option<PathBuf>,
    /// Serve only this component (repeatable), as `spin up -c`: tools
    /// deployed apart, each host serving some.
    #[arg(long = "component", short = 'c')]
    pub components: Vec<String>,
    /// Make every SQLite commit survive power loss, not only a crash.
    #[arg(long)]
    pub fsync: bool,
    /// Time one request may run before it is interrupted, in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    pub request_timeout_ms: u64,
    /// Linear memory one instance may use, in MiB.
    #[arg(long, default_value_t = 128)]
    pub max_memory_mb: usize,
    /// Instances alive at once.
    #[arg(long, default_value_t = 256)]
    pub max_instances: u32,
    /// Seconds between sweeps of lapsed claims and history past retention.
    #[arg(long, default_value_t = 60)]
    pub sweep_interval_secs: u64,
    /// Milliseconds between rounds of the search merge (what commits marked
    /// dirty brought into the index; until then queries read those notes directly).
    #[arg(long, default_value_t = 250)]
    pub merge_interval_ms: u64,
    /// Time a client may take to send its request headers, in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    pub header_timeout_ms: u64,
    /// Time a client may take to send its request body, in milliseconds
    /// (a slow body is read before the request takes an instance).
    #[arg(long, default_value_t = 30_000)]
    pub body_timeout_ms: u64,
    /// Largest request body the host reads, in MiB (the application's
    /// `max_body_bytes` variable applies when smaller).
    #[arg(long, default_value_t = 32)]
    pub max_body_mb: usize,
    /// Bytes of request bodies the host holds at once, all requests
    /// together, in MiB; a body that would pass it is refused 503 `busy`.
    #[arg(long, default_value_t = 64)]
    pub body_budget_mb: usize,
    /// Client connections open at once; one more is answered 503 and closed.
    #[arg(long, default_value_t = 1024)]
    pub max_connections: usize,
    /// Connections one client address may have open at once (an IPv6
    /// address counts by its /64); one more is answered 429 and closed.
    #[arg(long, default_value_t = 64)]
    pub max_connections_per_address: usize,
    /// Request bodies the host waits for at once from one client address
    /// (a body sent with its request is not waited for); one more is
    /// answered 429 before a byte of it is read.
    #[arg(long, default_value_t = 8)]
    pub max_bodies_per_address: usize,
    /// Bytes a second a request body must keep arriving at, over every
    /// window of --body-rate-window-ms (the first one is its grace); slower
    /// is answered 408 `body_too_slow`. 0: no minimum.
    #[arg(long, default_value_t = 1024)]
    pub min_body_rate: usize,
    /// The window --min-body-rate is measured over, in milliseconds.
    #[arg(long, default_value_t = 5_000)]
    pub body_rate_window_ms: u64,
    /// How log lines are written: `text` (coloured only on a terminal) or
    /// `json` (one object a line).
    #[arg(long, value_enum, default_value_t = crate::logs::Format::Text)]
    pub log_format: crate::logs::Format,
    /// Print a new one-time sign-in link for the first person (an admin of
    /// tenant `local`), even after someone signed in with one.
    #[arg(long)]
    pub sign_in_link: bool,
    /// Threads that serve connections, each connection on one of them from
    /// its first request to its last (default: four per core).
    /// (`--lanes`, its earlier name, is still accepted.)
    #[arg(long, alias = "lanes")]
    pub connection_threads: Option<usize>,
    /// Requests one instance of a WASI 0.3 component serves in its life
    /// before a new one replaces it (1: a fresh instance per request), as
    /// Spin's `--max-instance-reuse-count`. An instance serves one tenant only.
    #[arg(long, env = "CAIRN_MAX_INSTANCE_REUSE_COUNT", default_value_t = 128)]
    pub max_instance_reuse_count: usize,
    /// Requests one instance serves at once, as Spin's
    /// `--max-instance-concurrent-reuse-count`.
    #[arg(long, env = "CAIRN_MAX_INSTANCE_CONCURRENT_REUSE_COUNT", default_value_t = 16)]
    pub max_instance_concurrent_reuse_count: usize,
    /// How long an instance waits for its next request before it ends, as
    /// Spin's `--idle-instance-timeout`.
    #[arg(long, env = "CAIRN_IDLE_INSTANCE_TIMEOUT_MS", default_value_t = 1_000)]
    pub idle_instance_timeout_ms: u64,
}

/// Build first if asked, then serve until a signal.
pub fn run(a: Args) -> Result<()> {
    if a.build {
        super::build::build(&a.manifest)?;
    }
    let limits = Limits {
        request_timeout: Duration::from_millis(a.request_timeout_ms),
        max_memory: a.max_memory_mb << 20,
        max_instances: a.max_instances,
        header_timeout: Duration::from_millis(a.header_timeout_ms.max(1)),
        body_timeout: Duration::from_millis(a.body_timeout_ms.max(1)),
        max_body_bytes: a.max_body_mb.max(1) << 20,
        body_budget: a.body_budget_mb.max(1) << 20,
        max_connections: a.max_connections.max(1),
        max_connections_per_address: a.max_connections_per_address.max(1),
        max_bodies_per_address: a.max_bodies_per_address.max(1),
        min_body_rate: a.min_body_rate,
        body_rate_window: Duration::from_millis(a.body_rate_window_ms.max(1)),
        connection_threads: a.connection_threads.unwrap_or_else(crate::connection_threads::default_count).max(1),
        reuse: crate::pool::Reuse {
            count: a.max_instance_reuse_count.max(1),
            concurrent: a.max_instance_concurrent_reuse_count.max(1),
            idle: Duration::from_millis(a.idle_instance_timeout_ms),
        },
    };
    let cache_dir = a.cache_dir.unwrap_or_else(|| a.state_dir.join("cache"));
    let stores = match &a.runtime_config_file {
        Some(path) => Stores::from_file(path)?,
        None => Stores::default(),
    }
    .with_default(a.store.as_ref());
    let opts = server::Options {
        manifest: a.manifest,
        listen: a.listen,
        state_dir: a.state_dir,
        cache_dir,
        stores,
        components: a.components,
        fsync: a.fsync,
        limits,
        sweep_interval: Duration::from_secs(a.sweep_interval_secs.max(1)),
        merge_interval: Duration::from_millis(a.merge_interval_ms.max(10)),
        variables: Default::default(),
        sign_in_link: a.sign_in_link,
    };
    tokio::runtime::Runtime::new()?.block_on(server::run_until_signal(opts))
}
