//! `GET /api/v1/notes/{note}/tabs/{tab}[?at_version=][&start_line=&max_lines=|&section_id=|&since_version=|&start_index=&max_slides=][&max_chars=]`:
//! the `read_note_tab` tool, whole or in parts. Unlike an agent's read, a
//! person's is not capped unless `max_chars` asks (the editor edits whole tabs).

use serde_json::Value;

use cairn_kv::Store;

use crate::env::{Env, Identity};
use crate::refusal::{Failure, Refusal};
use crate::tools;

use super::{Ctx, RestReply, query_u64, tool_args, via_tool};

/// The tool's arguments: the path's ids, `at_version` from the query.
fn build(note_id: &str, tab_id: &str, at_version: Option<&str>) -> Result<Value, Refusal> {
    query_u64("at_version", at_version).map(|v| {
        // People read what they ask for: a whole tab unless `?max_chars=` caps it.
        let whole = Some(crate::env::MAX_READ_CHARS.into());
        tool_args([("note_id", Some(note_id.into())), ("tab_id", Some(tab_id.into())), ("at_version", v.map(Value::from)), ("max_chars", whole)])
    })
}

/// The tool's arguments from a routed request: the path's ids, then
/// `at_version` and the part to read (a window, a section, or the changes
/// since a version) from the query.
pub(super) fn args(c: Ctx<'_>) -> Result<Value, Refusal> {
    let mut args = build(c.param("note"), c.param("tab"), c.query("at_version"))?;
    let obj = args.as_object_mut().expect("tool_args is an object");
    for field in ["start_line", "max_lines", "since_version", "start_index", "max_slides", "max_chars"] {
        if let Some(n) = query_u64(field, c.query(field))? {
            obj.insert(field.into(), n.into());
        }
    }
    if let Some(id) = c.query("section_id") {
        obj.insert("section_id".into(), id.into());
    }
    Ok(args)
}

/// One tab (`GET …/tabs/{tab}[?at_version=N]`): the `read_note_tab` tool's result, 200 with
/// `{note_id, tab_id, type, label, version, tab_version, provenance, notice, at_version?}`
/// and, by type, `text` (markdown), `slides: [{index, title, body, notes}]` (slides),
/// `sheets: [{sheet_id, name, rows, cols}]` and `hint` (sheet: cells via
/// [`read_range`](super::read_range)), `count` and `hint` (files, sources: items via
/// [`list_attachments`](super::list_attachments)).
pub fn read_tab(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, tab_id: &str, at_version: Option<&str>) -> Result<RestReply, Failure> {
    via_tool(kv, env, who, &tools::read_note_tab::TOOL, Some(note_id), build(note_id, tab_id, at_version), 200)
}
