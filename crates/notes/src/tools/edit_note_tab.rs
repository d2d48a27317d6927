//! `edit_note_tab`: change one tab, named by its exact id, conditionally on the
//! version the caller read, once per idempotency key.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Call, KEY_RULE, ON_CONFLICT, REPLACES, WRITE_SCOPE};
use crate::args::{
    MAX_CELL_CHARS, MAX_COLS, MAX_ROWS, MAX_SET_ROWS, MAX_SLIDE_TEXT_CHARS, MAX_SLIDE_TITLE_CHARS, SlideIn, VersionScope, check_cells, check_chars, check_hash,
    check_id, check_key, check_outline, check_range, parse,
};
use crate::content::MAX_DOC_BYTES;
use crate::edit::{Edit, OPERATION_FIELDS, Operation, Patch, edit_tab_with};
use crate::model::sha_hex;
use crate::refusal::{Out, Refusal};
use crate::schema::{id, key, note_id, object, outline};
use crate::write::{Fingerprint, WriteSpec, fingerprint};

tool!("edit_note_tab", "Edit a note tab", WRITE_SCOPE, REPLACES);

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    note_id: String,
    tab_id: String,
    expected_version: crate::version::Version,
    idempotency_key: String,
    operation: Operation,
    #[serde(default, deserialize_with = "crate::args::present")]
    version_scope: Option<VersionScope>,
    #[serde(default, deserialize_with = "crate::args::present")]
    base_content_hash: Option<String>,
    #[serde(default, deserialize_with = "crate::args::present")]
    text: Option<String>,
    #[serde(default, deserialize_with = "crate::args::present", skip_serializing_if = "Option::is_none")]
    old_text: Option<String>,
    #[serde(default, deserialize_with = "crate::args::present", skip_serializing_if = "Option::is_none")]
    new_text: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    rebase: bool,
    #[serde(default, deserialize_with = "crate::args::present")]
    data: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "crate::args::present")]
    title: Option<String>,
    #[serde(default, deserialize_with = "crate::args::present")]
    body: Option<String>,
    #[serde(default, deserialize_with = "crate::args::present")]
    notes: Option<String>,
    #[serde(default, deserialize_with = "crate::args::present")]
    slides: Option<Vec<SlideIn>>,
    #[serde(default, deserialize_with = "crate::args::present")]
    sheet_id: Option<String>,
    #[serde(default, deserialize_with = "crate::args::present")]
    start_row: Option<u64>,
    #[serde(default, deserialize_with = "crate::args::present")]
    start_col: Option<u64>,
    #[serde(default, deserialize_with = "crate::args::present")]
    values: Option<Vec<Vec<Value>>>,
    #[serde(default, deserialize_with = "crate::args::present", skip_serializing_if = "Option::is_none")]
    section_id: Option<String>,
    #[serde(default, deserialize_with = "crate::args::present", skip_serializing_if = "Option::is_none")]
    expected_section_hash: Option<String>,
}

impl Args {
    fn has(&self, field: &str) -> bool {
        match field {
            "text" => self.text.is_some(),
            "old_text" => self.old_text.is_some(),
            "new_text" => self.new_text.is_some(),
            "data" => self.data.is_some(),
            "title" => self.title.is_some(),
            "body" => self.body.is_some(),
            "notes" => self.notes.is_some(),
            "slides" => self.slides.is_some(),
            "sheet_id" => self.sheet_id.is_some(),
            "start_row" => self.start_row.is_some(),
            "start_col" => self.start_col.is_some(),
            "values" => self.values.is_some(),
            "section_id" => self.section_id.is_some(),
            "expected_section_hash" => self.expected_section_hash.is_some(),
            _ => false,
        }
    }

    fn scope(&self) -> VersionScope {
        self.version_scope.unwrap_or_default()
    }

