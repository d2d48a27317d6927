//! `POST /api/v1/notes/{note}/tabs/{tab}/merge`: a stale draft merged with
//! the text now, by the `merge_note_tab` tool; writes nothing.

use serde_json::Value;

use cairn_kv::Store;

use crate::env::{Env, Identity};
use crate::refusal::Failure;

use super::{RestReply, via_tool, with_path_ids};

/// The three-way merge of a person's draft of the markdown tab (`text`,
/// started from note version `base_version`) with the text now
/// (`POST …/tabs/{tab}/merge`), as `merge_note_tab` answers it. Writes
/// nothing. 200 with `{merged, clean, conflicts: [{base_start, base,
/// theirs, mine}], segments, version, tab_version, content_hash}`: save
/// `merged` (after resolving any conflicts) with the `version` returned
/// here as `expected_version`.
pub fn merge_draft(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, tab_id: &str, args: Value) -> Result<RestReply, Failure> {
    let args = with_path_ids(args, &[("note_id", note_id), ("tab_id", tab_id)]);
    via_tool(kv, env, who, &crate::tools::merge_note_tab::TOOL, Some(note_id), args, 200)
}
