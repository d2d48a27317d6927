//! `sections`: one big note edited side by side, and what a part costs
//! against the whole tab, through the whole stack (HTTP; MCP for agents,
//! REST for the person).
//!
//! **Side by side.** A note of about 270 KB (`# Part 001`…, 1 KB each). Two
//! agents and a person each own one section (a quarter, half and three
//! quarters of the way down; 24 KB each, just under the read cap) and, until
//! the deadline, each add one line at the end of it, with no think time,
//! three ways:
//!
//! - **section claims**: each claims its section first (agents with
//!   `claim_note`, the person over REST), then reads it (`section_id`) and
//!   writes it with `replace_section` and the `section_hash` read. After the
//!   deadline, one agent tries to write the person's section with the hash it
//!   just read: the claim must refuse it. A section that grew past the read
//!   cap is read again whole (a part comes without a hash).
//! - **replace_section alone**: the same, without claims.
//! - **note-level replace_text**: each reads the whole tab and writes it
//!   whole with the version read (the person saves with the people's `PUT`);
//!   a `version_conflict` is re-read and redone.
//!
//! Every writer touches only its own section, so every refusal is a false
//! conflict. At the end every line a writer was told landed must be in the
//! note exactly once.
//!
//! **Cost.** On a note of about 1 MB (950 sections), one agent times, one
//! call at a time: the outline's first page (as many sections as the read
//! cap holds), the outline
//! found by heading, a window of 40 lines, one section, a `replace_section`,
//! then a whole-tab read and a whole-tab `replace_text` of the same tab.

use crate::stack::{Client, Stack};
use anyhow::{Context, Result, bail};
use cairn_auth::Actor;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// How the writers write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Claim the section, then `replace_section`.
    Claims,
    /// `replace_section` alone.
    Sections,
    /// Read and write the whole tab.
    Whole,
}

impl Mode {
    /// Every mode, in table order.
    pub const EACH: [Mode; 3] = [Mode::Claims, Mode::Sections, Mode::Whole];

    /// Its name in the table.
    pub fn label(self) -> &'static str {
        match self {
            Mode::Claims => "section claims + replace_section",
            Mode::Sections => "replace_section alone",
            Mode::Whole => "note-level replace_text",
        }
    }
}

/// One writer's run.
#[derive(Clone, Debug)]
pub struct WriterRun {
    /// "agent 1", "agent 2", "person".
    pub name: String,
    /// Lines it was told landed.
    pub edits: usize,
    /// Writes refused (every one a false conflict: nobody else writes its section).
    pub conflicts: usize,
    /// Writes answered `busy` and sent again.
    pub busy: usize,
}

/// One mode's run.
#[derive(Clone, Debug)]
pub struct SideRow {
    /// How they wrote.
    pub mode: Mode,
    /// Bytes of the note before.
    pub note_bytes: usize,
    /// How long they wrote.
    pub seconds: f64,
    /// Each writer.
    pub writers: Vec<WriterRun>,
    /// Lines acknowledged but not in the note, or in it more than once.
    pub lost: usize,
    /// Claims mode: the intruding write was refused with `claim_conflict`.
    pub intruder_refused: Option<bool>,
}

impl SideRow {
    /// Lines landed, all writers.
    pub fn edits(&self) -> usize {
        self.writers.iter().map(|w| w.edits).sum()
    }

    /// Refused writes, all writers.
    pub fn conflicts(&self) -> usize {
        self.writers.iter().map(|w| w.conflicts).sum()
    }
}

/// How a writer reaches Cairn.
#[derive(Clone)]
enum Door {
    /// An agent: MCP `tools/call`.
    Mcp(String),
    /// A person: the REST API.
    Rest(String),
}

/// A writer's answer: whether it succeeded, and its body (structuredContent
/// for MCP).
struct Reply {
    ok: bool,
    body: Value,
}

impl Door {
    async fn tool(&self, c: &mut Client, tool: &str, args: Value, rest: (&str, String, Value)) -> Result<Reply> {
        match self {
            Door::Mcp(token) => {
                let r = c.call(token, tool, args).await?;
                Ok(Reply { ok: r["isError"] == false, body: r["structuredContent"].clone() })
            }
            Door::Rest(token) => {
                let (status, body) = c.send(rest.0, &rest.1, token, &rest.2).await?;
                Ok(Reply { ok: (200..300).contains(&status), body })
            }
        }
    }