    fn check(&self) -> Result<(), Refusal> {
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
                return Err(Refusal::invalid(f, format!("{f} is required by operation {op}")));
            }
        }
        for f in OPERATION_FIELDS {
            if self.has(f) && !required.contains(&f) && !optional.contains(&f) {
                return Err(Refusal::invalid(f, format!("{f} is not used by operation {op}")));
            }
        }
        if let Some(t) = &self.text
            && t.len() > MAX_DOC_BYTES
        {
            return Err(Refusal::too_large("text", format!("text of {} bytes exceeds the limit of {MAX_DOC_BYTES} bytes", t.len())));
        }
        if let Some(t) = &self.old_text {
            if t.is_empty() {
                return Err(Refusal::invalid("old_text", "old_text must not be empty: name the exact text to replace"));
            }
            if t.len() > MAX_DOC_BYTES {
                return Err(Refusal::too_large("old_text", format!("old_text of {} bytes exceeds the tab size limit of {MAX_DOC_BYTES} bytes", t.len())));
            }
        }
        if let Some(t) = &self.new_text
            && t.len() > MAX_DOC_BYTES
        {
            return Err(Refusal::too_large("new_text", format!("new_text of {} bytes exceeds the limit of {MAX_DOC_BYTES} bytes", t.len())));
        }
        crate::args::check_section_id(self.section_id.as_deref())?;
        if let Some(h) = &self.expected_section_hash {
            check_hash("expected_section_hash", h)?;
        }
        if self.operation == Operation::ReplaceSection {
            if self.version_scope == Some(VersionScope::Tab) {
                return Err(Refusal::invalid(
                    "version_scope",
                    "replace_section works on note versions, guarded by the section's hash: leave version_scope out (or note)",
                ));
            }
            if self.base_content_hash.is_some() {
                return Err(Refusal::invalid(
                    "base_content_hash",
                    "replace_section is guarded by expected_section_hash, the section's own hash: leave base_content_hash out",
                ));
            }
        }
        if self.rebase {
            if !matches!(self.operation, Operation::AppendText | Operation::ReplaceInText | Operation::ReplaceSection) {
                return Err(Refusal::invalid("rebase", format!("rebase applies to append_text and replace_in_text, not {op}")));
            }
            if self.version_scope == Some(VersionScope::Tab) {
                return Err(Refusal::invalid("rebase", "rebase works on note versions: leave version_scope out (or note)"));
            }
            if self.base_content_hash.is_some() {
                return Err(Refusal::invalid(
                    "rebase",
                    "base_content_hash asks for the exact content you read; rebase asks to apply over later changes: send one or the other",
                ));
            }
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
                return Err(Refusal::invalid("values", "values must hold at least one row"));
            }
            check_cells("values", v, MAX_SET_ROWS)?;
        }
        Ok(())
    }
}

fn description() -> String {
    format!(
        "Change one tab, named by its exact tab_id, based on the version from read_note_tab. Operations: \
                 replace_text (text: the whole text), append_text (text: added at the end on its own line) or \
                 replace_in_text (old_text: an exact snippet that occurs exactly once, new_text: what replaces it) \
                 for the markdown tab, or replace_section (section_id and expected_section_hash from \
                 read_note_outline, text: the whole section, heading included) to change one section whatever \
                 happened elsewhere in the note since expected_version (refused if that section itself changed; \
                 the result names the section's section_id, new if the heading changed); slide_add (title, body, notes) or \
                 slides_add_outline (slides: 1-20 items of only title, body, notes) to append slides; \
                 sheet_set_range (sheet_id, start_row, start_col, values) for a sheet; replace_tab_data (data: the \
                 whole content of a slides or sheet tab). File and Source attachments cannot be edited here. \
                 expected_version is compared with the note's version (a write anywhere in the note moves it) or, \
                 with version_scope tab, with the tab's own version; base_content_hash, if sent, must equal the \
                 tab's content_hash. With rebase: true (append_text and replace_in_text only), a patch whose \
                 expected_version is older than the note's is still applied if, and only if, no change since that \
                 version touches or borders the lines the patch changes (and old_text still occurs exactly once); \
                 the result then says rebased: true and rebased_over lists the versions. Anything else is a \
                 version_conflict: re-read and decide again. {ON_CONFLICT} {KEY_RULE}"
    )
}

