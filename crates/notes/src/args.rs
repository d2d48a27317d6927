//! Typed tool arguments: serde with unknown fields denied, then limit checks. Every
//! failure is an `invalid_argument` (or `too_large`) refusal naming the field.
//! The published JSON Schemas in [`crate::tools`] state the same rules; a test keeps the
//! two in step.

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::reply::Refusal;
use crate::store::MAX_DOC_BYTES;

/// Items per page of a listing.
pub(crate) const MAX_LIMIT: u64 = 50;
pub(crate) const DEFAULT_LIMIT: u64 = 20;
pub(crate) const MAX_ID_CHARS: usize = 64;
pub(crate) const MAX_KEY_CHARS: usize = 200;
pub(crate) const MAX_CURSOR_CHARS: usize = 200;
pub(crate) const MAX_LABEL_CHARS: usize = 100;
pub(crate) const MAX_NOTE_TITLE_CHARS: usize = 200;
pub(crate) const MAX_SOURCE_TITLE_CHARS: usize = 500;
pub(crate) const MAX_URL_CHARS: usize = 2048;
pub(crate) const MAX_SLIDE_TITLE_CHARS: usize = 500;
pub(crate) const MAX_SLIDE_TEXT_CHARS: usize = 10_000;
pub(crate) const MAX_OUTLINE: usize = 20;
pub(crate) const MAX_RANGE: u64 = 100;
/// Rows of one `sheet_set_range` call.
pub(crate) const MAX_SET_ROWS: usize = 1_000;
pub(crate) const MAX_CELL_CHARS: usize = 5_000;
/// Sheet capacity: rows and columns of every sheet.
pub(crate) const MAX_ROWS: u64 = 10_000;
pub(crate) const MAX_COLS: u64 = 100;

/// Parses tool arguments into `T` (absent arguments are `{}`); a failure names the
/// offending field (see [`parse_object`]).
pub(crate) fn parse<T: DeserializeOwned>(args: Value) -> Result<T, Refusal> {
    let obj = match args {
        Value::Null => Map::new(),
        Value::Object(m) => m,
        _ => {
            return Err(Refusal::invalid(
                "arguments",
                "arguments must be a JSON object",
            ));
        }
    };
    parse_object(obj, "")
}

/// Like [`parse`] for a nested object; `prefix` is prepended to field names (`data.`).
///
/// Blame works field by field: `T` is deserialized from `{k: v}` alone. A value that is
/// fine leaves only the baseline error of `{}` (the first required field missing), so any
/// other error is about `k` (its type, an unknown name, or a field missing inside it).
pub(crate) fn parse_object<T: DeserializeOwned>(
    obj: Map<String, Value>,
    prefix: &str,
) -> Result<T, Refusal> {
    let err = match serde_json::from_value::<T>(Value::Object(obj.clone())) {
        Ok(v) => return Ok(v),
        Err(e) => e.to_string(),
    };
    let baseline = serde_json::from_value::<T>(Value::Object(Map::new()))
        .err()
        .map(|e| e.to_string());
    let first_required = baseline.as_deref().and_then(missing_name);
    for (k, v) in &obj {
        let mut one = Map::new();
        one.insert(k.clone(), v.clone());
        let Err(e) = serde_json::from_value::<T>(Value::Object(one)) else {
            continue;
        };
        let msg = e.to_string();
        let benign = Some(&msg) == baseline.as_ref()
            || (first_required == Some(k.as_str()) && missing_name(&msg).is_some());
        if !benign {
            return Err(Refusal::invalid(
                &format!("{prefix}{k}"),
                format!("{prefix}{k}: {msg}"),
            ));
        }
    }
    if let Some(name) = missing_name(&err) {
        return Err(Refusal::invalid(
            &format!("{prefix}{name}"),
            format!("{prefix}{name} is required"),
        ));
    }
    let field = if prefix.is_empty() {
        "arguments".to_string()
    } else {
        prefix.trim_end_matches('.').to_string()
    };
    Err(Refusal::invalid(&field, err))
}

