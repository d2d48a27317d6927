//! `handles`: an agent keeps a handle to one of K slides decks (position,
//! type, label, ID) while a person moves, renames and adds tabs; how each
//! handle resolves afterwards.

use super::editor::*;
use super::{bars, med, median, num, pct};
use crate::charts::Chart;
use crate::stack::Stack;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::fmt::Write as _;

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
    let r = ed
        .call(
            "create_note_tab",
            json!({"note_id": ed.note, "expected_version": version,
        "idempotency_key": key, "tab_type": "slides", "label": label}),
        )
        .await?;
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
                row.decks,
                row.handle.label(),
                r.seed,
                r.trials,
                r.changes,
                pct(r.right, r.trials),
                pct(r.wrong, r.trials),
                pct(r.not_found, r.trials)
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
