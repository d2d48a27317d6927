//! `create`: create_note_tab intents with 30% of the replies dropped after
//! the server committed, under three idempotency-key policies: tabs created
//! per intent.

use super::editor::*;
use super::{bars, med, median, num};
use crate::charts::Chart;
use crate::stack::Stack;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
            let r = ed
                .call(
                    "create_note_tab",
                    json!({"note_id": note, "expected_version": version,
                "idempotency_key": key, "tab_type": "sheet", "label": label}),
                )
                .await?;
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
                row.policy.label(),
                r.seed,
                r.intents,
                r.calls,
                r.dropped,
                r.conflicts,
                r.replayed,
                r.created,
                r.created.saturating_sub(r.intents)
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
