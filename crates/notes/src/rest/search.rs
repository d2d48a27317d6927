//! `GET /api/v1/search?q=…`: the `search_notes` tool.

use serde_json::Value;

use cairn_kv::Store;

use crate::env::{Env, Identity};
use crate::refusal::{Failure, Refusal};
use crate::tools;

use super::{Ctx, RestReply, page, tool_args, via_tool};

/// The tool's arguments: `q` (required) and the rest from the query.
fn build(q: Option<&str>, tab_type: Option<&str>, limit: Option<&str>, cursor: Option<&str>) -> Result<Value, Refusal> {
    let q = q.ok_or_else(|| Refusal::invalid("q", "q (what to search for) is required"))?;
    let asked = [("query", Some(q.into())), ("tab_type", tab_type.map(Value::from))];
    Ok(tool_args(asked.into_iter().chain(page(cursor, limit)?)))
}

/// The tool's arguments from a routed request.
pub(super) fn args(c: Ctx<'_>) -> Result<Value, Refusal> {
    build(c.query("q"), c.query("tab_type"), c.query("limit"), c.query("cursor"))
}

/// Full-text search (`GET /api/v1/search?q=…&tab_type=&limit=&cursor=`): the
/// `search_notes` tool's result, 200 with `{query, hits, next_cursor, notice}`.
pub fn search(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    q: Option<&str>,
    tab_type: Option<&str>,
    limit: Option<&str>,
    cursor: Option<&str>,
) -> Result<RestReply, Failure> {
    via_tool(kv, env, who, &tools::search_notes::TOOL, None, build(q, tab_type, limit, cursor), 200)
}
