//! The benchmarks' own guarantees, quick sizes: the seed posts' experiments
//! (`cairn-bench experiment race|…|throughput`) keep their invariants, and
//! the attack suite (`cairn-bench attack --short`) keeps every bound
//! `docs/security.md` states. Never timings: bytes, memory, CPU seconds and
//! answers.

use cairn_bench::experiments::create::{self, KeyPolicy};
use cairn_bench::experiments::handles::{self, Handle};
use cairn_bench::experiments::{Sizes, editor, race, sections, sources, tabs, throughput};
use cairn_bench::stack::Stack;
use std::path::PathBuf;

/// The tests that assert what a busy machine could change (the attack
/// suite's RSS and CPU seconds, the feed's p99, races that need writers to
/// overlap) run one at a time, so none measures another. The cluster and
/// Spin rows assert only that nothing is lost: they run beside them.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("bench/ sits in the workspace").to_path_buf()
}

/// Fail early, and clearly, when the components were not built.
fn require_built(wasm: &[&str]) {
    for w in wasm {
        let p = root().join("target/wasm32-wasip2/wasm").join(w);
        assert!(p.exists(), "{} is missing: build the components first (scripts/test.sh does)", p.display());
    }
}

/// One stack for every experiment.
#[test]
fn experiments_keep_their_invariants() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    require_built(&["router.wasm", "edit_note_tab.wasm", "create_note_tab.wasm"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let stack = Stack::start(root().join("spin.toml")).await.unwrap();
        let result = check(&stack).await;
        stack.stop().await;
        result.unwrap();
    });
}