/// The field named by serde's "missing field `x`" message.
fn missing_name(msg: &str) -> Option<&str> {
    msg.strip_prefix("missing field `")
        .and_then(|r| r.split('`').next())
}

/// Optional fields must be absent or a real value: an explicit `null` is refused, as the
/// published schemas refuse it.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

pub(crate) fn check_id(field: &str, v: &str) -> Result<(), Refusal> {
    let ok = (1..=MAX_ID_CHARS).contains(&v.len())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(Refusal::invalid(
            field,
            format!("{field} must be an id from a listing: 1-{MAX_ID_CHARS} of A-Z a-z 0-9 _ -"),
        ))
    }
}

pub(crate) fn check_chars(field: &str, v: &str, min: usize, max: usize) -> Result<(), Refusal> {
    let n = v.chars().count();
    if n < min || n > max {
        return Err(Refusal::invalid(
            field,
            format!("{field} must have {min}-{max} characters, not {n}"),
        ));
    }
    Ok(())
}

fn check_range(field: &str, v: u64, min: u64, max: u64) -> Result<(), Refusal> {
    if v < min || v > max {
        return Err(Refusal::invalid(
            field,
            format!("{field} must be between {min} and {max}, not {v}"),
        ));
    }
    Ok(())
}

fn check_key(v: &str) -> Result<(), Refusal> {
    check_chars("idempotency_key", v, 1, MAX_KEY_CHARS)
}

fn check_hash(field: &str, v: &str) -> Result<(), Refusal> {
    let ok = v.len() == 64
        && v.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if ok {
        Ok(())
    } else {
        Err(Refusal::invalid(
            field,
            format!("{field} must be 64 lower-case hex digits (a content_hash from a read)"),
        ))
    }
}

fn check_limit(limit: Option<u64>) -> Result<(), Refusal> {
    limit.map_or(Ok(()), |l| check_range("limit", l, 1, MAX_LIMIT))
}

fn check_cursor(c: &Option<String>) -> Result<(), Refusal> {
    c.as_deref()
        .map_or(Ok(()), |c| check_chars("cursor", c, 1, MAX_CURSOR_CHARS))
}

