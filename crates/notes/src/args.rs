//! What every tool's typed arguments share: the parser (serde with unknown
//! fields denied, blame field by field), the limits, the checks, and the
//! argument types more than one tool takes (slides, version scope, claim ids).
//! Every failure is an `invalid_argument` (or `too_large`) refusal naming the
//! field. Each tool's own argument struct lives in its file under
//! [`crate::tools`], next to the JSON Schema that states the same rules
//! (derived from the types where a tool has operations, as
//! `edit_note_tab`'s are: [`crate::schema::derived`]); the
//! `schema_agreement` test checks the two against real calls.

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::refusal::Refusal;

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
            return Err(Refusal::invalid("arguments", "arguments must be a JSON object"));
        }
    };
    parse_object(obj, "")
}

/// Like [`parse`] for a nested object; `prefix` is prepended to field names (`data.`).
///
/// Blame works field by field: `T` is deserialized from `{k: v}` alone. A value that is
/// fine leaves only the baseline error of `{}` (the first required field missing), so any
/// other error is about `k` (its type, an unknown name, or a field missing inside it).
pub(crate) fn parse_object<T: DeserializeOwned>(obj: Map<String, Value>, prefix: &str) -> Result<T, Refusal> {
    // Deserialize from a borrowed view: the success path copies each string
    // once, into `T`, whatever its size.
    let whole = Value::Object(obj);
    let err = match T::deserialize(&whole) {
        Ok(v) => return Ok(v),
        Err(e) => e.to_string(),
    };
    let Value::Object(obj) = whole else { unreachable!("built as an object above") };
    let baseline = serde_json::from_value::<T>(Value::Object(Map::new())).err().map(|e| e.to_string());
    let first_required = baseline.as_deref().and_then(missing_name);
    for (k, v) in &obj {
        let mut one = Map::new();
        one.insert(k.clone(), v.clone());
        let Err(e) = serde_json::from_value::<T>(Value::Object(one)) else {
            continue;
        };
        let msg = e.to_string();
        let benign = Some(&msg) == baseline.as_ref() || (first_required == Some(k.as_str()) && missing_name(&msg).is_some());
        if !benign {
            return Err(Refusal::invalid(&format!("{prefix}{k}"), format!("{prefix}{k}: {msg}")));
        }
    }
    if let Some(name) = missing_name(&err) {
        return Err(Refusal::invalid(&format!("{prefix}{name}"), format!("{prefix}{name} is required")));
    }
    let field = if prefix.is_empty() { "arguments".to_string() } else { prefix.trim_end_matches('.').to_string() };
    Err(Refusal::invalid(&field, err))
}

/// The field named by serde's "missing field `x`" message.
fn missing_name(msg: &str) -> Option<&str> {
    msg.strip_prefix("missing field `").and_then(|r| r.split('`').next())
}

/// Optional fields must be absent or a real value: an explicit `null` is refused, as the
/// published schemas refuse it.
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// The character cap of one read: the caller's `max_chars` (1 to
/// [`crate::env::MAX_READ_CHARS`]), else the deployment's default.
pub(crate) fn read_cap(env: &dyn crate::env::Env, max_chars: Option<u64>) -> Result<usize, Refusal> {
    use crate::env::MAX_READ_CHARS;
    match max_chars {
        None => Ok(env.read_max_chars()),
        Some(n) if (1..=MAX_READ_CHARS as u64).contains(&n) => Ok(n as usize),
        Some(_) => Err(Refusal::invalid("max_chars", format!("max_chars must be between 1 and {MAX_READ_CHARS}"))),
    }
}

/// The most bytes of a `section_id`.
pub(crate) const MAX_SECTION_ID_BYTES: usize = 200;

