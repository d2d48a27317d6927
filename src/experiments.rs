//! `cairn bench race|fast|create|tabs|sources|handles|throughput|all`: the seed posts' experiments, run
//! against the application in this process over real HTTP (MCP for the agent,
//! REST and MCP for the person), with seeded think times.
//!
//! - race: an agent (think 20–80 ms) and a person (think 5–40 ms) each append
//!   one unique line per edit to the same markdown tab; three client policies:
//!   stale text (last-writer-wins behaviour), re-read + re-apply, resend the
//!   old text with the fresh version. Lost lines are counted on the final text.
//! - fast: the same with zero think time and re-apply; nothing may be lost.
//! - create: create_note_tab intents with 30% of the replies dropped after the
//!   server committed; three idempotency-key policies; tabs created per intent.
//! - tabs: the agent on the markdown tab, the person on a sheet tab, with the
//!   note's version and with the tab's (`version_scope`); every conflict is false.
//! - sources: research sessions citing pages in seven spellings through
//!   add_note_source, 20% of replies lost; three key policies; sources stored.
//! - handles: an agent keeps a handle to one of K slides decks (position, type,
//!   label, ID) while a person moves, renames and adds tabs; how it resolves.
//! - throughput: read_note_tab and edit_note_tab at 1, 8 and 32 clients through
//!   the whole stack against the core natively, requests/s, p50, p99, ratio.
//!
//! The experiment functions return result structs (the tests assert on them);
//! the `*_table` functions render them as markdown and the `*_chart(s)`
//! functions describe their SVG charts (drawn by [`crate::charts`]).

use crate::bench::Series;
use crate::charts::{Chart, Kind};
use crate::bench_notes::{self, Client, Op, Stack};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A xorshift64* generator: the seed fixes every think time and dropped reply.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

/// Sizes of one invocation.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// Runs per row (seeds 1..=runs).
    pub runs: u64,
    /// Edits per editor in `race` and `tabs`.
    pub edits: usize,
    /// Edits per editor in `fast`.
    pub fast_edits: usize,
    /// Intents per run in `create`.
    pub intents: usize,
    /// Research sessions per seed in `sources`.
    pub sessions: usize,
    /// Trials per seed and deck count in `handles`.
    pub trials: usize,
    /// Milliseconds each point of `throughput` is measured for (per side).
    pub point_ms: u64,
}

impl Sizes {
    /// The seed posts' sizes.
    pub fn full() -> Self {
        Self { runs: 5, edits: 100, fast_edits: 2_000, intents: 50, sessions: 300, trials: 2_000, point_ms: 5_000 }
    }

    /// A version that runs in seconds.
    pub fn quick() -> Self {
        Self { runs: 2, edits: 12, fast_edits: 60, intents: 12, sessions: 20, trials: 40, point_ms: 200 }
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
}

impl Policy {
    fn label(self) -> &'static str {
        match self {
            Policy::StaleText => "(a) fresh version, text from an older read (last-writer-wins)",
            Policy::Reapply => "(b) version; on conflict re-read and re-apply",
            Policy::ResendOld => "(c) version; on conflict resend old text with the fresh version",
        }
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
    fn as_str(self) -> &'static str {
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
struct Read {
    version: Value,
    tab_version: Value,
    text: String,
    sheet_id: Option<String>,
}

impl Read {
    fn version(&self, scope: Scope) -> Value {
        match scope {
            Scope::Note => self.version.clone(),
            Scope::Tab => self.tab_version.clone(),
        }
    }
}

/// How an editor writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Via {
    /// `edit_note_tab` over MCP.
    Mcp,
    /// `PUT /api/v1/notes/{note}/tabs/{tab}`.
    Rest,
}

/// One editor: its own connection, token and write path.
struct Editor {
    client: Client,
    token: String,
    via: Via,
    note: String,
}

impl Editor {
    async fn new(addr: SocketAddr, token: &str, via: Via, note: &str) -> Result<Self> {
        Ok(Self { client: Client::connect(addr).await?, token: token.into(), via, note: note.into() })
    }

