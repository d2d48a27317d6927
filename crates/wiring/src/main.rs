//! `cairn-generate [--check] [--root <dir>]`: the wiring generator without
//! the host, so that adding a tool regenerates everything by one light
//! command (`cargo run -p cairn-wiring`); `cairn generate` does the same.

use std::path::PathBuf;

fn main() {
    if let Err(e) = run() {
        eprintln!("cairn-generate: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> anyhow::Result<()> {
    let mut check = false;
    let mut root = PathBuf::from(".");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--check" => check = true,
            "--root" => root = args.next().map(PathBuf::from).ok_or_else(|| anyhow::anyhow!("--root needs a directory"))?,
            other => anyhow::bail!("unknown argument `{other}`: usage: cairn-generate [--check] [--root <dir>]"),
        }
    }
    cairn_wiring::generate(&root, check)
}