    async fn claim(&self, c: &mut Client, note: &str, section: &str) -> Result<Reply> {
        let body = json!({"tab_id": "markdown", "section_id": section, "ttl_seconds": 3600});
        let mut args = body.clone();
        args["note_id"] = note.into();
        self.tool(c, "claim_note", args, ("POST", format!("/api/v1/notes/{note}/claims"), body)).await
    }

    /// A section, at most `max_chars` characters (else the default cap).
    async fn read_section(&self, c: &mut Client, note: &str, section: &str, max_chars: Option<u64>) -> Result<Reply> {
        let mut args = json!({"note_id": note, "tab_id": "markdown", "section_id": section});
        let mut path = format!("/api/v1/notes/{note}/tabs/markdown?section_id={section}");
        if let Some(m) = max_chars {
            args["max_chars"] = m.into();
            let _ = write!(path, "&max_chars={m}");
        }
        self.tool(c, "read_note_tab", args, ("GET", path, Value::Null)).await
    }

    async fn read_whole(&self, c: &mut Client, note: &str) -> Result<Reply> {
        let args = json!({"note_id": note, "tab_id": "markdown", "max_chars": 1_000_000});
        self.tool(c, "read_note_tab", args, ("GET", format!("/api/v1/notes/{note}/tabs/markdown"), Value::Null)).await
    }

    async fn edit(&self, c: &mut Client, note: &str, body: Value) -> Result<Reply> {
        let mut args = body.clone();
        args["note_id"] = note.into();
        args["tab_id"] = "markdown".into();
        self.tool(c, "edit_note_tab", args, ("POST", format!("/api/v1/notes/{note}/tabs/markdown/edit"), body)).await
    }

    async fn save_whole(&self, c: &mut Client, note: &str, version: &Value, text: String, key: &str) -> Result<Reply> {
        match self {
            Door::Mcp(_) => {
                let body = json!({"expected_version": version, "idempotency_key": key, "operation": "replace_text", "text": text});
                self.edit(c, note, body).await
            }
            Door::Rest(token) => {
                let body = json!({"expected_version": version, "idempotency_key": key, "text": text});
                let (status, body) = c.send("PUT", &format!("/api/v1/notes/{note}/tabs/markdown"), token, &body).await?;
                Ok(Reply { ok: status == 200, body })
            }
        }
    }
}

/// Section `k` of the note: its heading and about `bytes` bytes.
fn part(k: usize, bytes: usize) -> String {
    let mut s = format!("# Part {k:03}\n");
    let mut line = 0;
    while s.len() < bytes {
        let _ = writeln!(s, "p{k:03} l{line:03} lorem ipsum dolor sit amet, consectetur adipiscing elit");
        line += 1;
    }
    s
}

/// Bytes of a section a writer owns at the start: just under the default
/// read cap, so its first lines take it past (and it must be read whole).
const OWNED_BYTES: usize = 23_900;

/// A note of `sections` parts of `bytes` each (`owned` ones of
/// [`OWNED_BYTES`]), written by the person: its id and text.
async fn big_note(stack: &Stack, c: &mut Client, sections: usize, bytes: usize, owned: &[usize]) -> Result<(String, String)> {
    let note = stack.seed_notes(1)?.remove(0);
    let text: String = (1..=sections).map(|k| part(k, if owned.contains(&k) { OWNED_BYTES } else { bytes })).collect();
    let (status, body) = c.send("PUT", &format!("/api/v1/notes/{note}/tabs/markdown"), &stack.person, &json!({"expected_version": 1, "text": text})).await?;
    if status != 200 {
        bail!("filling the note: {status} {body}");
    }
    Ok((note, text))
}

