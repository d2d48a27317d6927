//! `cairn-wiring`: every tool's wiring, derived from the core's tool table
//! ([`cairn_notes::tools::TOOLS`]) and written by `cairn generate`: one
//! source per fact.
//!
//! What a tool needs besides its file in `crates/notes/src/tools/` and its
//! line in the table is all derived from its name:
//!
//! - its component package, `components/<component>/` (`Cargo.toml` and a
//!   one-line `src/lib.rs`), whole files;
//! - in `spin.toml`, between marker comments (the rest of the manifest is
//!   hand-written and stays valid Spin): its `tool_url_<tool>` variable, the
//!   router's outbound hosts, the router's variables and dependencies, and
//!   the tool's own component block;
//! - and, from `cairn-config`'s table of variables, the application's
//!   `[variables]` and each component's variables: exactly those its code
//!   reads (the router's include its composed tools');
//! - the router's slot for it in `wit/tools.wit` (`router-slots`) and its
//!   arm in `guest/src/slots.rs`'s `call_slot`;
//! - the saved `tools/list` reply, `tests/fixtures/wire/tools_list.json`,
//!   that the protocol and end-to-end tests compare with (a change in it is
//!   a change of what agents are told, reviewed in the commit's diff).
//!
//! So adding a tool is its file and its line in the table, then one
//! command: `cargo run -p cairn-wiring` (the `cairn-generate` binary; the
//! host's `cairn generate` runs the same [`generate`]).
//!
//! A region is the lines strictly between `<comment> BEGIN generated: <name>`
//! and `<comment> END generated: <name>`. [`check`] compares every region
//! and file with what the table says and names each stale line and the line
//! to write instead; [`write`](fn@write) rewrites them. Hand edits inside a region are
//! overwritten by the next `cairn generate`.

use anyhow::{Context, Result, bail};
use cairn_config::{Reader, VARIABLES};
use std::path::{Path, PathBuf};

/// The one interface every tool component exports for composition.
pub const TOOL_EXPORT: &str = "cairn:platform/tool@0.1.0";

/// One tool as the wiring knows it: its MCP name (`read_note_tab`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolName<'a>(pub &'a str);

impl ToolName<'_> {
    /// The component id, package name and slot name: `read-note-tab`.
    pub fn component(&self) -> String {
        self.0.replace('_', "-")
    }

    /// The built component, relative to the project root.
    pub fn wasm(&self) -> String {
        format!("target/wasm32-wasip2/wasm/{}.wasm", self.0)
    }
}

/// The tools of the core's table, in table order.
pub fn table() -> Vec<ToolName<'static>> {
    cairn_notes::tools::TOOLS.iter().map(|t| ToolName(t.name)).collect()
}

/// A piece of generated text: a region of a hand-written file, or a whole file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// The lines between a region's markers in `file`.
    Region {
        /// The file, relative to the project root.
        file: &'static str,
        /// The region's name, as its markers spell it.
        name: &'static str,
        /// The comment leader of the file (`#` or `//`).
        comment: &'static str,
        /// The lines the region must hold.
        lines: Vec<String>,
    },
    /// A whole file, relative to the project root.
    File {
        /// The path.
        path: String,
        /// Its content.
        content: String,
    },
}

/// Everything the tables imply (the tool table, and the variables table of
/// `cairn-config`), in a fixed order.
pub fn pieces(tools: &[ToolName]) -> Vec<Piece> {
    let mut out = vec![
        region("spin.toml", "app-variables", "#", app_variables()),
        region("spin.toml", "tool-urls", "#", tool_url_variables(tools)),
        region("spin.toml", "router-outbound", "#", vec![router_outbound(tools)]),
        region("spin.toml", "router-variables", "#", router_variables(tools)),
        region("spin.toml", "ui-variables", "#", component_variables(Reader::Ui)),
        region("spin.toml", "authz-variables", "#", component_variables(Reader::Authz)),
        region("spin.toml", "rest-variables", "#", component_variables(Reader::Rest)),
        region("spin.toml", "kv-probe-variables", "#", component_variables(Reader::KvProbe)),
        region("spin.toml", "router-dependencies", "#", router_dependencies(tools)),
        region("spin.toml", "tool-components", "#", tool_components(tools)),
        region("wit/tools.wit", "router-slots", "//", tools.iter().flat_map(slot).collect()),
        region("guest/src/slots.rs", "call-slot", "//", call_slot_arms(tools)),
    ];
    out.push(Piece::File { path: TOOLS_LIST_FIXTURE.into(), content: tools_list_reply() });
    for t in tools {
        out.push(Piece::File { path: format!("components/{}/Cargo.toml", t.component()), content: package_manifest(t) });
        out.push(Piece::File { path: format!("components/{}/src/lib.rs", t.component()), content: package_lib(t) });
    }
    out
}

