//! The seed posts' experiments, one file each, run against the application
//! in this process over real HTTP (MCP for the agent, REST and MCP for the
//! person), with seeded think times. [`Experiment`] picks one (or all);
//! [`run`] writes the report with its charts.
//!
//! The experiment functions return result structs (the tests assert on them);
//! the `*_table` functions render them as markdown and the `*_chart(s)`
//! functions describe their SVG charts (drawn by [`crate::charts`]).

pub mod create;
pub mod editor;
pub mod handles;
pub mod parts;
pub mod race;
pub mod sections;
pub mod sources;
pub mod tabs;
pub mod throughput;

use crate::charts::{Chart, Kind};
use crate::stack::Stack;
use anyhow::{Context, Result};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

/// Which experiment to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Experiment {
    /// Agent and person appending lines to one tab: lost updates per client policy.
    Race,
    /// Zero think time, re-read + re-apply: nothing may be lost.
    Fast,
    /// create_note_tab with dropped replies: tabs created per idempotency-key policy.
    Create,
    /// Agent on the markdown tab, person on a sheet tab: note- against tab-scope versions.
    Tabs,
    /// add_note_source with seven URL spellings and lost replies: sources stored per key policy.
    Sources,
    /// Handles to one of K slides decks (position, type, label, ID) after a person's changes.
    Handles,
    /// read_note_tab and edit_note_tab at 1, 8 and 32 clients: whole stack against the core natively.
    Throughput,
    /// Bytes an agent reads and writes per intended edit of a growing note: whole tab, append + rebase, parts (natively).
    Parts,
    /// Three writers on three sections of one note (claims, replace_section, whole tab), and a part's cost against the whole tab.
    Sections,
    /// Every experiment above, one markdown document.
    All,
}

impl Experiment {
    /// Every experiment, in report order (throughput runs first, shown last).
    pub const EACH: [Experiment; 9] = [
        Experiment::Race,
        Experiment::Fast,
        Experiment::Create,
        Experiment::Tabs,
        Experiment::Sources,
        Experiment::Handles,
        Experiment::Throughput,
        Experiment::Parts,
        Experiment::Sections,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Experiment::Race => "race",
            Experiment::Fast => "fast",
            Experiment::Create => "create",
            Experiment::Tabs => "tabs",
            Experiment::Sources => "sources",
            Experiment::Handles => "handles",
            Experiment::Throughput => "throughput",
            Experiment::Parts => "parts",
            Experiment::Sections => "sections",
            Experiment::All => "all",
        }
    }

    fn includes(self, one: Experiment) -> bool {
        self == Experiment::All || self == one
    }
}

/// Sizes of one invocation.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// Runs per row (seeds 1..=runs).
    pub runs: u64,
    /// Edits per editor in `race` and `tabs`.
    pub edits: usize,
    /// Edits per editor in `fast`.
    pub fast_edits: usize,
    /// Intents per run in `create`.
    pub intents: usize,
    /// Research sessions per seed in `sources`.
    pub sessions: usize,
    /// Trials per seed and deck count in `handles`.
    pub trials: usize,
    /// Milliseconds each point of `throughput` is measured for (per side).
    pub point_ms: u64,
    /// Intended edits per agent in `parts`.
    pub parts_edits: usize,
    /// Note sizes in `parts`.
    pub parts_sizes: &'static [parts::NoteSize],
    /// Seconds each mode of `sections`' side by side runs.
    pub side_seconds: f64,
    /// Calls per operation in `sections`' cost table.
    pub cost_reps: usize,
}

impl Sizes {
    /// The seed posts' sizes.
    pub fn full() -> Self {
        Self {
            runs: 5,
            edits: 100,
            fast_edits: 2_000,
            intents: 50,
            sessions: 300,
            trials: 2_000,
            point_ms: 5_000,
            parts_edits: 20,
            parts_sizes: &parts::FULL_SIZES,
            side_seconds: 60.0,
            cost_reps: 30,
        }
    }