/// One writer until `deadline`: its counts and the lines it was told landed.
async fn writer(
    stack_addr: std::net::SocketAddr,
    door: Door,
    note: String,
    mode: Mode,
    n: usize,
    section: usize,
    deadline: Instant,
) -> Result<(WriterRun, Vec<String>)> {
    let mut c = Client::connect(stack_addr).await?;
    let id = format!("part-{section:03}");
    let heading = format!("# Part {section:03}\n");
    if mode == Mode::Claims {
        let r = door.claim(&mut c, &note, &id).await?;
        if !r.ok {
            bail!("writer {n} could not claim {id}: {}", r.body);
        }
    }
    let mut run = WriterRun { name: if n == 2 { "person".into() } else { format!("agent {}", n + 1) }, edits: 0, conflicts: 0, busy: 0 };
    let mut landed = Vec::new();
    let mut attempt = 0usize;
    while Instant::now() < deadline {
        let line = format!("w{n} e{:05} a line writer {n} added", landed.len());
        let key = format!("side-{mode:?}-w{n}-e{}-t{attempt}", landed.len());
        attempt += 1;
        let reply = match mode {
            Mode::Claims | Mode::Sections => {
                let mut s = door.read_section(&mut c, &note, &id, None).await?;
                if s.ok && s.body["truncated"] == true {
                    // Longer than the read cap: no hash comes with a part, so read it whole.
                    let chars = s.body["chars"].as_u64().context("section chars")?;
                    s = door.read_section(&mut c, &note, &id, Some(chars)).await?;
                }
                if !s.ok || !s.body["section_hash"].is_string() {
                    bail!("writer {n} could not read {id} whole: {}", s.body);
                }
                let text = s.body["text"].as_str().context("section text")?;
                let body = json!({"expected_version": s.body["version"], "idempotency_key": key, "operation": "replace_section",
                    "section_id": id, "expected_section_hash": s.body["section_hash"], "text": format!("{text}{line}\n")});
                door.edit(&mut c, &note, body).await?
            }
            Mode::Whole => {
                let r = door.read_whole(&mut c, &note).await?;
                if !r.ok || r.body["truncated"] == true {
                    bail!("writer {n} could not read the whole tab: {}", r.body);
                }
                let text = r.body["text"].as_str().context("text")?;
                let start = text.find(&heading).context("the writer's heading")?;
                let end = text[start + heading.len()..].find("\n# Part ").map_or(text.len(), |i| start + heading.len() + i + 1);
                let next = format!("{}{line}\n{}", &text[..end], &text[end..]);
                door.save_whole(&mut c, &note, &r.body["version"], next, &key).await?
            }
        };
        if reply.ok {
            landed.push(line);
            run.edits += 1;
            attempt = 0;
        } else if reply.body["error"] == "busy" {
            run.busy += 1;
        } else if reply.body["error"] == "version_conflict" || reply.body["error"] == "content_hash_mismatch" {
            run.conflicts += 1;
        } else {
            bail!("writer {n} ({}) refused: {}", mode.label(), reply.body);
        }
    }
    Ok((run, landed))
}

/// Every mode for `seconds` each on a fresh note of about 270 KB.
pub async fn side_by_side(stack: &Stack, seconds: f64) -> Result<Vec<SideRow>> {
    let mut rows = Vec::new();
    let doors = [
        Door::Mcp(stack.mint(Actor::Agent, "side-agent-1")?),
        Door::Mcp(stack.mint(Actor::Agent, "side-agent-2")?),
        Door::Rest(stack.mint(Actor::Human, "side-person")?),
    ];
    let owned = [50usize, 100, 150];
    for mode in Mode::EACH {
        let mut c = Client::connect(stack.running.addr).await?;
        let (note, text) = big_note(stack, &mut c, 200, 1_000, &owned).await?;
        let deadline = Instant::now() + Duration::from_secs_f64(seconds);
        let started = Instant::now();
        let tasks: Vec<_> = doors
            .iter()
            .enumerate()
            .map(|(n, door)| tokio::spawn(writer(stack.running.addr, door.clone(), note.clone(), mode, n, owned[n], deadline)))
            .collect();
        let mut writers = Vec::new();
        let mut landed = Vec::new();
        for t in tasks {
            let (run, lines) = t.await??;
            writers.push(run);
            landed.extend(lines);
        }
        let seconds = started.elapsed().as_secs_f64();
        // A fresh connection: the host closes one left idle while the writers ran.
        let mut c = Client::connect(stack.running.addr).await?;
        let intruder_refused = if mode == Mode::Claims {
            // An agent writes the person's section with the hash it just read.
            let id = format!("part-{:03}", owned[2]);
            let s = doors[0].read_section(&mut c, &note, &id, Some(1_000_000)).await?;
            let body = json!({"expected_version": s.body["version"], "idempotency_key": "intruder", "operation": "replace_section",
                "section_id": id, "expected_section_hash": s.body["section_hash"], "text": format!("# Part {:03}\ntaken over\n", owned[2])});
            let r = doors[0].edit(&mut c, &note, body).await?;
            if r.ok || r.body["error"] != "claim_conflict" {
                eprintln!("the intruder was answered: {}", r.body);
            }
            Some(!r.ok && r.body["error"] == "claim_conflict")
        } else {
            None
        };
        let now = Door::Rest(stack.person.clone()).read_whole(&mut c, &note).await?;
        let now = now.body["text"].as_str().context("the note at the end")?.to_string();
        let mut count: HashMap<&str, usize> = HashMap::new();
        for l in now.lines() {
            *count.entry(l).or_default() += 1;
        }
        let lost = landed.iter().filter(|l| count.get(l.as_str()).copied() != Some(1)).count();
        if lost == 0 && now.lines().count() != text.lines().count() + landed.len() {
            bail!("{}: {} lines + {} landed, but {} now", mode.label(), text.lines().count(), landed.len(), now.lines().count());
        }
        rows.push(SideRow { mode, note_bytes: text.len(), seconds, writers, lost, intruder_refused });
    }
    Ok(rows)
}

