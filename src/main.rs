//! The `cairn` command: build, run and benchmark the Cairn application.

use anyhow::Result;
use cairn::runtime::Limits;
use cairn::server::{self, StoreKind};
use clap::{Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(name = "cairn", version, about = "Cairn: shared notes for people and AI agents, on one machine or on Spin")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the application in spin.toml.
    Up {
        /// The application manifest.
        #[arg(long, short = 'f', default_value = "spin.toml")]
        manifest: PathBuf,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:3000")]
        listen: SocketAddr,
        /// Directory for the store and the compiled-component cache.
        #[arg(long, default_value = ".cairn")]
        state_dir: PathBuf,
        /// Where compiled components are cached (default: <state-dir>/cache).
        #[arg(long)]
        cache_dir: Option<PathBuf>,
        /// Run `cairn build` first.
        #[arg(long)]
        build: bool,
        /// Backend of the `default` key-value store.
        #[arg(long, value_enum, default_value = "sqlite")]
        store: StoreKind,
        /// Make every SQLite commit survive power loss, not only a crash.
        #[arg(long)]
        fsync: bool,
        /// Time one request may run before it is interrupted, in milliseconds.
        #[arg(long, default_value_t = 30_000)]
        request_timeout_ms: u64,
        /// Linear memory one instance may use, in MiB.
        #[arg(long, default_value_t = 128)]
        max_memory_mb: usize,
        /// Instances alive at once.
        #[arg(long, default_value_t = 256)]
        max_instances: u32,
        /// Seconds between sweeps of lapsed claims.
        #[arg(long, default_value_t = 60)]
        sweep_interval_secs: u64,
    },
    /// Run every component's build command from spin.toml.
    Build {
        /// The application manifest.
        #[arg(long, short = 'f', default_value = "spin.toml")]
        manifest: PathBuf,
    },
    /// Mint a bearer token with the local signing key of a state dir.
    Token {
        /// Tenant the caller belongs to.
        #[arg(long)]
        tenant: String,
        /// Subject (stable id of the caller).
        #[arg(long)]
        sub: String,
        /// Display name shown to others.
        #[arg(long)]
        name: Option<String>,
        /// Agent or human.
        #[arg(long, value_enum, default_value = "agent")]
        actor: ActorArg,
        /// Role (admin only takes effect for humans).
        #[arg(long, value_enum, default_value = "member")]
        role: RoleArg,
        /// Space-separated scopes.
        #[arg(long, default_value = "notes:read notes:write")]
        scope: String,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 3600)]
        ttl: u64,
        /// The audience: the MCP URL the token is for.
        #[arg(long, default_value = "http://127.0.0.1:3000/mcp")]
        audience: String,
        /// The issuer the server expects.
        #[arg(long, default_value = cairn::local::LOCAL_ISSUER)]
        issuer: String,
        /// State dir holding the signing key.
        #[arg(long, default_value = ".cairn")]
        state_dir: PathBuf,
    },
    /// Check every component's imports against Spin's platform world (from the
    /// spin-sdk crate in the cargo registry) and Cairn's contract in wit/.
    Compat {
        /// The application manifest.
        #[arg(long, short = 'f', default_value = "spin.toml")]
        manifest: PathBuf,
    },
    /// Benchmarks that print ratios against a native baseline.
    Bench {
        #[command(subcommand)]
        which: Bench,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ActorArg {
    Agent,
    Human,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum RoleArg {
    Admin,
    Member,
}

/// What every benchmark takes.
#[derive(clap::Args)]
struct BenchArgs {
    /// The application manifest.
    #[arg(long, short = 'f', default_value = "spin.toml")]
    manifest: PathBuf,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 3)]
    seconds: u64,
    /// Concurrent clients (repeatable).
    #[arg(long, default_values_t = vec![1, 32])]
    concurrency: Vec<usize>,
}

#[derive(Subcommand)]
enum Bench {
    /// The trivial `health` component through the host against native hyper.
    Host(BenchArgs),
    /// edit_note_tab through the whole stack against the core natively, and
    /// per-write cost against tab size and store size.
    Notes {
        #[command(flatten)]
        common: BenchArgs,
        /// Largest store size to measure (1,000 / 10,000 / 100,000 notes).
        #[arg(long, default_value_t = 100_000)]
        max_notes: usize,
    },
    /// read_note_tab through the router, against the tool alone and the core.
    Router(BenchArgs),
    /// Agent and person appending lines to one tab: lost updates per client policy.
    Race(ExperimentArgs),
    /// Zero think time, re-read + re-apply: nothing may be lost.
    Fast(ExperimentArgs),
    /// create_note_tab with dropped replies: tabs created per idempotency-key policy.
    Create(ExperimentArgs),
    /// Agent on the markdown tab, person on a sheet tab: note- against tab-scope versions.
    Tabs(ExperimentArgs),
    /// add_note_source with seven URL spellings and lost replies: sources stored per key policy.
    Sources(ExperimentArgs),
    /// Handles to one of K slides decks (position, type, label, ID) after a person's changes.
    Handles(ExperimentArgs),
    /// read_note_tab and edit_note_tab at 1, 8 and 32 clients: whole stack against the core natively.
    Throughput(ExperimentArgs),
    /// Every experiment above, one markdown document (with SVG charts next to `--out`).
    All(ExperimentArgs),
}