    /// A version that runs in seconds.
    pub fn quick() -> Self {
        Self {
            runs: 2,
            edits: 12,
            fast_edits: 60,
            intents: 12,
            sessions: 20,
            trials: 40,
            point_ms: 200,
            parts_edits: 6,
            parts_sizes: &parts::QUICK_SIZES,
            side_seconds: 1.5,
            cost_reps: 3,
        }
    }
}

/// One experiment's part of the results: its tables and its charts.
pub struct Section {
    /// Markdown tables.
    pub markdown: String,
    /// Charts to draw next to the document.
    pub charts: Vec<Chart>,
}

/// The `parts` section: natively, without the stack.
pub fn parts_section(sizes: Sizes) -> Result<Section> {
    let result = parts::parts(sizes.parts_sizes, sizes.parts_edits)?;
    Ok(Section { markdown: parts::parts_table(&result), charts: vec![parts::parts_chart(&result)] })
}

/// Runs one experiment (or all) on `stack`; a section per experiment.
pub async fn run_on(stack: &Stack, which: Experiment, sizes: Sizes) -> Result<Vec<Section>> {
    let mut out = Vec::new();
    // Throughput runs first, while the store is as fresh as the native side's
    // (the other experiments leave thousands of notes behind); it is shown last.
    let mut measured = None;
    if which.includes(Experiment::Throughput) {
        let point = Duration::from_millis(sizes.point_ms);
        let rows = throughput::throughput(stack, point).await?;
        measured = Some(Section { markdown: throughput::throughput_table(&rows, point), charts: throughput::throughput_charts(&rows) });
    }
    if which.includes(Experiment::Race) {
        let rows = race::race(stack, sizes.runs, sizes.edits).await?;
        let title =
            format!("race: agent (think 20–80 ms, MCP) and person (think 5–40 ms, MCP read + REST write), {} edits each, seeds 1–{}", sizes.edits, sizes.runs);
        let names = ["(a) stale text, LWW", "(b) re-read + re-apply", "(c) resend old text", "(d) append + rebase", "(e) section patch + rebase"];
        let mut markdown = editor::edit_table(&title, &rows);
        let same = race::same_line(stack).await?;
        let _ = write!(
            markdown,
            "\nThe person rewrites the very line the agent then patches (replace_in_text, rebase: true, on the version before): \
             the patch was {}, and the text {} the person's change.\n",
            if same.refused { "refused with version_conflict" } else { "APPLIED" },
            if same.person_kept { "keeps" } else { "LOST" }
        );
        out.push(Section { markdown, charts: editor::edit_charts("race", "race", &names, &rows) });
    }
    if which.includes(Experiment::Fast) {
        let rows = race::fast(stack, sizes.runs, sizes.fast_edits).await?;
        let title = format!("fast: zero think time, {} edits per editor, the person re-reads + re-applies, seeds 1–{}", sizes.fast_edits, sizes.runs);
        out.push(Section {
            markdown: editor::edit_table(&title, &rows),
            charts: editor::edit_charts("fast", "fast", &["re-apply", "append + rebase", "section patch + rebase"], &rows),
        });
    }
    if which.includes(Experiment::Create) {
        let rows = create::create(stack, sizes.runs, sizes.intents).await?;
        out.push(Section { markdown: create::create_table(&rows), charts: vec![create::create_chart(&rows)] });
    }
    if which.includes(Experiment::Tabs) {
        let rows = tabs::tabs(stack, sizes.runs, sizes.edits).await?;
        let title = format!(
            "tabs: agent appends to the markdown tab, person sets cells of a sheet tab (sheet_set_range), {} edits each, seeds 1–{}; every conflict is false",
            sizes.edits, sizes.runs
        );
        let names = ["note-scope versions", "tab-scope versions"];
        out.push(Section { markdown: editor::edit_table(&title, &rows), charts: editor::edit_charts("tabs", "tabs", &names, &rows) });
    }
    if which.includes(Experiment::Sources) {
        let rows = sources::sources(stack, sizes.runs, sizes.sessions).await?;
        out.push(Section { markdown: sources::sources_table(&rows, sizes.sessions), charts: vec![sources::sources_chart(&rows)] });
    }
    if which.includes(Experiment::Handles) {
        let rows = handles::handles(stack, sizes.runs, sizes.trials).await?;
        out.push(Section { markdown: handles::handles_table(&rows, sizes.trials), charts: vec![handles::handles_chart(&rows)] });
    }
    if which.includes(Experiment::Parts) {
        out.push(parts_section(sizes)?);
    }
    if which.includes(Experiment::Sections) {
        let side = sections::side_by_side(stack, sizes.side_seconds).await?;
        let cost = sections::cost(stack, sizes.cost_reps).await?;
        let markdown = format!("{}{}", sections::side_table(&side), sections::cost_table(&cost, sizes.cost_reps));
        out.push(Section { markdown, charts: vec![sections::side_chart(&side), sections::cost_chart(&cost)] });
    }
    if let Some(section) = measured {
        out.push(section);
    }
    Ok(out)
}