/// Every operation, in the order the schemas list them.
const OPERATIONS: [Operation; 8] = [
    Operation::ReplaceText,
    Operation::AppendText,
    Operation::ReplaceInText,
    Operation::ReplaceSection,
    Operation::ReplaceTabData,
    Operation::SlideAdd,
    Operation::SlidesAddOutline,
    Operation::SheetSetRange,
];

/// `edit_note_tab`: each operation requires its fields and forbids the others'.
fn input_schema() -> Value {
    let ops = OPERATIONS;
    let rules: Vec<Value> = ops
        .iter()
        .map(|op| {
            let (required, optional) = op.fields();
            let forbidden: Vec<Value> =
                OPERATION_FIELDS.iter().filter(|f| !required.contains(f) && !optional.contains(f)).map(|f| json!({"required": [f]})).collect();
            json!({
                "if": {"properties": {"operation": {"const": op.as_str()}}, "required": ["operation"]},
                "then": {"required": required, "not": {"anyOf": forbidden}},
            })
        })
        .collect();
    let mut schema = object(
        &["note_id", "tab_id", "expected_version", "idempotency_key", "operation"],
        json!({
            "note_id": note_id(),
            "tab_id": id("Exact tab ID from list_note_tabs or read_note_tab (never a type or a label)."),
            "expected_version": crate::version::schema("The version you read, as the read gave it (a number, or a \"<n>:part\" token from a read that returned part of the tab): the note's version, or the tab's with version_scope tab. replace_text and replace_tab_data need a version from a read of the whole tab."),
            "idempotency_key": key("Names this one change on this one base version; a new key for every new attempt after a conflict."),
            "operation": {"type": "string", "enum": ops.iter().map(|o| o.as_str()).collect::<Vec<_>>()},
            "version_scope": {"type": "string", "enum": ["note", "tab"],
                "description": "note (default): any write in the note is a conflict; tab: only writes to this tab."},
            "base_content_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$",
                "description": "Optional content_hash of the tab you read; the write is refused if the tab changed."},
            "text": {"type": "string", "maxLength": MAX_DOC_BYTES, "description": "replace_text: the whole new text of the markdown tab (at most 1,000,000 bytes); append_text: the text to add at the end; replace_section: the whole new section, heading included."},
            "old_text": {"type": "string", "minLength": 1, "maxLength": MAX_DOC_BYTES, "description": "replace_in_text: the exact text to replace; it must occur exactly once in the tab."},
            "new_text": {"type": "string", "maxLength": MAX_DOC_BYTES, "description": "replace_in_text: the text that replaces old_text."},
            "section_id": crate::schema::section_id("replace_section: the section to replace (a section_id from read_note_outline)."),
            "expected_section_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "replace_section: the section_hash you read; the edit is refused if the section changed since."},
            "rebase": {"type": "boolean", "default": false, "description": "append_text and replace_in_text: apply over later changes that do not touch or border the changed lines (see the description)."},
            "data": {"type": "object", "description": "replace_tab_data: the whole content. Slides: {\"slides\": [{title, body?, notes?}]}. Sheet: {\"sheets\": [{sheet_id? (existing), name?, values: rows of cells}]}; sheets not listed are removed."},
            "title": {"type": "string", "maxLength": MAX_SLIDE_TITLE_CHARS, "description": "slide_add: slide title."},
            "body": {"type": "string", "maxLength": MAX_SLIDE_TEXT_CHARS, "description": "slide_add: slide body."},
            "notes": {"type": "string", "maxLength": MAX_SLIDE_TEXT_CHARS, "description": "slide_add: speaker notes."},
            "slides": outline(),
            "sheet_id": id("sheet_set_range: the sheet of the tab (from read_note_tab)."),
            "start_row": {"type": "integer", "minimum": 0, "maximum": MAX_ROWS - 1, "description": "sheet_set_range: first row, zero-based."},
            "start_col": {"type": "integer", "minimum": 0, "maximum": MAX_COLS - 1, "description": "sheet_set_range: first column, zero-based."},
            "values": {
                "type": "array", "minItems": 1, "maxItems": MAX_SET_ROWS,
                "description": "sheet_set_range: rows of cells; null clears a cell.",
                "items": {"type": "array", "maxItems": MAX_COLS,
                    "items": {"type": ["string", "number", "boolean", "null"], "maxLength": MAX_CELL_CHARS}},
            },
        }),
    );
    schema["allOf"] = rules.into();
    schema
}

