//! `cairn-bench perf --only search`: full-text search latency through the
//! whole stack (a `cairn up` process on SQLite, `search_notes` over MCP) and
//! the core natively, at each corpus size, and what the index costs an edit
//! (the same edits natively with and without indexing, as a ratio).
//!
//! The corpus: notes of about 2 KB each, words drawn from a 5,000-word
//! vocabulary with a Zipf-like (log-uniform rank) distribution, so a few
//! words are in nearly every note and most are rare, as in real text.
//! Queries mix one common word, one mid-frequency word, one rare word, two
//! words, a phrase taken from a note and a four-letter prefix.

use crate::hosts;
use crate::stack::{Caller, Client, CoreCaller, McpCaller, TENANT, agent, native_store, person};
use anyhow::{Context, Result, bail};
use cairn_kv::Store;
use serde_json::json;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const VOCABULARY: usize = 5_000;
const NOTE_BYTES: usize = 2_000;
const SYLLABLES: [&str; 16] = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "vo", "de", "po", "ga", "fi", "mu", "ze", "bo", "hu"];

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A vocabulary rank, log-uniform: rank r comes about 1/r as often.
    fn rank(&mut self) -> usize {
        ((VOCABULARY as f64).powf(self.unit()) as usize).clamp(1, VOCABULARY) - 1
    }
}

/// The word of a rank: syllables from its digits in base 16, three or more.
fn word(rank: usize) -> String {
    let mut n = rank + 16 * 16;
    let mut w = String::new();
    while n > 0 {
        w.push_str(SYLLABLES[n % 16]);
        n /= 16;
    }
    w
}

/// A note's text: about [`NOTE_BYTES`] of words in sentences.
fn text(rng: &mut Rng) -> String {
    let mut t = String::with_capacity(NOTE_BYTES + 64);
    let mut in_sentence = 0;
    while t.len() < NOTE_BYTES {
        let w = word(rng.rank());
        if in_sentence == 0 {
            let mut c = w.chars();
            t.extend(c.next().map(|f| f.to_ascii_uppercase()));
            t.push_str(c.as_str());
        } else {
            t.push_str(&w);
        }
        in_sentence += 1;
        if in_sentence > 8 + (rng.next() % 8) as usize {
            t.push_str(". ");
            in_sentence = 0;
        } else {
            t.push(' ');
        }
    }
    t
}

/// Fills a fresh SQLite store in `dir` with `n` notes natively; their ids.
fn corpus(dir: &Path, n: usize) -> Result<(Arc<dyn Store>, Vec<String>)> {
    let kv = native_store(dir)?;
    let mut env = crate::stack::bench_env(5);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let title = format!("{} {} {i}", word(rng.rank()), word(rng.rank()));
        let r = cairn_notes::rest::create_note(kv.as_ref(), &mut env, &person(), json!({"title": title, "approved_for_agents": true}))
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        if r.status != 201 {
            bail!("create_note: {}", r.body);
        }
        let id = r.body["note_id"].as_str().context("note_id")?.to_string();
        let w = cairn_notes::call_tool_value(
            kv.as_ref(),
            &mut env,
            &agent(),
            "edit_note_tab",
            json!({"note_id": id, "tab_id": "markdown",
            "expected_version": 1, "idempotency_key": "fill", "operation": "replace_text", "text": text(&mut rng)}),
        )
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        if w["isError"] != false {
            bail!("filling a note: {w}");
        }
        ids.push(id);
    }
    Ok((kv, ids))
}

