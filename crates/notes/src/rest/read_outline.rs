//! `GET /api/v1/notes/{note}/tabs/{tab}/outline[?start_line=&heading=&max_level=&max_sections=&max_chars=]`:
//! the `read_note_outline` tool.

use serde_json::Value;

use crate::refusal::Refusal;

use super::{Ctx, query_u64, tool_args};

/// The tool's arguments: the path's ids, then the page and the filters from the query.
pub(super) fn args(c: Ctx<'_>) -> Result<Value, Refusal> {
    // People read what they ask for: pages of up to 500 sections unless `?max_chars=` caps them.
    let whole = Some(crate::env::MAX_READ_CHARS.into());
    let mut args = tool_args([("note_id", Some(c.param("note").into())), ("tab_id", Some(c.param("tab").into())), ("max_chars", whole)]);
    let obj = args.as_object_mut().expect("tool_args is an object");
    for field in ["start_line", "max_level", "max_sections", "max_chars"] {
        if let Some(n) = query_u64(field, c.query(field))? {
            obj.insert(field.into(), n.into());
        }
    }
    if let Some(h) = c.query("heading") {
        obj.insert("heading".into(), h.into());
    }
    Ok(args)
}
