//! `GET /api/v1/notes?cursor=&limit=`: the `list_notes` tool.

use serde_json::Value;

use cairn_kv::Store;

use crate::env::{Env, Identity};
use crate::refusal::{Failure, Refusal};
use crate::tools;

use super::{Ctx, RestReply, page, tool_args, via_tool};

/// The tool's arguments: the page from the query.
fn build(cursor: Option<&str>, limit: Option<&str>) -> Result<Value, Refusal> {
    page(cursor, limit).map(tool_args)
}

/// The tool's arguments from a routed request.
pub(super) fn args(c: Ctx<'_>) -> Result<Value, Refusal> {
    build(c.query("cursor"), c.query("limit"))
}

/// The notes the caller can see (`GET /api/v1/notes?cursor=&limit=`): the `list_notes`
/// tool's result, 200 with `{notes: [{note_id, title, version, approved_for_agents,
/// provenance}], next_cursor, notice}`; pass `next_cursor` back as `cursor`.
pub fn list_notes(kv: &dyn Store, env: &mut dyn Env, who: &Identity, cursor: Option<&str>, limit: Option<&str>) -> Result<RestReply, Failure> {
    via_tool(kv, env, who, &tools::list_notes::TOOL, None, build(cursor, limit), 200)
}