    /// A tool call. hyper refuses a request sent before the connection has
    /// finished the previous exchange ("connection was not ready") without
    /// sending it, so that one error is retried after a moment.
    async fn call(&mut self, tool: &str, args: Value) -> Result<Value> {
        let mut tries = 0;
        loop {
            match self.client.call(&self.token, tool, args.clone()).await {
                Err(e) if tries < 100 && not_ready(&e) => tries += 1,
                r => return r,
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// A REST request, with the same retry as [`Editor::call`].
    async fn send(&mut self, method: &str, path: &str, body: &Value) -> Result<(u16, Value)> {
        let mut tries = 0;
        loop {
            match self.client.send(method, path, &self.token, body).await {
                Err(e) if tries < 100 && not_ready(&e) => tries += 1,
                r => return r,
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    async fn read(&mut self, tab: &str) -> Result<Read> {
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
    async fn write_text(&mut self, tab: &str, version: &Value, scope: Scope, key: &str, text: &str) -> Result<bool> {
        match self.via {
            Via::Mcp => {
                let args = json!({"note_id": self.note, "tab_id": tab, "expected_version": version,
                    "idempotency_key": key, "operation": "replace_text", "text": text, "version_scope": scope.as_str()});
                let r = self.call("edit_note_tab", args).await?;
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

    /// One cell of a sheet tab over MCP: true if it landed, false on a version conflict.
    async fn write_cell(&mut self, tab: &str, sheet: &str, version: &Value, scope: Scope, key: &str, row: usize, value: &str) -> Result<bool> {
        let args = json!({"note_id": self.note, "tab_id": tab, "expected_version": version, "idempotency_key": key,
            "operation": "sheet_set_range", "sheet_id": sheet, "start_row": row, "start_col": 0, "values": [[value]],
            "version_scope": scope.as_str()});
        let r = self.call("edit_note_tab", args).await?;
        tool_outcome(&r)
    }
}

fn not_ready(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.to_string().contains("connection was not ready"))
}

fn tool_outcome(r: &Value) -> Result<bool> {
    if r["isError"] == false {
        return Ok(true);
    }
    if r["structuredContent"]["error"] == "version_conflict" {
        return Ok(false);
    }
    bail!("write refused: {r}")
}

fn append(text: &str, line: &str) -> String {
    if text.is_empty() { line.to_string() } else { format!("{text}\n{line}") }
}

async fn think(rng: &mut Rng, (lo, hi): (u64, u64)) {
    if hi > 0 {
        tokio::time::sleep(Duration::from_millis(rng.range(lo, hi))).await;
    }
}

/// One editor appending `edits` lines `{tag}-{i}` to a text tab.
#[allow(clippy::too_many_arguments)]
async fn text_editor(mut ed: Editor, tab: &str, tag: &str, edits: usize, policy: Policy, scope: Scope, pause: (u64, u64), mut rng: Rng) -> Result<EditorStats> {
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
        loop {
            tries += 1;
            st.writes += 1;
            let key = format!("{tag}-{i}-{tries}");
            if ed.write_text(tab, &version, scope, &key, &append(&base.text, &line)).await? {
                break;
            }
            st.conflicts += 1;
            if tries >= 10_000 {
                bail!("{tag}: edit {i} still refused after {tries} tries");
            }
            let fresh = ed.read(tab).await?;
            version = fresh.version(scope);
            if policy == Policy::Reapply {
                base = fresh;
            }
        }
        st.max_tries = st.max_tries.max(tries);
    }
    Ok(st)
}

/// One editor writing cell (i, 0) = `{tag}-{i}` of a sheet tab, re-reading on conflict.
async fn sheet_editor(mut ed: Editor, tab: &str, tag: &str, edits: usize, scope: Scope, pause: (u64, u64), mut rng: Rng) -> Result<EditorStats> {
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
            if ed.write_cell(tab, &sheet, &read.version(scope), scope, &key, i, &format!("{tag}-{i}")).await? {
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

fn lost_lines(text: &str, tag: &str, edits: usize) -> usize {
    let have: HashSet<&str> = text.lines().collect();
    (0..edits).filter(|i| !have.contains(format!("{tag}-{i}").as_str())).count()
}

const AGENT_THINK: (u64, u64) = (20, 80);
const PERSON_THINK: (u64, u64) = (5, 40);

/// One run of two editors on the markdown tab of a fresh note: the agent over
/// MCP, the person reading over MCP and writing over REST, both with `policy`.
async fn text_run(stack: &Stack, seed: u64, edits: usize, policy: Policy, think: bool) -> Result<EditRun> {
    let note = stack.seed_notes(1)?.remove(0);
    let addr = stack.running.addr;
    let (at, pt) = if think { (AGENT_THINK, PERSON_THINK) } else { ((0, 0), (0, 0)) };
    let agent = Editor::new(addr, &stack.agent, Via::Mcp, &note).await?;
    let person = Editor::new(addr, &stack.person, Via::Rest, &note).await?;
    let started = Instant::now();
    let a = tokio::spawn(text_editor(agent, "markdown", "agent", edits, policy, Scope::Note, at, Rng::new(seed * 2)));
    let p = tokio::spawn(text_editor(person, "markdown", "person", edits, policy, Scope::Note, pt, Rng::new(seed * 2 + 1)));
    let (mut agent, mut person) = (a.await??, p.await??);
    let wall = started.elapsed();
    let text = Editor::new(addr, &stack.agent, Via::Mcp, &note).await?.read("markdown").await?.text;
    if std::env::var_os("CAIRN_EXPERIMENT_TEXT").is_some() {
        eprintln!("{policy:?} seed {seed} final text:\n{text}\n");
    }
    agent.lost = lost_lines(&text, "agent", edits);
    person.lost = lost_lines(&text, "person", edits);
    Ok(EditRun { seed, agent, person, wall })
}

/// `race`: the three policies, seeds 1..=runs, `edits` per editor.
pub async fn race(stack: &Stack, runs: u64, edits: usize) -> Result<Vec<EditRow>> {
    let mut rows = Vec::new();
    for policy in [Policy::StaleText, Policy::Reapply, Policy::ResendOld] {
        let mut row = EditRow { label: policy.label().into(), runs: Vec::new() };
        for seed in 1..=runs {
            row.runs.push(text_run(stack, seed, edits, policy, true).await?);
        }
        rows.push(row);
    }
    Ok(rows)
}

/// `fast`: zero think time, re-read and re-apply.
pub async fn fast(stack: &Stack, runs: u64, edits: usize) -> Result<EditRow> {
    let mut row = EditRow { label: "zero think time; re-read and re-apply".into(), runs: Vec::new() };
    for seed in 1..=runs {
        row.runs.push(text_run(stack, seed, edits, Policy::Reapply, false).await?);
    }
    Ok(row)
}

async fn new_tab(ed: &mut Editor, tab_type: &str, key: &str) -> Result<String> {
    let version = ed.call("list_note_tabs", json!({"note_id": ed.note})).await?["structuredContent"]["version"].clone();
    let r = ed.call("create_note_tab", json!({"note_id": ed.note, "expected_version": version,
        "idempotency_key": key, "tab_type": tab_type})).await?;
    if r["isError"] != false {
        bail!("create_note_tab refused: {r}");
    }
    Ok(r["structuredContent"]["tab_id"].as_str().context("tab_id")?.to_string())
}

/// `tabs`: the agent appends lines to the markdown tab, the person writes cells
/// of a sheet tab; checked against the note's version, then the tab's.
pub async fn tabs(stack: &Stack, runs: u64, edits: usize) -> Result<Vec<EditRow>> {
    let addr = stack.running.addr;
    let mut rows = Vec::new();
    for scope in [Scope::Note, Scope::Tab] {
        let mut row = EditRow { label: format!("version_scope {}", scope.as_str()), runs: Vec::new() };
        for seed in 1..=runs {
            let note = stack.seed_notes(1)?.remove(0);
            let mut agent = Editor::new(addr, &stack.agent, Via::Mcp, &note).await?;
            let sheet = new_tab(&mut agent, "sheet", &format!("tabs-sheet-{seed}")).await?;
            let person = Editor::new(addr, &stack.person, Via::Mcp, &note).await?;
            let started = Instant::now();
            let a = tokio::spawn(text_editor(agent, "markdown", "agent", edits, Policy::Reapply, scope, AGENT_THINK, Rng::new(seed * 2)));
            let tab = sheet.clone();
            let p = tokio::spawn(async move { sheet_editor(person, &tab, "person", edits, scope, PERSON_THINK, Rng::new(seed * 2 + 1)).await });
            let (mut a, mut p) = (a.await??, p.await??);
            let wall = started.elapsed();
            let mut check = Editor::new(addr, &stack.agent, Via::Mcp, &note).await?;
            a.lost = lost_lines(&check.read("markdown").await?.text, "agent", edits);
            p.lost = lost_cells(&mut check, &sheet, "person", edits).await?;
            row.runs.push(EditRun { seed, agent: a, person: p, wall });
        }
        rows.push(row);
    }
    Ok(rows)
}

async fn lost_cells(ed: &mut Editor, tab: &str, tag: &str, edits: usize) -> Result<usize> {
    let mut have = HashSet::new();
    let mut row = 0;
    while row < edits {
        let n = (edits - row).min(100);
        let r = ed.call("read_sheet_range", json!({"note_id": ed.note, "tab_id": tab,
            "start_row": row, "start_col": 0, "num_rows": n, "num_cols": 1})).await?;
        if r["isError"] != false {
            bail!("read_sheet_range refused: {r}");
        }
        for cells in r["structuredContent"]["values"].as_array().into_iter().flatten() {
            if let Some(s) = cells[0].as_str() {
                have.insert(s.to_string());
            }
        }
        row += n;
    }
    Ok((0..edits).filter(|i| !have.contains(&format!("{tag}-{i}"))).count())
}

/// The agent's idempotency-key policy for create_note_tab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyPolicy {
    /// A new key (and a fresh version) for every call, retries included.
    NewPerCall,
    /// One key per intent: a retry resends the same call; after a conflict the
    /// same key goes out with the fresh version.
    SameOnRetry,
    /// The same call on a retry; a new key with the fresh version after a conflict.
    NewAfterConflict,
}

impl KeyPolicy {
    fn label(self) -> &'static str {
        match self {
            KeyPolicy::NewPerCall => "new key per call",
            KeyPolicy::SameOnRetry => "same key on retry",
            KeyPolicy::NewAfterConflict => "same key on retry, new key after a conflict",
        }
    }
}

/// One run of `create`.
#[derive(Clone, Debug)]
pub struct CreateRun {
    /// The seed.
    pub seed: u64,
    /// Intents (tabs the agent means to create).
    pub intents: usize,
    /// create_note_tab calls sent.
    pub calls: usize,
    /// Replies "dropped" after the server committed.
    pub dropped: usize,
    /// Version conflicts (the person writes the markdown tab meanwhile).
    pub conflicts: usize,
    /// Replays answered for a repeated key.
    pub replayed: usize,
    /// Sheet tabs in the note at the end.
    pub created: usize,
    /// Distinct tab ids the agent ended up holding, one per intent.
    pub distinct_ids: usize,
}

/// One row of `create`.
#[derive(Clone, Debug)]
pub struct CreateRow {
    /// The key policy.
    pub policy: KeyPolicy,
    /// One entry per seed.
    pub runs: Vec<CreateRun>,
}

async fn list_version(ed: &mut Editor) -> Result<Value> {
    let r = ed.call("list_note_tabs", json!({"note_id": ed.note})).await?;
    Ok(r["structuredContent"]["version"].clone())
}

async fn create_run(stack: &Stack, seed: u64, intents: usize, policy: KeyPolicy) -> Result<CreateRun> {
    let note = stack.seed_notes(1)?.remove(0);
    let addr = stack.running.addr;
    let mut rng = Rng::new(seed * 2);
    // The person keeps editing the markdown tab so some creates meet a conflict.
    let stop = Arc::new(AtomicBool::new(false));
    let person = {
        let (stop, mut ed) = (stop.clone(), Editor::new(addr, &stack.person, Via::Rest, &note).await?);
        let mut rng = Rng::new(seed * 2 + 1);
        tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                let r = ed.read("markdown").await?;
                think(&mut rng, PERSON_THINK).await;
                ed.write_text("markdown", &r.version, Scope::Note, &format!("create-person-{i}"), &append(&r.text, &format!("person-{i}"))).await?;
                i += 1;
            }
            anyhow::Ok(())
        })
    };
    let mut ed = Editor::new(addr, &stack.agent, Via::Mcp, &note).await?;
    let mut run = CreateRun { seed, intents, calls: 0, dropped: 0, conflicts: 0, replayed: 0, created: 0, distinct_ids: 0 };
    let mut ids = HashSet::new();
    let mut fresh_key = 0u64;
    let mut next_key = || {
        fresh_key += 1;
        format!("create-{seed}-{fresh_key}")
    };
    for i in 0..intents {
        think(&mut rng, (0, 10)).await;
        let mut version = list_version(&mut ed).await?;
        let mut key = next_key();
        let label = format!("intent-{i}");
        loop {
            run.calls += 1;
            let r = ed.call("create_note_tab", json!({"note_id": note, "expected_version": version,
                "idempotency_key": key, "tab_type": "sheet", "label": label})).await?;
            if r["isError"] == false {
                if rng.chance(0.3) {
                    // The server committed; the reply never arrived. Retry as a host would.
                    run.dropped += 1;
                    if policy == KeyPolicy::NewPerCall {
                        version = list_version(&mut ed).await?;
                        key = next_key();
                    }
                    continue;
                }
                let s = &r["structuredContent"];
                if s["replayed"] == true {
                    run.replayed += 1;
                }
                ids.insert(s["tab_id"].as_str().context("tab_id")?.to_string());
                break;
            }
            if r["structuredContent"]["error"] != "version_conflict" {
                bail!("create_note_tab refused: {r}");
            }
            run.conflicts += 1;
            version = list_version(&mut ed).await?;
            if policy != KeyPolicy::SameOnRetry {
                key = next_key();
            }
        }
    }
    stop.store(true, Ordering::SeqCst);
    person.await??;
    let r = ed.call("list_note_tabs", json!({"note_id": note})).await?;
    run.created = r["structuredContent"]["tabs"].as_array().into_iter().flatten().filter(|t| t["type"] == "sheet").count();
    run.distinct_ids = ids.len();
    Ok(run)
}

/// `create`: the three key policies, seeds 1..=runs, `intents` creates each.
pub async fn create(stack: &Stack, runs: u64, intents: usize) -> Result<Vec<CreateRow>> {
    let mut rows = Vec::new();
    for policy in [KeyPolicy::NewPerCall, KeyPolicy::SameOnRetry, KeyPolicy::NewAfterConflict] {
        let mut row = CreateRow { policy, runs: Vec::new() };
        for seed in 1..=runs {
            row.runs.push(create_run(stack, seed, intents, policy).await?);
        }
        rows.push(row);
    }
    Ok(rows)
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

fn num(x: f64) -> String {
    if x.fract() == 0.0 { format!("{x:.0}") } else { format!("{x:.1}") }
}

/// Markdown: one line per run and a median line per row.
pub fn edit_table(title: &str, rows: &[EditRow]) -> String {
    let mut s = format!("\n## {title}\n\n");
    s.push_str("| client behaviour | seed | lost agent | lost person | conflicts agent | conflicts person | writes agent | writes person | max tries | wall s |\n");
    s.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for row in rows {
        for r in &row.runs {
            let _ = writeln!(
                s,
                "| {} | {} | {} / {} | {} / {} | {} | {} | {} | {} | {} | {:.2} |",
                row.label, r.seed, r.agent.lost, r.agent.edits, r.person.lost, r.person.edits, r.agent.conflicts, r.person.conflicts,
                r.agent.writes, r.person.writes, r.agent.max_tries.max(r.person.max_tries), r.wall.as_secs_f64()
            );
        }
        let m = |f: &dyn Fn(&EditRun) -> f64| num(median(row.runs.iter().map(f).collect()));
        let _ = writeln!(
            s,
            "| **{}** | **median** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** | **{:.2}** |",
            row.label,
            m(&|r| r.agent.lost as f64),
            m(&|r| r.person.lost as f64),
            m(&|r| r.agent.conflicts as f64),
            m(&|r| r.person.conflicts as f64),
            m(&|r| r.agent.writes as f64),
            m(&|r| r.person.writes as f64),
            m(&|r| r.agent.max_tries.max(r.person.max_tries) as f64),
            median(row.runs.iter().map(|r| r.wall.as_secs_f64()).collect()),
        );
    }
    s
}

/// Markdown for `create`.
pub fn create_table(rows: &[CreateRow]) -> String {
    let mut s = "\n## create: create_note_tab with 30% of replies dropped after the commit\n\n".to_string();
    s.push_str("| key policy | seed | intents | calls sent | replies dropped | conflicts | replays | sheet tabs created | duplicates |\n");
    s.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for row in rows {
        for r in &row.runs {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                row.policy.label(), r.seed, r.intents, r.calls, r.dropped, r.conflicts, r.replayed, r.created, r.created.saturating_sub(r.intents)
            );
        }
        let m = |f: &dyn Fn(&CreateRun) -> usize| num(median(row.runs.iter().map(|r| f(r) as f64).collect()));
        let _ = writeln!(
            s,
            "| **{}** | **median** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** |",
            row.policy.label(),
            m(&|r| r.intents),
            m(&|r| r.calls),
            m(&|r| r.dropped),
            m(&|r| r.conflicts),
            m(&|r| r.replayed),
            m(&|r| r.created),
            m(&|r| r.created.saturating_sub(r.intents)),
        );
    }
    s
}

/// The key an agent sends with add_note_source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKey {
    /// A fresh random (UUID-like) key per citation, reused on a resend.
    FreshPerCitation,
    /// A hash of the URL as written.
    UrlAsWritten,
    /// A hash of the note id and the normalized URL.
    NoteAndNormalized,
}

impl SourceKey {
    fn label(self) -> &'static str {
        match self {
            SourceKey::FreshPerCitation => "fresh UUID per citation, reused on resend",
            SourceKey::UrlAsWritten => "hash of the URL as written",
            SourceKey::NoteAndNormalized => "hash of note id + normalized URL",
        }
    }
}

/// One seed of `sources`: `sessions` research sessions, one note each.
#[derive(Clone, Debug, Default)]
pub struct SourcesRun {
    /// The seed.
    pub seed: u64,
    /// Research sessions (notes).
    pub sessions: usize,
    /// Citations made (3 turns × 6 pages per session).
    pub citations: usize,
    /// add_note_source calls sent, resends included.
    pub calls: usize,
    /// Replies lost after the server committed (each resent with the same key).
    pub lost: usize,
    /// Answers marked `replayed` (a repeated key).
    pub replayed: usize,
    /// Answers marked `already_attached` (the normalized URL was there, new key).
    pub already_attached: usize,
    /// Version conflicts met (then the version is re-read).
    pub conflicts: usize,
    /// Sources stored over every note, counted with list_note_attachments.
    pub stored: usize,
    /// Distinct pages cited over every note.
    pub distinct: usize,
}

impl SourcesRun {
    /// Sources stored beyond one per distinct page.
    pub fn duplicates(&self) -> usize {
        self.stored.saturating_sub(self.distinct)
    }
}

/// One row of `sources`: one key policy, every seed.
#[derive(Clone, Debug)]
pub struct SourcesRow {
    /// The key policy.
    pub policy: SourceKey,
    /// One entry per seed.
    pub runs: Vec<SourcesRun>,
}

const PAGES: usize = 8;
const SPELLINGS: usize = 7;

/// Page `p` in spelling `s`: canonical, trailing slash, `www.`, `?utm_source=`,
/// `#fragment`, `http://`, no scheme (which Cairn reads as https).
fn spelling(p: usize, s: usize) -> String {
    let (host, path) = (format!("journal{p}.example.org"), format!("/papers/{}", 1000 + p));
    match s {
        0 => format!("https://{host}{path}"),
        1 => format!("https://{host}{path}/"),
        2 => format!("https://www.{host}{path}"),
        3 => format!("https://{host}{path}?utm_source=chatgpt.com"),
        4 => format!("https://{host}{path}#results"),
        5 => format!("http://{host}{path}"),
        _ => format!("{host}{path}"),
    }
}

/// The client's own normalization for its key: https, lower-case host without
/// `www.`, no fragment, no `utm_*` parameters, no trailing slash.
fn client_normalize(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.split('#').next().unwrap_or("");
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = host.to_ascii_lowercase();
    let host = host.strip_prefix("www.").unwrap_or(&host);
    let path = path.trim_end_matches('/');
    let query: Vec<&str> = query.split('&').filter(|q| !q.is_empty() && !q.starts_with("utm_")).collect();
    let mut out = format!("https://{host}{path}");
    if !query.is_empty() {
        out.push('?');
        out.push_str(&query.join("&"));
    }
    out
}

/// FNV-1a, 64 bits, as hex: a stable key from text.
fn fnv(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn uuid_like(rng: &mut Rng) -> String {
    let (a, b) = (rng.next(), rng.next());
    format!("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xfff, (b >> 48) & 0xffff, b & 0xffff_ffff_ffff)
}

fn version_of(v: &Value) -> u64 {
    v["structuredContent"]["version"].as_u64().unwrap_or(0)
}

/// Every source of the note, paging list_note_attachments with limit 50.
async fn count_sources(ed: &mut Editor) -> Result<usize> {
    let mut count = 0;
    let mut cursor = Value::Null;
    loop {
        let mut args = json!({"note_id": ed.note, "kind": "sources", "limit": 50});
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let r = ed.call("list_note_attachments", args).await?;
        if r["isError"] != false {
            bail!("list_note_attachments refused: {r}");
        }
        let s = &r["structuredContent"];
        count += s["attachments"].as_array().map_or(0, Vec::len);
        cursor = s["next_cursor"].clone();
        if cursor.is_null() {
            return Ok(count);
        }
    }
}

/// One session: a fresh note, 3 turns × 6 of the 8 pages, each in a random spelling.
async fn source_session(ed: &mut Editor, run: &mut SourcesRun, policy: SourceKey, rng: &mut Rng) -> Result<()> {
    let mut version = ed.call("list_note_tabs", json!({"note_id": ed.note})).await?["structuredContent"]["version"].as_u64().context("version")?;
    let mut cited = HashSet::new();
    for _turn in 0..3 {
        // 6 of 8 pages: a partial Fisher–Yates shuffle.
        let mut pages: Vec<usize> = (0..PAGES).collect();
        for i in 0..6 {
            let j = i + rng.range(0, (PAGES - 1 - i) as u64) as usize;
            pages.swap(i, j);
        }
        for &p in &pages[..6] {
            cited.insert(p);
            run.citations += 1;
            let url = spelling(p, rng.range(0, SPELLINGS as u64 - 1) as usize);
            let key = match policy {
                SourceKey::FreshPerCitation => uuid_like(rng),
                SourceKey::UrlAsWritten => format!("url-{}", fnv(&url)),
                SourceKey::NoteAndNormalized => format!("src-{}", fnv(&format!("{}\n{}", ed.note, client_normalize(&url)))),
            };
            let mut tries = 0;
            loop {
                tries += 1;
                if tries > 100 {
                    bail!("add_note_source: {url} still refused after {tries} tries");
                }
                run.calls += 1;
                let r = ed.call("add_note_source", json!({"note_id": ed.note, "expected_version": version,
                    "idempotency_key": key, "title": format!("Paper {p}"), "url": url})).await?;
                if r["isError"] != false {
                    if r["structuredContent"]["error"] != "version_conflict" {
                        bail!("add_note_source refused: {r}");
                    }
                    run.conflicts += 1;
                    version = ed.call("list_note_tabs", json!({"note_id": ed.note})).await?["structuredContent"]["version"]
                        .as_u64()
                        .context("version")?;
                    continue;
                }
                if rng.chance(0.2) {
                    // Committed, but the reply never arrived: resend the same call.
                    run.lost += 1;
                    continue;
                }
                let s = &r["structuredContent"];
                run.replayed += usize::from(s["replayed"] == true);
                run.already_attached += usize::from(s["already_attached"] == true);
                // A replay carries the version of its first answer: keep the newest seen.
                version = version.max(version_of(&r));
                break;
            }
        }
    }
    run.distinct += cited.len();
    run.stored += count_sources(ed).await?;
    Ok(())
}

/// `sources`: the three key policies, seeds 1..=runs, `sessions` notes each.
pub async fn sources(stack: &Stack, runs: u64, sessions: usize) -> Result<Vec<SourcesRow>> {
    let addr = stack.running.addr;
    let mut rows = Vec::new();
    for policy in [SourceKey::FreshPerCitation, SourceKey::UrlAsWritten, SourceKey::NoteAndNormalized] {
        let mut row = SourcesRow { policy, runs: Vec::new() };
        for seed in 1..=runs {
            let mut rng = Rng::new(seed);
            let mut run = SourcesRun { seed, sessions, ..Default::default() };
            let notes = stack.seed_notes(sessions)?;
            let mut ed = Editor::new(addr, &stack.agent, Via::Mcp, &notes[0]).await?;
            for note in notes {
                ed.note = note;
                source_session(&mut ed, &mut run, policy, &mut rng).await?;
            }
            row.runs.push(run);
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Markdown for `sources`.
pub fn sources_table(rows: &[SourcesRow], sessions: usize) -> String {
    let mut s = format!(
        "\n## sources: {sessions} research sessions per seed × 3 turns × 6 of 8 pages, 7 spellings, 20% of replies lost and resent\n\n\
         Spellings: canonical, trailing slash, `www.`, `?utm_source=`, `#fragment`, `http://`, and no scheme (sent as written: \
         Cairn reads a scheme-less URL as https). Each session has its own note. Duplicates = stored − distinct pages.\n\n"
    );
    s.push_str("| key policy | seed | citations | calls sent | replies lost | replays | already attached | sources stored | distinct pages | duplicates | per session |\n");
    s.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let per = |r: &SourcesRun| r.duplicates() as f64 / r.sessions.max(1) as f64;
    for row in rows {
        for r in &row.runs {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} |",
                row.policy.label(), r.seed, r.citations, r.calls, r.lost, r.replayed, r.already_attached, r.stored, r.distinct, r.duplicates(), per(r)
            );
        }
        let m = |f: &dyn Fn(&SourcesRun) -> usize| num(median(row.runs.iter().map(|r| f(r) as f64).collect()));
        let _ = writeln!(
            s,
            "| **{}** | **median** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** | **{:.2}** |",
            row.policy.label(),
            m(&|r| r.citations),
            m(&|r| r.calls),
            m(&|r| r.lost),
            m(&|r| r.replayed),
            m(&|r| r.already_attached),
            m(&|r| r.stored),
            m(&|r| r.distinct),
            m(&|r| r.duplicates()),
            median(row.runs.iter().map(per).collect()),
        );
    }
    s
}

/// What the agent keeps to find its deck again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handle {
    /// Its index in the tab strip.
    Position,
    /// "the slides tab": the first tab of its type.
    Type,
    /// The first tab with its label.
    Label,
    /// Its exact tab ID.
    Id,
}

impl Handle {
    const ALL: [Handle; 4] = [Handle::Position, Handle::Type, Handle::Label, Handle::Id];

    fn label(self) -> &'static str {
        match self {
            Handle::Position => "position",
            Handle::Type => "type",
            Handle::Label => "label",
            Handle::Id => "ID",
        }
    }
}

/// One seed of one handle at one deck count.
#[derive(Clone, Debug, Default)]
pub struct HandleRun {
    /// The seed.
    pub seed: u64,
    /// Trials (one note each).
    pub trials: usize,
    /// Changes the person made over every trial.
    pub changes: usize,
    /// The handle found the target deck.
    pub right: usize,
    /// The handle found another tab, without any error.
    pub wrong: usize,
    /// The handle found nothing.
    pub not_found: usize,
}

/// One row of `handles`: K decks, one handle, every seed.
#[derive(Clone, Debug)]
pub struct HandleRow {
    /// Slides decks in the note at the start.
    pub decks: usize,
    /// The handle.
    pub handle: Handle,
    /// One entry per seed.
    pub runs: Vec<HandleRun>,
}

const DECK_LABELS: [&str; 5] = ["Pitch", "Roadmap", "Results", "Budget", "Launch"];

/// One tab as the strip shows it.
#[derive(Clone, Debug)]
struct StripTab {
    id: String,
    kind: String,
    label: String,
}

async fn list_tabs(ed: &mut Editor) -> Result<(u64, Vec<StripTab>)> {
    let r = ed.call("list_note_tabs", json!({"note_id": ed.note})).await?;
    if r["isError"] != false {
        bail!("list_note_tabs refused: {r}");
    }
    let s = &r["structuredContent"];
    let tabs = s["tabs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| StripTab {
            id: t["tab_id"].as_str().unwrap_or_default().into(),
            kind: t["type"].as_str().unwrap_or_default().into(),
            label: t["label"].as_str().unwrap_or_default().into(),
        })
        .collect();
    Ok((s["version"].as_u64().context("version")?, tabs))
}

async fn create_deck(ed: &mut Editor, label: &str, key: &str) -> Result<String> {
    let (version, _) = list_tabs(ed).await?;
    let r = ed.call("create_note_tab", json!({"note_id": ed.note, "expected_version": version,
        "idempotency_key": key, "tab_type": "slides", "label": label})).await?;
    if r["isError"] != false {
        bail!("create_note_tab refused: {r}");
    }
    Ok(r["structuredContent"]["tab_id"].as_str().context("tab_id")?.to_string())
}

fn resolve<'a>(handle: Handle, view: &'a [StripTab], target: &StripTab, position: usize) -> Option<&'a StripTab> {
    match handle {
        Handle::Position => view.get(position),
        Handle::Type => view.iter().find(|t| t.kind == target.kind),
        Handle::Label => view.iter().find(|t| t.label == target.label),
        Handle::Id => view.iter().find(|t| t.id == target.id),
    }
}

/// The person renames or moves a tab: `PATCH /api/v1/notes/{note}/tabs/{tab}`
/// with the note's current version.
async fn person_update(person: &mut Editor, agent: &mut Editor, tab: &str, change: Value) -> Result<()> {
    let (version, _) = list_tabs(agent).await?;
    let mut body = change;
    body["expected_version"] = json!(version);
    let path = format!("/api/v1/notes/{}/tabs/{tab}", agent.note);
    let (status, reply) = person.send("PATCH", &path, &body).await?;
    if status != 200 {
        bail!("PATCH {path} answered {status}: {reply}");
    }
    Ok(())
}

/// One trial: a note with `decks` slides tabs; the agent lists and picks; the
/// person makes 0–2 changes over REST (move 40%, rename 35%, add 25%); the
/// agent lists again and resolves every handle against what the server says.
async fn handle_trial(ed: &mut Editor, person: &mut Editor, decks: usize, tag: &str, rng: &mut Rng, runs: &mut [HandleRun]) -> Result<()> {
    let mut labels = DECK_LABELS.to_vec();
    for i in 0..decks {
        let j = i + rng.range(0, (labels.len() - 1 - i) as u64) as usize;
        labels.swap(i, j);
        create_deck(ed, labels[i], &format!("{tag}-deck-{i}")).await?;
    }
    let (_, strip) = list_tabs(ed).await?;
    let slides: Vec<usize> = (0..strip.len()).filter(|&i| strip[i].kind == "slides").collect();
    let position = slides[rng.range(0, slides.len() as u64 - 1) as usize];
    let target = strip[position].clone();

    let changes = rng.range(0, 2) as usize;
    for c in 0..changes {
        let roll = rng.range(0, 99);
        let (_, strip) = list_tabs(ed).await?;
        if roll < 40 {
            let from = rng.range(0, strip.len() as u64 - 1) as usize;
            let to = rng.range(0, strip.len() as u64 - 1) as usize;
            person_update(person, ed, &strip[from].id, json!({"position": to})).await?;
        } else if roll < 75 {
            let decks: Vec<usize> = (0..strip.len()).filter(|&i| strip[i].kind == "slides").collect();
            let i = decks[rng.range(0, decks.len() as u64 - 1) as usize];
            let label = DECK_LABELS[rng.range(0, 4) as usize];
            person_update(person, ed, &strip[i].id, json!({"label": label})).await?;
        } else {
            let label = DECK_LABELS[rng.range(0, 4) as usize];
            create_deck(ed, label, &format!("{tag}-add-{c}")).await?;
        }
    }

    let (_, view) = list_tabs(ed).await?;
    for (run, handle) in runs.iter_mut().zip(Handle::ALL) {
        run.trials += 1;
        run.changes += changes;
        match resolve(handle, &view, &target, position) {
            Some(t) if t.id == target.id => run.right += 1,
            Some(_) => run.wrong += 1,
            None => run.not_found += 1,
        }
    }
    Ok(())
}

/// `handles`: K = 2 and 5 decks, seeds 1..=runs, `trials` notes each.
pub async fn handles(stack: &Stack, runs: u64, trials: usize) -> Result<Vec<HandleRow>> {
    let addr = stack.running.addr;
    let mut rows = Vec::new();
    for decks in [2, 5] {
        let mut per_handle: Vec<HandleRow> = Handle::ALL.iter().map(|&handle| HandleRow { decks, handle, runs: Vec::new() }).collect();
        for seed in 1..=runs {
            let mut rng = Rng::new(seed * 100 + decks as u64);
            let mut counts: Vec<HandleRun> = Handle::ALL.iter().map(|_| HandleRun { seed, ..Default::default() }).collect();
            let notes = stack.seed_notes(trials)?;
            let mut ed = Editor::new(addr, &stack.agent, Via::Mcp, &notes[0]).await?;
            let mut person = Editor::new(addr, &stack.person, Via::Rest, &notes[0]).await?;
            for (i, note) in notes.into_iter().enumerate() {
                ed.note = note;
                handle_trial(&mut ed, &mut person, decks, &format!("handles-{decks}-{seed}-{i}"), &mut rng, &mut counts).await?;
            }
            for (row, run) in per_handle.iter_mut().zip(counts) {
                row.runs.push(run);
            }
        }
        rows.extend(per_handle);
    }
    Ok(rows)
}

fn pct(n: usize, of: usize) -> f64 {
    100.0 * n as f64 / of.max(1) as f64
}

/// Markdown for `handles`.
pub fn handles_table(rows: &[HandleRow], trials: usize) -> String {
    let total = trials * rows.first().map_or(0, |r| r.runs.len());
    let mut s = format!(
        "\n## handles: an agent's handle to one of K slides decks after 0–2 changes by a person, {trials} trials per seed and K\n\n\
         The seed post ran 10,000 trials per K in memory; here {total} trials per K ({trials} per seed) each go over HTTP. \
         Changes: move a tab 40% and rename a slides tab to one of five labels 35% (the person, `PATCH \
         /api/v1/notes/{{note}}/tabs/{{tab}}`), add a slides tab 25% (create_note_tab). The agent resolves its handle in a \
         fresh list_note_tabs.\n\n"
    );
    s.push_str("| K decks | handle | seed | trials | person changes | right | wrong deck | not found |\n");
    s.push_str("|---:|---|---:|---:|---:|---:|---:|---:|\n");
    for row in rows {
        for r in &row.runs {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {:.1}% | {:.1}% | {:.1}% |",
                row.decks, row.handle.label(), r.seed, r.trials, r.changes, pct(r.right, r.trials), pct(r.wrong, r.trials), pct(r.not_found, r.trials)
            );
        }
        let m = |f: &dyn Fn(&HandleRun) -> f64| median(row.runs.iter().map(f).collect());
        let _ = writeln!(
            s,
            "| **{}** | **{}** | **median** | **{}** | **{}** | **{:.1}%** | **{:.1}%** | **{:.1}%** |",
            row.decks,
            row.handle.label(),
            num(m(&|r| r.trials as f64)),
            num(m(&|r| r.changes as f64)),
            m(&|r| pct(r.right, r.trials)),
            m(&|r| pct(r.wrong, r.trials)),
            m(&|r| pct(r.not_found, r.trials)),
        );
    }
    s
}

/// One point of `throughput`: one tool at one concurrency, both sides.
#[derive(Clone, Debug)]
pub struct ThroughputRow {
    /// The tool measured.
    pub tool: &'static str,
    /// Concurrent clients, each on its own connection (or thread) and note.
    pub clients: usize,
    /// Through the whole stack over HTTP MCP.
    pub stack: Series,
    /// The same core called natively in this process, on its own SQLite store.
    pub native: Series,
}

impl ThroughputRow {
    /// How many times the native core's throughput is the stack's.
    pub fn ratio(&self) -> f64 {
        self.native.rps / self.stack.rps.max(f64::MIN_POSITIVE)
    }
}

/// The concurrencies `throughput` measures.
pub const CONCURRENCY: [usize; 3] = [1, 8, 32];

/// `throughput`: read_note_tab and edit_note_tab (200 characters, the version
/// from the client's previous edit) at 1, 8 and 32 clients through the whole
/// stack, against the core natively on a SQLite store of its own, in one run.
/// Every client checks that its note advanced by exactly its acknowledged edits.
pub async fn throughput(stack: &Stack, point: Duration) -> Result<Vec<ThroughputRow>> {
    let scratch = std::env::temp_dir().join(format!("cairn-throughput-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let native = bench_notes::native_store(&scratch)?;
    let most = CONCURRENCY[CONCURRENCY.len() - 1];
    let (stack_notes, native_notes) = (stack.seed_notes(most)?, bench_notes::seed(&native, most)?);
    let mut rows = Vec::new();
    for (tool, op) in [("read_note_tab", Op::Read), ("edit_note_tab", Op::Edit(200))] {
        for clients in CONCURRENCY {
            // Warm pool slots, connections and caches on both sides first.
            let warm = (point / 4).max(Duration::from_millis(50));
            bench_notes::stack_calls(stack, &stack_notes, clients, op, warm).await?;
            let s = bench_notes::stack_calls(stack, &stack_notes, clients, op, point).await?;
            let (kv, notes) = (native.clone(), native_notes.clone());
            let n = tokio::task::spawn_blocking(move || {
                bench_notes::native_calls(kv.clone(), &notes, clients, op, warm)?;
                bench_notes::native_calls(kv, &notes, clients, op, point)
            })
            .await??;
            rows.push(ThroughputRow { tool, clients, stack: s, native: n });
        }
    }
    drop(native);
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(rows)
}

/// Markdown for `throughput`.
pub fn throughput_table(rows: &[ThroughputRow], point: Duration) -> String {
    let mut s = format!(
        "\n## throughput: read_note_tab and edit_note_tab, whole stack against the core natively, {:.1} s per point\n\n\
         Each client has its own connection (its own thread natively) and its own note; an edit sends the version its previous \
         edit returned, so none conflicts. Stack: HTTP/1.1 keep-alive → router component (token, rate limit, scopes) → \
         tool component → SQLite. Native: `cairn_notes::call_tool` in this process on a SQLite store of its own.\n\n",
        point.as_secs_f64()
    );
    s.push_str("| tool | clients | stack calls/s | stack p50 ms | stack p99 ms | native calls/s | native p50 ms | native p99 ms | native ÷ stack |\n");
    s.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let ms = |d: Duration| format!("{:.3}", d.as_secs_f64() * 1e3);
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} | {} | {} | {:.0} | {} | {} | {:.1}× |",
            r.tool, r.clients, r.stack.rps, ms(r.stack.p50), ms(r.stack.p99), r.native.rps, ms(r.native.p50), ms(r.native.p99), r.ratio()
        );
    }
    s
}

