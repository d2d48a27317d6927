//! `cairn generate`: write every tool's wiring from the core's tool table
//! ([`crate::wiring`]): component packages, `spin.toml`'s generated regions,
//! the router's slots in `wit/tools.wit` and `guest/src/slots.rs`, and the
//! saved `tools/list` reply. With
//! `--check`, write nothing and exit 1 naming every stale line.

use anyhow::Result;
use std::path::PathBuf;

/// Arguments of `cairn generate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only compare; exit 1 naming each stale line and the line to write.
    #[arg(long)]
    pub check: bool,
    /// The project root (where `spin.toml` is).
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
}

/// Generate (or check) and say what changed.
pub fn run(a: Args) -> Result<()> {
    crate::wiring::generate(&a.root, a.check)
}
