//! `race` and `fast`: an agent (MCP) and a person (MCP read, REST write)
//! append one unique line per edit to the same markdown tab. `race` with think
//! times and three client policies (stale text, re-read + re-apply, resend the
//! old text); `fast` with zero think time and re-apply, where nothing may be lost.

use super::editor::*;
use crate::stack::Stack;
use anyhow::Result;
use std::time::Instant;

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

