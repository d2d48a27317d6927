//! `parts`: the bytes an agent reads and writes per intended edit of a big
//! markdown note, by strategy, as the note grows. Natively: the core
//! (`cairn_notes::call_tool_value`) on a memory store with a simulated
//! clock, no host and no HTTP, so the bytes are the tools' own.
//!
//! A note of N sections (`# Section 0001`…, about 1 KB of lines each; at
//! least three) is edited by three agents, each owning one section (the
//! first, the middle and the last) and making K intended edits: one new line
//! at the end of its section. The agents go round-robin: all three read, then
//! all three write, so the second and third write on a version the first one
//! has already moved past. Three strategies:
//!
//! - **whole**: `read_note_tab` of the whole tab, `replace_text` of the
//!   whole new text with the version read; on `version_conflict`, re-read
//!   and redo.
//! - **append+rebase**: `replace_in_text` of the agent's last line of its
//!   section (its own last added line, or the section's last line, which it
//!   read once) into that line plus the new one, `rebase: true`, on the
//!   version its last write returned; on a conflict, re-read its section.
//! - **parts**: `read_note_outline` filtered by the heading it is after
//!   (`heading`), once per edit, `read_note_tab` of its `section_id`,
//!   `replace_section` with the `section_hash` read; on a refusal, read both
//!   again.
//! - **parts, whole outline**: as parts, but the outline unfiltered, page
//!   by page (as many sections as the read cap holds) until the agent's
//!   section shows, once per edit (what an agent that does not know its
//!   heading pays).
//!
//! Bytes read: the JSON of every tool result's `structuredContent` (writes'
//! results and refusals included): what an agent's context gets. Bytes
//! written: the JSON of every call's arguments. A retry's bytes: the refused
//! write, and the reads and the write that redo it. At the end every line an
//! agent added must be in the note exactly once, and no other line may have
//! moved in or out.

use crate::stack::person;
use anyhow::{Context, Result, bail};
use cairn_kv::memory::MemoryStore;
use cairn_notes::{ActorType, Identity, SimEnv};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt::Write as _;

/// A note size: its name in the table and the bytes of its sections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoteSize {
    /// "1 KB", "1 MB"…
    pub label: &'static str,
    /// Bytes of the note before the edits.
    pub bytes: usize,
}

/// The full run's sizes. "1 MB" is 950 sections of about 1,000 bytes: a markdown
/// tab holds at most 1,000,000 bytes, and the agents' lines must still fit.
pub const FULL_SIZES: [NoteSize; 4] = [
    NoteSize { label: "1 KB", bytes: 1_000 },
    NoteSize { label: "10 KB", bytes: 10_000 },
    NoteSize { label: "100 KB", bytes: 100_000 },
    NoteSize { label: "1 MB", bytes: 950_000 },
];

/// The quick run's sizes.
pub const QUICK_SIZES: [NoteSize; 2] = [FULL_SIZES[0], FULL_SIZES[2]];

/// Agents editing one note, one section each.
pub const AGENTS: usize = 3;

/// Bytes of a section when the note has room for it.
const SECTION_BYTES: usize = 1_000;

/// Writes one intended edit may take before the run is called broken.
const MAX_ATTEMPTS: usize = 20;

/// How an agent makes its edit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Read the whole tab, write the whole tab.
    Whole,
    /// Patch one line with `rebase: true`, reading only after a conflict.
    AppendRebase,
    /// The outline found by heading, one section, `replace_section`.
    Parts,
    /// As `Parts`, the whole outline read per edit.
    PartsWholeOutline,
}

impl Strategy {
    /// Every strategy, in table order.
    pub const EACH: [Strategy; 4] = [Strategy::Whole, Strategy::AppendRebase, Strategy::Parts, Strategy::PartsWholeOutline];

    /// Its name in the table.
    pub fn label(self) -> &'static str {
        match self {
            Strategy::Whole => "whole",
            Strategy::AppendRebase => "append+rebase",
            Strategy::Parts => "parts",
            Strategy::PartsWholeOutline => "parts, whole outline",
        }
    }
}