fn med<T>(runs: &[T], f: impl Fn(&T) -> f64) -> f64 {
    median(runs.iter().map(f).collect())
}

fn bars(file: &str, title: &str, x: &str, y: &str, categories: &[&str], series: Vec<(&str, Vec<f64>)>) -> Chart {
    Chart {
        file: file.into(),
        title: title.into(),
        x: x.into(),
        y: y.into(),
        kind: Kind::Bars,
        categories: categories.iter().map(|c| c.to_string()).collect(),
        series: series.into_iter().map(|(n, v)| (n.to_string(), v)).collect(),
    }
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

/// The chart of `create`: calls and tabs per key policy.
pub fn create_chart(rows: &[CreateRow]) -> Chart {
    let m = |f: &dyn Fn(&CreateRun) -> usize| rows.iter().map(|r| med(&r.runs, |x| f(x) as f64)).collect::<Vec<_>>();
    bars(
        "create.svg",
        "create: calls sent and tabs created per intent policy (medians)",
        "idempotency-key policy",
        "count",
        &["new key per call", "same key on retry", "new key after conflict"],
        vec![
            ("intents", m(&|r| r.intents)),
            ("calls sent", m(&|r| r.calls)),
            ("tabs created", m(&|r| r.created)),
            ("duplicates", m(&|r| r.created.saturating_sub(r.intents))),
        ],
    )
}

/// The chart of `sources`: stored against distinct per key policy.
pub fn sources_chart(rows: &[SourcesRow]) -> Chart {
    let m = |f: &dyn Fn(&SourcesRun) -> usize| rows.iter().map(|r| med(&r.runs, |x| f(x) as f64)).collect::<Vec<_>>();
    bars(
        "sources.svg",
        "sources: pages stored per key policy (medians)",
        "idempotency-key policy",
        "sources",
        &["fresh UUID", "hash of URL as written", "hash of note + normalized URL"],
        vec![("distinct pages cited", m(&|r| r.distinct)), ("sources stored", m(&|r| r.stored)), ("duplicates", m(&|r| r.duplicates()))],
    )
}

/// The chart of `handles`: right and wrong per handle and K.
pub fn handles_chart(rows: &[HandleRow]) -> Chart {
    let names: Vec<&str> = Handle::ALL.iter().map(|h| h.label()).collect();
    let series = |decks: usize, f: &dyn Fn(&HandleRun) -> f64| {
        Handle::ALL.iter().map(|&h| rows.iter().find(|r| r.decks == decks && r.handle == h).map_or(0.0, |r| med(&r.runs, f))).collect::<Vec<_>>()
    };
    bars(
        "handles.svg",
        "handles: the agent finds its deck after a person's changes (medians)",
        "handle kept",
        "% of trials",
        &names,
        vec![
            ("right, K = 2", series(2, &|r| pct(r.right, r.trials))),
            ("right, K = 5", series(5, &|r| pct(r.right, r.trials))),
            ("wrong deck, K = 2", series(2, &|r| pct(r.wrong, r.trials))),
            ("wrong deck, K = 5", series(5, &|r| pct(r.wrong, r.trials))),
        ],
    )
}

/// The charts of `throughput`: calls/s, then p50 and p99 per tool.
pub fn throughput_charts(rows: &[ThroughputRow]) -> Vec<Chart> {
    let categories: Vec<String> = CONCURRENCY.iter().map(|c| c.to_string()).collect();
    let pick = |tool: &str, f: &dyn Fn(&ThroughputRow) -> f64| {
        CONCURRENCY.iter().map(|&c| rows.iter().find(|r| r.tool == tool && r.clients == c).map_or(0.0, f)).collect::<Vec<_>>()
    };
    let line = |file: String, title: String, y: &str, series: Vec<(String, Vec<f64>)>| Chart {
        file,
        title,
        x: "concurrent clients".into(),
        y: y.into(),
        kind: Kind::LogLines,
        categories: categories.clone(),
        series,
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut charts = vec![line(
        "throughput.svg".into(),
        "throughput: whole stack against the core natively".into(),
        "calls/s (log)",
        vec![
            ("read_note_tab, stack".into(), pick("read_note_tab", &|r| r.stack.rps)),
            ("read_note_tab, native".into(), pick("read_note_tab", &|r| r.native.rps)),
            ("edit_note_tab, stack".into(), pick("edit_note_tab", &|r| r.stack.rps)),
            ("edit_note_tab, native".into(), pick("edit_note_tab", &|r| r.native.rps)),
        ],
    )];
    for tool in ["read_note_tab", "edit_note_tab"] {
        charts.push(line(
            format!("latency-{}.svg", tool.trim_end_matches("_note_tab")),
            format!("{tool}: latency, whole stack against the core natively"),
            "ms (log)",
            vec![
                ("stack p50".into(), pick(tool, &|r| ms(r.stack.p50))),
                ("stack p99".into(), pick(tool, &|r| ms(r.stack.p99))),
                ("native p50".into(), pick(tool, &|r| ms(r.native.p50))),
                ("native p99".into(), pick(tool, &|r| ms(r.native.p99))),
            ],
        ));
    }
    charts
}

/// One experiment's part of the results: its tables and its charts.
pub struct Section {
    /// Markdown tables.
    pub markdown: String,
    /// Charts to draw next to the document.
    pub charts: Vec<Chart>,
}

/// Runs one experiment (or `all`) on `stack`; a section per experiment.
pub async fn run_on(stack: &Stack, which: &str, sizes: Sizes) -> Result<Vec<Section>> {
    let all = which == "all";
    let mut out = Vec::new();
    // Throughput runs first, while the store is as fresh as the native side's
    // (the other experiments leave thousands of notes behind); it is shown last.
    let mut measured = None;
    if all || which == "throughput" {
        let point = Duration::from_millis(sizes.point_ms);
        let rows = throughput(stack, point).await?;
        measured = Some(Section { markdown: throughput_table(&rows, point), charts: throughput_charts(&rows) });
    }
    if all || which == "race" {
        let rows = race(stack, sizes.runs, sizes.edits).await?;
        let title = format!(
            "race: agent (think 20–80 ms, MCP) and person (think 5–40 ms, MCP read + REST write), {} edits each, seeds 1–{}",
            sizes.edits, sizes.runs
        );
        let names = ["(a) stale text, LWW", "(b) re-read + re-apply", "(c) resend old text"];
        out.push(Section { markdown: edit_table(&title, &rows), charts: edit_charts("race", "race", &names, &rows) });
    }
    if all || which == "fast" {
        let row = fast(stack, sizes.runs, sizes.fast_edits).await?;
        let title = format!("fast: zero think time, {} edits per editor, re-read + re-apply, seeds 1–{}", sizes.fast_edits, sizes.runs);
        let rows = [row];
        out.push(Section { markdown: edit_table(&title, &rows), charts: edit_charts("fast", "fast", &["zero think time, re-apply"], &rows) });
    }
    if all || which == "create" {
        let rows = create(stack, sizes.runs, sizes.intents).await?;
        out.push(Section { markdown: create_table(&rows), charts: vec![create_chart(&rows)] });
    }
    if all || which == "tabs" {
        let rows = tabs(stack, sizes.runs, sizes.edits).await?;
        let title = format!(
            "tabs: agent appends to the markdown tab, person sets cells of a sheet tab (sheet_set_range), {} edits each, seeds 1–{}; every conflict is false",
            sizes.edits, sizes.runs
        );
        let names = ["note-scope versions", "tab-scope versions"];
        out.push(Section { markdown: edit_table(&title, &rows), charts: edit_charts("tabs", "tabs", &names, &rows) });
    }
    if all || which == "sources" {
        let rows = sources(stack, sizes.runs, sizes.sessions).await?;
        out.push(Section { markdown: sources_table(&rows, sizes.sessions), charts: vec![sources_chart(&rows)] });
    }
    if all || which == "handles" {
        let rows = handles(stack, sizes.runs, sizes.trials).await?;
        out.push(Section { markdown: handles_table(&rows, sizes.trials), charts: vec![handles_chart(&rows)] });
    }
    if let Some(section) = measured {
        out.push(section);
    }
    if out.is_empty() {
        bail!("unknown experiment {which:?}: race, fast, create, tabs, sources, handles, throughput or all");
    }
    Ok(out)
}

/// `cairn bench <experiment>`: start the application, run, print; with
/// `out`, also write the document there and its charts in `charts/` beside it.
pub async fn run(manifest: PathBuf, which: &str, sizes: Sizes, out: Option<PathBuf>) -> Result<()> {
    let stack = Stack::start(manifest).await?;
    let result = run_on(&stack, which, sizes).await;
    stack.stop().await;
    let sections = result?;
    let dir = out.as_ref().and_then(|p| p.parent()).map(|d| if d.as_os_str().is_empty() { PathBuf::from(".") } else { d.to_path_buf() });
    let mut tables = String::new();
    for section in &sections {
        tables.push_str(&section.markdown);
        if let Some(dir) = &dir {
            tables.push('\n');
            for chart in &section.charts {
                chart.render(&dir.join("charts"))?;
                let _ = writeln!(tables, "![{}](charts/{})\n", chart.title, chart.file);
            }
        }
    }
    let doc = format!(
        "# Cairn: the seed posts' experiments\n\nWritten by `cairn bench {which}` ({} runs; {} edits per editor in race/tabs, {} in fast, {} create intents, \
         {} research sessions per seed in sources, {} trials per seed and K in handles, {:.1} s per point in throughput) on {} cores. \
         Every run is against the application in-process over HTTP, SQLite store.\n{tables}",
        sizes.runs,
        sizes.edits,
        sizes.fast_edits,
        sizes.intents,
        sizes.sessions,
        sizes.trials,
        sizes.point_ms as f64 / 1e3,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
    println!("{doc}");
    if let Some(path) = out {
        if let Some(dir) = &dir {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, &doc).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
