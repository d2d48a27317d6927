//! Fuzzing sheet range arithmetic (proptest, shrinking): random blocks of
//! cells written at random places (at and past the edges of the 10,000 × 100
//! grid, across row-block boundaries) and random ranges read. A write is
//! either refused naming its field, or every cell it set reads back as
//! written and every cell around it is untouched; a read is either refused
//! naming its field, or clipped to the sheet and consistent with the cells.
//! `CAIRN_FUZZ_CASES` cases (default 400).
use crate::common::*;
use proptest::prelude::*;
use serde_json::{Value, json};

fn cases() -> u32 {
    std::env::var("CAIRN_FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(400)
}

fn cell() -> impl Strategy<Value = Value> {
    prop_oneof![Just(Value::Null), "[a-z]{0,6}".prop_map(Value::from), (-1000i64..1000).prop_map(Value::from), any::<bool>().prop_map(Value::from),]
}

fn place() -> impl Strategy<Value = i64> {
    prop_oneof![0i64..250, 9_990i64..10_010, Just(-1i64), 95i64..105]
}

fn cell_at(values: &Value, r: usize, c: usize) -> Value {
    values.get(r).and_then(|row| row.get(c)).cloned().unwrap_or(Value::Null)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn written_ranges_read_back_and_leave_their_neighbours_alone(
        writes in proptest::collection::vec((place(), place(), proptest::collection::vec(proptest::collection::vec(cell(), 0..5), 1..5)), 1..4),
        read in (place(), place(), -1i64..110, -1i64..110),
    ) {
        let mut w = World::new();
        let ada = human("acme");
        let note = w.note(&ada, "Sheet", true);
        let tab = w.create_tab(&ada, &note, "sheet", "Grid");
        let sheet = w.tab(&ada, &note, &tab)["sheets"][0]["sheet_id"].clone();
        // The model: every cell set so far.
        let mut model = std::collections::BTreeMap::new();
        for (row, col, values) in writes {
            let v = w.version(&ada, &note);
            let r = w.call(&ada, "edit_note_tab", json!({"note_id": note, "tab_id": tab, "expected_version": v, "idempotency_key": format!("k{v}"),
                "operation": "sheet_set_range", "sheet_id": sheet, "start_row": row, "start_col": col, "values": values}))["structuredContent"].clone();
            match r["error"].as_str() {
                None => {
                    for (i, cells) in values.iter().enumerate() {
                        for (j, c) in cells.iter().enumerate() {
                            model.insert((row as u64 + i as u64, col as u64 + j as u64), c.clone());
                        }
                    }
                }
                Some("invalid_argument" | "too_large") => prop_assert!(r["field"].is_string(), "a refusal without a field: {r}"),
                Some(other) => prop_assert!(false, "unexpected refusal {other}: {r}"),
            }
        }
        // Every cell the model holds reads back, around it everything is null.
        for (&(r, c), want) in &model {
            let got = w.call(&ada, "read_sheet_range", json!({"note_id": note, "tab_id": tab, "sheet_id": sheet,
                "start_row": r, "start_col": c, "num_rows": 1, "num_cols": 1}))["structuredContent"].clone();
            prop_assert_eq!(cell_at(&got["values"], 0, 0), want.clone(), "cell ({}, {}): {}", r, c, got);
        }
        let (row, col, rows, cols) = read;
        let got = w.call(&ada, "read_sheet_range", json!({"note_id": note, "tab_id": tab, "sheet_id": sheet,
            "start_row": row, "start_col": col, "num_rows": rows, "num_cols": cols}))["structuredContent"].clone();
        match got["error"].as_str() {
            None => {
                let (n, m) = (got["num_rows"].as_u64().unwrap(), got["num_cols"].as_u64().unwrap());
                prop_assert!(n <= rows as u64 && m <= cols as u64, "a read larger than asked: {got}");
                for i in 0..n as usize {
                    for j in 0..m as usize {
                        let at = (row as u64 + i as u64, col as u64 + j as u64);
                        let want = model.get(&at).cloned().unwrap_or(Value::Null);
                        prop_assert_eq!(cell_at(&got["values"], i, j), want, "cell {:?} of the range: {}", at, got);
                    }
                }
            }
            Some("invalid_argument" | "too_large") => prop_assert!(got["field"].is_string(), "a refusal without a field: {got}"),
            Some(other) => prop_assert!(false, "unexpected refusal {other}: {got}"),
        }
    }
}