/// One strategy at one note size.
#[derive(Clone, Debug)]
pub struct PartsRow {
    /// How the agents edited.
    pub strategy: Strategy,
    /// The note's size.
    pub size: NoteSize,
    /// Bytes of the note before the edits.
    pub note_bytes: usize,
    /// Sections of the note.
    pub sections: usize,
    /// Intended edits that landed (agents × K).
    pub edits: usize,
    /// Bytes of results the agents read (`structuredContent` JSON).
    pub read: usize,
    /// Of `read`, the bytes of `read_note_outline` results.
    pub outline_read: usize,
    /// Bytes of arguments the agents sent.
    pub written: usize,
    /// Writes refused and redone.
    pub retries: usize,
    /// Bytes read and written by the refused writes and what redid them.
    pub retry_bytes: usize,
    /// Added lines missing from the final note.
    pub lost: usize,
    /// Added lines found more than once.
    pub doubled: usize,
}

impl PartsRow {
    /// Bytes read per intended edit.
    pub fn read_per_edit(&self) -> f64 {
        self.read as f64 / self.edits.max(1) as f64
    }

    /// Bytes written per intended edit.
    pub fn written_per_edit(&self) -> f64 {
        self.written as f64 / self.edits.max(1) as f64
    }

    /// Bytes read and written per intended edit.
    pub fn bytes_per_edit(&self) -> f64 {
        self.read_per_edit() + self.written_per_edit()
    }

    /// Refused writes per intended edit.
    pub fn retries_per_edit(&self) -> f64 {
        self.retries as f64 / self.edits.max(1) as f64
    }

    /// Bytes one retry cost (0 without retries).
    pub fn bytes_per_retry(&self) -> f64 {
        if self.retries == 0 { 0.0 } else { self.retry_bytes as f64 / self.retries as f64 }
    }
}

/// Every row of one run of the experiment.
#[derive(Clone, Debug)]
pub struct PartsResult {
    /// Intended edits per agent.
    pub edits_per_agent: usize,
    /// One row per strategy and size, sizes in order.
    pub rows: Vec<PartsRow>,
}

impl PartsResult {
    /// The row of `strategy` at the size named `label`.
    pub fn row(&self, strategy: Strategy, label: &str) -> Option<&PartsRow> {
        self.rows.iter().find(|r| r.strategy == strategy && r.size.label == label)
    }

    /// The sizes measured, in order.
    pub fn sizes(&self) -> Vec<NoteSize> {
        let mut out: Vec<NoteSize> = Vec::new();
        for r in &self.rows {
            if !out.contains(&r.size) {
                out.push(r.size);
            }
        }
        out
    }

    /// `strategy`'s bytes per edit ÷ whole's at the size named `label`.
    pub fn over_whole(&self, strategy: Strategy, label: &str) -> Option<f64> {
        let (p, w) = (self.row(strategy, label)?, self.row(Strategy::Whole, label)?);
        Some(p.bytes_per_edit() / w.bytes_per_edit())
    }

    /// `strategy`'s bytes per edit at the largest size ÷ at the smallest.
    pub fn growth(&self, strategy: Strategy) -> Option<f64> {
        let sizes = self.sizes();
        let (first, last) = (sizes.first()?, sizes.last()?);
        Some(self.row(strategy, last.label)?.bytes_per_edit() / self.row(strategy, first.label)?.bytes_per_edit())
    }
}

/// Runs every strategy at every size, `edits` intended edits per agent.
pub fn parts(sizes: &[NoteSize], edits: usize) -> Result<PartsResult> {
    let mut rows = Vec::new();
    for (i, size) in sizes.iter().enumerate() {
        for (j, strategy) in Strategy::EACH.into_iter().enumerate() {
            rows.push(run(*size, strategy, edits, (i * 10 + j) as u64 + 1)?);
        }
    }
    Ok(PartsResult { edits_per_agent: edits, rows })
}

/// The core in this process, counting what the agents read and write.
struct Bench {
    kv: MemoryStore,
    env: SimEnv,
    read: usize,
    outline_read: usize,
    written: usize,
}

impl Bench {
    /// A call nobody counts (setting up, checking); its structuredContent.
    fn setup(&mut self, who: &Identity, tool: &str, args: Value) -> Result<Value> {
        self.env.advance_us(50);
        let r = cairn_notes::call_tool_value(&self.kv, &mut self.env, who, tool, args).map_err(|e| anyhow::anyhow!("{tool}: {e:?}"))?;
        if r["isError"] != false {
            bail!("{tool} refused: {}", r["structuredContent"]);
        }
        Ok(r["structuredContent"].clone())
    }

