//! What the experiments share: the seeded generator, an editor (its own
//! connection, token and write path: MCP or REST), the editors that append
//! lines or set cells, and the table and charts of edit experiments.

use super::{bars, med, median, num};
use crate::charts::Chart;
use crate::stack::Client;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

/// A xorshift64* generator: the seed fixes every think time and dropped reply.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

/// What an editor does when a write is refused for its version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Sends the version it just read with text computed from the read before
    /// its think time: the version check never sees the staleness.
    StaleText,
    /// Re-reads and re-applies its change to the fresh text.
    Reapply,
    /// Re-reads only the version and resends the old text.
    ResendOld,
    /// The agent sends `append_text` with `rebase: true` on the version it
    /// read; on a conflict it re-reads (the person writes whole texts, re-applying).
    AppendRebase,
    /// The agent adds its line to its own section with `replace_in_text`
    /// and `rebase: true`; the person appends at the end, re-applying.
    SectionRebase,
}

impl Policy {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Policy::StaleText => "(a) fresh version, text from an older read (last-writer-wins)",
            Policy::Reapply => "(b) version; on conflict re-read and re-apply",
            Policy::ResendOld => "(c) version; on conflict resend old text with the fresh version",
            Policy::AppendRebase => "(d) agent: append_text, rebase: true; person: (b)",
            Policy::SectionRebase => "(e) agent: replace_in_text in its own section, rebase: true; person: (b)",
        }
    }

    /// Whether the agent writes patches (and the person re-applies).
    pub(crate) fn patches(self) -> bool {
        matches!(self, Policy::AppendRebase | Policy::SectionRebase)
    }
}

/// Which version a write is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The note's version.
    Note,
    /// The tab's own version.
    Tab,
}

impl Scope {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Scope::Note => "note",
            Scope::Tab => "tab",
        }
    }
}

/// One editor's counts in one run.
#[derive(Clone, Debug, Default)]
pub struct EditorStats {
    /// Edits intended (one unique line or cell each).
    pub edits: usize,
    /// Write attempts sent.
    pub writes: usize,
    /// Writes refused with `version_conflict`.
    pub conflicts: usize,
    /// Most attempts one edit needed.
    pub max_tries: usize,
    /// Writes applied by rebasing over later changes (patch policies).
    pub rebased: usize,
    /// Lines (or cells) of this editor missing from the final content.
    pub lost: usize,
}

/// One run of `race`, `fast` or `tabs`.
#[derive(Clone, Debug)]
pub struct EditRun {
    /// The seed.
    pub seed: u64,
    /// The agent's counts.
    pub agent: EditorStats,
    /// The person's counts.
    pub person: EditorStats,
    /// Wall time of the run.
    pub wall: Duration,
}

/// One row of `race`, `fast` or `tabs`: one client behaviour, every seed.
#[derive(Clone, Debug)]
pub struct EditRow {
    /// What the row measures.
    pub label: String,
    /// One entry per seed.
    pub runs: Vec<EditRun>,
}

impl EditRow {
    /// Lost lines over every run, both editors.
    pub fn lost(&self) -> usize {
        self.runs.iter().map(|r| r.agent.lost + r.person.lost).sum()
    }

    /// Conflicts over every run, both editors.
    pub fn conflicts(&self) -> usize {
        self.runs.iter().map(|r| r.agent.conflicts + r.person.conflicts).sum()
    }
}

/// A read of one tab.
pub(crate) struct Read {
    pub version: Value,
    pub tab_version: Value,
    pub text: String,
    pub sheet_id: Option<String>,
}

impl Read {
    pub(crate) fn version(&self, scope: Scope) -> Value {
        match scope {
            Scope::Note => self.version.clone(),
            Scope::Tab => self.tab_version.clone(),
        }
    }
}

/// How an editor writes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    /// `edit_note_tab` over MCP.
    Mcp,
    /// `PUT /api/v1/notes/{note}/tabs/{tab}`.
    Rest,
}