async fn check(stack: &Stack) -> anyhow::Result<()> {
    let s = Sizes::quick();

    // sections: three writers on three sections of one note lose nothing and,
    // writing by section, never conflict; a claimed section refuses an intruder.
    let side = sections::side_by_side(stack, s.side_seconds).await?;
    println!("{}", sections::side_table(&side));
    charts_draw(vec![sections::side_chart(&side)]);
    for row in &side {
        assert_eq!(row.lost, 0, "{}: {row:?}", row.mode.label());
        assert!(row.writers.iter().all(|w| w.edits > 0), "every writer landed lines: {row:?}");
        if row.mode != sections::Mode::Whole {
            assert_eq!(row.conflicts(), 0, "{}: false conflicts {row:?}", row.mode.label());
        }
    }
    assert_eq!(side[0].intruder_refused, Some(true), "the claimed section refused the intruder");
    // cost: a section of the 1 MB tab answers a sliver of the whole tab's bytes.
    let cost = sections::cost(stack, s.cost_reps).await?;
    println!("{}", sections::cost_table(&cost, s.cost_reps));
    charts_draw(vec![sections::cost_chart(&cost)]);
    let bytes = |op: &str| cost.iter().find(|r| r.op == op).map(|r| r.answer_bytes + r.sent_bytes).unwrap();
    assert!(bytes("one section") * 100 < bytes("whole-tab read"), "{cost:?}");
    assert!(bytes("replace_section") * 100 < bytes("whole-tab replace_text"), "{cost:?}");
    assert!(bytes("outline found by heading") * 20 < bytes("outline, first page"), "{cost:?}");

    // race: re-read + re-apply loses nothing; every run saw every edit through.
    let rows = race::race(stack, s.runs, s.edits).await?;
    assert_eq!(rows.len(), 5);
    charts_draw(editor::edit_charts("race", "race", &["a", "b", "c", "d", "e"], &rows));
    for safe in [&rows[1], &rows[3], &rows[4]] {
        assert_eq!(safe.runs.len() as u64, s.runs);
        assert_eq!(safe.lost(), 0, "{} lost lines: {safe:?}", safe.label);
    }
    // The section patch never borders the person's lines: the agent is never refused.
    assert_eq!(rows[4].runs.iter().map(|r| r.agent.conflicts).sum::<usize>(), 0, "{:?}", rows[4]);
    // The person editing the line the agent patches: a conflict, never a silent merge.
    let same = race::same_line(stack).await?;
    assert!(same.refused && same.person_kept, "{same:?}");
    for r in rows.iter().flat_map(|row| &row.runs) {
        assert_eq!(r.agent.edits, s.edits);
        assert!(r.agent.writes >= s.edits && r.person.writes >= s.edits);
        assert_eq!(r.agent.writes - r.agent.edits, r.agent.conflicts, "one extra write per conflict");
        assert!(r.agent.lost <= s.edits && r.person.lost <= s.edits);
    }

    // fast: zero think time, re-apply, nothing lost.
    let rows = race::fast(stack, s.runs, s.fast_edits).await?;
    for row in &rows {
        assert_eq!(row.lost(), 0, "fast lost lines: {row:?}");
    }
    charts_draw(editor::edit_charts("fast", "fast", &["re-apply", "append", "section"], &rows));

    // create: a same-key retry yields exactly one tab per intent.
    let rows = create::create(stack, s.runs, s.intents).await?;
    charts_draw(vec![create::create_chart(&rows)]);
    for row in &rows {
        for r in &row.runs {
            assert_eq!(r.distinct_ids, r.intents, "{:?}: one tab id per intent", row.policy);
            match row.policy {
                KeyPolicy::SameOnRetry | KeyPolicy::NewAfterConflict => {
                    assert_eq!(r.created, r.intents, "{:?}: {r:?}", row.policy)
                }
                // Every dropped reply of a committed create is a duplicate.
                KeyPolicy::NewPerCall => assert_eq!(r.created, r.intents + r.dropped, "{r:?}"),
            }
        }
    }

    // tabs: no lost line or cell; tab-scope versions see no (false) conflict.
    let rows = tabs::tabs(stack, s.runs, s.edits).await?;
    assert_eq!(rows.len(), 2);
    for row in &rows {
        assert_eq!(row.lost(), 0, "{}: {row:?}", row.label);
    }
    assert_eq!(rows[1].conflicts(), 0, "tab scope: {:?}", rows[1]);
    charts_draw(editor::edit_charts("tabs", "tabs", &["note", "tab"], &rows));

    // The tables render one row per run plus a median per behaviour.
    let md = editor::edit_table("t", &rows);
    assert_eq!(md.matches("**median**").count(), 2);

    // sources: server-side normalization stores each page once, whatever the key.
    let rows = sources::sources(stack, s.runs, s.sessions).await?;
    assert_eq!(rows.len(), 3);
    for row in &rows {
        assert_eq!(row.runs.len() as u64, s.runs);
        for r in &row.runs {
            assert_eq!(r.citations, s.sessions * 18, "{r:?}");
            assert_eq!(r.calls, r.citations + r.lost + r.conflicts, "one extra call per lost reply or conflict: {r:?}");
            assert!(r.lost > 0, "20% of replies are lost: {r:?}");
            assert_eq!(r.duplicates(), 0, "{:?}: {r:?}", row.policy);
            assert_eq!(r.stored, r.distinct, "{:?}: {r:?}", row.policy);
        }
    }
    assert_eq!(sources::sources_table(&rows, s.sessions).matches("**median**").count(), 3);
    charts_draw(vec![sources::sources_chart(&rows)]);

    // handles: an ID always finds the deck; every trial counts once per handle.
    let rows = handles::handles(stack, s.runs, s.trials).await?;
    assert_eq!(rows.len(), 8, "K = 2 and 5 × four handles");
    for row in &rows {
        for r in &row.runs {
            assert_eq!(r.trials, s.trials);
            assert_eq!(r.right + r.wrong + r.not_found, r.trials, "{r:?}");
            if row.handle == Handle::Id {
                assert_eq!(r.right, r.trials, "ID handle, K = {}: {r:?}", row.decks);
            }
        }
    }
    assert_eq!(handles::handles_table(&rows, s.trials).matches("**median**").count(), 8);
    charts_draw(vec![handles::handles_chart(&rows)]);

    // throughput: both tools at 1, 8 and 32 clients on both sides; every
    // client checked that its note advanced by exactly its acknowledged edits.
    let point = std::time::Duration::from_millis(s.point_ms);
    let rows = throughput::throughput(stack, point).await?;
    assert_eq!(rows.len(), 6);
    for r in &rows {
        assert!(r.stack.requests > 0 && r.native.requests > 0, "{r:?}");
        assert!(r.ratio().is_finite(), "{r:?}");
    }
    assert_eq!(throughput::throughput_table(&rows, point).matches("| edit_note_tab |").count(), 3);
    charts_draw(throughput::throughput_charts(&rows));
    Ok(())
}

