//! `GET /api/v1/notes/{note}`: the note, its tabs and their versions.

use serde_json::json;

use cairn_kv::Store;

use crate::env::Identity;
use crate::head::load_head;
use crate::model::{rfc3339, sha_hex, tab_provenance, tab_summary};
use crate::refusal::{Failure, NOTICE};

use super::{Ctx, RestReply, answer};

/// Reads a note with its tabs and their versions (contents: the `read_note_tab` tool).
/// 200 with `{note_id, title, approved_for_agents, version, provenance, tabs, notice}`.
pub fn get_note(kv: &dyn Store, who: &Identity, note_id: &str) -> Result<RestReply, Failure> {
    answer(kv, who, &[("note_id", note_id)], 200, |kv| {
        let head = load_head(kv, who, note_id)?;
        Ok(json!({
            "note_id": head.note_id,
            "title": head.title,
            "approved_for_agents": head.approved_for_agents,
            "version": head.version,
            "created_at": rfc3339(head.created_at),
            "provenance": {
                "author": head.author.label(),
                "updated_at": rfc3339(head.updated_at),
                "updated_by": head.updated_by.label(),
                "content_hash": sha_hex(head.title.as_bytes()),
            },
            "tabs": head.tabs.iter().map(|t| {
                let mut s = tab_summary(t);
                s["provenance"] = tab_provenance(t);
                s
            }).collect::<Vec<_>>(),
            "notice": NOTICE,
        }))
    })
}

/// [`get_note`] on a routed request.
pub(super) fn serve(c: Ctx<'_>) -> Result<RestReply, Failure> {
    get_note(c.kv, c.who, c.param("note"))
}