/// A `section_id`, when sent, has the shape [`crate::sections`] gives ids: 1-200 bytes of
/// letters, digits and `-`.
pub(crate) fn check_section_id(v: Option<&str>) -> Result<(), Refusal> {
    match v {
        Some(s) if s.is_empty() || s.len() > MAX_SECTION_ID_BYTES || !s.chars().all(|c| c.is_alphanumeric() || c == '-') => {
            Err(Refusal::invalid("section_id", "section_id must be a section_id from read_note_outline (letters, digits and -, at most 200 bytes)"))
        }
        _ => Ok(()),
    }
}

pub(crate) fn check_id(field: &str, v: &str) -> Result<(), Refusal> {
    let ok = (1..=MAX_ID_CHARS).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok { Ok(()) } else { Err(Refusal::invalid(field, format!("{field} must be an id from a listing: 1-{MAX_ID_CHARS} of A-Z a-z 0-9 _ -"))) }
}

pub(crate) fn check_chars(field: &str, v: &str, min: usize, max: usize) -> Result<(), Refusal> {
    let n = v.chars().count();
    if n < min || n > max {
        return Err(Refusal::invalid(field, format!("{field} must have {min}-{max} characters, not {n}")));
    }
    Ok(())
}

pub(crate) fn check_range(field: &str, v: u64, min: u64, max: u64) -> Result<(), Refusal> {
    if v < min || v > max {
        return Err(Refusal::invalid(field, format!("{field} must be between {min} and {max}, not {v}")));
    }
    Ok(())
}

pub(crate) fn check_key(v: &str) -> Result<(), Refusal> {
    check_chars("idempotency_key", v, 1, MAX_KEY_CHARS)
}

pub(crate) fn check_hash(field: &str, v: &str) -> Result<(), Refusal> {
    let ok = v.len() == 64 && v.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if ok { Ok(()) } else { Err(Refusal::invalid(field, format!("{field} must be 64 lower-case hex digits (a content_hash from a read)"))) }
}

pub(crate) fn check_limit(limit: Option<u64>) -> Result<(), Refusal> {
    limit.map_or(Ok(()), |l| check_range("limit", l, 1, MAX_LIMIT))
}

/// An opaque cursor: `c1` and the hex of `raw` (a listing's own position text).
pub(crate) fn cursor_token(raw: &str) -> String {
    format!("c1{}", crate::model::hex(raw.as_bytes()))
}

/// The position text of a cursor made by [`cursor_token`], or `invalid_argument` naming `cursor`.
pub(crate) fn cursor_text(cursor: &str) -> Result<String, Refusal> {
    cursor
        .strip_prefix("c1")
        .and_then(crate::model::unhex)
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| Refusal::invalid("cursor", "cursor is not one this listing returned"))
}

pub(crate) fn check_cursor(c: &Option<String>) -> Result<(), Refusal> {
    c.as_deref().map_or(Ok(()), |c| check_chars("cursor", c, 1, MAX_CURSOR_CHARS))
}

/// Checks sheet cells: scalars only, strings of at most [`MAX_CELL_CHARS`].
pub(crate) fn check_cells(field: &str, rows: &[Vec<Value>], max_rows: usize) -> Result<(), Refusal> {
    if rows.len() > max_rows {
        return Err(Refusal::invalid(field, format!("{field} may have at most {max_rows} rows")));
    }
    for row in rows {
        if row.len() as u64 > MAX_COLS {
            return Err(Refusal::invalid(field, format!("{field}: a row may have at most {MAX_COLS} cells")));
        }
        for cell in row {
            match cell {
                Value::Array(_) | Value::Object(_) => {
                    return Err(Refusal::invalid(field, format!("{field}: a cell is a string, number, boolean or null")));
                }
                Value::String(s) if s.chars().count() > MAX_CELL_CHARS => {
                    return Err(Refusal::invalid(field, format!("{field}: a cell holds at most {MAX_CELL_CHARS} characters")));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Which version `expected_version` is compared with: `note`, the note's
/// version, moved by a write anywhere in the note (the default); `tab`, the
/// tab's own version. (Said here, not on each variant, so its schema is a
/// plain `enum` of names, which every client reads.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum VersionScope {
    #[default]
    Note,
    Tab,
}

/// One slide as an agent may send it: title, body, notes and nothing else.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SlideIn {
    /// slide title
    #[schemars(length(max = MAX_SLIDE_TITLE_CHARS))]
    pub title: String,
    /// slide body
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(max = MAX_SLIDE_TEXT_CHARS))]
    pub body: Option<String>,
    /// speaker notes
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(max = MAX_SLIDE_TEXT_CHARS))]
    pub notes: Option<String>,
}

