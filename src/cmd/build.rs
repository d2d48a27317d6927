//! `cairn build`: run every component's build command from `spin.toml`, as
//! `spin build` does, installing the `wasm32-wasip2` target first if a
//! command needs it and rustup lacks it.

use crate::manifest::Manifest;
use anyhow::{Context, Result, bail};
use std::path::Path;
use std::process::Command;

/// Make sure `rustup` has the wasm32-wasip2 target; install it if not.
pub fn ensure_wasm_target() -> Result<()> {
    let out = Command::new("rustup").args(["target", "list", "--installed"]).output();
    let installed = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).lines().any(|l| l.trim() == "wasm32-wasip2"),
        _ => {
            eprintln!("cairn build: rustup not found; assuming the wasm32-wasip2 target is available");
            return Ok(());
        }
    };
    if !installed {
        eprintln!("cairn build: the wasm32-wasip2 target is missing; installing it (rustup target add wasm32-wasip2)");
        let status = Command::new("rustup").args(["target", "add", "wasm32-wasip2"]).status()?;
        if !status.success() {
            bail!("`rustup target add wasm32-wasip2` failed ({status})");
        }
    }
    Ok(())
}

/// Run the build command of every component (identical commands once).
pub fn build(manifest_path: &Path) -> Result<()> {
    let manifest = Manifest::load(manifest_path)?;
    if manifest.components.iter().filter_map(|c| c.build.as_ref()).any(|b| b.command.contains("wasm32-wasip2")) {
        ensure_wasm_target()?;
    }
    let mut done: Vec<(String, std::path::PathBuf)> = Vec::new();
    for c in &manifest.components {
        let Some(b) = &c.build else {
            eprintln!("cairn build: {} has no build command; skipping", c.id);
            continue;
        };
        let dir = manifest.dir.join(b.workdir.as_deref().unwrap_or("."));
        if done.iter().any(|(cmd, d)| cmd == &b.command && d == &dir) {
            continue;
        }
        eprintln!("cairn build: {}: {}", c.id, b.command);
        let status = Command::new("sh")
            .args(["-c", &b.command])
            .current_dir(&dir)
            .status()
            .with_context(|| format!("cannot run the build command of {}", c.id))?;
        if !status.success() {
            bail!("the build command of component {:?} failed ({status}): {}", c.id, b.command);
        }
        done.push((b.command.clone(), dir));
    }
    eprintln!("cairn build: finished");
    Ok(())
}

/// Arguments of `cairn build`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The application manifest.
    #[arg(long, short = 'f', default_value = "spin.toml")]
    pub manifest: std::path::PathBuf,
}

/// Run every build command.
pub fn run(a: Args) -> Result<()> {
    build(&a.manifest)
}
