//! The README's two commands build wasmtime once between them: the host alone
//! (`cargo run --release`) resolves every shared crate with the same features
//! as the test build (`cargo test --release`: the default members with their
//! dev-dependencies). A crate whose features differ is compiled twice, and
//! with it everything above it (wasmtime and cranelift among them).
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// `cargo tree` of some packages: every crate with the features it is built with.
fn features(args: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let out = Command::new(env!("CARGO"))
        .args(["tree", "--locked", "--offline", "--prefix", "none", "-f", "{p}|{f}"])
        .args(args)
        .current_dir(crate::harness::root())
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut all: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let line = line.replace(" (*)", "");
        let Some((krate, f)) = line.split_once('|') else { continue };
        let set = all.entry(krate.trim().to_string()).or_default();
        set.extend(f.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from));
    }
    all
}

#[test]
fn the_host_alone_and_the_test_build_resolve_shared_crates_with_the_same_features() {
    let host = features(&["-p", "cairn", "-e", "normal,build"]);
    let members = ["cairn", "cairn-bench", "cairn-auth", "cairn-notes", "cairn-kv", "cairn-kv-sqlite", "cairn-kv-redis"];
    let mut args: Vec<&str> = members.iter().flat_map(|m| ["-p", m]).collect();
    args.extend(["-e", "normal,build,dev"]);
    let tests = features(&args);
    assert!(host.keys().any(|k| k.starts_with("wasmtime v")), "the host's tree lists wasmtime");
    let differ: Vec<String> = host
        .iter()
        .filter_map(|(k, f)| tests.get(k).filter(|t| *t != f).map(|t| format!("{k}: {:?}", t.symmetric_difference(f).collect::<Vec<_>>())))
        .collect();
    assert!(differ.is_empty(), "turn these features on in the root Cargo.toml's unification block: {differ:#?}");
}