/// What the seed posts' experiments take.
#[derive(clap::Args)]
struct ExperimentArgs {
    /// The application manifest.
    #[arg(long, short = 'f', default_value = "spin.toml")]
    manifest: PathBuf,
    /// A short version that runs in seconds.
    #[arg(long)]
    quick: bool,
    /// Runs per row (seeds 1..=runs).
    #[arg(long)]
    runs: Option<u64>,
    /// Edits per editor in race and tabs (fast: `--fast-edits`).
    #[arg(long)]
    edits: Option<usize>,
    /// Edits per editor in fast.
    #[arg(long)]
    fast_edits: Option<usize>,
    /// create_note_tab intents per run.
    #[arg(long)]
    intents: Option<usize>,
    /// Research sessions per seed in sources.
    #[arg(long)]
    sessions: Option<usize>,
    /// Trials per seed and deck count in handles.
    #[arg(long)]
    trials: Option<usize>,
    /// Milliseconds per point (and side) in throughput.
    #[arg(long)]
    point_ms: Option<u64>,
    /// Also write the tables to this markdown file.
    #[arg(long)]
    out: Option<PathBuf>,
}

impl ExperimentArgs {
    fn sizes(&self) -> cairn::experiments::Sizes {
        let base = if self.quick { cairn::experiments::Sizes::quick() } else { cairn::experiments::Sizes::full() };
        cairn::experiments::Sizes {
            runs: self.runs.unwrap_or(base.runs),
            edits: self.edits.unwrap_or(base.edits),
            fast_edits: self.fast_edits.unwrap_or(base.fast_edits),
            intents: self.intents.unwrap_or(base.intents),
            sessions: self.sessions.unwrap_or(base.sessions),
            trials: self.trials.unwrap_or(base.trials),
            point_ms: self.point_ms.unwrap_or(base.point_ms),
        }
    }
}

fn init_logs() {
    let level = std::env::var("CAIRN_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::INFO);
    tracing_subscriber::fmt().with_max_level(level).with_target(false).with_writer(std::io::stderr).init();
}

fn experiment(rt: &tokio::runtime::Runtime, which: &str, a: ExperimentArgs) -> Result<()> {
    let sizes = a.sizes();
    rt.block_on(cairn::experiments::run(a.manifest, which, sizes, a.out))
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Build { manifest } => cairn::build::build(&manifest),
        Command::Up {
            manifest,
            listen,
            state_dir,
            cache_dir,
            build,
            store,
            fsync,
            request_timeout_ms,
            max_memory_mb,
            max_instances,
            sweep_interval_secs,
        } => {
            init_logs();
            if build {
                cairn::build::build(&manifest)?;
            }
            let limits = Limits {
                request_timeout: Duration::from_millis(request_timeout_ms),
                max_memory: max_memory_mb << 20,
                max_instances,
            };
            let cache_dir = cache_dir.unwrap_or_else(|| state_dir.join("cache"));
            let opts = server::Options {
                manifest,
                listen,
                state_dir,
                cache_dir,
                store,
                fsync,
                limits,
                sweep_interval: Duration::from_secs(sweep_interval_secs.max(1)),
                variables: Default::default(),
            };
            tokio::runtime::Runtime::new()?.block_on(server::run_until_signal(opts))
        }
        Command::Token { tenant, sub, name, actor, role, scope, ttl, audience, issuer, state_dir } => {
            let key = cairn::local::signing_key(&state_dir)?;
            let spec = cairn_auth::mint::TokenSpec {
                issuer,
                audience,
                tenant,
                subject: sub,
                name,
                actor: match actor {
                    ActorArg::Agent => cairn_auth::Actor::Agent,
                    ActorArg::Human => cairn_auth::Actor::Human,
                },
                role: match role {
                    RoleArg::Admin => cairn_auth::Role::Admin,
                    RoleArg::Member => cairn_auth::Role::Member,
                },
                scope,
                now: cairn::local::now(),
                ttl,
            };
            println!("{}", key.sign(&spec.claims()));
            Ok(())
        }
        Command::Compat { manifest } => {
            let dir = manifest.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
            let root = cairn::compat::workspace_root(dir)?;
            let problems = cairn::compat::check_manifest(&manifest, &root)?;
            if problems.is_empty() {
                println!("every component keeps to Spin's platform world and Cairn's contract");
                Ok(())
            } else {
                for p in &problems {
                    eprintln!("{p}");
                }
                anyhow::bail!("{} incompatible import(s)", problems.len())
            }
        }
        Command::Bench { which } => {
            if std::env::var("CAIRN_LOG").is_ok() {
                init_logs();
            }
            let rt = tokio::runtime::Runtime::new()?;
            match which {
                Bench::Host(a) => rt.block_on(cairn::bench::host(a.manifest, a.seconds, a.concurrency)),
                Bench::Notes { common: a, max_notes } => {
                    rt.block_on(cairn::bench_notes::notes(a.manifest, a.seconds, a.concurrency, max_notes))
                }
                Bench::Router(a) => rt.block_on(cairn::bench_notes::router(a.manifest, a.seconds, a.concurrency)),
                Bench::Race(a) => experiment(&rt, "race", a),
                Bench::Fast(a) => experiment(&rt, "fast", a),
                Bench::Create(a) => experiment(&rt, "create", a),
                Bench::Tabs(a) => experiment(&rt, "tabs", a),
                Bench::Sources(a) => experiment(&rt, "sources", a),
                Bench::Handles(a) => experiment(&rt, "handles", a),
                Bench::Throughput(a) => experiment(&rt, "throughput", a),
                Bench::All(a) => experiment(&rt, "all", a),
            }
        }
    }
}
