//! `GET /api/v1/notes/{note}/attachments[?kind=&cursor=&limit=]`: the
//! `list_note_attachments` tool.

use serde_json::Value;

use cairn_kv::Store;

use crate::env::{Env, Identity};
use crate::refusal::{Failure, Refusal};
use crate::tools;

use super::{Ctx, RestReply, page, tool_args, via_tool};

/// The tool's arguments: the path's note, the kind and the page from the query.
fn build(note_id: &str, kind: Option<&str>, cursor: Option<&str>, limit: Option<&str>) -> Result<Value, Refusal> {
    let asked = [("note_id", Some(note_id.into())), ("kind", kind.map(Value::from))];
    Ok(tool_args(asked.into_iter().chain(page(cursor, limit)?)))
}

/// The tool's arguments from a routed request.
pub(super) fn args(c: Ctx<'_>) -> Result<Value, Refusal> {
    build(c.param("note"), c.query("kind"), c.query("cursor"), c.query("limit"))
}

/// A note's files and sources as metadata (`GET …/attachments[?kind=files|sources&cursor=&limit=]`):
/// the `list_note_attachments` tool's result, 200 with `{note_id, version, attachments,
/// total, next_cursor, notice}`; an attachment is `{kind: "file", file_id, name,
/// media_type, size_bytes, provenance}` or `{kind: "source", source_id, title, url,
/// provenance}`.
pub fn list_attachments(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    note_id: &str,
    kind: Option<&str>,
    cursor: Option<&str>,
    limit: Option<&str>,
) -> Result<RestReply, Failure> {
    via_tool(kv, env, who, &tools::list_note_attachments::TOOL, Some(note_id), build(note_id, kind, cursor, limit), 200)
}