/// The saved `tools/list` reply, relative to the project root.
pub const TOOLS_LIST_FIXTURE: &str = "tests/fixtures/wire/tools_list.json";

/// The JSON-RPC reply to `{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}`,
/// pretty-printed, as the fixture holds it.
fn tools_list_reply() -> String {
    let reply = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": cairn_mcp::methods::list_tools()}});
    serde_json::to_string_pretty(&reply).expect("the tool list serializes") + "\n"
}

fn region(file: &'static str, name: &'static str, comment: &'static str, lines: Vec<String>) -> Piece {
    Piece::Region { file, name, comment, lines }
}

/// The application's `[variables]`: every variable of `cairn-config`'s
/// table, its doc as a comment, its default, and `secret` where it is one.
fn app_variables() -> Vec<String> {
    let mut lines = Vec::new();
    for v in VARIABLES {
        lines.extend(comment_lines(v.doc));
        let secret = if v.secret { ", secret = true" } else { "" };
        lines.push(format!("{} = {{ default = \"{}\"{secret} }}", v.name, v.default));
    }
    lines
}

/// `doc` as `#` comment lines of at most 80 columns.
fn comment_lines(doc: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::from("#");
    for word in doc.split_whitespace() {
        if line.len() + 1 + word.len() > 80 && line.len() > 1 {
            lines.push(std::mem::replace(&mut line, String::from("#")));
        }
        line.push(' ');
        line.push_str(word);
    }
    lines.push(line);
    lines
}

/// A component's variables: each variable `reader` reads, from the
/// application variable of the same name.
fn component_variables(reader: Reader) -> Vec<String> {
    VARIABLES.iter().filter(|v| v.read_by(reader)).map(|v| format!("{0} = \"{{{{ {0} }}}}\"", v.name)).collect()
}

/// The router's variables: its own, its composed tools' (they run with the
/// router's variables), and where each tool is served.
fn router_variables(tools: &[ToolName]) -> Vec<String> {
    let mut lines: Vec<String> =
        VARIABLES.iter().filter(|v| v.read_by(Reader::Router) || v.read_by(Reader::Tools)).map(|v| format!("{0} = \"{{{{ {0} }}}}\"", v.name)).collect();
    lines.extend(tools.iter().map(|t| format!("tool_url_{0} = \"{{{{ tool_url_{0} }}}}\"", t.0)));
    lines
}

fn tool_url_variables(tools: &[ToolName]) -> Vec<String> {
    let mut lines = vec![
        "# Where each tool is served: the base URL of the host serving it. The router".to_string(),
        "# posts to <base>/tools/<tool> and may call exactly these hosts. By default,".to_string(),
        "# the tool's component in this application (local service chaining).".to_string(),
    ];
    lines.extend(tools.iter().map(|t| format!("tool_url_{} = {{ default = \"http://{}.spin.internal\" }}", t.0, t.component())));
    lines
}

fn router_outbound(tools: &[ToolName]) -> String {
    let hosts: Vec<String> =
        std::iter::once("\"{{ auth_origin }}\"".to_string()).chain(tools.iter().map(|t| format!("\"{{{{ tool_url_{} }}}}\"", t.0))).collect();
    format!("allowed_outbound_hosts = [{}]", hosts.join(", "))
}

fn router_dependencies(tools: &[ToolName]) -> Vec<String> {
    let mut lines = vec![
        "# Each tool composed into the router's slot for it (wit/tools.wit): the same".to_string(),
        "# .wasm its own component serves at /tools/<tool>.".to_string(),
        "[component.router.dependencies]".to_string(),
    ];
    lines.extend(tools.iter().map(|t| format!("\"{}\" = {{ path = \"{}\", export = \"{TOOL_EXPORT}\" }}", t.component(), t.wasm())));
    lines
}