/// `edit_note_tab`: the write's new versions, or its first result replayed.
fn output_schema() -> Value {
    use crate::schema::*;
    output(write_result(
        &["operation", "tab_id", "tab_version", "content_hash"],
        json!({
            "operation": {"type": "string", "enum": OPERATIONS.iter().map(|o| o.as_str()).collect::<Vec<_>>()},
            "rebased": flag(),
            "rebased_over": list(count()),
            "section_id": text(),
        }),
    ))
}

fn run(c: &mut Call, args: Value) -> Out<Value> {
    let mut a: Args = parse(args)?;
    a.check()?;
    a.version_scope = Some(a.scope());
    let text = a.text.take();
    let text_hash = text.as_deref().map(|t| sha_hex(t.as_bytes()));
    let edit = match a.operation {
        Operation::ReplaceText => Edit::Text(text.unwrap_or_default(), text_hash.clone().unwrap_or_else(|| sha_hex(b""))),
        Operation::AppendText => Edit::Patch(Patch::Append(text.clone().unwrap_or_default()), a.rebase.then_some(a.expected_version.number)),
        Operation::ReplaceInText => Edit::Patch(
            Patch::Replace { old: a.old_text.clone().unwrap_or_default(), new: a.new_text.clone().unwrap_or_default() },
            a.rebase.then_some(a.expected_version.number),
        ),
        Operation::ReplaceSection => Edit::Patch(
            Patch::Section {
                id: a.section_id.clone().unwrap_or_default(),
                hash: a.expected_section_hash.clone().unwrap_or_default(),
                text: text.clone().unwrap_or_default(),
            },
            Some(a.expected_version.number),
        ),
        Operation::ReplaceTabData => Edit::Data(a.data.take().unwrap_or_default()),
        Operation::SlideAdd => Edit::SlideAdd(SlideIn { title: a.title.clone().unwrap_or_default(), body: a.body.clone(), notes: a.notes.clone() }),
        Operation::SlidesAddOutline => Edit::Outline(a.slides.clone().unwrap_or_default()),
        Operation::SheetSetRange => Edit::SetRange {
            sheet_id: a.sheet_id.clone().unwrap_or_default(),
            row: a.start_row.unwrap_or_default(),
            col: a.start_col.unwrap_or_default(),
            values: a.values.clone().unwrap_or_default(),
        },
    };
    // The payload an idempotency key names: every argument but the key, the
    // text by its hash (see `Fingerprint`); the old form keeps the text.
    let payload = |text: Option<&str>| {
        let mut p = serde_json::to_value(&a).expect("arguments serialize");
        let obj = p.as_object_mut().expect("object");
        obj.remove("idempotency_key");
        obj.insert("text".into(), text.map(Value::from).unwrap_or(Value::Null));
        if let Edit::Data(d) = &edit {
            obj.insert("data".into(), Value::Object(d.clone()));
        }
        p
    };
    let full_text = match &edit {
        Edit::Text(t, _) => Some(t.as_str()),
        _ => None,
    };
    let fp = Fingerprint::hashed_text("edit_note_tab", &payload(text_hash.as_deref()), || fingerprint("edit_note_tab", &payload(full_text)));
    let spec = WriteSpec {
        tool: "edit_note_tab",
        note_level: false,
        note_id: &a.note_id,
        idem: Some((&a.idempotency_key, fp)),
        expected_version: a.expected_version.number,
        base: a.expected_version.extent,
        whole_tab: matches!(a.operation, Operation::ReplaceText | Operation::ReplaceTabData),
        scope: a.scope(),
        base_content_hash: a.base_content_hash.as_deref(),
        // A section edit applies over later changes elsewhere: its guard is the section's hash.
        rebase: a.rebase || a.operation == Operation::ReplaceSection,
    };
    edit_tab_with(c.kv, c.env, c.who, &spec, &a.tab_id, &edit)
}
