//! Sheets: 10,000 x 50 fits in row blocks under the value limit; reads touch few blocks.
use crate::common::*;
use cairn_notes::kv::MAX_VALUE_BYTES;
use serde_json::{Value, json};

/// sheet_set_range at the current version; `at` is (sheet_id, start_row, start_col).
fn set(w: &mut World, who: &cairn_notes::Identity, note: &str, tab: &str, at: (&str, u64, u64), values: Value, key: &str) -> Value {
    let v = w.version(who, note);
    w.call(
        who,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": tab, "expected_version": v, "idempotency_key": key,
        "operation": "sheet_set_range", "sheet_id": at.0, "start_row": at.1, "start_col": at.2, "values": values}),
    )
}

#[test]
fn a_10000_by_50_sheet_fits_with_every_stored_value_under_1_mb_and_a_100_by_100_read_touches_two_blocks() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Data", true);
    let tab = w.create_tab(&ada, &note, "sheet", "Numbers");
    for chunk in 0..10u64 {
        let rows: Vec<Value> = (0..1000u64)
            .map(|i| {
                let r = chunk * 1000 + i;
                Value::Array((0..50u64).map(|c| json!(format!("r{r}c{c}-{}", "x".repeat(40)))).collect())
            })
            .collect();
        let r = set(&mut w, &ada, &note, &tab, ("s1", chunk * 1000, 0), Value::Array(rows), &format!("fill-{chunk}"));
        assert_eq!(r["isError"], false, "{}", r["structuredContent"]);
    }
    assert!(w.kv.max_value_len() <= MAX_VALUE_BYTES, "largest value {}", w.kv.max_value_len());
    let info = w.tab(&ada, &note, &tab);
    assert_eq!(info["sheets"][0]["rows"], 10_000);
    assert_eq!(info["sheets"][0]["cols"], 50);

    w.kv.take_reads();
    let r = w.ok(
        &ada,
        "read_sheet_range",
        json!({"note_id": note, "tab_id": tab, "start_row": 4975, "start_col": 0,
        "num_rows": 100, "num_cols": 100}),
    );
    let blob_reads = w.kv.take_reads().iter().filter(|k| k.contains("/blob/")).count();
    assert!(blob_reads <= 3, "manifest + at most two row blocks, got {blob_reads}");
    let values = r["values"].as_array().unwrap();
    assert_eq!(values.len(), 100);
    assert_eq!(values[0].as_array().unwrap().len(), 100);
    assert!(values[0][0].as_str().unwrap().starts_with("r4975c0-"));
    assert!(values[99][49].as_str().unwrap().starts_with("r5074c49-"));
    assert_eq!(values[99][50], Value::Null);
    let last = w.ok(
        &ada,
        "read_sheet_range",
        json!({"note_id": note, "tab_id": tab, "start_row": 9999, "start_col": 49,
        "num_rows": 100, "num_cols": 1}),
    );
    assert_eq!(last["values"].as_array().unwrap().len(), 1, "clipped at the last row");
    assert!(last["values"][0][0].as_str().unwrap().starts_with("r9999c49-"));
}

#[test]
fn set_range_writes_only_its_cells_and_null_clears() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Data", true);
    let tab = w.create_tab(&ada, &note, "sheet", "Numbers");
    set(&mut w, &ada, &note, &tab, ("s1", 98, 1), json!([[1, 2], [3, 4], [5, 6]]), "a");
    set(&mut w, &ada, &note, &tab, ("s1", 99, 2), json!([[null, "x"]]), "b");
    let r = w.ok(
        &ada,
        "read_sheet_range",
        json!({"note_id": note, "tab_id": tab, "sheet_id": "s1",
        "start_row": 98, "start_col": 0, "num_rows": 3, "num_cols": 4}),
    );
    assert_eq!(r["values"], json!([[null, 1, 2, null], [null, 3, null, "x"], [null, 5, 6, null]]));
}

#[test]
fn unknown_sheet_id_is_not_found_and_out_of_range_writes_are_refused() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Data", true);
    let tab = w.create_tab(&ada, &note, "sheet", "Numbers");
    let r = set(&mut w, &ada, &note, &tab, ("s9", 0, 0), json!([[1]]), "a");
    assert_eq!(r["structuredContent"]["error"], "not_found");
    let before = w.kv.notes_state();
    let r = set(&mut w, &ada, &note, &tab, ("s1", 9_999, 0), json!([[1], [2]]), "b");
    assert_eq!(r["structuredContent"]["error"], "invalid_argument");
    let r = set(&mut w, &ada, &note, &tab, ("s1", 0, 99), json!([[1, 2]]), "c");
    assert_eq!(r["structuredContent"]["error"], "invalid_argument");
    let r = set(&mut w, &ada, &note, &tab, ("s1", 0, 0), json!([[{"formula": "=A1"}]]), "d");
    assert_eq!(r["structuredContent"]["field"], "values");
    assert_eq!(w.kv.notes_state(), before);
}

#[test]
fn replace_tab_data_replaces_sheets_and_new_sheets_get_new_ids() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Data", true);
    let tab = w.create_tab(&ada, &note, "sheet", "Numbers");
    let v = w.version(&ada, &note);
    w.ok(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": tab, "expected_version": v, "idempotency_key": "r",
        "operation": "replace_tab_data", "data": {"sheets": [
            {"sheet_id": "s1", "name": "Costs", "values": [["a", "b"], [1, 2]]},
            {"name": "Extra", "values": [[true]]}]}}),
    );
    let info = w.tab(&ada, &note, &tab);
    assert_eq!(
        info["sheets"],
        json!([
        {"sheet_id": "s1", "name": "Costs", "rows": 2, "cols": 2},
        {"sheet_id": "s2", "name": "Extra", "rows": 1, "cols": 1}])
    );
    let r = w.ok(
        &ada,
        "read_sheet_range",
        json!({"note_id": note, "tab_id": tab, "sheet_id": "s2",
        "start_row": 0, "start_col": 0, "num_rows": 1, "num_cols": 1}),
    );
    assert_eq!(r["values"], json!([[true]]));
    let v = w.version(&ada, &note);
    let r = w.refused(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": tab, "expected_version": v,
        "idempotency_key": "r2", "operation": "replace_tab_data", "data": {"sheets": [{"sheet_id": "s7", "values": []}]}}),
    );
    assert_eq!(r["field"], "data.sheets[0].sheet_id");
}

#[test]
fn read_sheet_range_refuses_more_than_100_by_100_and_non_sheet_tabs() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Data", true);
    let tab = w.create_tab(&ada, &note, "sheet", "Numbers");
    let r = w.refused(
        &ada,
        "read_sheet_range",
        json!({"note_id": note, "tab_id": tab, "start_row": 0, "start_col": 0,
        "num_rows": 101, "num_cols": 1}),
    );
    assert_eq!(r["field"], "num_rows");
    let r = w.refused(
        &ada,
        "read_sheet_range",
        json!({"note_id": note, "tab_id": "markdown", "start_row": 0,
        "start_col": 0, "num_rows": 1, "num_cols": 1}),
    );
    assert_eq!(r["field"], "tab_id");
}
