//! `throughput`: read_note_tab and edit_note_tab at 1, 8 and 32 clients
//! through the whole stack, against the core natively, in one run.

use crate::charts::{Chart, Kind};
use crate::measure::Series;
use crate::stack::{self, Op, Stack};
use anyhow::Result;
use std::fmt::Write as _;
use std::time::Duration;

/// One point of `throughput`: one tool at one concurrency, both sides.
#[derive(Clone, Debug)]
pub struct ThroughputRow {
    /// The tool measured.
    pub tool: &'static str,
    /// Concurrent clients, each on its own connection (or thread) and note.
    pub clients: usize,
    /// Through the whole stack over HTTP MCP.
    pub stack: Series,
    /// The same core called natively in this process, on its own SQLite store.
    pub native: Series,
}

impl ThroughputRow {
    /// How many times the native core's throughput is the stack's.
    pub fn ratio(&self) -> f64 {
        self.native.rps / self.stack.rps.max(f64::MIN_POSITIVE)
    }
}

/// The concurrencies `throughput` measures.
pub const CONCURRENCY: [usize; 3] = [1, 8, 32];

/// `throughput`: read_note_tab and edit_note_tab (200 characters, the version
/// from the client's previous edit) at 1, 8 and 32 clients through the whole
/// stack, against the core natively on a SQLite store of its own, in one run.
/// Every client checks that its note advanced by exactly its acknowledged edits.
pub async fn throughput(stack: &Stack, point: Duration) -> Result<Vec<ThroughputRow>> {
    let scratch = std::env::temp_dir().join(format!("cairn-throughput-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let native = stack::native_store(&scratch)?;
    let most = CONCURRENCY[CONCURRENCY.len() - 1];
    let (stack_notes, native_notes) = (stack.seed_notes(most)?, stack::seed(native.as_ref(), most)?);
    let mut rows = Vec::new();
    for (tool, op) in [("read_note_tab", Op::Read), ("edit_note_tab", Op::Edit(200))] {
        for clients in CONCURRENCY {
            // Warm pool slots, connections and caches on both sides first.
            let warm = (point / 4).max(Duration::from_millis(50));
            stack::stack_calls(stack, &stack_notes, clients, op, warm).await?;
            let s = stack::stack_calls(stack, &stack_notes, clients, op, point).await?;
            let (kv, notes) = (native.clone(), native_notes.clone());
            let n = tokio::task::spawn_blocking(move || {
                stack::native_calls(kv.clone(), &notes, clients, op, warm)?;
                stack::native_calls(kv, &notes, clients, op, point)
            })
            .await??;
            rows.push(ThroughputRow { tool, clients, stack: s, native: n });
        }
    }
    drop(native);
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(rows)
}

/// Markdown for `throughput`.
pub fn throughput_table(rows: &[ThroughputRow], point: Duration) -> String {
    let mut s = format!(
        "\n## throughput: read_note_tab and edit_note_tab, whole stack against the core natively, {:.1} s per point\n\n\
         Each client has its own connection (its own thread natively) and its own note; an edit sends the version its previous \
         edit returned, so none conflicts. Stack: HTTP/1.1 keep-alive → router component (token, rate limit, scopes) → \
         tool component → SQLite. Native: `cairn_notes::call_tool` in this process on a SQLite store of its own.\n\n",
        point.as_secs_f64()
    );
    s.push_str("| tool | clients | stack calls/s | stack p50 ms | stack p99 ms | native calls/s | native p50 ms | native p99 ms | native ÷ stack |\n");
    s.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let ms = |d: Duration| format!("{:.3}", d.as_secs_f64() * 1e3);
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} | {} | {} | {:.0} | {} | {} | {:.1}× |",
            r.tool,
            r.clients,
            r.stack.rps,
            ms(r.stack.p50),
            ms(r.stack.p99),
            r.native.rps,
            ms(r.native.p50),
            ms(r.native.p99),
            r.ratio()
        );
    }
    s
}

/// The charts of `throughput`: calls/s, then p50 and p99 per tool.
pub fn throughput_charts(rows: &[ThroughputRow]) -> Vec<Chart> {
    let categories: Vec<String> = CONCURRENCY.iter().map(|c| c.to_string()).collect();
    let pick = |tool: &str, f: &dyn Fn(&ThroughputRow) -> f64| {
        CONCURRENCY.iter().map(|&c| rows.iter().find(|r| r.tool == tool && r.clients == c).map_or(0.0, f)).collect::<Vec<_>>()
    };
    let line = |file: String, title: String, y: &str, series: Vec<(String, Vec<f64>)>| Chart {
        file,
        title,
        x: "concurrent clients".into(),
        y: y.into(),
        kind: Kind::LogLines,
        categories: categories.clone(),
        series,
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut charts = vec![line(
        "throughput.svg".into(),
        "throughput: whole stack against the core natively".into(),
        "calls/s (log)",
        vec![
            ("read_note_tab, stack".into(), pick("read_note_tab", &|r| r.stack.rps)),
            ("read_note_tab, native".into(), pick("read_note_tab", &|r| r.native.rps)),
            ("edit_note_tab, stack".into(), pick("edit_note_tab", &|r| r.stack.rps)),
            ("edit_note_tab, native".into(), pick("edit_note_tab", &|r| r.native.rps)),
        ],
    )];
    for tool in ["read_note_tab", "edit_note_tab"] {
        charts.push(line(
            format!("latency-{}.svg", tool.trim_end_matches("_note_tab")),
            format!("{tool}: latency, whole stack against the core natively"),
            "ms (log)",
            vec![
                ("stack p50".into(), pick(tool, &|r| ms(r.stack.p50))),
                ("stack p99".into(), pick(tool, &|r| ms(r.stack.p99))),
                ("native p50".into(), pick(tool, &|r| ms(r.native.p50))),
                ("native p99".into(), pick(tool, &|r| ms(r.native.p99))),
            ],
        ));
    }
    charts
}
