//! `GET /api/v1/notes/{note}/tabs/{tab}/range?range=A1:C3[&sheet_id=]`: the
//! `read_sheet_range` tool.

use serde_json::Value;

use cairn_kv::Store;

use crate::env::{Env, Identity};
use crate::refusal::{Failure, Refusal};
use crate::tools;

use super::{Ctx, RestReply, tool_args, via_tool};

/// A range in A1 notation (`A1:C3`, or one cell `B2`: letters name the column from `A`,
/// digits the row from 1) as the zero-based `(start_row, start_col, num_rows, num_cols)`
/// of `read_sheet_range`, whose own checks bound it.
fn a1_range(range: Option<&str>) -> Result<(u64, u64, u64, u64), Refusal> {
    let range = range.ok_or_else(|| Refusal::invalid("range", "range (cells such as A1:C3) is required"))?;
    let bad = || Refusal::invalid("range", format!("range must be cells in A1 notation such as A1:C3 or B2, not {range:?}"));
    let cell = |c: &str| -> Option<(u64, u64)> {
        let (letters, digits) = c.split_at(c.find(|ch: char| ch.is_ascii_digit())?);
        let letters_ok = (1..=3).contains(&letters.len()) && letters.bytes().all(|b| b.is_ascii_alphabetic());
        if !letters_ok || digits.len() > 9 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let col = letters.bytes().fold(0, |n, b| n * 26 + u64::from(b.to_ascii_uppercase() - b'A') + 1);
        let row: u64 = digits.parse().ok().filter(|r| *r >= 1)?;
        Some((row - 1, col - 1))
    };
    let (from, to) = range.split_once(':').unwrap_or((range, range));
    let ((r1, c1), (r2, c2)) = (cell(from).ok_or_else(bad)?, cell(to).ok_or_else(bad)?);
    if r2 < r1 || c2 < c1 {
        return Err(Refusal::invalid("range", format!("range {range} must go from its top-left cell to its bottom-right cell")));
    }
    Ok((r1, c1, r2 - r1 + 1, c2 - c1 + 1))
}

/// The tool's arguments: the path's ids, the range and the sheet from the query.
fn build(note_id: &str, tab_id: &str, range: Option<&str>, sheet_id: Option<&str>) -> Result<Value, Refusal> {
    a1_range(range).map(|(row, col, rows, cols)| {
        tool_args([
            ("note_id", Some(note_id.into())),
            ("tab_id", Some(tab_id.into())),
            ("start_row", Some(row.into())),
            ("start_col", Some(col.into())),
            ("num_rows", Some(rows.into())),
            ("num_cols", Some(cols.into())),
            ("sheet_id", sheet_id.map(Value::from)),
        ])
    })
}

/// The tool's arguments from a routed request.
pub(super) fn args(c: Ctx<'_>) -> Result<Value, Refusal> {
    build(c.param("note"), c.param("tab"), c.query("range"), c.query("sheet_id"))
}

/// Cells of a sheet tab (`GET …/tabs/{tab}/range?range=A1:C3[&sheet_id=]`, at most 100 × 100):
/// the `read_sheet_range` tool's result, 200 with `{note_id, tab_id, sheet_id, start_row,
/// start_col, num_rows, num_cols, values, sheet_rows, sheet_cols, version, tab_version,
/// provenance, notice}` (zero-based; empty cells are null).
pub fn read_range(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    note_id: &str,
    tab_id: &str,
    range: Option<&str>,
    sheet_id: Option<&str>,
) -> Result<RestReply, Failure> {
    via_tool(kv, env, who, &tools::read_sheet_range::TOOL, Some(note_id), build(note_id, tab_id, range, sheet_id), 200)
}
