//! `POST /api/v1/notes/{note}/tabs`: the `create_note_tab` tool.

use serde_json::Value;

use cairn_kv::Store;

use crate::env::{Env, Identity};
use crate::refusal::Failure;
use crate::tools;

use super::{RestReply, via_tool, with_path_ids};

/// Creates a slides or sheet tab (`POST …/tabs`): the body is the `create_note_tab` tool's
/// arguments (`expected_version`, `idempotency_key`, `tab_type`, `label?`, `slides?`),
/// `note_id` from the path. 201 with `{note_id, tab_id, tab_type, label, version,
/// tab_version, content_hash, replayed}`.
pub fn create_tab(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, args: Value) -> Result<RestReply, Failure> {
    let args = with_path_ids(args, &[("note_id", note_id)]);
    via_tool(kv, env, who, &tools::create_note_tab::TOOL, Some(note_id), args, 201)
}