    /// An agent's call, counted; its structuredContent, or None for a
    /// `version_conflict` (any other refusal breaks the run).
    fn call(&mut self, who: &Identity, tool: &str, args: Value) -> Result<Option<Value>> {
        self.env.advance_us(50);
        self.written += serde_json::to_string(&args)?.len();
        let r = cairn_notes::call_tool_value(&self.kv, &mut self.env, who, tool, args).map_err(|e| anyhow::anyhow!("{tool}: {e:?}"))?;
        let content = &r["structuredContent"];
        let bytes = serde_json::to_string(content)?.len();
        self.read += bytes;
        if tool == "read_note_outline" {
            self.outline_read += bytes;
        }
        if r["isError"] == false {
            return Ok(Some(content.clone()));
        }
        if content["error"] == "version_conflict" {
            return Ok(None);
        }
        bail!("{tool} refused: {content}")
    }
}

/// What an agent holds between its read and its write.
struct Seen {
    /// The version it will send as `expected_version`.
    version: Value,
    /// whole: the tab's text; append+rebase: the line it patches; parts: its section's text.
    text: String,
    /// parts: the section's hash.
    hash: Value,
}

/// One agent: its identity and its section.
struct Agent {
    who: Identity,
    n: usize,
    section: usize,
    /// append+rebase: what its last write left it (the line it added, the version).
    kept: Option<Seen>,
}

impl Agent {
    fn section_id(&self) -> String {
        format!("section-{:04}", self.section)
    }

    fn line(&self, edit: usize) -> String {
        format!("a{} e{edit:04} the line agent {} added in its edit {edit}\n", self.n, self.n)
    }

    /// Reads what the next write needs; `fresh` after a refusal.
    fn read(&mut self, b: &mut Bench, note: &str, strategy: Strategy, fresh: bool) -> Result<Seen> {
        match strategy {
            Strategy::Whole => {
                // The whole tab, past the default read cap.
                let args = json!({"note_id": note, "tab_id": "markdown", "max_chars": 1_000_000});
                let r = must(b.call(&self.who, "read_note_tab", args)?, "read_note_tab")?;
                Ok(Seen { version: r["version"].clone(), text: text(&r)?, hash: Value::Null })
            }
            Strategy::AppendRebase => {
                if let (Some(kept), false) = (self.kept.take(), fresh) {
                    return Ok(kept);
                }
                let r = self.read_section(b, note)?;
                let last = text(&r)?.lines().last().context("an empty section")?.to_string();
                Ok(Seen { version: r["version"].clone(), text: format!("{last}\n"), hash: Value::Null })
            }
            Strategy::Parts | Strategy::PartsWholeOutline => {
                let mut args = match strategy {
                    Strategy::Parts => json!({"note_id": note, "heading": format!("Section {:04}", self.section)}),
                    _ => json!({"note_id": note}),
                };
                // Page by page until its section shows.
                let id = self.section_id();
                loop {
                    let o = must(b.call(&self.who, "read_note_outline", args.clone())?, "read_note_outline")?;
                    if o["sections"].as_array().context("sections")?.iter().any(|s| s["section_id"] == id.as_str()) {
                        break;
                    }
                    match o["next"].as_u64() {
                        Some(n) => args["start_line"] = n.into(),
                        None => bail!("the outline lost {id}"),
                    }
                }
                let r = self.read_section(b, note)?;
                Ok(Seen { version: r["version"].clone(), text: text(&r)?, hash: r["section_hash"].clone() })
            }
        }
    }

    fn read_section(&self, b: &mut Bench, note: &str) -> Result<Value> {
        let args = json!({"note_id": note, "tab_id": "markdown", "section_id": self.section_id()});
        must(b.call(&self.who, "read_note_tab", args)?, "read_note_tab")
    }

