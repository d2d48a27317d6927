//! `cairn build`: run every component's build command from `spin.toml`, as
//! `spin build` does, installing the `wasm32-wasip2` target first if a
//! command needs it and rustup lacks it.
//!
//! Commands that are a plain `cargo build … -p <crate>` (only `--quiet`,
//! `--release`, `--locked`, `--target <t>` and `--profile <p>` besides the
//! package) and agree on everything but the package are run as one cargo
//! invocation with every package (`cargo build … -p a -p b …`): cargo then
//! builds the shared dependencies once and the crates in parallel, and the
//! result is the same files each command would have written. Every other
//! command runs as written, in manifest order, after those.

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

/// A plain `cargo build … -p <crate>` command split into the flags it shares
/// with others and its package; `None` for any other command.
pub fn plain_cargo_build(command: &str) -> Option<(Vec<String>, String)> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let [cargo, build, rest @ ..] = words.as_slice() else { return None };
    if (*cargo, *build) != ("cargo", "build") {
        return None;
    }
    let (mut flags, mut package) = (Vec::new(), None);
    let mut it = rest.iter();
    while let Some(w) = it.next() {
        match *w {
            "--quiet" | "-q" | "--release" | "--locked" => flags.push(w.to_string()),
            "--target" | "--profile" => flags.extend([w.to_string(), it.next()?.to_string()]),
            "-p" | "--package" if package.is_none() => package = Some(it.next()?.to_string()),
            _ => return None,
        }
    }
    Some((flags, package?))
}

/// One command to run: its working directory, the command line and the components it builds.
struct Job {
    dir: std::path::PathBuf,
    command: String,
    components: Vec<String>,
}

/// Plain cargo builds of one directory with the same flags: one `cargo build`.
struct CargoJob {
    dir: std::path::PathBuf,
    flags: Vec<String>,
    packages: Vec<String>,
    components: Vec<String>,
}

/// The build commands of a manifest as jobs: plain cargo builds that share
/// their flags and directory merged into one, then every other command once.
fn jobs(manifest: &Manifest) -> Vec<Job> {
    let mut merged: Vec<CargoJob> = Vec::new();
    let mut other: Vec<Job> = Vec::new();
    for c in &manifest.components {
        let Some(b) = &c.build else {
            eprintln!("cairn build: {} has no build command; skipping", c.id);
            continue;
        };
        let dir = manifest.dir.join(b.workdir.as_deref().unwrap_or("."));
        if let Some((flags, package)) = plain_cargo_build(&b.command) {
            match merged.iter_mut().find(|j| j.dir == dir && j.flags == flags) {
                Some(j) => {
                    if !j.packages.contains(&package) {
                        j.packages.push(package);
                    }
                    j.components.push(c.id.clone());
                }
                None => merged.push(CargoJob { dir, flags, packages: vec![package], components: vec![c.id.clone()] }),
            }
        } else if let Some(j) = other.iter_mut().find(|j| j.command == b.command && j.dir == dir) {
            j.components.push(c.id.clone());
        } else {
            other.push(Job { dir, command: b.command.clone(), components: vec![c.id.clone()] });
        }
    }
    let cargo = merged.into_iter().map(|j| {
        let packages: Vec<String> = j.packages.iter().map(|p| format!("-p {p}")).collect();
        Job { dir: j.dir, command: format!("cargo build {} {}", j.flags.join(" "), packages.join(" ")), components: j.components }
    });
    cargo.chain(other).collect()
}

/// Run the build command of every component (identical commands once, plain
/// cargo builds together).
pub fn build(manifest_path: &Path) -> Result<()> {
    let manifest = Manifest::load(manifest_path)?;
    if manifest.components.iter().filter_map(|c| c.build.as_ref()).any(|b| b.command.contains("wasm32-wasip2")) {
        ensure_wasm_target()?;
    }
    for job in jobs(&manifest) {
        eprintln!("cairn build: {}: {}", job.components.join(", "), job.command);
        let status = Command::new("sh")
            .args(["-c", &job.command])
            .current_dir(&job.dir)
            .status()
            .with_context(|| format!("cannot run the build command of {}", job.components.join(", ")))?;
        if !status.success() {
            bail!("the build command of {} failed ({status}): {}", job.components.join(", "), job.command);
        }
    }
    eprintln!("cairn build: finished");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::plain_cargo_build;

    #[test]
    fn a_plain_cargo_build_splits_into_flags_and_package() {
        let (flags, package) = plain_cargo_build("cargo build --quiet --target wasm32-wasip2 --profile wasm -p read-note-tab").unwrap();
        assert_eq!(flags, ["--quiet", "--target", "wasm32-wasip2", "--profile", "wasm"]);
        assert_eq!(package, "read-note-tab");
    }

    #[test]
    fn any_other_command_runs_as_written() {
        for c in [
            "npm ci --prefix components/ui && cargo build --quiet --target wasm32-wasip2 --profile wasm -p ui",
            "cargo build --features x -p a",
            "cargo build --target wasm32-wasip2",
            "cargo build -p a -p b",
            "cargo build -p",
            "make",
        ] {
            assert_eq!(plain_cargo_build(c), None, "{c}");
        }
    }
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
