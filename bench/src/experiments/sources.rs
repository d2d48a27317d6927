//! `sources`: research sessions cite pages in seven spellings through
//! add_note_source with 20% of replies lost, under three key policies:
//! sources stored against pages cited.

use super::editor::*;
use super::{bars, med, median, num};
use crate::charts::Chart;
use crate::stack::Stack;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::fmt::Write as _;

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
    let (a, b) = (rng.next_u64(), rng.next_u64());
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
                let r = ed
                    .call(
                        "add_note_source",
                        json!({"note_id": ed.note, "expected_version": version,
                    "idempotency_key": key, "title": format!("Paper {p}"), "url": url}),
                    )
                    .await?;
                if r["isError"] != false {
                    if r["structuredContent"]["error"] != "version_conflict" {
                        bail!("add_note_source refused: {r}");
                    }
                    run.conflicts += 1;
                    version = ed.call("list_note_tabs", json!({"note_id": ed.note})).await?["structuredContent"]["version"].as_u64().context("version")?;
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
                row.policy.label(),
                r.seed,
                r.citations,
                r.calls,
                r.lost,
                r.replayed,
                r.already_attached,
                r.stored,
                r.distinct,
                r.duplicates(),
                per(r)
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