    /// Writes edit `edit` on what it read; false when refused with `version_conflict`.
    fn write(&mut self, b: &mut Bench, note: &str, strategy: Strategy, seen: &Seen, edit: usize, attempt: usize) -> Result<bool> {
        let line = self.line(edit);
        let key = format!("{}-a{}-e{edit}-t{attempt}", strategy.label(), self.n);
        let mut args = json!({"note_id": note, "tab_id": "markdown", "expected_version": seen.version, "idempotency_key": key});
        let more = match strategy {
            Strategy::Whole => {
                let heading = format!("# Section {:04}\n", self.section);
                let start = seen.text.find(&heading).context("the agent's heading")?;
                let end = seen.text[start + heading.len()..].find("\n# Section ").map_or(seen.text.len(), |i| start + heading.len() + i + 1);
                let next = format!("{}{line}{}", &seen.text[..end], &seen.text[end..]);
                json!({"operation": "replace_text", "text": next})
            }
            Strategy::AppendRebase => {
                json!({"operation": "replace_in_text", "old_text": seen.text, "new_text": format!("{}{line}", seen.text), "rebase": true})
            }
            Strategy::Parts | Strategy::PartsWholeOutline => {
                json!({"operation": "replace_section", "section_id": self.section_id(), "expected_section_hash": seen.hash,
                "text": format!("{}{line}", seen.text)})
            }
        };
        args.as_object_mut().context("args")?.extend(more.as_object().context("more")?.clone());
        let Some(r) = b.call(&self.who, "edit_note_tab", args)? else { return Ok(false) };
        if r["replayed"] != false {
            bail!("a fresh key was replayed: {r}");
        }
        if strategy == Strategy::AppendRebase {
            self.kept = Some(Seen { version: r["version"].clone(), text: line, hash: Value::Null });
        }
        Ok(true)
    }
}

fn must(r: Option<Value>, tool: &str) -> Result<Value> {
    r.with_context(|| format!("{tool} refused with version_conflict"))
}

fn text(r: &Value) -> Result<String> {
    Ok(r["text"].as_str().context("text")?.to_string())
}

/// Section `k` (from 1) of about `bytes` bytes.
fn section(k: usize, bytes: usize) -> String {
    let mut s = format!("# Section {k:04}\n");
    let mut line = 0;
    while s.len() < bytes {
        let _ = writeln!(s, "s{k:04} l{line:03} lorem ipsum dolor sit amet, consectetur adipiscing elit");
        line += 1;
    }
    s
}

/// One strategy on a fresh note of `size`: the agents' totals and the check.
fn run(size: NoteSize, strategy: Strategy, edits: usize, seed: u64) -> Result<PartsRow> {
    let sections = (size.bytes / SECTION_BYTES).max(AGENTS);
    let body: String = (1..=sections).map(|k| section(k, size.bytes / sections)).collect();
    let mut b = Bench { kv: MemoryStore::new(), env: SimEnv::new(seed), read: 0, outline_read: 0, written: 0 };
    let owner = person();
    let r = cairn_notes::rest::create_note(&b.kv, &mut b.env, &owner, json!({"title": format!("parts {}", size.label), "approved_for_agents": true}))
        .map_err(|e| anyhow::anyhow!("create_note: {e:?}"))?;
    let note = r.body["note_id"].as_str().with_context(|| format!("create_note: {}", r.body))?.to_string();
    b.setup(
        &owner,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": 1, "idempotency_key": "fill",
        "operation": "replace_text", "text": body}),
    )?;
    let before = body.lines().count();
    // The first, the middle and the last section.
    let mut agents: Vec<Agent> = (0..AGENTS)
        .map(|n| Agent {
            who: Identity { actor_type: ActorType::Agent, subject: format!("parts-agent-{n}"), display_name: format!("Parts agent {n}"), ..person() },
            n,
            section: 1 + n * (sections - 1) / (AGENTS - 1),
            kept: None,
        })
        .collect();
    let (mut retries, mut retry_bytes) = (0, 0);
    for edit in 0..edits {
        let mut seen = Vec::with_capacity(AGENTS);
        for a in agents.iter_mut() {
            seen.push(a.read(&mut b, &note, strategy, false)?);
        }
        for (a, mut s) in agents.iter_mut().zip(seen) {
            let mut attempt = 0;
            let mut spent = b.read + b.written;
            while !a.write(&mut b, &note, strategy, &s, edit, attempt)? {
                attempt += 1;
                retries += 1;
                if attempt >= MAX_ATTEMPTS {
                    bail!("{} at {}: agent {} refused {attempt} times in a row", strategy.label(), size.label, a.n);
                }
                s = a.read(&mut b, &note, strategy, true)?;
                // The refused write, the re-read, and (counted below) the write that redoes it.
                retry_bytes += b.read + b.written - spent;
                spent = b.read + b.written;
            }
            if attempt > 0 {
                retry_bytes += b.read + b.written - spent;
            }
        }
    }
    let last = b.setup(&owner, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "max_chars": 1_000_000}))?;
    let text = text(&last)?;
    let mut count: HashMap<&str, usize> = HashMap::new();
    for l in text.lines() {
        *count.entry(l).or_default() += 1;
    }
    let (mut lost, mut doubled) = (0, 0);
    for a in &agents {
        for edit in 0..edits {
            match count.get(a.line(edit).trim_end()).copied().unwrap_or(0) {
                0 => lost += 1,
                1 => {}
                _ => doubled += 1,
            }
        }
    }
    let after = text.lines().count();
    if lost == 0 && doubled == 0 && after != before + AGENTS * edits {
        bail!("{} at {}: {before} lines + {} added, but {after} now", strategy.label(), size.label, AGENTS * edits);
    }
    Ok(PartsRow {
        strategy,
        size,
        note_bytes: body.len(),
        sections,
        edits: AGENTS * edits,
        read: b.read,
        outline_read: b.outline_read,
        written: b.written,
        retries,
        retry_bytes,
        lost,
        doubled,
    })
}

