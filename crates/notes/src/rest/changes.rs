//! `GET /api/v1/notes/{note}/changes[?since=<etag>]`: what an open page polls
//! to stay live. One head read: cheap enough to ask every second.
//!
//! The `etag` names the note's state as a page shows it: the note version
//! (every write moves it) and its live claims (who holds what, until when,
//! with how many claim notes). `since` equal to the current etag answers
//! `changed: false` and nothing else; any other (or none) answers the state:
//! the title, every tab's version and last writer, and the live claims.

use serde_json::{Value, json};

use cairn_kv::Store;

use crate::claims::board;
use crate::env::{Env, Identity};
use crate::head::load_head;
use crate::model::{Head, rfc3339, sha_hex};
use crate::refusal::{Failure, Refusal};

use super::{Ctx, RestReply, answer};

/// How long a page should wait between two polls, in milliseconds.
pub const POLL_AFTER_MS: u64 = 1_000;

/// The etag of a note's state as a page shows it (see the module docs).
fn etag(head: &Head, now: u64) -> String {
    let mut s = format!("v{}", head.version);
    for c in head.claims.iter().filter(|c| c.live(now)) {
        s.push_str(&format!(";{}@{}#{}", c.claim_id, c.expires_at, c.notes.len()));
    }
    sha_hex(s.as_bytes())[..16].to_string()
}

/// The note's state since the page's `since` etag: 200 with `{note_id,
/// version, etag, changed, poll_after_ms}` and, when changed, `title`,
/// `tabs: [{tab_id, type, label, tab_version, updated_at, updated_by, updated_by_actor}]` and
/// `claims` (the presence board of the note).
pub fn changes(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, since: Option<&str>) -> Result<RestReply, Failure> {
    let now = env.now_us();
    answer(kv, who, &[("note_id", note_id)], 200, |kv| {
        if let Some(s) = since
            && (s.len() > 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            return Err(Refusal::invalid("since", "since must be an etag from a previous answer").into());
        }
        let head = load_head(kv, who, note_id)?;
        let tag = etag(&head, now);
        let mut out = json!({"note_id": head.note_id, "version": head.version, "etag": tag, "changed": since != Some(tag.as_str()),
                             "poll_after_ms": POLL_AFTER_MS});
        if since == Some(tag.as_str()) {
            return Ok(out);
        }
        out["title"] = head.title.clone().into();
        let tabs: Vec<Value> = head
            .tabs
            .iter()
            .map(|t| {
                json!({"tab_id": t.id, "type": t.kind.as_str(), "label": t.label, "tab_version": t.version,
                       "updated_at": rfc3339(t.updated_at), "updated_by": t.updated_by.name,
                       "updated_by_actor": crate::claim_audit::actor_str(t.updated_by.actor_type)})
            })
            .collect();
        out["tabs"] = tabs.into();
        out["claims"] = json!(board(kv, who, now, Some(note_id))?.claims);
        Ok(out)
    })
}

/// [`changes`] on a routed request.
pub(super) fn serve(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let note = c.param("note");
    let since = c.query("since");
    changes(c.kv, c.env, c.who, note, since)
}