/// One editor: its own connection, token and write path.
pub(crate) struct Editor {
    pub client: Client,
    pub token: String,
    pub via: Via,
    pub note: String,
}

impl Editor {
    pub(crate) async fn new(addr: SocketAddr, token: &str, via: Via, note: &str) -> Result<Self> {
        Ok(Self { client: Client::connect(addr).await?, token: token.into(), via, note: note.into() })
    }

    /// A tool call. hyper refuses a request sent before the connection has
    /// finished the previous exchange ("connection was not ready") without
    /// sending it, so that one error is retried after a moment.
    pub(crate) async fn call(&mut self, tool: &str, args: Value) -> Result<Value> {
        let mut tries = 0;
        loop {
            match self.client.call(&self.token, tool, args.clone()).await {
                Err(e) if tries < 100 && not_ready(&e) => tries += 1,
                r => return r,
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// `edit_note_tab` until it is not `busy` (the note stayed contended
    /// for every attempt), which asks for the same call again with the same key.
    async fn edit(&mut self, args: Value) -> Result<Value> {
        loop {
            let r = self.call("edit_note_tab", args.clone()).await?;
            if r["structuredContent"]["error"] != "busy" {
                return Ok(r);
            }
        }
    }

    /// A REST request, with the same retry as [`Editor::call`].
    pub(crate) async fn send(&mut self, method: &str, path: &str, body: &Value) -> Result<(u16, Value)> {
        let mut tries = 0;
        loop {
            match self.client.send(method, path, &self.token, body).await {
                Err(e) if tries < 100 && not_ready(&e) => tries += 1,
                r => return r,
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    pub(crate) async fn read(&mut self, tab: &str) -> Result<Read> {
        let r = self.call("read_note_tab", json!({"note_id": self.note, "tab_id": tab})).await?;
        if r["isError"] != false {
            bail!("read_note_tab refused: {r}");
        }
        let s = &r["structuredContent"];
        Ok(Read {
            version: s["version"].clone(),
            tab_version: s["tab_version"].clone(),
            text: s["text"].as_str().unwrap_or_default().to_string(),
            sheet_id: s["sheets"][0]["sheet_id"].as_str().map(str::to_string),
        })
    }

    /// A whole-text write: true if it landed, false on a version conflict.
    pub(crate) async fn write_text(&mut self, tab: &str, version: &Value, scope: Scope, key: &str, text: &str) -> Result<bool> {
        match self.via {
            Via::Mcp => {
                let args = json!({"note_id": self.note, "tab_id": tab, "expected_version": version,
                    "idempotency_key": key, "operation": "replace_text", "text": text, "version_scope": scope.as_str()});
                let r = self.edit(args).await?;
                tool_outcome(&r)
            }
            Via::Rest => {
                let body = json!({"expected_version": version, "idempotency_key": key, "text": text, "version_scope": scope.as_str()});
                let path = format!("/api/v1/notes/{}/tabs/{tab}", self.note);
                let (status, v) = self.send("PUT", &path, &body).await?;
                match status {
                    200 => Ok(true),
                    409 if v["error"] == "version_conflict" => Ok(false),
                    _ => bail!("PUT {path}: HTTP {status}: {v}"),
                }
            }
        }
    }

    /// A patch (`append_text` or `replace_in_text`, in `op`) with `rebase:
    /// true` over MCP: `Some(rebased)` if it landed, `None` on a version conflict.
    pub(crate) async fn write_patch(&mut self, tab: &str, version: &Value, key: &str, op: Value) -> Result<Option<bool>> {
        let mut args = json!({"note_id": self.note, "tab_id": tab, "expected_version": version, "idempotency_key": key, "rebase": true});
        for (k, v) in op.as_object().context("a patch is an object")? {
            args[k] = v.clone();
        }
        let r = self.edit(args).await?;
        Ok(tool_outcome(&r)?.then(|| r["structuredContent"]["rebased"] == true))
    }

    /// One cell (`row`, `value`) of a sheet tab over MCP: true if it landed, false on a version conflict.
    pub(crate) async fn write_cell(&mut self, tab: &str, sheet: &str, version: &Value, scope: Scope, key: &str, (row, value): (usize, &str)) -> Result<bool> {
        let args = json!({"note_id": self.note, "tab_id": tab, "expected_version": version, "idempotency_key": key,
            "operation": "sheet_set_range", "sheet_id": sheet, "start_row": row, "start_col": 0, "values": [[value]],
            "version_scope": scope.as_str()});
        let r = self.edit(args).await?;
        tool_outcome(&r)
    }
}

pub(crate) fn not_ready(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.to_string().contains("connection was not ready"))
}

pub(crate) fn tool_outcome(r: &Value) -> Result<bool> {
    if r["isError"] == false {
        return Ok(true);
    }
    if r["structuredContent"]["error"] == "version_conflict" {
        return Ok(false);
    }
    bail!("write refused: {r}")
}

pub(crate) fn append(text: &str, line: &str) -> String {
    if text.is_empty() { line.to_string() } else { format!("{text}\n{line}") }
}

pub(crate) async fn think(rng: &mut Rng, (lo, hi): (u64, u64)) {
    if hi > 0 {
        tokio::time::sleep(Duration::from_millis(rng.range(lo, hi))).await;
    }
}

/// One editor appending `edits` lines `{tag}-{i}` to a text tab.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn text_editor(
    mut ed: Editor,
    tab: &str,
    tag: &str,
    edits: usize,
    policy: Policy,
    scope: Scope,
    pause: (u64, u64),
    mut rng: Rng,
) -> Result<EditorStats> {
    let mut st = EditorStats { edits, ..Default::default() };
    for i in 0..edits {
        let line = format!("{tag}-{i}");
        let mut base = ed.read(tab).await?;
        think(&mut rng, pause).await;
        let mut version = match policy {
            Policy::StaleText => ed.read(tab).await?.version(scope),
            _ => base.version(scope),
        };
        let mut tries = 0;
        let patching = policy.patches() && ed.via == Via::Mcp;
        loop {
            tries += 1;
            st.writes += 1;
            let key = format!("{tag}-{i}-{tries}");
            if patching {
                let op = match policy {
                    Policy::SectionRebase => {
                        // Its own section: after its last line (or the heading).
                        let last = if i == 0 { format!("{SECTION}\n") } else { format!("\n{tag}-{}\n", i - 1) };
                        json!({"operation": "replace_in_text", "old_text": last, "new_text": format!("{last}{line}\n")})
                    }
                    _ => json!({"operation": "append_text", "text": line}),
                };
                if let Some(rebased) = ed.write_patch(tab, &version, &key, op).await? {
                    st.rebased += usize::from(rebased);
                    break;
                }
            } else if ed.write_text(tab, &version, scope, &key, &append(&base.text, &line)).await? {
                break;
            }
            st.conflicts += 1;
            if tries >= 10_000 {
                bail!("{tag}: edit {i} still refused after {tries} tries");
            }
            let fresh = ed.read(tab).await?;
            version = fresh.version(scope);
            if policy == Policy::Reapply || policy.patches() {
                base = fresh;
            }
        }
        st.max_tries = st.max_tries.max(tries);
    }
    Ok(st)
}

/// One editor writing cell (i, 0) = `{tag}-{i}` of a sheet tab, re-reading on conflict.
pub(crate) async fn sheet_editor(mut ed: Editor, tab: &str, tag: &str, edits: usize, scope: Scope, pause: (u64, u64), mut rng: Rng) -> Result<EditorStats> {
    let mut st = EditorStats { edits, ..Default::default() };
    for i in 0..edits {
        let mut read = ed.read(tab).await?;
        think(&mut rng, pause).await;
        let mut tries = 0;
        loop {
            tries += 1;
            st.writes += 1;
            let sheet = read.sheet_id.clone().context("sheet tab without a sheet")?;
            let key = format!("{tag}-{i}-{tries}");
            if ed.write_cell(tab, &sheet, &read.version(scope), scope, &key, (i, &format!("{tag}-{i}"))).await? {
                break;
            }
            st.conflicts += 1;
            if tries >= 10_000 {
                bail!("{tag}: cell {i} still refused after {tries} tries");
            }
            read = ed.read(tab).await?;
        }
        st.max_tries = st.max_tries.max(tries);
    }
    Ok(st)
}

pub(crate) fn lost_lines(text: &str, tag: &str, edits: usize) -> usize {
    let have: HashSet<&str> = text.lines().collect();
    (0..edits).filter(|i| !have.contains(format!("{tag}-{i}").as_str())).count()
}

/// The heading of the agent's own section in the section-patch runs.
pub(crate) const SECTION: &str = "## agent";

pub(crate) const AGENT_THINK: (u64, u64) = (20, 80);
pub(crate) const PERSON_THINK: (u64, u64) = (5, 40);

/// Markdown: one line per run and a median line per row.
pub fn edit_table(title: &str, rows: &[EditRow]) -> String {
    let mut s = format!("\n## {title}\n\n");
    s.push_str("| client behaviour | seed | lost agent | lost person | conflicts agent | conflicts person | writes agent | writes person | rebased agent | max tries | wall s |\n");
    s.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for row in rows {
        for r in &row.runs {
            let _ = writeln!(
                s,
                "| {} | {} | {} / {} | {} / {} | {} | {} | {} | {} | {} | {} | {:.2} |",
                row.label,
                r.seed,
                r.agent.lost,
                r.agent.edits,
                r.person.lost,
                r.person.edits,
                r.agent.conflicts,
                r.person.conflicts,
                r.agent.writes,
                r.person.writes,
                r.agent.rebased,
                r.agent.max_tries.max(r.person.max_tries),
                r.wall.as_secs_f64()
            );
        }
        let m = |f: &dyn Fn(&EditRun) -> f64| num(median(row.runs.iter().map(f).collect()));
        let _ = writeln!(
            s,
            "| **{}** | **median** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** | **{:.2}** |",
            row.label,
            m(&|r| r.agent.lost as f64),
            m(&|r| r.person.lost as f64),
            m(&|r| r.agent.conflicts as f64),
            m(&|r| r.person.conflicts as f64),
            m(&|r| r.agent.writes as f64),
            m(&|r| r.person.writes as f64),
            m(&|r| r.agent.rebased as f64),
            m(&|r| r.agent.max_tries.max(r.person.max_tries) as f64),
            median(row.runs.iter().map(|r| r.wall.as_secs_f64()).collect()),
        );
    }
    s
}

/// Charts of `race`, `fast` or `tabs` rows (one category per row, short
/// names in `names`): lost lines and conflicts, and tries per edit.
pub fn edit_charts(stem: &str, what: &str, names: &[&str], rows: &[EditRow]) -> Vec<Chart> {
    let m = |f: &dyn Fn(&EditRun) -> f64| rows.iter().map(|r| med(&r.runs, f)).collect::<Vec<_>>();
    let per_edit = |s: &EditorStats| s.writes as f64 / s.edits.max(1) as f64;
    vec![
        bars(
            &format!("{stem}.svg"),
            &format!("{what}: lost lines and conflicts (medians)"),
            "client behaviour",
            "lines or conflicts",
            names,
            vec![
                ("lost, agent", m(&|r| r.agent.lost as f64)),
                ("lost, person", m(&|r| r.person.lost as f64)),
                ("conflicts, agent", m(&|r| r.agent.conflicts as f64)),
                ("conflicts, person", m(&|r| r.person.conflicts as f64)),
            ],
        ),
        bars(
            &format!("{stem}-tries.svg"),
            &format!("{what}: tries (medians)"),
            "client behaviour",
            "tries",
            names,
            vec![
                ("writes per edit, agent", m(&|r| per_edit(&r.agent))),
                ("writes per edit, person", m(&|r| per_edit(&r.person))),
                ("most tries for one edit", m(&|r| r.agent.max_tries.max(r.person.max_tries) as f64)),
            ],
        ),
    ]
}