/// The markdown table and the ratios.
pub fn parts_table(result: &PartsResult) -> String {
    let mut out = format!(
        "\n## parts: bytes an agent reads and writes per intended edit, by strategy, as the note grows\n\n\
         Natively (the core in this process, memory store, simulated clock), {AGENTS} agents each adding one line to its own \
         section of one note, {} intended edits each, round-robin (all read, then all write). Bytes read: the JSON of every \
         tool result's structuredContent; written: the JSON of every call's arguments.\n\n\
         | strategy | note size | note bytes | sections | bytes read/edit | of which outline | bytes written/edit | retries/edit | bytes/retry | lost or doubled lines |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        result.edits_per_agent
    );
    for r in &result.rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.2} | {:.0} | {} |",
            r.strategy.label(),
            r.size.label,
            r.note_bytes,
            r.sections,
            r.read_per_edit(),
            r.outline_read as f64 / r.edits.max(1) as f64,
            r.written_per_edit(),
            r.retries_per_edit(),
            r.bytes_per_retry(),
            r.lost + r.doubled,
        );
    }
    let others = &Strategy::EACH[1..];
    out.push_str("\nBytes read + written per edit, ÷ whole's at the same size:\n\n| note size |");
    for s in others {
        let _ = write!(out, " {} ÷ whole |", s.label());
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(others.len()));
    out.push('\n');
    for size in result.sizes() {
        let _ = write!(out, "| {} |", size.label);
        for s in others {
            let _ = write!(out, " {:.2}% |", 100.0 * result.over_whole(*s, size.label).unwrap_or(f64::NAN));
        }
        out.push('\n');
    }
    let sizes = result.sizes();
    if let (Some(first), Some(last)) = (sizes.first(), sizes.last()) {
        let _ = writeln!(out, "\nBytes read + written per edit at {} ÷ at {}:\n", last.label, first.label);
        for s in Strategy::EACH {
            let _ = writeln!(out, "- {}: {:.2}×", s.label(), result.growth(s).unwrap_or(f64::NAN));
        }
    }
    out
}

/// Bytes read + written per intended edit, by strategy, across note sizes (log scale).
pub fn parts_chart(result: &PartsResult) -> crate::charts::Chart {
    let sizes = result.sizes();
    crate::charts::Chart {
        file: "parts.svg".into(),
        title: "parts: bytes read + written per intended edit as the note grows".into(),
        x: "note size".into(),
        y: "bytes per edit (log)".into(),
        kind: crate::charts::Kind::LogLines,
        categories: sizes.iter().map(|s| s.label.to_string()).collect(),
        series: Strategy::EACH
            .iter()
            .map(|st| (st.label().to_string(), sizes.iter().map(|sz| result.row(*st, sz.label).map_or(1.0, |r| r.bytes_per_edit())).collect()))
            .collect(),
    }
}