/// Checks sheet cells: scalars only, strings of at most [`MAX_CELL_CHARS`].
pub(crate) fn check_cells(
    field: &str,
    rows: &[Vec<Value>],
    max_rows: usize,
) -> Result<(), Refusal> {
    if rows.len() > max_rows {
        return Err(Refusal::invalid(
            field,
            format!("{field} may have at most {max_rows} rows"),
        ));
    }
    for row in rows {
        if row.len() as u64 > MAX_COLS {
            return Err(Refusal::invalid(
                field,
                format!("{field}: a row may have at most {MAX_COLS} cells"),
            ));
        }
        for cell in row {
            match cell {
                Value::Array(_) | Value::Object(_) => {
                    return Err(Refusal::invalid(
                        field,
                        format!("{field}: a cell is a string, number, boolean or null"),
                    ));
                }
                Value::String(s) if s.chars().count() > MAX_CELL_CHARS => {
                    return Err(Refusal::invalid(
                        field,
                        format!("{field}: a cell holds at most {MAX_CELL_CHARS} characters"),
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListNotes {
    #[serde(default, deserialize_with = "present")]
    pub cursor: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub limit: Option<u64>,
}

impl ListNotes {
    pub fn check(&self) -> Result<(), Refusal> {
        check_cursor(&self.cursor)?;
        check_limit(self.limit)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListNoteTabs {
    pub note_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadNoteTab {
    pub note_id: String,
    pub tab_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadSheetRange {
    pub note_id: String,
    pub tab_id: String,
    pub start_row: u64,
    pub start_col: u64,
    pub num_rows: u64,
    pub num_cols: u64,
    #[serde(default, deserialize_with = "present")]
    pub sheet_id: Option<String>,
}

impl ReadSheetRange {
    pub fn check(&self) -> Result<(), Refusal> {
        check_id("note_id", &self.note_id)?;
        check_id("tab_id", &self.tab_id)?;
        check_range("start_row", self.start_row, 0, MAX_ROWS - 1)?;
        check_range("start_col", self.start_col, 0, MAX_COLS - 1)?;
        check_range("num_rows", self.num_rows, 1, MAX_RANGE)?;
        check_range("num_cols", self.num_cols, 1, MAX_RANGE)?;
        self.sheet_id
            .as_deref()
            .map_or(Ok(()), |s| check_id("sheet_id", s))
    }
}

/// Which attachments to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AttachKind {
    Files,
    Sources,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListNoteAttachments {
    pub note_id: String,
    #[serde(default, deserialize_with = "present")]
    pub kind: Option<AttachKind>,
    #[serde(default, deserialize_with = "present")]
    pub limit: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    pub cursor: Option<String>,
}

impl ListNoteAttachments {
    pub fn check(&self) -> Result<(), Refusal> {
        check_id("note_id", &self.note_id)?;
        check_cursor(&self.cursor)?;
        check_limit(self.limit)
    }
}

/// Which version `expected_version` is compared with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum VersionScope {
    /// The note's version: moved by a write anywhere in the note (the default).
    #[default]
    Note,
    /// The tab's own version.
    Tab,
}

/// The operations of `edit_note_tab`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Operation {
    ReplaceText,
    ReplaceTabData,
    SlideAdd,
    SlidesAddOutline,
    SheetSetRange,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::ReplaceText => "replace_text",
            Operation::ReplaceTabData => "replace_tab_data",
            Operation::SlideAdd => "slide_add",
            Operation::SlidesAddOutline => "slides_add_outline",
            Operation::SheetSetRange => "sheet_set_range",
        }
    }

    /// The operation fields this operation requires, then those it also allows.
    pub fn fields(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            Operation::ReplaceText => (&["text"], &[]),
            Operation::ReplaceTabData => (&["data"], &[]),
            Operation::SlideAdd => (&["title"], &["body", "notes"]),
            Operation::SlidesAddOutline => (&["slides"], &[]),
            Operation::SheetSetRange => (&["sheet_id", "start_row", "start_col", "values"], &[]),
        }
    }
}

/// Every operation field of `edit_note_tab`.
pub(crate) const OPERATION_FIELDS: [&str; 10] = [
    "text",
    "data",
    "title",
    "body",
    "notes",
    "slides",
    "sheet_id",
    "start_row",
    "start_col",
    "values",
];

/// One slide as an agent may send it: title, body, notes and nothing else.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SlideIn {
    pub title: String,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub body: Option<String>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub notes: Option<String>,
}

pub(crate) fn check_slide(field: &str, s: &SlideIn) -> Result<(), Refusal> {
    check_chars(
        &format!("{field}.title"),
        &s.title,
        0,
        MAX_SLIDE_TITLE_CHARS,
    )?;
    if let Some(b) = &s.body {
        check_chars(&format!("{field}.body"), b, 0, MAX_SLIDE_TEXT_CHARS)?;
    }
    if let Some(n) = &s.notes {
        check_chars(&format!("{field}.notes"), n, 0, MAX_SLIDE_TEXT_CHARS)?;
    }
    Ok(())
}

pub(crate) fn check_outline(slides: &[SlideIn]) -> Result<(), Refusal> {
    if slides.is_empty() || slides.len() > MAX_OUTLINE {
        return Err(Refusal::invalid(
            "slides",
            format!(
                "slides must hold 1-{MAX_OUTLINE} items, not {}",
                slides.len()
            ),
        ));
    }
    for (i, s) in slides.iter().enumerate() {
        check_slide(&format!("slides[{i}]"), s)?;
    }
    Ok(())
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditNoteTab {
    pub note_id: String,
    pub tab_id: String,
    pub expected_version: u64,
    pub idempotency_key: String,
    pub operation: Operation,
    #[serde(default, deserialize_with = "present")]
    pub version_scope: Option<VersionScope>,
    #[serde(default, deserialize_with = "present")]
    pub base_content_hash: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub text: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub data: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "present")]
    pub title: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub body: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub notes: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub slides: Option<Vec<SlideIn>>,
    #[serde(default, deserialize_with = "present")]
    pub sheet_id: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub start_row: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    pub start_col: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    pub values: Option<Vec<Vec<Value>>>,
}

impl EditNoteTab {
    fn has(&self, field: &str) -> bool {
        match field {
            "text" => self.text.is_some(),
            "data" => self.data.is_some(),
            "title" => self.title.is_some(),
            "body" => self.body.is_some(),
            "notes" => self.notes.is_some(),
            "slides" => self.slides.is_some(),
            "sheet_id" => self.sheet_id.is_some(),
            "start_row" => self.start_row.is_some(),
            "start_col" => self.start_col.is_some(),
            "values" => self.values.is_some(),
            _ => false,
        }
    }

    pub fn scope(&self) -> VersionScope {
        self.version_scope.unwrap_or_default()
    }

    pub fn check(&self) -> Result<(), Refusal> {
        check_id("note_id", &self.note_id)?;
        check_id("tab_id", &self.tab_id)?;
        check_key(&self.idempotency_key)?;
        if let Some(h) = &self.base_content_hash {
            check_hash("base_content_hash", h)?;
        }
        let op = self.operation.as_str();
        let (required, optional) = self.operation.fields();
        for f in required {
            if !self.has(f) {
                return Err(Refusal::invalid(
                    f,
                    format!("{f} is required by operation {op}"),
                ));
            }
        }
        for f in OPERATION_FIELDS {
            if self.has(f) && !required.contains(&f) && !optional.contains(&f) {
                return Err(Refusal::invalid(
                    f,
                    format!("{f} is not used by operation {op}"),
                ));
            }
        }
        if let Some(t) = &self.text
            && t.len() > MAX_DOC_BYTES
        {
            return Err(Refusal::too_large(
                "text",
                format!(
                    "text of {} bytes exceeds the limit of {MAX_DOC_BYTES} bytes",
                    t.len()
                ),
            ));
        }
        if let Some(t) = &self.title {
            check_chars("title", t, 0, MAX_SLIDE_TITLE_CHARS)?;
        }
        if let Some(b) = &self.body {
            check_chars("body", b, 0, MAX_SLIDE_TEXT_CHARS)?;
        }
        if let Some(n) = &self.notes {
            check_chars("notes", n, 0, MAX_SLIDE_TEXT_CHARS)?;
        }
        if let Some(s) = &self.slides {
            check_outline(s)?;
        }
        if let Some(s) = &self.sheet_id {
            check_id("sheet_id", s)?;
        }
        if let Some(r) = self.start_row {
            check_range("start_row", r, 0, MAX_ROWS - 1)?;
        }
        if let Some(c) = self.start_col {
            check_range("start_col", c, 0, MAX_COLS - 1)?;
        }
        if let Some(v) = &self.values {
            if v.is_empty() {
                return Err(Refusal::invalid(
                    "values",
                    "values must hold at least one row",
                ));
            }
            check_cells("values", v, MAX_SET_ROWS)?;
        }
        Ok(())
    }
}

/// The tab types `create_note_tab` can make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum NewTabType {
    Slides,
    Sheet,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateNoteTab {
    pub note_id: String,
    pub expected_version: u64,
    pub idempotency_key: String,
    pub tab_type: NewTabType,
    #[serde(default, deserialize_with = "present")]
    pub label: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub slides: Option<Vec<SlideIn>>,
}

impl CreateNoteTab {
    pub fn check(&self) -> Result<(), Refusal> {
        check_id("note_id", &self.note_id)?;
        check_key(&self.idempotency_key)?;
        if let Some(l) = &self.label {
            check_chars("label", l, 1, MAX_LABEL_CHARS)?;
        }
        if let Some(s) = &self.slides {
            if self.tab_type != NewTabType::Slides {
                return Err(Refusal::invalid(
                    "slides",
                    "slides is only used with tab_type slides",
                ));
            }
            check_outline(s)?;
        }
        Ok(())
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AddNoteSource {
    pub note_id: String,
    pub expected_version: u64,
    pub idempotency_key: String,
    pub title: String,
    pub url: String,
}

impl AddNoteSource {
    pub fn check(&self) -> Result<(), Refusal> {
        check_id("note_id", &self.note_id)?;
        check_key(&self.idempotency_key)?;
        check_chars("title", &self.title, 1, MAX_SOURCE_TITLE_CHARS)?;
        check_chars("url", &self.url, 1, MAX_URL_CHARS)
    }
}

/// Claim ttl bounds and default, in seconds.
pub(crate) const MIN_TTL_SECONDS: u64 = 1;
pub(crate) const MAX_TTL_SECONDS: u64 = 3600;
pub(crate) const DEFAULT_TTL_SECONDS: u64 = 600;
/// Longest claim note, in characters.
pub(crate) const MAX_CLAIM_NOTE_CHARS: usize = 2_000;
/// Longest claim id: `clm-` + note id (≤ 64) + `-` + seq (≤ 13) + `-` + 8.
pub(crate) const MAX_CLAIM_ID_CHARS: usize = 91;

pub(crate) fn check_ttl(ttl: Option<u64>) -> Result<(), Refusal> {
    ttl.map_or(Ok(()), |t| {
        check_range("ttl_seconds", t, MIN_TTL_SECONDS, MAX_TTL_SECONDS)
    })
}

/// A parsed claim id `clm-<note_id>-<seq base36>-<8 random>`: the note it lives in and
/// its sequence number (`None` when the digits overflow: such a claim was never issued).
#[derive(Debug, Clone)]
pub(crate) struct ClaimRef {
    pub note_id: String,
    pub seq: Option<u64>,
}

fn base36_part(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
}

/// Splits a claim id from the right (the note id may contain `-`, the two last parts
/// cannot): the same strings the published pattern accepts.
pub(crate) fn parse_claim_id(id: &str) -> Result<ClaimRef, Refusal> {
    let bad = || {
        Refusal::invalid(
            "claim_id",
            "claim_id must be a claim_id returned by claim_note (clm-<note_id>-<seq>-<random>)",
        )
    };
    let rest = id.strip_prefix("clm-").ok_or_else(bad)?;
    let mut parts = rest.rsplitn(3, '-');
    let (Some(rand), Some(seq), Some(note_id)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    if !base36_part(rand, 8, 8) || !base36_part(seq, 1, 13) {
        return Err(bad());
    }
    check_id("note_id", note_id).map_err(|_| bad())?;
    Ok(ClaimRef {
        note_id: note_id.to_string(),
        seq: u64::from_str_radix(seq, 36).ok(),
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClaimNoteArgs {
    pub note_id: String,
    #[serde(default, deserialize_with = "present")]
    pub tab_id: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub ttl_seconds: Option<u64>,
}

impl ClaimNoteArgs {
    pub fn check(&self) -> Result<(), Refusal> {
        check_id("note_id", &self.note_id)?;
        if let Some(t) = &self.tab_id {
            check_id("tab_id", t)?;
        }
        check_ttl(self.ttl_seconds)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RenewClaimArgs {
    pub claim_id: String,
    #[serde(default, deserialize_with = "present")]
    pub ttl_seconds: Option<u64>,
}

impl RenewClaimArgs {
    pub fn check(&self) -> Result<ClaimRef, Refusal> {
        let r = parse_claim_id(&self.claim_id)?;
        check_ttl(self.ttl_seconds)?;
        Ok(r)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReleaseClaimArgs {
    pub claim_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PostClaimNoteArgs {
    pub claim_id: String,
    pub text: String,
}

impl PostClaimNoteArgs {
    pub fn check(&self) -> Result<ClaimRef, Refusal> {
        let r = parse_claim_id(&self.claim_id)?;
        check_chars("text", &self.text, 1, MAX_CLAIM_NOTE_CHARS)?;
        Ok(r)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListClaimsArgs {
    #[serde(default, deserialize_with = "present")]
    pub note_id: Option<String>,
}

impl ListClaimsArgs {
    pub fn check(&self) -> Result<(), Refusal> {
        self.note_id
            .as_deref()
            .map_or(Ok(()), |n| check_id("note_id", n))
    }
}
