//! `race` and `fast`: an agent (MCP) and a person (MCP read, REST write)
//! append one unique line per edit to the same markdown tab. `race` with think
//! times and three client policies (stale text, re-read + re-apply, resend the
//! old text); `fast` with zero think time and re-apply, where nothing may be lost.

use super::editor::*;
use crate::stack::Stack;
use anyhow::Result;
use serde_json::json;
use std::time::Instant;

/// One run of two editors on the markdown tab of a fresh note: the agent over
/// MCP, the person reading over MCP and writing over REST, both with `policy`.
async fn text_run(stack: &Stack, seed: u64, edits: usize, policy: Policy, think: bool) -> Result<EditRun> {
    let note = stack.seed_notes(1)?.remove(0);
    let addr = stack.running.addr;
    let (at, pt) = if think { (AGENT_THINK, PERSON_THINK) } else { ((0, 0), (0, 0)) };
    let agent = Editor::new(addr, &stack.agent, Via::Mcp, &note).await?;
    let mut person = Editor::new(addr, &stack.person, Via::Rest, &note).await?;
    if policy == Policy::SectionRebase {
        // The agent's section at the top, the person's lines after a heading of their own.
        let v = person.read("markdown").await?.version;
        if !person.write_text("markdown", &v, Scope::Note, &format!("skeleton-{seed}"), &format!("{SECTION}\n\n## person\n")).await? {
            anyhow::bail!("the skeleton of a fresh note was refused");
        }
    }
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
    for policy in [Policy::StaleText, Policy::Reapply, Policy::ResendOld, Policy::AppendRebase, Policy::SectionRebase] {
        let mut row = EditRow { label: policy.label().into(), runs: Vec::new() };
        for seed in 1..=runs {
            row.runs.push(text_run(stack, seed, edits, policy, true).await?);
        }
        rows.push(row);
    }
    Ok(rows)
}

/// `fast`: zero think time; re-read and re-apply, then the agent's two
/// patch policies against the same person.
pub async fn fast(stack: &Stack, runs: u64, edits: usize) -> Result<Vec<EditRow>> {
    let mut rows = Vec::new();
    for (policy, label) in [
        (Policy::Reapply, "zero think time; re-read and re-apply"),
        (Policy::AppendRebase, "zero think time; agent append_text + rebase"),
        (Policy::SectionRebase, "zero think time; agent replace_in_text in its section + rebase"),
    ] {
        let mut row = EditRow { label: label.into(), runs: Vec::new() };
        for seed in 1..=runs {
            row.runs.push(text_run(stack, seed, edits, policy, false).await?);
        }
        rows.push(row);
    }
    Ok(rows)
}

/// What happened when the person changed the very line the agent patches.
#[derive(Debug)]
pub struct SameLine {
    /// The agent's rebased patch was refused with `version_conflict`.
    pub refused: bool,
    /// The text still has the person's change, and not the agent's.
    pub person_kept: bool,
}

/// The person rewrites a line; the agent, on the version before, patches
/// that same line with `rebase: true`: it must conflict, never merge.
pub async fn same_line(stack: &Stack) -> Result<SameLine> {
    let note = stack.seed_notes(1)?.remove(0);
    let addr = stack.running.addr;
    let mut agent = Editor::new(addr, &stack.agent, Via::Mcp, &note).await?;
    let mut person = Editor::new(addr, &stack.person, Via::Rest, &note).await?;
    let v = person.read("markdown").await?.version;
    person.write_text("markdown", &v, Scope::Note, "same-1", "status: draft\nowner: nobody\n").await?;
    let read = agent.read("markdown").await?;
    person.write_text("markdown", &read.version, Scope::Note, "same-2", "status: final (person)\nowner: nobody\n").await?;
    let op = json!({"operation": "replace_in_text", "old_text": "status: draft", "new_text": "status: review (agent)"});
    let landed = agent.write_patch("markdown", &read.version, "same-agent", op).await?;
    let text = agent.read("markdown").await?.text;
    Ok(SameLine { refused: landed.is_none(), person_kept: text.contains("final (person)") && !text.contains("agent") })
}
