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
    /// Bytes of the largest note at the end.
    pub largest_note: usize,
}

/// The whole markdown tab, as a careful agent reads it: a read cut by
/// Cairn's read cap (`truncated`, past 24,000 characters by default) is
/// asked again with `max_chars` large enough for all of it, since writing
/// back a cut text with `replace_text` would drop the rest. The peers never
/// cut a read (and refuse the extra argument), so they are read once.
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

/// One client: append lines `{tag}-{i}` until `deadline`; the latency of each
/// pair, the lines acknowledged, the conflicts.
pub async fn append_client(c: &mut impl Caller, note: &str, tag: &str, deadline: Instant) -> Result<(Vec<Duration>, Vec<String>, usize)> {
    let mut lat = Vec::new();
    let mut acked = Vec::new();
    let mut conflicts = 0;
    let mut i = 0u64;
    while Instant::now() < deadline {
        let t = Instant::now();
        let read = read_whole(c, note).await?;
        let s = &read["structuredContent"];
        let text = s["text"].as_str().unwrap_or_default();
        let line = format!("{tag}-{i}");
        let next = if text.is_empty() { line.clone() } else { format!("{text}\n{line}") };
        let w = c
            .call("edit_note_tab", json!({"note_id": note, "tab_id": "markdown", "expected_version": s["version"],
                "idempotency_key": format!("{tag}-{i}"), "operation": "replace_text", "text": next}))
            .await?;
        match (w["isError"].as_bool(), w["structuredContent"]["error"].as_str()) {
            (Some(false), _) => {
                acked.push(line);
                lat.push(t.elapsed());
            }
            (_, Some("version_conflict")) => conflicts += 1,
            _ => bail!("edit refused: {w}"),
        }
        i += 1;
    }
    Ok((lat, acked, conflicts))
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

/// Sums the clients' outcomes into one run.
pub fn combine(name: &str, outcomes: Vec<(Vec<Duration>, usize, usize, usize, usize)>, elapsed: Duration) -> AppendRun {
    let mut lat = Vec::new();
    let (mut acked, mut lost, mut conflicts, mut largest) = (0, 0, 0, 0);
    for (l, a, bad, c, size) in outcomes {
        lat.extend(l);
        acked += a;
        lost += bad;
        conflicts += c;
        largest = largest.max(size);
    }
    AppendRun { pairs: summarize(name, lat, elapsed), acked, lost, conflicts, largest_note: largest }
}
