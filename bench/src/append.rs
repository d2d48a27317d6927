//! The workload agents really run, from the seed posts: each client owns a
//! note and loops `read_note_tab` → `edit_note_tab` (`replace_text` = the
//! text it read plus one new line, the version it read, a fresh key), so
//! notes grow as they do in real use. Every client checks at the end that
//! each line it was told was written is in its note exactly once.
//!
//! The same loop drives any [`Caller`]: MCP over HTTP to one host or many
//! (spread round-robin), the Python peer, a tool alone, or the core natively.

use crate::measure::{Series, summarize};
use crate::stack::Caller;
use anyhow::{Result, bail};
use serde_json::json;
use std::time::{Duration, Instant};

/// What one run of the append workload measured.
#[derive(Clone, Debug)]
pub struct AppendRun {
    /// Edit pairs (read + write) per second, p50 and p99 of a pair.
    pub pairs: Series,
    /// Lines acknowledged over every client.
    pub acked: usize,
    /// Acknowledged lines missing (or doubled) at the end: must be 0.
    pub lost: usize,
    /// Version conflicts (none expected: each client owns its note).
    pub conflicts: usize,
    /// Writes refused `partial_base` (a cut read written back whole), each
    /// redone on a whole read: Cairn's read cap at work, no line lost.
    pub partial: usize,
    /// Bytes of the largest note at the end.
    pub largest_note: usize,
}

/// The whole markdown tab, for the final check: a read cut by Cairn's read
/// cap (`truncated`, past 24,000 characters by default) is asked again with
/// `max_chars` large enough for all of it. The peers never cut a read (and
/// refuse the extra argument), so they are read once.
async fn read_whole(c: &mut impl Caller, note: &str) -> Result<serde_json::Value> {
    let mut read = c.call("read_note_tab", json!({"note_id": note, "tab_id": "markdown"})).await?;
    if read["structuredContent"]["truncated"] == true {
        read = c.call("read_note_tab", json!({"note_id": note, "tab_id": "markdown", "max_chars": 1_000_000})).await?;
    }
    if read["isError"] != false || read["structuredContent"]["truncated"] == true {
        bail!("read refused or cut: {read}");
    }
    Ok(read)
}

/// One client, the seed workload's naive loop: read the tab as any agent
/// does (Cairn cuts a read past its read cap), write back the text it read
/// plus one line `{tag}-{i}` with `replace_text` and the version it read,
/// until `deadline`. A write based on a cut read is refused `partial_base`
/// (it would drop the rest of the tab); the client then does what the
/// refusal says, reads the whole tab (`max_chars` = its `read_max_chars`),
/// and writes again. Returns the latency of each acknowledged pair, the
/// lines acknowledged, the conflicts and the `partial_base` refusals.
pub async fn append_client(c: &mut impl Caller, note: &str, tag: &str, deadline: Instant) -> Result<ClientRun> {
    let mut run = ClientRun::default();
    let mut i = 0u64;
    while Instant::now() < deadline {
        let t = Instant::now();
        let mut read = c.call("read_note_tab", json!({"note_id": note, "tab_id": "markdown"})).await?;
        let line = format!("{tag}-{i}");
        for attempt in 0..2 {
            let s = &read["structuredContent"];
            let text = s["text"].as_str().unwrap_or_default();
            let next = if text.is_empty() { line.clone() } else { format!("{text}\n{line}") };
            let w = c
                .call(
                    "edit_note_tab",
                    json!({"note_id": note, "tab_id": "markdown", "expected_version": s["version"],
                    "idempotency_key": format!("{tag}-{i}-{attempt}"), "operation": "replace_text", "text": next}),
                )
                .await?;
            match (w["isError"].as_bool(), w["structuredContent"]["error"].as_str()) {
                (Some(false), _) => {
                    run.acked.push(line.clone());
                    run.latencies.push(t.elapsed());
                }
                (_, Some("version_conflict")) => run.conflicts += 1,
                (_, Some("partial_base")) if attempt == 0 => {
                    run.partial += 1;
                    let need = w["structuredContent"]["read_max_chars"].clone();
                    read = c.call("read_note_tab", json!({"note_id": note, "tab_id": "markdown", "max_chars": need})).await?;
                    continue;
                }
                _ => bail!("edit refused: {w}"),
            }
            break;
        }
        i += 1;
    }
    Ok(run)
}

/// What one client of the append workload did.
#[derive(Debug, Default)]
pub struct ClientRun {
    /// Latency of each acknowledged read-and-write pair.
    pub latencies: Vec<Duration>,
    /// The lines its acknowledged writes added.
    pub acked: Vec<String>,
    /// Writes refused `version_conflict`.
    pub conflicts: usize,
    /// Writes refused `partial_base` (based on a cut read), then redone on a whole read.
    pub partial: usize,
}

/// The final check of one note: every acknowledged line exactly once.
/// Returns the lines missing or doubled, and the note's size.
pub async fn verify(c: &mut impl Caller, note: &str, acked: &[String]) -> Result<(usize, usize)> {
    let read = read_whole(c, note).await?;
    let text = read["structuredContent"]["text"].as_str().unwrap_or_default().to_string();
    let mut counts = std::collections::HashMap::new();
    for l in text.lines() {
        *counts.entry(l).or_insert(0usize) += 1;
    }
    let bad = acked.iter().filter(|l| counts.get(l.as_str()) != Some(&1)).count();
    Ok((bad, text.len()))
}

/// One client's whole outcome: what it did, and the final check of its note.
#[derive(Debug)]
pub struct Outcome {
    /// What the client did.
    pub run: ClientRun,
    /// Acknowledged lines missing or doubled at the end: must be 0.
    pub lost: usize,
    /// Bytes of its note at the end.
    pub size: usize,
}

/// One client on `note` until `deadline`, then the check of its note.
pub async fn append_one(c: &mut impl Caller, note: &str, tag: &str, deadline: Instant) -> Result<Outcome> {
    let run = append_client(c, note, tag, deadline).await?;
    let (lost, size) = verify(c, note, &run.acked).await?;
    Ok(Outcome { run, lost, size })
}

/// Sums the clients' outcomes into one run.
pub fn combine(name: &str, outcomes: Vec<Outcome>, elapsed: Duration) -> AppendRun {
    let mut lat = Vec::new();
    let (mut acked, mut lost, mut conflicts, mut partial, mut largest) = (0, 0, 0, 0, 0);
    for o in outcomes {
        acked += o.run.acked.len();
        lost += o.lost;
        conflicts += o.run.conflicts;
        partial += o.run.partial;
        largest = largest.max(o.size);
        lat.extend(o.run.latencies);
    }
    AppendRun { pairs: summarize(name, lat, elapsed), acked, lost, conflicts, partial, largest_note: largest }
}
