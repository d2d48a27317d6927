//! Sheet tabs. A sheet tab holds one or more sheets (`sheet_id`s `s1`, `s2`, … assigned
//! once per tab). Each sheet stores its cells in row blocks of [`BLOCK_ROWS`] rows, one
//! immutable blob per non-empty block; the tab's manifest lists the sheets and their block
//! hashes and is itself a content-addressed document. A 100-row read touches at most two
//! blocks, and a write rewrites only the blocks it touches.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::args::{MAX_COLS, MAX_LABEL_CHARS, MAX_ROWS, check_cells, check_chars, check_id, parse_object};
use crate::content::{get_blob, get_doc, put_blob, put_doc};
use crate::kv::{MAX_VALUE_BYTES, TenantKv};
use crate::model::{decode, encode};
use crate::refusal::{Failure, Out, Refusal};

/// Rows per stored block.
pub(crate) const BLOCK_ROWS: u64 = 100;
/// Sheets per sheet tab.
pub(crate) const MAX_SHEETS: usize = 20;

/// One sheet: its id, name, used extent and the hashes of its non-empty row blocks.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SheetMeta {
    pub sheet_id: String,
    pub name: String,
    pub rows: u64,
    pub cols: u64,
    pub blocks: BTreeMap<u64, String>,
}

/// The content of a sheet tab.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Manifest {
    pub next_sheet: u64,
    pub sheets: Vec<SheetMeta>,
}

impl Manifest {
    /// A new sheet tab: one empty sheet `s1`.
    pub fn new() -> Self {
        Manifest { next_sheet: 2, sheets: vec![empty_sheet("s1".into(), "Sheet 1".into())] }
    }

    pub fn sheet(&self, id: &str) -> Option<usize> {
        self.sheets.iter().position(|s| s.sheet_id == id)
    }
}

fn empty_sheet(sheet_id: String, name: String) -> SheetMeta {
    SheetMeta { sheet_id, name, rows: 0, cols: 0, blocks: BTreeMap::new() }
}

pub(crate) fn load_manifest(kv: &TenantKv, blobs: &[String]) -> Result<Manifest, Failure> {
    decode("sheet manifest", &get_doc(kv, blobs)?)
}

pub(crate) fn store_manifest(kv: &TenantKv, m: &Manifest) -> Out<(String, Vec<String>)> {
    put_doc(kv, &encode(m), "data")
}

type Block = Vec<Vec<Value>>;

fn load_block(kv: &TenantKv, meta: &SheetMeta, b: u64) -> Result<Block, Failure> {
    match meta.blocks.get(&b) {
        Some(h) => decode("sheet block", &get_blob(kv, h)?),
        None => Ok(Vec::new()),
    }
}

/// Trims a block and stores it; `None` for an empty block. Refuses a block over the limit.
fn store_block(kv: &TenantKv, mut block: Block, field: &str) -> Out<Option<String>> {
    for row in block.iter_mut() {
        while row.last() == Some(&Value::Null) {
            row.pop();
        }
    }
    while block.last().is_some_and(|r| r.is_empty()) {
        block.pop();
    }
    if block.is_empty() {
        return Ok(None);
    }
    let bytes = encode(&block);
    if bytes.len() > MAX_VALUE_BYTES {
        return Err(Refusal::too_large(field, format!("{BLOCK_ROWS} rows of this sheet would exceed {MAX_VALUE_BYTES} bytes: use shorter cells")).into());
    }
    Ok(Some(put_blob(kv, &bytes)?))
}

/// The extent (rows, cols) of the non-null cells of `values` placed at (r0, c0).
fn extent(values: &[Vec<Value>], r0: u64, c0: u64) -> (u64, u64) {
    let (mut rows, mut cols) = (0, 0);
    for (i, row) in values.iter().enumerate() {
        if let Some(j) = row.iter().rposition(|v| !v.is_null()) {
            rows = r0 + i as u64 + 1;
            cols = cols.max(c0 + j as u64 + 1);
        }
    }
    (rows, cols)
}