/// The query mix: (kind, query), `per_kind` of each.
fn queries(per_kind: usize) -> Vec<(&'static str, String)> {
    let mut rng = Rng(0x1234_5678);
    let mut out = Vec::new();
    for i in 0..per_kind {
        out.push(("common word", word(i % 5)));
        out.push(("mid word", word(80 + i % 40)));
        out.push(("rare word", word(2_000 + (rng.next() as usize) % 2_000)));
        out.push(("two words", format!("{} {}", word(i % 20), word(100 + i % 50))));
        out.push(("phrase", format!("\"{} {}\"", word(rng.rank()), word(rng.rank()))));
        out.push(("prefix", format!("{}*", &word(300 + i % 200)[..4])));
    }
    out
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Merges every dirty note of the bench tenant (what a host does in the background).
fn merge_all(kv: &Arc<dyn Store>) -> Result<()> {
    let mut env = crate::stack::bench_env(3);
    let r = cairn_notes::search::merge(kv.as_ref(), &mut env, TENANT, usize::MAX).map_err(|e| anyhow::anyhow!("{e}"))?;
    if r.still_dirty != 0 {
        bail!("the merge left {} notes dirty: {r:?}", r.still_dirty);
    }
    Ok(())
}

/// Runs every query once through `c`; latencies by kind, and hits seen.
async fn run_queries(c: &mut impl Caller, qs: &[(&'static str, String)]) -> Result<(Vec<(&'static str, Vec<Duration>)>, usize)> {
    let mut by: Vec<(&'static str, Vec<Duration>)> = Vec::new();
    let mut hits = 0;
    for (kind, q) in qs {
        let started = Instant::now();
        let r = c.call("search_notes", json!({"query": q, "limit": 10})).await?;
        let took = started.elapsed();
        if r["isError"] != false {
            bail!("search {q:?} refused: {}", r["structuredContent"]);
        }
        hits += r["structuredContent"]["hits"].as_array().map_or(0, Vec::len);
        match by.iter_mut().find(|(k, _)| k == kind) {
            Some((_, v)) => v.push(took),
            None => by.push((kind, vec![took])),
        }
    }
    Ok((by, hits))
}

/// Edits that change one sentence of random notes (natively): µs each.
fn edits(kv: &Arc<dyn Store>, ids: &[String], n: usize, seed: u64) -> Result<Vec<Duration>> {
    let mut env = crate::stack::bench_env(seed);
    let mut rng = Rng(seed | 1);
    let who = agent();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let id = &ids[(rng.next() as usize) % ids.len()];
        let read = cairn_notes::call_tool_value(kv.as_ref(), &mut env, &who, "read_note_tab", json!({"note_id": id, "tab_id": "markdown"}))
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let text = read["structuredContent"]["text"].as_str().context("text")?;
        let fresh: Vec<String> = (0..10).map(|_| word(rng.rank())).collect();
        let cut = text.find(". ").map_or(0, |i| i + 2);
        let next = format!("{}. {}", fresh.join(" "), &text[cut..]);
        let started = Instant::now();
        let w = cairn_notes::call_tool_value(
            kv.as_ref(),
            &mut env,
            &who,
            "edit_note_tab",
            json!({"note_id": id, "tab_id": "markdown",
            "expected_version": read["structuredContent"]["version"], "idempotency_key": format!("e{seed}-{i}"),
            "operation": "replace_text", "text": next}),
        )
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        out.push(started.elapsed());
        if w["isError"] != false {
            bail!("edit refused: {w}");
        }
    }
    Ok(out)
}

/// The search section of the performance report.
pub async fn search_section(scratch: &Path, manifest: &Path, sizes: &[usize], per_kind: usize, out: &mut String) -> Result<()> {
    let _ = write!(
        out,
        "\n## Search: `search_notes` latency and what the index costs an edit\n\n\
         Notes of about {NOTE_BYTES} bytes of words from a {VOCABULARY}-word vocabulary (Zipf-like), on SQLite. \
         Queries: {per_kind} each of one common word, one mid-frequency word, one rare word, two words, a phrase and a \
         four-letter prefix, one client, 10 hits per call. Whole stack: a `cairn up` process, `tools/call` over MCP \
         (token, router, tool component, store); natively: the same core and store in the benchmark's process.\n\n\
         | notes | query | whole stack p50 ms | p99 ms | natively p50 ms | p99 ms |\n|---:|---|---:|---:|---:|---:|\n"
    );
    let qs = queries(per_kind);
    let mut edit_rows = String::new();
    for &n in sizes {
        eprintln!("perf: search, filling {n} notes");
        let dir = scratch.join(format!("search-{n}"));
        let _ = std::fs::remove_dir_all(&dir);
        let filled = Instant::now();
        let (kv, ids) = corpus(&dir, n)?;
        let fill_s = filled.elapsed().as_secs_f64();
        let merged = Instant::now();
        merge_all(&kv)?;
        let merge_s = merged.elapsed().as_secs_f64();
        // What the index costs an edit: the same kind of edits with and
        // without it; with it, the merge that indexes them is timed too and
        // shared out over them (it runs beside the writes on a host, not in them).
        // In alternating blocks, so neither side gets the warmer cache or
        // the emptier write-ahead log; each merge is timed after its block.
        const BLOCK: usize = 150;
        const BLOCKS: usize = 4;
        let (mut with, mut without, mut merging) = (Vec::new(), Vec::new(), Duration::ZERO);
        for b in 0..BLOCKS as u64 {
            with.extend(edits(&kv, &ids, BLOCK, 21 + 2 * b)?);
            let started = Instant::now();
            merge_all(&kv)?;
            merging += started.elapsed();
            cairn_notes::search::measure_without_index(true);
            let plain = edits(&kv, &ids, BLOCK, 22 + 2 * b);
            cairn_notes::search::measure_without_index(false);
            without.extend(plain?);
        }
        let merge_per_edit = merging / (BLOCK * BLOCKS) as u32;
        let mean = |v: &[Duration]| v.iter().sum::<Duration>() / v.len().max(1) as u32;
        let (w_mean, wo_mean) = (mean(&with), mean(&without));
        let (w50, wo50) = (pct(&mut with, 0.5), pct(&mut without, 0.5));
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let _ = writeln!(
            edit_rows,
            "| {n} | {:.0} | {:.0} | **{:.2}×** | {:.0} | {:.0} | {:.0} | **{:.2}×** | {fill_s:.0} s + {merge_s:.1} s |",
            us(w50),
            us(wo50),
            us(w50) / us(wo50).max(1e-3),
            us(w_mean),
            us(merge_per_edit),
            us(wo_mean),
            (us(w_mean) + us(merge_per_edit)) / us(wo_mean).max(1e-3),
        );
        // The edits without the index left words unindexed: rebuild, and prove it.
        let fixed = cairn_notes::search::reindex(kv.as_ref(), TENANT).map_err(|e| anyhow::anyhow!("{e}"))?;
        let after = cairn_notes::search::check(kv.as_ref(), TENANT).map_err(|e| anyhow::anyhow!("{e}"))?;
        if after.missing != 0 {
            bail!("after reindex the index still lacks {} words (found {} missing before)", after.missing, fixed.missing);
        }
        // Queries natively, then on the same store served by a host.
        let mut core = CoreCaller { kv: kv.clone(), env: crate::stack::bench_env(9), who: agent() };
        run_queries(&mut core, &qs[..qs.len().min(12)]).await?;
        let (native, native_hits) = run_queries(&mut core, &qs).await?;
        drop(core);
        kv.close()?;
        drop(kv);
        let token = hosts::token(&dir, "bench-agent")?;
        let host = hosts::start(manifest, &dir, &[], &[])?;
        let mut mcp = McpCaller { client: Client::connect(host.addr).await?, token };
        run_queries(&mut mcp, &qs[..qs.len().min(12)]).await?;
        let (stack, stack_hits) = run_queries(&mut mcp, &qs).await?;
        drop(mcp);
        drop(host);
        if stack_hits != native_hits {
            bail!("the whole stack found {stack_hits} hits and the core natively {native_hits}: they must agree");
        }
        let mut all_stack: Vec<Duration> = Vec::new();
        let mut all_native: Vec<Duration> = Vec::new();
        for ((kind, mut s), (_, mut nat)) in stack.into_iter().zip(native) {
            all_stack.extend(&s);
            all_native.extend(&nat);
            let _ = writeln!(
                out,
                "| {n} | {kind} | {:.2} | {:.2} | {:.2} | {:.2} |",
                ms(pct(&mut s, 0.5)),
                ms(pct(&mut s, 0.99)),
                ms(pct(&mut nat, 0.5)),
                ms(pct(&mut nat, 0.99))
            );
        }
        let _ = writeln!(
            out,
            "| {n} | **all** | **{:.2}** | **{:.2}** | {:.2} | {:.2} |",
            ms(pct(&mut all_stack, 0.5)),
            ms(pct(&mut all_stack, 0.99)),
            ms(pct(&mut all_native, 0.5)),
            ms(pct(&mut all_native, 0.99))
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
    let _ = write!(
        out,
        "\nWhat the index costs an edit (core natively on SQLite, where no HTTP or instance cost hides it): an agent \
         rewrites one sentence (ten new words) of a random note, 600 edits each way in alternating blocks of 150. On the edit's own path the index \
         costs one dirty marker; the merge that brings the postings up to the edits runs beside them (the host's \
         background merger) and is timed here once the edits are done, and shared out over them. The whole stack adds \
         the same absolute cost to an edit that takes milliseconds.\n\n\
         | notes | edit p50 with the index µs | without µs | ratio | edit mean with µs | + merge per edit µs | without, mean µs | ratio with the merge | filling the corpus (create + 2 KB write each) + merging it |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|\n{edit_rows}"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_has_common_and_rare_words_and_notes_of_about_2_kb() {
        let mut rng = Rng(7);
        let t = text(&mut rng);
        assert!((NOTE_BYTES..NOTE_BYTES + 64).contains(&t.len()));
        let common = t.matches(&word(0)).count();
        assert!(common >= 3, "the commonest word is frequent: {common}");
        assert_ne!(word(1), word(2));
        assert!(word(VOCABULARY - 1).len() >= 6);
    }

    #[test]
    fn a_percentile_is_one_of_the_samples() {
        let mut v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(pct(&mut v, 0.5), Duration::from_millis(51));
        assert_eq!(pct(&mut v, 0.99), Duration::from_millis(100));
    }

    #[test]
    fn the_query_mix_has_every_kind() {
        let qs = queries(2);
        assert_eq!(qs.len(), 12);
        assert!(qs.iter().any(|(_, q)| q.ends_with('*')) && qs.iter().any(|(_, q)| q.starts_with('"')));
    }
}
