//! `edit_note_tab`: change one tab, named by its exact id, conditionally on the
//! version the caller read, once per idempotency key.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Call, KEY_RULE, ON_CONFLICT, REPLACES, WRITE_SCOPE};
use crate::args::{
    MAX_CELL_CHARS, MAX_COLS, MAX_ROWS, MAX_SECTION_ID_BYTES, MAX_SET_ROWS, SlideIn, VersionScope, check_cells, check_hash, check_id, check_key, check_outline,
    check_range, check_slide, parse_object,
};
use crate::content::MAX_DOC_BYTES;
use crate::edit::{Edit, EditFields, Operation, Patch, edit_tab_with};
use crate::model::sha_hex;
use crate::refusal::{Out, Refusal};
use crate::schema::outline;
use crate::write::{Fingerprint, WriteSpec, fingerprint};
use crate::write_results::{Replayable, TabState, WriteResult};

tool!("edit_note_tab", "Edit a note tab", WRITE_SCOPE, REPLACES);

/// The fields every operation takes: the note, the tab, the version read,
/// the key, and how the version is compared.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(schema_with = "crate::schema::shape::note_id")]
    note_id: String,
    /// Exact tab ID from list_note_tabs or read_note_tab (never a type or a label).
    #[schemars(schema_with = "crate::schema::shape::id")]
    tab_id: String,
    /// The version you read, as the read gave it (a number, or a "<n>:part" token from a read that returned part of the tab): the note's version, or the tab's with version_scope tab. replace_text and replace_tab_data need a version from a read of the whole tab.
    #[schemars(schema_with = "crate::schema::shape::version")]
    expected_version: crate::version::Version,
    /// Names this one change on this one base version; a new key for every new attempt after a conflict.
    #[schemars(schema_with = "crate::schema::shape::key")]
    idempotency_key: String,
    /// The operation; the fields it takes are listed by operation below.
    operation: Operation,
    /// note (default): any write in the note is a conflict; tab: only writes to this tab.
    #[serde(default, deserialize_with = "crate::args::present")]
    #[schemars(with = "VersionScope")]
    version_scope: Option<VersionScope>,
    /// Optional content_hash of the tab you read; the write is refused if the tab changed.
    #[serde(default, deserialize_with = "crate::args::present")]
    #[schemars(with = "String", pattern(r"^[0-9a-f]{64}$"))]
    base_content_hash: Option<String>,
    /// append_text and replace_in_text: apply over later changes that do not touch or border the changed lines (see the description).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(extend("default" = false))]
    rebase: bool,
}

