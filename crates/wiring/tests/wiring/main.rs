//! Adding a tool is one file and one table line, and nothing else by hand:
//! in a copy of the tree, a throwaway tool is written and named in the
//! table, the generator (`cargo run -p cairn-wiring`) is run once, and then
//! the generator's check, the tool registry's and output schemas' tests and
//! the `tools/list` fixture test all pass there, with the tool wired in
//! everywhere the table reaches.
//!
//! The copy builds in this run's target directory, its own crates as other
//! packages and unoptimized ([`set_apart`]), so only they compile again
//! (a minute or two): set
//! `CAIRN_SKIP_THROWAWAY_TOOL=1` to skip it while iterating on something else.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The project root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The tool the test adds: a read tool counting a note's tabs, written as a
/// newcomer would, against the crate's own pieces.
const THROWAWAY: &str = r#"//! `count_note_tabs`: how many tabs a note has (a throwaway tool).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Call, READ, READ_SCOPE};
use crate::args::{check_id, parse};
use crate::head::load_head;
use crate::refusal::Out;

tool!("count_note_tabs", "Count note tabs", READ_SCOPE, READ);

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(schema_with = "crate::schema::shape::note_id")]
    note_id: String,
}

/// How many tabs the note has.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Output {
    note_id: String,
    /// The number of tabs.
    tabs: u64,
}

fn description() -> String {
    "Count the tabs of a note.".into()
}

fn input_schema() -> Value {
    crate::schema::input::<Args>()
}

fn run(c: &mut Call, args: Value) -> Out<Output> {
    let a: Args = parse(args)?;
    check_id("note_id", &a.note_id)?;
    let head = load_head(c.kv, c.who, &a.note_id)?;
    Ok(Output { note_id: head.note_id, tabs: head.tabs.len() as u64 })
}
"#;

/// Every file of the tree git knows (tracked, or new and not ignored).
fn tree_files(root: &Path) -> Vec<String> {
    let out = Command::new("git").args(["ls-files", "-z", "--cached", "--others", "--exclude-standard"]).current_dir(root).output().expect("git runs");
    assert!(out.status.success(), "git ls-files: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().split('\0').filter(|f| !f.is_empty()).map(str::to_string).collect()
}

fn copy_tree(from: &Path, to: &Path) {
    for file in tree_files(from) {
        let src = from.join(&file);
        if !src.is_file() {
            continue; // deleted in the work tree, not yet in the index
        }
        let dst = to.join(&file);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(&src, &dst).unwrap();
    }
}

/// Runs cargo in `dir` with this run's target directory and profile.
fn cargo(dir: &Path, args: &[&str]) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = root().join("target");
    // Not `--locked`: the new component package is a new entry of Cargo.lock,
    // which cargo adds itself (offline: every dependency is already here).
    let mut all = vec![args[0], "--release", "--offline", "--quiet"];
    all.extend_from_slice(&args[1..]);
    let status = Command::new(cargo).args(&all).current_dir(dir).env("CARGO_TARGET_DIR", target).status().expect("cargo runs");
    assert!(status.success(), "`cargo {}` failed in the copy with the throwaway tool", all.join(" "));
}

/// Gives the copy's own crates another version, so that they are other
/// packages to cargo and build apart from this tree's in the shared target
/// directory (cargo names a workspace crate's artifacts by its name,
/// version and path within the workspace, the same in a copy: built there
/// unchanged, the copy's crates would overwrite this tree's). The
/// dependencies, the same packages in both, are built once. The copy's
/// crates are also built at opt-level 0.
fn set_apart(copy: &Path) {
    let manifest = copy.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let version = "\nversion = \"0.1.0\"\n";
    assert!(text.contains(version), "the workspace's version is where this test expects it");
    let mut text = text.replacen(version, "\nversion = \"0.1.0-throwaway\"\n", 1);
    // The copy's own crates compile unoptimized (its dependencies, shared
    // with this tree's build, keep the release profile): what is checked
    // there is the wiring, not speed, and it builds in a fraction of the time.
    for member in std::fs::read_dir(copy.join("crates")).unwrap().flatten() {
        let Ok(cargo) = std::fs::read_to_string(member.path().join("Cargo.toml")) else { continue };
        let name = cargo.lines().find_map(|l| l.strip_prefix("name = \"")?.strip_suffix('"')).expect("a crate names itself");
        text.push_str(&format!("\n[profile.release.package.{name}]\nopt-level = 0\n"));
    }
    std::fs::write(&manifest, text).unwrap();
}

/// Adds the tool's line after the table's last line; the line it added.
fn add_table_line(tools_mod: &Path) -> usize {
    let text = std::fs::read_to_string(tools_mod).unwrap();
    let start = text.find("tool_table! {").expect("the tool table");
    let end = start + text[start..].find("\n}").expect("the table's end");
    let mut new = String::new();
    new.push_str(&text[..end]);
    new.push_str("\n    count_note_tabs,");
    new.push_str(&text[end..]);
    std::fs::write(tools_mod, new).unwrap();
    text[..end].lines().count() + 1
}

#[test]
fn a_throwaway_tool_is_one_file_and_one_table_line_and_the_generator_does_the_rest() {
    if std::env::var_os("CAIRN_SKIP_THROWAWAY_TOOL").is_some() {
        eprintln!("skipped: CAIRN_SKIP_THROWAWAY_TOOL is set");
        return;
    }
    let copy = std::env::temp_dir().join(format!("cairn-throwaway-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&copy);
    copy_tree(&root(), &copy);
    set_apart(&copy);

    // By hand: the tool's file and its line in the table.
    std::fs::write(copy.join("crates/notes/src/tools/count_note_tabs.rs"), THROWAWAY).unwrap();
    let line = add_table_line(&copy.join("crates/notes/src/tools/mod.rs"));
    assert!(line > 1);

    // One command writes the rest.
    cargo(&copy, &["run", "-p", "cairn-wiring"]);
    let fixture = std::fs::read_to_string(copy.join("tests/fixtures/wire/tools_list.json")).unwrap();
    assert!(fixture.contains("\"name\": \"count_note_tabs\""), "the saved tools/list reply names the new tool");
    let lib = std::fs::read_to_string(copy.join("components/count-note-tabs/src/lib.rs")).unwrap();
    assert!(lib.contains("count_note_tabs"), "its component package");
    let manifest = std::fs::read_to_string(copy.join("spin.toml")).unwrap();
    assert!(manifest.contains("[component.count-note-tabs]"), "its spin.toml block");
    let slots = std::fs::read_to_string(copy.join("guest/src/slots.rs")).unwrap();
    assert!(slots.contains("\"count-note-tabs\" => slot!(count_note_tabs),"), "the router's slot");

    // And every test that reads the table passes with no other edit.
    cargo(&copy, &["run", "-p", "cairn-wiring", "--", "--check"]);
    cargo(&copy, &["test", "-p", "cairn-notes", "--test", "notes", "--", "tools_registry", "output_schemas", "schema_agreement"]);
    cargo(&copy, &["test", "-p", "cairn-mcp", "--test", "mcp", "--", "tools_list"]);
    let _ = std::fs::remove_dir_all(&copy);
}