/// One operation of the cost table.
#[derive(Clone, Debug)]
pub struct CostRow {
    /// What was called.
    pub op: &'static str,
    /// Median milliseconds per call.
    pub median_ms: f64,
    /// Bytes of the answer (structuredContent JSON), median.
    pub answer_bytes: usize,
    /// Bytes of the arguments sent.
    pub sent_bytes: usize,
}

/// `reps` of each operation on a note of about 1 MB, one agent over MCP.
pub async fn cost(stack: &Stack, reps: usize) -> Result<Vec<CostRow>> {
    let mut c = Client::connect(stack.running.addr).await?;
    let (note, _) = big_note(stack, &mut c, 950, 1_000, &[]).await?;
    let token = stack.agent.clone();
    let mut rows = Vec::new();
    let mut key = 0u64;
    type Build = Box<dyn Fn(&Value, u64) -> (&'static str, Value)>;
    let section = "part-475";
    let ops: Vec<(&'static str, Build)> = vec![
        ("outline, first page", Box::new(|_, _| ("read_note_outline", json!({})))),
        ("outline found by heading", Box::new(|_, _| ("read_note_outline", json!({"heading": "Part 475"})))),
        ("window of 40 lines", Box::new(|_, _| ("read_note_tab", json!({"tab_id": "markdown", "start_line": 9_000, "max_lines": 40})))),
        ("one section", Box::new(move |_, _| ("read_note_tab", json!({"tab_id": "markdown", "section_id": section})))),
        (
            "replace_section",
            Box::new(move |s, k| {
                let text = format!("{}k{k}\n", s["text"].as_str().unwrap_or(""));
                (
                    "edit_note_tab",
                    json!({"tab_id": "markdown", "expected_version": s["version"], "idempotency_key": format!("cost-s-{k}"),
                "operation": "replace_section", "section_id": section, "expected_section_hash": s["section_hash"], "text": text}),
                )
            }),
        ),
        ("whole-tab read", Box::new(|_, _| ("read_note_tab", json!({"tab_id": "markdown", "max_chars": 1_000_000})))),
        (
            "whole-tab replace_text",
            Box::new(|w, k| {
                let text = format!("{}k{k}\n", w["text"].as_str().unwrap_or(""));
                (
                    "edit_note_tab",
                    json!({"tab_id": "markdown", "expected_version": w["version"], "idempotency_key": format!("cost-w-{k}"),
                "operation": "replace_text", "text": text}),
                )
            }),
        ),
    ];
    for (name, build) in &ops {
        let mut times = Vec::new();
        let mut answers = Vec::new();
        let mut sent = 0;
        for _ in 0..reps {
            key += 1;
            // What a write needs first (untimed): the section, or the whole tab.
            let before = match *name {
                "replace_section" => {
                    c.call(&token, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "section_id": section})).await?["structuredContent"].clone()
                }
                "whole-tab replace_text" => {
                    c.call(&token, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "max_chars": 1_000_000})).await?["structuredContent"].clone()
                }
                _ => Value::Null,
            };
            let (tool, mut args) = build(&before, key);
            args["note_id"] = note.clone().into();
            sent = args.to_string().len();
            let t = Instant::now();
            let r = c.call(&token, tool, args).await?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
            if r["isError"] != false {
                bail!("{name}: refused: {}", r["structuredContent"]);
            }
            answers.push(r["structuredContent"].to_string().len());
        }
        times.sort_by(f64::total_cmp);
        answers.sort_unstable();
        rows.push(CostRow { op: name, median_ms: times[times.len() / 2], answer_bytes: answers[answers.len() / 2], sent_bytes: sent });
    }
    Ok(rows)
}