/// What one call changes: `operation` names the variant, and each variant
/// takes its own fields and no other's. The published schema's operation
/// fields, its `operation` enum and its `allOf` rules are all derived from
/// this type ([`operation_schemas`]); the parser takes the same fields
/// ([`Change::parse`]).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(tag = "operation", rename_all = "snake_case")]
enum Change {
    ReplaceText(WholeText),
    AppendText(AddedText),
    ReplaceInText(Snippet),
    ReplaceSection(Section),
    ReplaceTabData(TabData),
    SlideAdd(SlideIn),
    SlidesAddOutline(Outline),
    SheetSetRange(Range),
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WholeText {
    /// the whole new text of the markdown tab (at most 1,000,000 bytes)
    #[schemars(length(max = MAX_DOC_BYTES))]
    text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AddedText {
    /// the text to add at the end
    #[schemars(length(max = MAX_DOC_BYTES))]
    text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Snippet {
    /// the exact text to replace; it must occur exactly once in the tab
    #[schemars(length(min = 1, max = MAX_DOC_BYTES))]
    old_text: String,
    /// the text that replaces old_text
    #[schemars(length(max = MAX_DOC_BYTES))]
    new_text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Section {
    /// the section to replace (a section_id from read_note_outline)
    #[schemars(length(min = 1, max = MAX_SECTION_ID_BYTES))]
    section_id: String,
    /// the section_hash you read; the edit is refused if the section changed since
    #[schemars(pattern(r"^[0-9a-f]{64}$"))]
    expected_section_hash: String,
    /// the whole new section, heading included
    #[schemars(length(max = MAX_DOC_BYTES))]
    text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TabData {
    /// the whole content. Slides: {"slides": [{title, body?, notes?}]}. Sheet: {"sheets": [{sheet_id? (existing), name?, values: rows of cells}]}; sheets not listed are removed
    data: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Outline {
    /// slides to append, each only title, body, notes
    #[schemars(schema_with = "outline_schema")]
    slides: Vec<SlideIn>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Range {
    /// the sheet of the tab (from read_note_tab)
    #[schemars(pattern(r"^[A-Za-z0-9_-]{1,64}$"))]
    sheet_id: String,
    /// first row, zero-based
    #[schemars(range(max = MAX_ROWS - 1))]
    start_row: u64,
    /// first column, zero-based
    #[schemars(range(max = MAX_COLS - 1))]
    start_col: u64,
    /// rows of cells; null clears a cell
    #[schemars(schema_with = "cells_schema")]
    values: Vec<Vec<Value>>,
}

/// `slides`: the shared outline schema (its description is the field's own).
fn outline_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut s = outline();
    s.as_object_mut().expect("an object schema").remove("description");
    s.try_into().expect("an object schema")
}

/// `values`: rows of scalar cells, bounded as a sheet is.
fn cells_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array", "minItems": 1, "maxItems": MAX_SET_ROWS,
        "items": {"type": "array", "maxItems": MAX_COLS,
            "items": {"type": ["string", "number", "boolean", "null"], "maxLength": MAX_CELL_CHARS}},
    })
}

impl Change {
    /// The operation's own fields, `fields` (every argument that is a field
    /// of some operation), as the variant `op` names: a field the operation
    /// requires and that is missing, or one that belongs to another
    /// operation, is refused naming the field and the operation.
    fn parse(op: Operation, fields: Map<String, Value>) -> Result<Change, Refusal> {
        Ok(match op {
            Operation::ReplaceText => Change::ReplaceText(variant(op, fields)?),
            Operation::AppendText => Change::AppendText(variant(op, fields)?),
            Operation::ReplaceInText => Change::ReplaceInText(variant(op, fields)?),
            Operation::ReplaceSection => Change::ReplaceSection(variant(op, fields)?),
            Operation::ReplaceTabData => Change::ReplaceTabData(variant(op, fields)?),
            Operation::SlideAdd => Change::SlideAdd(variant(op, fields)?),
            Operation::SlidesAddOutline => Change::SlidesAddOutline(variant(op, fields)?),
            Operation::SheetSetRange => Change::SheetSetRange(variant(op, fields)?),
        })
    }

    /// Checks what the types cannot say: sizes, ids, hashes, bounds.
    fn check(&self) -> Result<(), Refusal> {
        let text_size = |field: &str, t: &str| {
            if t.len() > MAX_DOC_BYTES {
                return Err(Refusal::too_large(field, format!("{field} of {} bytes exceeds the limit of {MAX_DOC_BYTES} bytes", t.len())));
            }
            Ok(())
        };
        match self {
            Change::ReplaceText(WholeText { text }) | Change::AppendText(AddedText { text }) => text_size("text", text),
            Change::ReplaceInText(Snippet { old_text, new_text }) => {
                if old_text.is_empty() {
                    return Err(Refusal::invalid("old_text", "old_text must not be empty: name the exact text to replace"));
                }
                if old_text.len() > MAX_DOC_BYTES {
                    return Err(Refusal::too_large(
                        "old_text",
                        format!("old_text of {} bytes exceeds the tab size limit of {MAX_DOC_BYTES} bytes", old_text.len()),
                    ));
                }
                text_size("new_text", new_text)
            }
            Change::ReplaceSection(Section { section_id, expected_section_hash, text }) => {
                text_size("text", text)?;
                crate::args::check_section_id(Some(section_id))?;
                check_hash("expected_section_hash", expected_section_hash)
            }
            Change::ReplaceTabData(_) => Ok(()),
            Change::SlideAdd(slide) => check_slide("", slide),
            Change::SlidesAddOutline(Outline { slides }) => check_outline(slides),
            Change::SheetSetRange(Range { sheet_id, start_row, start_col, values }) => {
                check_id("sheet_id", sheet_id)?;
                check_range("start_row", *start_row, 0, MAX_ROWS - 1)?;
                check_range("start_col", *start_col, 0, MAX_COLS - 1)?;
                if values.is_empty() {
                    return Err(Refusal::invalid("values", "values must hold at least one row"));
                }
                check_cells("values", values, MAX_SET_ROWS)
            }
        }
    }

    /// The change as the core applies it, its text the one `taken` out
    /// ([`Change::take_text`]); `base`: the version a patch was based on,
    /// when it may apply over later changes.
    fn into_edit(self, base: Option<u64>, taken: Option<String>, text_hash: Option<String>) -> Edit {
        let text = |own: String| taken.unwrap_or(own);
        match self {
            Change::ReplaceText(WholeText { text: own }) => Edit::Text(text(own), text_hash.unwrap_or_else(|| sha_hex(b""))),
            Change::AppendText(AddedText { text: own }) => Edit::Patch(Patch::Append(text(own)), base),
            Change::ReplaceInText(Snippet { old_text, new_text }) => Edit::Patch(Patch::Replace { old: old_text, new: new_text }, base),
            Change::ReplaceSection(Section { section_id, expected_section_hash, text: own }) => {
                Edit::Patch(Patch::Section { id: section_id, hash: expected_section_hash, text: text(own) }, base)
            }
            Change::ReplaceTabData(TabData { data }) => Edit::Data(data),
            Change::SlideAdd(slide) => Edit::SlideAdd(slide),
            Change::SlidesAddOutline(Outline { slides }) => Edit::Outline(slides),
            Change::SheetSetRange(Range { sheet_id, start_row, start_col, values }) => Edit::SetRange { sheet_id, row: start_row, col: start_col, values },
        }
    }
}

/// The fields of the variant `op` names, from `fields`: required ones
/// missing first, then fields of other operations, then their types.
fn variant<T: DeserializeOwned>(op: Operation, fields: Map<String, Value>) -> Result<T, Refusal> {
    let schema = operation_schemas().iter().find(|s| s.operation == op).expect("every operation has a derived schema");
    if let Some(f) = schema.required.iter().find(|f| !fields.contains_key(f.as_str())) {
        return Err(Refusal::invalid(f, format!("{f} is required by operation {}", op.as_str())));
    }
    if let Some(f) = fields.keys().find(|f| !schema.properties.contains_key(f.as_str())) {
        return Err(Refusal::invalid(f, format!("{f} is not used by operation {}", op.as_str())));
    }
    parse_object(fields, "")
}

/// One operation's schema, derived from its variant of [`Change`].
struct OperationSchema {
    operation: Operation,
    required: Vec<String>,
    properties: Map<String, Value>,
}

/// Every operation's schema, in [`Change`]'s order (the published order):
/// derived once per process (per instance, in a component).
fn operation_schemas() -> &'static [OperationSchema] {
    static SCHEMAS: std::sync::OnceLock<Vec<OperationSchema>> = std::sync::OnceLock::new();
    SCHEMAS.get_or_init(derive_operation_schemas)
}

fn derive_operation_schemas() -> Vec<OperationSchema> {
    let derived = crate::schema::derived::<Change>();
    let variants = derived["oneOf"].as_array().expect("a tagged enum derives oneOf");
    variants
        .iter()
        .map(|v| {
            let mut properties = v["properties"].as_object().cloned().unwrap_or_default();
            let name = properties.remove("operation").and_then(|o| o["const"].as_str().map(str::to_owned)).expect("each variant names its operation");
            let operation: Operation = serde_json::from_value(Value::String(name)).expect("the variant names an Operation");
            let required = v["required"].as_array().into_iter().flatten().filter_map(Value::as_str).filter(|f| *f != "operation").map(str::to_owned).collect();
            OperationSchema { operation, required, properties }
        })
        .collect()
}

/// Arguments by name.
type Fields = Map<String, Value>;

/// Splits the arguments: the rest, and the fields of some operation.
fn split(args: Value) -> Result<(Fields, Fields), Refusal> {
    let mut rest = match args {
        Value::Null => Map::new(),
        Value::Object(m) => m,
        _ => return Err(Refusal::invalid("arguments", "arguments must be a JSON object")),
    };
    let mut fields = Map::new();
    for s in operation_schemas() {
        for f in s.properties.keys() {
            if let Some(v) = rest.remove(f) {
                fields.insert(f.clone(), v);
            }
        }
    }
    Ok((rest, fields))
}

impl Args {
    fn scope(&self) -> VersionScope {
        self.version_scope.unwrap_or_default()
    }

    fn check(&self, change: &Change) -> Result<(), Refusal> {
        check_id("note_id", &self.note_id)?;
        check_id("tab_id", &self.tab_id)?;
        check_key(&self.idempotency_key)?;
        if let Some(h) = &self.base_content_hash {
            check_hash("base_content_hash", h)?;
        }
        change.check()?;
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
        self.check_rebase()
    }

    fn check_rebase(&self) -> Result<(), Refusal> {
        if !self.rebase {
            return Ok(());
        }
        if !matches!(self.operation, Operation::AppendText | Operation::ReplaceInText | Operation::ReplaceSection) {
            return Err(Refusal::invalid("rebase", format!("rebase applies to append_text and replace_in_text, not {}", self.operation.as_str())));
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

/// `edit_note_tab`: the fields every operation takes, then each operation's
/// own fields, derived from [`Change`]: the `operation` enum, every
/// operation field (described per operation), and one `allOf` rule per
/// operation requiring its fields and forbidding the others'.
fn input_schema() -> Value {
    let ops = operation_schemas();
    let mut properties = Map::new();
    let mut described: Map<String, Value> = Map::new();
    for s in ops {
        for (name, field) in &s.properties {
            let mut field = field.clone();
            let desc = field.as_object_mut().and_then(|f| f.remove("description"));
            let line = format!("{}: {}", s.operation.as_str(), desc.as_ref().and_then(Value::as_str).unwrap_or_default());
            match described.get_mut(name) {
                Some(Value::String(d)) => *d = format!("{d}; {line}"),
                _ => {
                    properties.insert(name.clone(), field);
                    described.insert(name.clone(), Value::String(line));
                }
            }
        }
    }
    for (name, desc) in described {
        properties[&name]["description"] = Value::String(format!("{}.", desc.as_str().unwrap_or_default()));
    }
    let rules: Vec<Value> = ops
        .iter()
        .map(|s| {
            let forbidden: Vec<Value> = properties.keys().filter(|f| !s.properties.contains_key(*f)).map(|f| json!({"required": [f]})).collect();
            json!({
                "if": {"properties": {"operation": {"const": s.operation.as_str()}}, "required": ["operation"]},
                "then": {"required": s.required, "not": {"anyOf": forbidden}},
            })
        })
        .collect();
    // The fields every operation takes, derived; `operation` lists the
    // operations in the order `Change` declares them.
    let mut schema = crate::schema::input::<Args>();
    schema["properties"]["operation"] = json!({"type": "string", "enum": ops.iter().map(|s| s.operation.as_str()).collect::<Vec<_>>()});
    schema["properties"].as_object_mut().expect("an object").extend(properties);
    schema["allOf"] = rules.into();
    schema
}

/// The edit's result: the note's and the tab's new versions and the tab's
/// content hash; a call resent with the same idempotency key answers its
/// first result again, with replayed: true.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(transparent)]
struct Output(Replayable<WriteResult<EditFields, TabState>>);

/// Parses the arguments: the fields every operation takes, then the
/// operation's own.
fn parse_args(args: Value) -> Result<(Args, Change), Refusal> {
    let (rest, fields) = split(args)?;
    let a: Args = parse_object(rest, "")?;
    let change = Change::parse(a.operation, fields)?;
    a.check(&change)?;
    Ok((a, change))
}

/// The payload an idempotency key names: every argument but the key, the
/// whole text as `text` (its hash in the current fingerprint form, the text
/// itself in the old one; see `Fingerprint`). Its shape is the one records
/// already in stores were fingerprinted with: the flat arguments, where the
/// fields of other operations that were sent as `null` still are.
fn payload(a: &Args, own: &Fields, text: Option<&str>) -> Value {
    /// The operation fields the flat arguments always carried (as `null`
    /// when another operation was asked for): frozen with the records.
    const ALWAYS_CARRIED: [&str; 10] = ["text", "data", "title", "body", "notes", "slides", "sheet_id", "start_row", "start_col", "values"];
    let mut p = serde_json::to_value(a).expect("arguments serialize");
    let obj = p.as_object_mut().expect("an object");
    obj.remove("idempotency_key");
    obj.insert("version_scope".into(), serde_json::to_value(a.scope()).expect("a scope serializes"));
    for f in ALWAYS_CARRIED {
        obj.insert(f.into(), Value::Null);
    }
    obj.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
    obj.insert("text".into(), text.map(Value::from).unwrap_or(Value::Null));
    p
}

impl Change {
    /// The whole text a text operation carries, taken out (the change keeps
    /// an empty one): it is hashed, fingerprinted and applied without a copy.
    fn take_text(&mut self) -> Option<String> {
        match self {
            Change::ReplaceText(WholeText { text }) | Change::AppendText(AddedText { text }) | Change::ReplaceSection(Section { text, .. }) => {
                Some(std::mem::take(text))
            }
            _ => None,
        }
    }

    /// The change's own fields but `operation` and `text`, as the payload
    /// carries them.
    fn own_fields(&self) -> Fields {
        let Value::Object(mut own) = serde_json::to_value(self).expect("a change serializes") else { unreachable!("a change serializes as an object") };
        own.remove("operation");
        own.remove("text");
        own
    }
}

fn run(c: &mut Call, args: Value) -> Out<Output> {
    let (a, mut change) = parse_args(args)?;
    let text = change.take_text();
    let text_hash = text.as_deref().map(|t| sha_hex(t.as_bytes()));
    let own = change.own_fields();
    let base = match a.operation {
        // A section edit applies over later changes elsewhere: its guard is the section's hash.
        Operation::ReplaceSection => Some(a.expected_version.number),
        _ => a.rebase.then_some(a.expected_version.number),
    };
    let edit = change.into_edit(base, text, text_hash.clone());
    // The old fingerprint form keeps the whole text of a replace_text.
    let whole_text = match &edit {
        Edit::Text(t, _) => Some(t.as_str()),
        _ => None,
    };
    let fp =
        Fingerprint::hashed_text("edit_note_tab", &payload(&a, &own, text_hash.as_deref()), || fingerprint("edit_note_tab", &payload(&a, &own, whole_text)));
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
        rebase: a.rebase || a.operation == Operation::ReplaceSection,
    };
    let answer = edit_tab_with(c.kv, c.env, c.who, &spec, &a.tab_id, &edit)?;
    Ok(Output(answer.map(WriteResult::of_tab)))
}
