//! `POST /api/v1/notes/{note}/tabs/{tab}/edit`: the `edit_note_tab` tool.

use serde_json::Value;

use cairn_kv::Store;

use crate::env::{Env, Identity};
use crate::refusal::{Failure, Refusal};
use crate::tools;

use super::{Ctx, RestReply, via_tool, with_path_ids};

/// The tool's arguments from a routed request: the body, the ids from the path.
pub(super) fn args(c: Ctx<'_>) -> Result<Value, Refusal> {
    let (note, tab) = (c.param("note"), c.param("tab"));
    with_path_ids(c.body, &[("note_id", note), ("tab_id", tab)])
}

/// Edits a tab (`POST …/tabs/{tab}/edit`) with every operation of the `edit_note_tab`
/// tool and its rules (conditional, keyed, claim-aware): the body is the tool's arguments
/// (`expected_version`, `idempotency_key`, `operation` and its fields, `version_scope`,
/// `base_content_hash`, `rebase`); `note_id` and `tab_id` come from the path. 200 with the
/// tool's result (`note_id, tab_id, version, tab_version, content_hash, replayed`, …).
pub fn edit_tab(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, tab_id: &str, args: Value) -> Result<RestReply, Failure> {
    let args = with_path_ids(args, &[("note_id", note_id), ("tab_id", tab_id)]);
    via_tool(kv, env, who, &tools::edit_note_tab::TOOL, Some(note_id), args, 200)
}