/// Every chart an experiment describes is drawable and draws its names.
fn charts_draw(charts: Vec<cairn_bench::charts::Chart>) {
    let dir = std::env::temp_dir().join(format!("cairn-test-charts-{}", std::process::id()));
    for c in charts {
        let svg = std::fs::read_to_string(c.render(&dir).unwrap()).unwrap();
        for (name, _) in &c.series {
            assert!(svg.contains(name.as_str()), "{}: series {name:?} not drawn", c.file);
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The attack suite in its short mode, against a real `cairn up`: each
/// attack costs no more than the bounds `docs/security.md` states, and no
/// slow upload makes an honest call fail. (The honest agent's p99 under
/// attack is a timing: printed, not asserted.)
mod attacks {
    use cairn_bench::attack::slow::Kind;
    use cairn_bench::attack::{Report, Sizes, run};

    #[test]
    fn every_attack_stays_within_its_stated_bound() {
        let _alone = super::ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        super::require_built(&["router.wasm", "rest.wasm", "edit_note_tab.wasm", "read_note_tab.wasm", "health.wasm", "ui.wasm"]);
        let sizes = Sizes::short();
        let report = run(&super::root().join("spin.toml"), sizes).unwrap();
        report.print();
        let refused = report.row("refused").unwrap();
        assert_eq!(refused.requests, sizes.refused.div_ceil(8) * 8);
        assert!(refused.answers.keys().all(|s| [401, 403, 404, 429, 431].contains(s)), "{:?}", refused.answers);
        // Scaled from the stated 1 MB and 10 MB per 10,000 refused requests.
        let scale = sizes.refused as i64 / 10_000;
        assert!(refused.store_bytes < (1 << 20) * scale.max(1), "the store grew {} bytes", refused.store_bytes);
        assert!(refused.rss_bytes < (10 << 20), "RSS grew {} bytes", refused.rss_bytes);
        assert_eq!(refused.foreign_labels, 0, "a label value the attacker chose made a series");
        assert!(refused.series < 500, "{} metric lines were added: more than the closed label sets hold", refused.series);
        let bodies = report.row("bodies").unwrap();
        assert!(bodies.peak_rss_bytes < (100 << 20), "peak RSS grew {} bytes", bodies.peak_rss_bytes);
        // 429: one address's bodies past the ones the host waits for at once.
        assert!(bodies.answers.keys().all(|s| [413, 429, 503, 0].contains(s)), "{:?}", bodies.answers);
        assert!(bodies.answers.get(&413).copied().unwrap_or(0) >= sizes.bodies / 2, "{:?}", bodies.answers);
        for attack in ["costly: merge", "costly: diff"] {
            let row = report.row(attack).unwrap();
            assert_eq!(row.codes.get("too_complex"), Some(&1), "{attack}: {row:?}");
            assert!(row.cpu_seconds < 1.0, "{attack} cost {:.2} s of CPU", row.cpu_seconds);
        }
        assert!(report.row("costly: search").unwrap().cpu_seconds < 1.0);
        assert!(report.honest_alone.2 > 0 && report.honest_attacked.2 > 0);
        slow_uploads_fail_no_honest_call(&report, sizes);
    }

    /// Stalled and trickling uploads (bodies and headers), from one address
    /// and from many: every honest call beside them answered, the attackers
    /// refused only with the limits they hit (never `busy`: they hold none of
    /// the body budget), within a bounded memory.
    fn slow_uploads_fail_no_honest_call(report: &Report, sizes: Sizes) {
        assert!(report.slow_alone.failed.is_empty() && !report.slow_alone.edits.is_empty(), "{:?}", report.slow_alone.failed);
        assert_eq!(report.slow.len(), 6);
        let limits =
            ["body_too_slow", "body_timeout", "header_timeout", "too_many_connections_from_address", "too_many_bodies_from_address", "too_many_connections"];
        for kind in Kind::ALL {
            for addresses in [1, sizes.upload_addresses] {
                let row = report.slow_row(kind, addresses).unwrap_or_else(|| panic!("no row for {} from {addresses}", kind.label()));
                let name = format!("{} from {addresses} address(es)", row.attack);
                assert!(row.honest.failed.is_empty(), "{name}: honest calls failed: {:?}", row.honest.failed);
                assert!(!row.honest.edits.is_empty(), "{name}: no honest edit");
                assert!(row.codes.keys().all(|c| limits.contains(&c.as_str())), "{name}: {:?}", row.codes);
                assert!(row.answers.keys().all(|s| [0, 408, 429, 503].contains(s)), "{name}: {:?}", row.answers);
                assert!(row.peak_rss_bytes < (64 << 20), "{name}: peak RSS grew {} bytes", row.peak_rss_bytes);
                if addresses == 1 {
                    assert!(row.codes.get("too_many_connections_from_address").copied().unwrap_or(0) > 0, "{name}: {:?}", row.codes);
                }
                if kind == Kind::Stalled {
                    assert!(row.codes.get("body_too_slow").copied().unwrap_or(0) > 0, "{name}: stalled bodies were not cut off: {:?}", row.codes);
                }
            }
        }
    }
}

/// `parts`, quick sizes, natively (no components needed): no strategy loses
/// or doubles a line, and editing in parts costs a fraction of the whole tab.
mod parts {
    use cairn_bench::experiments::Sizes;
    use cairn_bench::experiments::parts::{self, Strategy};

    #[test]
    fn experiments_parts_read_and_write_little_and_lose_nothing() {
        let _alone = super::ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let s = Sizes::quick();
        let result = parts::parts(s.parts_sizes, s.parts_edits).unwrap();
        println!("{}", parts::parts_table(&result));
        assert_eq!(result.rows.len(), Strategy::EACH.len() * s.parts_sizes.len());
        for r in &result.rows {
            assert_eq!(r.edits, parts::AGENTS * s.parts_edits, "{r:?}");
            assert_eq!((r.lost, r.doubled), (0, 0), "{} at {}: {r:?}", r.strategy.label(), r.size.label);
        }
        // The whole-tab writers race: the second and third writer of a round are refused.
        let (small, large) = (s.parts_sizes[0].label, s.parts_sizes[s.parts_sizes.len() - 1].label);
        assert!(result.row(Strategy::Whole, large).unwrap().retries > 0);
        // A section edit lands over the others' changes: never refused.
        for size in s.parts_sizes {
            for strategy in [Strategy::Parts, Strategy::PartsWholeOutline] {
                assert_eq!(result.row(strategy, size.label).unwrap().retries, 0, "{} at {}", strategy.label(), size.label);
            }
        }
        // Parts, the outline found by heading: flat in the note's size, and a
        // sliver of the whole tab's bytes.
        let share = result.over_whole(Strategy::Parts, large).unwrap();
        assert!(share < 0.02, "parts at {large} costs {:.2}% of whole's bytes per edit", 100.0 * share);
        let growth = result.growth(Strategy::Parts).unwrap();
        assert!(growth < 2.0, "parts per edit grew {growth:.2}× from {small} to {large}");
        // The unfiltered outline lists every section: it grows with the sections.
        let (outline_small, outline_large) = (result.row(Strategy::PartsWholeOutline, small).unwrap(), result.row(Strategy::PartsWholeOutline, large).unwrap());
        assert!(outline_large.outline_read > 10 * outline_small.outline_read, "the whole outline grows with the sections");
    }
}

/// The native server (the baseline of the component tax) serves the same
/// protocol and rules as the stack: every tool listed, edits that land
/// exactly once, a stale write refused, no token no call.
mod native_server {
    use cairn_bench::stack::{self, Client, Op};
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn the_native_server_answers_the_protocol_and_rules_as_the_stack_does() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let dir = std::env::temp_dir().join(format!("cairn-bench-native-test-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let server = cairn_bench::native::start(stack::native_store(&dir).unwrap()).await.unwrap();
            let notes = stack::seed(server.store.as_ref(), 2).unwrap();
            let mut c = Client::connect(server.addr).await.unwrap();
            let (status, listed) = c.send("POST", "/mcp", &server.token, &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await.unwrap();
            assert_eq!(status, 200, "{listed}");
            let names: Vec<&str> = listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
            assert_eq!(names.len(), cairn_notes::tools::TOOLS.len(), "{names:?}");
            // Edits that land exactly once (client_loop checks the version moved by each acknowledged edit).
            let s = stack::mcp_calls(server.addr, &server.token, &notes, 1, Op::ReadEdit(200), Duration::from_millis(300), "native").await.unwrap();
            assert!(s.requests > 0);
            let stale = c.call(&server.token, "edit_note_tab", json!({"note_id": notes[0], "tab_id": "markdown", "expected_version": 1, "idempotency_key": "stale", "operation": "replace_text", "text": "x"})).await.unwrap();
            assert_eq!(stale["structuredContent"]["error"], "version_conflict", "{stale}");
            let (status, _) = c.send("POST", "/mcp", "", &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await.unwrap();
            assert_eq!(status, 401);
            let _ = std::fs::remove_dir_all(&dir);
        });
    }
}

/// The tool components alone (`perf`'s "tools" row and its "where the time
/// goes") are called on their own HTTP doors, which a stack opens only with
/// `tool_transport = "http"`; without it those doors answer 404 and the tools
/// are reached only through the router.
mod tools_alone {
    use super::{ONE_AT_A_TIME, require_built, root};
    use cairn_bench::stack::{Caller, Stack, ToolCaller};
    use serde_json::json;

    #[test]
    fn the_tool_components_answer_on_their_own_doors_only_when_the_stack_opens_them() {
        let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        require_built(&["router.wasm", "read_note_tab.wasm"]);
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let open = Stack::start_with(root().join("spin.toml"), &[("tool_transport", "http")]).await.unwrap();
            let note = open.seed_notes(1).unwrap().remove(0);
            let read = ToolCaller::agent(&open).unwrap().call("read_note_tab", json!({"note_id": note, "tab_id": "markdown"})).await;
            open.stop().await;
            let read = read.unwrap();
            assert_eq!(read["structuredContent"]["note_id"], note, "{read}");

            let closed = Stack::start(root().join("spin.toml")).await.unwrap();
            let note = closed.seed_notes(1).unwrap().remove(0);
            let refused = ToolCaller::agent(&closed).unwrap().call("read_note_tab", json!({"note_id": note, "tab_id": "markdown"})).await;
            closed.stop().await;
            let e = refused.expect_err("a tool door opened without tool_transport = http").to_string();
            assert!(e.contains("404"), "{e}");
        });
    }
}

/// `cairn-bench cluster` in short: three hosts on one standalone Redis,
/// then on clusters of 1, 2 and 3 primaries (with and without replica
/// confirmation); every row acknowledges lines and loses none.
mod cluster {
    use super::root;

    #[test]
    fn every_row_of_the_cluster_benchmark_acknowledges_lines_and_loses_none() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let rows = rt.block_on(cairn_bench::cluster::cluster(root().join("spin.toml"), 1, 8)).unwrap();
        let shape: Vec<(usize, u32)> = rows.iter().map(|r| (r.primaries, r.wait_for_replicas)).collect();
        assert_eq!(shape, [(0, 0), (1, 1), (2, 1), (3, 1), (3, 0)]);
        for r in &rows {
            assert!(r.run.acked > 0, "{} primaries: nothing acknowledged", r.primaries);
            assert_eq!((r.run.lost, r.run.conflicts), (0, 0), "{} primaries", r.primaries);
        }
        let table = cairn_bench::cluster::table(&rows, 1, 8);
        assert_eq!(table.lines().filter(|l| l.starts_with("| ")).count(), 6, "{table}");
    }
}

mod feed {
    use super::{ONE_AT_A_TIME, require_built, root};

    /// Every edit reaches every listening agent on one host and on three
    /// hosts sharing Redis, within the look interval and a margin, and
    /// idle subscriptions are measured on both sides.
    #[test]
    fn every_edit_reaches_every_listening_agent_on_one_and_three_hosts() {
        require_built(&["router.wasm", "list_notes.wasm"]);
        let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        let report = rt.block_on(cairn_bench::feed::run(&root().join("spin.toml"), 2, 16, 64, 1)).unwrap();
        assert_eq!(report.latency.len(), 2);
        for (series, missed) in &report.latency {
            assert_eq!((series.requests, *missed), (2 * 16, 0), "{}: every edit told to both agents", series.name);
            assert!(series.p99 < std::time::Duration::from_secs(2), "{}: p99 {:?}", series.name, series.p99);
        }
        assert!(report.rss.0 > 0 && report.rss.1 > 0 && report.cpu.1 > 0.0, "the idle figures were read");
        assert!(report.render().unwrap().contains("64 idle subscriptions"));
    }
}

mod on_spin {
    use super::{require_built, root};
    use cairn_bench::spin::{VARIANTS, run};
    use std::time::Duration;

    /// Every row of `cairn-bench spin` runs on both hosts (Spin as shipped,
    /// and reused on tmpfs without the commit check), and every edit
    /// acknowledged there is in its note exactly once (the clients check).
    #[test]
    fn every_row_of_the_spin_benchmark_runs_on_both_hosts_and_loses_no_edit() {
        if std::env::var_os("CAIRN_SPIN").is_none() && !root().join("../shared/spin/unpack.sh").exists() {
            eprintln!("not run: no Spin here (../shared/spin/ or CAIRN_SPIN)");
            return;
        }
        require_built(&["router.wasm", "health.wasm", "edit_note_tab.wasm"]);
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        let variants = [VARIANTS[0], VARIANTS[4]];
        let report = rt.block_on(run(&root(), root().join("spin.toml"), Duration::from_millis(300), vec![1, 4], &variants)).unwrap();
        assert_eq!(report.series.len(), 1 + variants.len());
        for (column, by_clients) in report.series.iter().enumerate() {
            assert_eq!(by_clients.len(), 2);
            for rows in by_clients {
                assert_eq!(rows.len(), 5, "column {column}");
                for s in rows {
                    assert!(s.requests > 0, "column {column}: {} answered nothing", s.name);
                }
            }
        }
    }
}
