//! `POST /api/v1/notes/{note}/sources`: the `add_note_source` tool.

use serde_json::Value;

use cairn_kv::Store;

use crate::env::{Env, Identity};
use crate::refusal::Failure;
use crate::tools;

use super::{RestReply, via_tool, with_path_ids};

/// Cites a page in the note's Sources tab (`POST …/sources`): the body is the
/// `add_note_source` tool's arguments (`expected_version`, `idempotency_key`, `title`,
/// `url`), `note_id` from the path. 201 with `{note_id, source_id, title, url,
/// already_attached: false, version, tab_id, tab_version, content_hash, replayed}`; 200 with
/// `{note_id, source_id, title, url, version, already_attached: true, replayed: false}`
/// (the source that was there; nothing written) when the normalized URL is already attached.
pub fn add_source(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, args: Value) -> Result<RestReply, Failure> {
    let args = with_path_ids(args, &[("note_id", note_id)]);
    via_tool(kv, env, who, &tools::add_note_source::TOOL, Some(note_id), args, 201)
}