fn tool_components(tools: &[ToolName]) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, t) in tools.iter().enumerate() {
        let (name, id) = (t.0, t.component());
        if i > 0 {
            lines.push(String::new());
        }
        lines.extend([
            format!("# --- {name} ---"),
            "[[trigger.http]]".to_string(),
            format!("route = \"/tools/{name}\""),
            format!("component = \"{id}\""),
            String::new(),
            format!("[component.{id}]"),
            format!("source = \"{}\"", t.wasm()),
            format!("description = \"The {name} tool\""),
            "key_value_stores = [\"default\", \"cache\"]".to_string(),
            format!("[component.{id}.variables]"),
        ]);
        lines.extend(component_variables(Reader::Tools));
        lines.extend([
            format!("[component.{id}.build]"),
            format!("command = \"cargo build --quiet --target wasm32-wasip2 --profile wasm -p {id}\""),
            format!("watch = [\"components/{id}/src/**/*.rs\", \"guest/src/**/*.rs\", \"crates/notes/src/**/*.rs\"]"),
        ]);
    }
    lines
}

/// The router's slot for a tool: the `tool` interface's shape, its types
/// restated (a slot is an inline interface, which cannot name another's).
fn slot(t: &ToolName) -> Vec<String> {
    vec![
        format!("    import {}: interface {{", t.component()),
        "        enum actor { agent, human }".to_string(),
        "        enum role { member, admin }".to_string(),
        "        record caller { tenant: string, subject: string, name: string, actor: actor, role: role, scopes: list<string>, expires: u64 }".to_string(),
        "        record answer { json: string, refusal: option<string> }".to_string(),
        "        variant failure { invalid-arguments(string), unavailable(string), internal(string) }".to_string(),
        "        call: func(caller: caller, arguments: string) -> result<answer, failure>;".to_string(),
        "    }".to_string(),
    ]
}

fn call_slot_arms(tools: &[ToolName]) -> Vec<String> {
    tools.iter().map(|t| format!("        \"{}\" => slot!({}),", t.component(), t.0)).collect()
}

fn package_manifest(t: &ToolName) -> String {
    format!(
        "# Generated by `cairn generate` from the tool table; do not edit.\n\
         [package]\n\
         name = \"{id}\"\n\
         description = \"The {name} MCP tool\"\n\
         edition.workspace = true\n\
         version.workspace = true\n\
         license.workspace = true\n\
         publish = false\n\
         \n\
         [lib]\n\
         crate-type = [\"cdylib\"]\n\
         \n\
         [dependencies]\n\
         cairn-guest.workspace = true\n\
         spin-sdk.workspace = true\n",
        id = t.component(),
        name = t.0
    )
}

fn package_lib(t: &ToolName) -> String {
    format!(
        "//! `{name}`: one MCP tool, one component. The rules are in `cairn-notes`;\n\
         //! the wire is in `cairn_guest::tool`. Generated by `cairn generate`.\n\
         cairn_guest::tool_component!({name});\n",
        name = t.0
    )
}

/// One difference between the tree and what the table implies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    /// The file, relative to the project root.
    pub file: String,
    /// What is wrong and what to write, with line numbers.
    pub what: String,
}

impl std::fmt::Display for Stale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file, self.what)
    }
}

/// The markers of a region.
fn markers(comment: &str, name: &str) -> (String, String) {
    (format!("{comment} BEGIN generated: {name}"), format!("{comment} END generated: {name}"))
}

/// The region `name` of `text`: (index of its first line, its lines).
fn find_region<'t>(text: &'t str, comment: &str, name: &str) -> Result<(usize, Vec<&'t str>), String> {
    let (begin, end) = markers(comment, name);
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| l.trim() == begin).map(|(i, _)| i).collect();
    let [start] = starts[..] else {
        return Err(format!("needs exactly one line `{begin}` (found {})", starts.len()));
    };
    let Some(stop) = lines[start + 1..].iter().position(|l| l.trim() == end) else {
        return Err(format!("line {}: `{begin}` has no `{end}` after it", start + 1));
    };
    Ok((start + 1, lines[start + 1..start + 1 + stop].to_vec()))
}

/// How `found` (starting at 0-based line `first`) differs from `want`:
/// the first mismatch, named by line, with the line to write.
fn compare(first: usize, found: &[&str], want: &[String]) -> Option<String> {
    for (i, w) in want.iter().enumerate() {
        match found.get(i) {
            Some(f) if *f == w => {}
            Some(f) => return Some(format!("line {}: expected `{w}`, found `{f}`", first + i + 1)),
            None => return Some(format!("line {}: missing `{w}`", first + i + 1)),
        }
    }
    found.get(want.len()).map(|extra| format!("line {}: `{extra}` is not in the table's wiring: remove it", first + want.len() + 1))
}

