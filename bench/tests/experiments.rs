//! The seed posts' experiments (`cairn-bench experiment race|…|throughput`),
//! quick sizes, in-process over HTTP: only their invariants, never timings.

use cairn_bench::experiments::create::{self, KeyPolicy};
use cairn_bench::experiments::handles::{self, Handle};
use cairn_bench::experiments::{editor, race, sources, tabs, throughput, Sizes};
use cairn_bench::stack::Stack;
use std::path::PathBuf;

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

/// One stack for every experiment: `Stack` keeps its state in a directory
/// named after the process, so two in one test binary would collide.
#[test]
fn experiments_keep_their_invariants() {
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
