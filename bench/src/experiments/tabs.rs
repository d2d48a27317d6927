//! `tabs`: the agent appends to the markdown tab while the person sets cells
//! of a sheet tab, checked against the note's version and then the tab's
//! (`version_scope`): every conflict of the first is false.

use super::editor::*;
use crate::stack::Stack;
use anyhow::{Context, Result, bail};
use serde_json::json;
use std::collections::HashSet;
use std::time::Instant;

async fn new_tab(ed: &mut Editor, tab_type: &str, key: &str) -> Result<String> {
    let version = ed.call("list_note_tabs", json!({"note_id": ed.note})).await?["structuredContent"]["version"].clone();
    let r = ed
        .call(
            "create_note_tab",
            json!({"note_id": ed.note, "expected_version": version,
        "idempotency_key": key, "tab_type": tab_type}),
        )
        .await?;
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
        let r = ed
            .call(
                "read_sheet_range",
                json!({"note_id": ed.note, "tab_id": tab,
            "start_row": row, "start_col": 0, "num_rows": n, "num_cols": 1}),
            )
            .await?;
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