/// Writes `values` at (r0, c0); null clears a cell. Touches only the blocks in range.
pub(crate) fn set_range(kv: &TenantKv, meta: &mut SheetMeta, r0: u64, c0: u64, values: &[Vec<Value>]) -> Out<()> {
    let widest = values.iter().map(Vec::len).max().unwrap_or(0) as u64;
    if r0 + values.len() as u64 > MAX_ROWS {
        return Err(Refusal::invalid("values", format!("rows past {MAX_ROWS} do not exist: start_row + rows must be at most {MAX_ROWS}")).into());
    }
    if c0 + widest > MAX_COLS {
        return Err(Refusal::invalid("values", format!("columns past {MAX_COLS} do not exist: start_col + cells must be at most {MAX_COLS}")).into());
    }
    if values.is_empty() {
        return Ok(());
    }
    let last = r0 + values.len() as u64 - 1;
    for b in r0 / BLOCK_ROWS..=last / BLOCK_ROWS {
        let mut block = load_block(kv, meta, b)?;
        block.resize(BLOCK_ROWS as usize, Vec::new());
        for (i, row) in values.iter().enumerate() {
            let r = r0 + i as u64;
            if r / BLOCK_ROWS != b {
                continue;
            }
            let target = &mut block[(r % BLOCK_ROWS) as usize];
            let need = c0 as usize + row.len();
            if target.len() < need {
                target.resize(need, Value::Null);
            }
            for (j, v) in row.iter().enumerate() {
                target[c0 as usize + j] = v.clone();
            }
        }
        match store_block(kv, block, "values")? {
            Some(h) => meta.blocks.insert(b, h),
            None => meta.blocks.remove(&b),
        };
    }
    let (rows, cols) = extent(values, r0, c0);
    meta.rows = meta.rows.max(rows);
    meta.cols = meta.cols.max(cols);
    Ok(())
}

/// Reads `nr` × `nc` cells from (r0, c0) (clipped to the sheet's capacity); empty cells
/// are null.
pub(crate) fn read_range(kv: &TenantKv, meta: &SheetMeta, r0: u64, c0: u64, nr: u64, nc: u64) -> Result<Vec<Vec<Value>>, Failure> {
    let nr = nr.min(MAX_ROWS - r0);
    let nc = nc.min(MAX_COLS - c0);
    let mut out = vec![vec![Value::Null; nc as usize]; nr as usize];
    if nr == 0 {
        return Ok(out);
    }
    for b in r0 / BLOCK_ROWS..=(r0 + nr - 1) / BLOCK_ROWS {
        if !meta.blocks.contains_key(&b) {
            continue;
        }
        let block = load_block(kv, meta, b)?;
        for (i, row) in block.iter().enumerate() {
            let r = b * BLOCK_ROWS + i as u64;
            if r < r0 || r >= r0 + nr {
                continue;
            }
            for j in 0..nc {
                if let Some(v) = row.get((c0 + j) as usize) {
                    out[(r - r0) as usize][j as usize] = v.clone();
                }
            }
        }
    }
    Ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SheetData {
    sheets: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SheetIn {
    #[serde(default)]
    sheet_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    values: Vec<Vec<Value>>,
}

/// `replace_tab_data` on a sheet tab: `data = {"sheets": [{"sheet_id"?, "name"?, "values"}]}`.
/// Listed sheets replace the tab's sheets in that order; a listed `sheet_id` must exist,
/// an item without one is a new sheet; sheets not listed are removed.
pub(crate) fn replace(kv: &TenantKv, old: &Manifest, data: Map<String, Value>) -> Out<Manifest> {
    let data: SheetData = parse_object(data, "data.")?;
    if data.sheets.is_empty() || data.sheets.len() > MAX_SHEETS {
        return Err(Refusal::invalid("data.sheets", format!("a sheet tab holds 1-{MAX_SHEETS} sheets")).into());
    }
    let mut next = Manifest { next_sheet: old.next_sheet, sheets: Vec::new() };
    for (i, item) in data.sheets.into_iter().enumerate() {
        let field = format!("data.sheets[{i}]");
        let Value::Object(obj) = item else {
            return Err(Refusal::invalid(&field, format!("{field} must be an object")).into());
        };
        let s: SheetIn = parse_object(obj, &format!("{field}."))?;
        let id = match s.sheet_id {
            Some(id) => {
                check_id(&format!("{field}.sheet_id"), &id)?;
                if old.sheet(&id).is_none() || next.sheet(&id).is_some() {
                    return Err(Refusal::invalid(&format!("{field}.sheet_id"), format!("sheet {id} is not a sheet of this tab (or is listed twice)")).into());
                }
                id
            }
            None => {
                next.next_sheet += 1;
                format!("s{}", next.next_sheet - 1)
            }
        };
        let name = match s.name {
            Some(n) => {
                check_chars(&format!("{field}.name"), &n, 1, MAX_LABEL_CHARS)?;
                n
            }
            None => old.sheet(&id).map(|k| old.sheets[k].name.clone()).unwrap_or_else(|| format!("Sheet {}", next.sheets.len() + 1)),
        };
        check_cells(&format!("{field}.values"), &s.values, MAX_ROWS as usize)?;
        let mut meta = empty_sheet(id, name);
        for (b, rows) in s.values.chunks(BLOCK_ROWS as usize).enumerate() {
            if let Some(h) = store_block(kv, rows.to_vec(), &format!("{field}.values"))? {
                meta.blocks.insert(b as u64, h);
            }
        }
        let (rows, cols) = extent(&s.values, 0, 0);
        meta.rows = rows;
        meta.cols = cols;
        next.sheets.push(meta);
    }
    Ok(next)
}
