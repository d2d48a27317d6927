//! The `cairn` command: build, check and run the Cairn application. Each
//! command lives in its own file under `src/cmd/`; the benchmarks and
//! experiments are the separate `cairn-bench` binary (`bench/`).

use anyhow::Result;
use cairn::cmd;
use clap::{Parser, Subcommand};

/// mimalloc, not glibc's malloc: the host allocates and frees a value-sized
/// buffer at every layer a request crosses (HTTP bodies, JSON, store values),
/// and glibc's free lists cost ~20% of the CPU on the append workload.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "cairn", version, about = "Cairn: shared notes for people and AI agents, on one machine or on Spin")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the application in spin.toml.
    Up(cmd::up::Args),
    /// Run every component's build command from spin.toml.
    Build(cmd::build::Args),
    /// Mint a bearer token with the local signing key of a state dir.
    Token(cmd::token::Args),
    /// Rebuild (or `--check`) the search index of tenants from their notes.
    Reindex(cmd::reindex::Args),
    /// Check every component's imports against Spin's platform world (from the
    /// spin-sdk crate in the cargo registry) and Cairn's contract in wit/.
    Compat(cmd::compat::Args),
    /// Write every tool's wiring (component packages, spin.toml's generated
    /// regions, the router's slots) from the core's tool table, or `--check` it.
    Generate(cmd::generate::Args),
    /// Write deployment manifests.
    Deploy {
        #[command(subcommand)]
        target: Deploy,
    },
}

#[derive(Subcommand)]
enum Deploy {
    /// One SpinKube SpinApp per tool plus a front app, each with its autoscaler.
    Spinkube(cmd::deploy::Args),
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Up(a) => {
            cairn::logs::init(a.log_format);
            cmd::up::run(a)
        }
        Command::Build(a) => cmd::build::run(a),
        Command::Token(a) => cmd::token::run(a),
        Command::Reindex(a) => cmd::reindex::run(a),
        Command::Compat(a) => cmd::compat::run(a),
        Command::Generate(a) => cmd::generate::run(a),
        Command::Deploy { target: Deploy::Spinkube(a) } => cmd::deploy::run(a),
    }
}