/// Checks one slide's fields; `prefix` goes before each field's name in a
/// refusal (`slides[2].`, `data.slides[0].`, or nothing for a slide sent as
/// the arguments themselves).
pub(crate) fn check_slide(prefix: &str, s: &SlideIn) -> Result<(), Refusal> {
    check_chars(&format!("{prefix}title"), &s.title, 0, MAX_SLIDE_TITLE_CHARS)?;
    if let Some(b) = &s.body {
        check_chars(&format!("{prefix}body"), b, 0, MAX_SLIDE_TEXT_CHARS)?;
    }
    if let Some(n) = &s.notes {
        check_chars(&format!("{prefix}notes"), n, 0, MAX_SLIDE_TEXT_CHARS)?;
    }
    Ok(())
}

pub(crate) fn check_outline(slides: &[SlideIn]) -> Result<(), Refusal> {
    if slides.is_empty() || slides.len() > MAX_OUTLINE {
        return Err(Refusal::invalid("slides", format!("slides must hold 1-{MAX_OUTLINE} items, not {}", slides.len())));
    }
    for (i, s) in slides.iter().enumerate() {
        check_slide(&format!("slides[{i}]."), s)?;
    }
    Ok(())
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
    ttl.map_or(Ok(()), |t| check_range("ttl_seconds", t, MIN_TTL_SECONDS, MAX_TTL_SECONDS))
}

/// A parsed claim id `clm-<note_id>-<seq base36>-<8 random>`: the note it lives in and
/// its sequence number (`None` when the digits overflow: such a claim was never issued).
#[derive(Debug, Clone)]
pub(crate) struct ClaimRef {
    pub note_id: String,
    pub seq: Option<u64>,
}

fn base36_part(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
}

/// Splits a claim id from the right (the note id may contain `-`, the two last parts
/// cannot): the same strings the published pattern accepts.
pub(crate) fn parse_claim_id(id: &str) -> Result<ClaimRef, Refusal> {
    let bad = || Refusal::invalid("claim_id", "claim_id must be a claim_id returned by claim_note (clm-<note_id>-<seq>-<random>)");
    let rest = id.strip_prefix("clm-").ok_or_else(bad)?;
    let mut parts = rest.rsplitn(3, '-');
    let (Some(rand), Some(seq), Some(note_id)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    if !base36_part(rand, 8, 8) || !base36_part(seq, 1, 13) {
        return Err(bad());
    }
    check_id("note_id", note_id).map_err(|_| bad())?;
    Ok(ClaimRef { note_id: note_id.to_string(), seq: u64::from_str_radix(seq, 36).ok() })
}

/// An opaque cursor: a tag and a position (see [`cursor_token`]).
pub(crate) fn encode_cursor(tag: &str, pos: usize) -> String {
    cursor_token(&format!("{tag}:{pos}"))
}

/// The position a cursor of listing `tag` points at (0 without a cursor).
pub(crate) fn decode_cursor(tag: &str, cursor: Option<&str>) -> Result<usize, crate::refusal::Refusal> {
    let Some(c) = cursor else { return Ok(0) };
    let bad = || crate::refusal::Refusal::invalid("cursor", "cursor is not one this listing returned");
    let raw = cursor_text(c)?;
    let (t, pos) = raw.split_once(':').ok_or_else(bad)?;
    if t != tag {
        return Err(bad());
    }
    pos.parse().map_err(|_| bad())
}
