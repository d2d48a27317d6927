//! `cairn generate`: write every tool's wiring from the core's tool table
//! ([`crate::wiring`]): component packages, `spin.toml`'s generated regions,
//! the router's slots in `wit/tools.wit` and `guest/src/slots.rs`. With
//! `--check`, write nothing and exit 1 naming every stale line.

use anyhow::{Result, bail};
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
    let tools = crate::wiring::table();
    if a.check {
        let stale = crate::wiring::check(&a.root, &tools);
        if stale.is_empty() {
            println!("cairn generate: the wiring of {} tools is up to date", tools.len());
            return Ok(());
        }
        for s in &stale {
            eprintln!("{s}");
        }
        bail!("{} stale piece(s) of tool wiring: run `cairn generate`", stale.len());
    }
    let written = crate::wiring::write(&a.root, &tools)?;
    for path in &written {
        println!("cairn generate: wrote {}", path.display());
    }
    if written.is_empty() {
        println!("cairn generate: the wiring of {} tools is up to date", tools.len());
    }
    Ok(())
}