/// Every stale region and file under `root` for `tools`; empty when the
/// tree is up to date.
pub fn check(root: &Path, tools: &[ToolName]) -> Vec<Stale> {
    let mut out = Vec::new();
    for piece in pieces(tools) {
        match piece {
            Piece::Region { file, name, comment, lines } => {
                let text = match std::fs::read_to_string(root.join(file)) {
                    Ok(t) => t,
                    Err(e) => {
                        out.push(Stale { file: file.into(), what: format!("cannot be read: {e}") });
                        continue;
                    }
                };
                match find_region(&text, comment, name) {
                    Err(why) => out.push(Stale { file: file.into(), what: format!("region {name}: {why}") }),
                    Ok((first, found)) => {
                        if let Some(diff) = compare(first, &found, &lines) {
                            out.push(Stale { file: file.into(), what: format!("region {name} is stale (run `cairn generate`): {diff}") });
                        }
                    }
                }
            }
            Piece::File { path, content } => match std::fs::read_to_string(root.join(&path)) {
                Ok(t) if t == content => {}
                Ok(t) => {
                    let found: Vec<&str> = t.lines().collect();
                    let want: Vec<String> = content.lines().map(str::to_string).collect();
                    let diff = compare(0, &found, &want).unwrap_or_else(|| "differs in line endings".into());
                    out.push(Stale { file: path, what: format!("is stale (run `cairn generate`): {diff}") });
                }
                Err(_) => out.push(Stale { file: path, what: "is missing (run `cairn generate`)".into() }),
            },
        }
    }
    out.extend(orphan_packages(root, tools));
    out
}

/// Component packages that look generated (their manifest says so) but
/// name no tool of the table: a tool removed from the table.
fn orphan_packages(root: &Path, tools: &[ToolName]) -> Vec<Stale> {
    let known: Vec<String> = tools.iter().map(|t| t.component()).collect();
    let Ok(dir) = std::fs::read_dir(root.join("components")) else { return Vec::new() };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let id = entry.file_name().to_string_lossy().to_string();
        let manifest = std::fs::read_to_string(entry.path().join("Cargo.toml")).unwrap_or_default();
        if manifest.starts_with("# Generated by `cairn generate`") && !known.contains(&id) {
            out.push(Stale { file: format!("components/{id}"), what: "is a generated tool package for a tool the table no longer has: delete it".into() });
        }
    }
    out.sort_by(|a, b| a.file.cmp(&b.file));
    out
}

/// Rewrites every region and file under `root` for `tools`; the paths written.
pub fn write(root: &Path, tools: &[ToolName]) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for piece in pieces(tools) {
        match piece {
            Piece::Region { file, name, comment, lines } => {
                let path = root.join(file);
                let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
                let (first, found) = match find_region(&text, comment, name) {
                    Ok(r) => r,
                    Err(why) => bail!("{file}: region {name}: {why}; add the two marker lines where the region belongs"),
                };
                if compare(first, &found, &lines).is_none() {
                    continue;
                }
                let all: Vec<&str> = text.lines().collect();
                let mut new: Vec<&str> = all[..first].to_vec();
                new.extend(lines.iter().map(String::as_str));
                new.extend(&all[first + found.len()..]);
                let mut out = new.join("\n");
                if text.ends_with('\n') {
                    out.push('\n');
                }
                std::fs::write(&path, out).with_context(|| format!("writing {}", path.display()))?;
                written.push(path);
            }
            Piece::File { path, content } => {
                let path = root.join(path);
                if std::fs::read_to_string(&path).ok().as_deref() == Some(content.as_str()) {
                    continue;
                }
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
                }
                std::fs::write(&path, content).with_context(|| format!("writing {}", path.display()))?;
                written.push(path);
            }
        }
    }
    written.dedup();
    Ok(written)
}

/// Writes (or, with `check`, only compares) the wiring of the core's table
/// under `root`, saying what it wrote; with `check`, an error naming every
/// stale piece when any is.
pub fn generate(root: &Path, check_only: bool) -> Result<()> {
    let tools = table();
    if check_only {
        let stale = check(root, &tools);
        if stale.is_empty() {
            println!("cairn generate: the wiring of {} tools is up to date", tools.len());
            return Ok(());
        }
        for s in &stale {
            eprintln!("{s}");
        }
        bail!("{} stale piece(s) of tool wiring: run `cairn generate` (or `cargo run -p cairn-wiring`)", stale.len());
    }
    let written = write(root, &tools)?;
    for path in &written {
        println!("cairn generate: wrote {}", path.display());
    }
    if written.is_empty() {
        println!("cairn generate: the wiring of {} tools is up to date", tools.len());
    }
    Ok(())
}
