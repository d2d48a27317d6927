//! `GET /api/v1/notes/{note}/tabs/{tab}/outline`: the `read_note_outline` tool.

use serde_json::Value;

use crate::refusal::Refusal;

use super::{Ctx, tool_args};

/// The tool's arguments: the path's ids.
pub(super) fn args(c: Ctx<'_>) -> Result<Value, Refusal> {
    Ok(tool_args([("note_id", Some(c.param("note").into())), ("tab_id", Some(c.param("tab").into()))]))
}