/// `cairn-bench <experiment>`: start the application, run, print; with
/// `out`, also write the document there and its charts in `charts/` beside it.
pub async fn run(manifest: PathBuf, which: Experiment, sizes: Sizes, out: Option<PathBuf>) -> Result<()> {
    // `parts` alone needs no application: it drives the core natively.
    let sections = if which == Experiment::Parts {
        vec![parts_section(sizes)?]
    } else {
        let stack = Stack::start(manifest).await?;
        let result = run_on(&stack, which, sizes).await;
        stack.stop().await;
        result?
    };
    let dir = out.as_ref().and_then(|p| p.parent()).map(|d| if d.as_os_str().is_empty() { PathBuf::from(".") } else { d.to_path_buf() });
    let mut tables = String::new();
    for section in &sections {
        tables.push_str(&section.markdown);
        if let Some(dir) = &dir {
            tables.push('\n');
            for chart in &section.charts {
                chart.render(&dir.join("charts"))?;
                let _ = writeln!(tables, "![{}](charts/{})\n", chart.title, chart.file);
            }
        }
    }
    let doc = format!(
        "# Cairn: the seed posts' experiments\n\nWritten by `cairn-bench {}` ({} runs; {} edits per editor in race/tabs, {} in fast, {} create intents, \
         {} research sessions per seed in sources, {} trials per seed and K in handles, {:.1} s per point in throughput, {} edits per agent in parts) on {} cores. \
         Every run is against the application in-process over HTTP, SQLite store, but parts: the core natively, memory store.\n{tables}",
        which.name(),
        sizes.runs,
        sizes.edits,
        sizes.fast_edits,
        sizes.intents,
        sizes.sessions,
        sizes.trials,
        sizes.point_ms as f64 / 1e3,
        sizes.parts_edits,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
    println!("{doc}");
    if let Some(path) = out {
        if let Some(dir) = &dir {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, &doc).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

pub(crate) fn num(x: f64) -> String {
    if x.fract() == 0.0 { format!("{x:.0}") } else { format!("{x:.1}") }
}

pub(crate) fn med<T>(runs: &[T], f: impl Fn(&T) -> f64) -> f64 {
    median(runs.iter().map(f).collect())
}

pub(crate) fn bars(file: &str, title: &str, x: &str, y: &str, categories: &[&str], series: Vec<(&str, Vec<f64>)>) -> Chart {
    Chart {
        file: file.into(),
        title: title.into(),
        x: x.into(),
        y: y.into(),
        kind: Kind::Bars,
        categories: categories.iter().map(|c| c.to_string()).collect(),
        series: series.into_iter().map(|(n, v)| (n.to_string(), v)).collect(),
    }
}

pub(crate) fn pct(n: usize, of: usize) -> f64 {
    100.0 * n as f64 / of.max(1) as f64
}