/// The side-by-side table.
pub fn side_table(rows: &[SideRow]) -> String {
    let mut out = String::from(
        "\n## sections: two agents and a person editing three sections of one 270 KB note side by side\n\n\
         Through the whole stack (agents over MCP, the person over REST), no think time; each writer adds one line at the end \
         of its own section (24 KB at the start) until the deadline. Every refusal is a false conflict: nobody writes another's section.\n\n\
         | mode | seconds | writer | lines landed | false conflicts | busy, resent | lost or doubled (all writers) | intruder refused |\n\
         |---|---:|---|---:|---:|---:|---:|---|\n",
    );
    for r in rows {
        for (i, w) in r.writers.iter().enumerate() {
            let (lost, intruder) = if i == 0 {
                (r.lost.to_string(), r.intruder_refused.map_or("—".to_string(), |b| if b { "yes".into() } else { "NO".into() }))
            } else {
                (String::new(), String::new())
            };
            let _ = writeln!(out, "| {} | {:.1} | {} | {} | {} | {} | {lost} | {intruder} |", r.mode.label(), r.seconds, w.name, w.edits, w.conflicts, w.busy);
        }
    }
    out
}

/// The cost table, with each part's figures ÷ the whole tab's.
pub fn cost_table(rows: &[CostRow], reps: usize) -> String {
    let mut out = format!(
        "\n## sections: what a part of a 1 MB tab costs against the whole tab\n\n\
         Through the whole stack (MCP, one agent, one call at a time), a note of 950 sections of about 1 KB; the median of {reps} calls \
         each. Reads ÷ the whole-tab read, the section edit ÷ the whole-tab replace_text.\n\n\
         | operation | median ms | bytes answered | bytes sent | time ÷ whole | bytes ÷ whole |\n|---|---:|---:|---:|---:|---:|\n"
    );
    let find = |op: &str| rows.iter().find(|r| r.op == op);
    for r in rows {
        let whole = if r.op.contains("replace") { find("whole-tab replace_text") } else { find("whole-tab read") };
        let (t, b) = match whole {
            Some(w) if !std::ptr::eq(w, r) => {
                let bytes = |x: &CostRow| (x.answer_bytes + x.sent_bytes) as f64;
                (format!("{:.3}", r.median_ms / w.median_ms), format!("{:.4}", bytes(r) / bytes(w)))
            }
            _ => ("1".into(), "1".into()),
        };
        let _ = writeln!(out, "| {} | {:.2} | {} | {} | {t} | {b} |", r.op, r.median_ms, r.answer_bytes, r.sent_bytes);
    }
    out
}

/// Lines landed and false conflicts per mode (all writers).
pub fn side_chart(rows: &[SideRow]) -> crate::charts::Chart {
    let labels: Vec<&str> = rows.iter().map(|r| r.mode.label()).collect();
    super::bars(
        "sections-side.svg",
        "sections: three writers, three sections of one 270 KB note",
        "how they write",
        "count",
        &labels,
        vec![
            ("lines landed", rows.iter().map(|r| r.edits() as f64).collect()),
            ("false conflicts", rows.iter().map(|r| r.conflicts() as f64).collect()),
            ("lost or doubled", rows.iter().map(|r| r.lost as f64).collect()),
        ],
    )
}

/// Median time and bytes per operation on the 1 MB tab (log scale).
pub fn cost_chart(rows: &[CostRow]) -> crate::charts::Chart {
    crate::charts::Chart {
        file: "sections-cost.svg".into(),
        title: "sections: a part of a 1 MB tab against the whole tab".into(),
        x: "operation".into(),
        y: "median (log)".into(),
        kind: crate::charts::Kind::LogLines,
        categories: rows.iter().map(|r| r.op.to_string()).collect(),
        series: vec![
            ("milliseconds".into(), rows.iter().map(|r| r.median_ms.max(1e-3)).collect()),
            ("kilobytes answered + sent".into(), rows.iter().map(|r| ((r.answer_bytes + r.sent_bytes) as f64 / 1e3).max(1e-3)).collect()),
        ],
    }
}
