//! `GET /api/v1/claims[?note_id=]`: the presence board.

use serde_json::json;

use cairn_kv::Store;

use crate::claims;
use crate::env::{Env, Identity};
use crate::refusal::Failure;

use super::{Ctx, RestReply, answer};

/// The presence board: live claims of the caller's tenant, of one note or of every note
/// the caller may see. 200 with `{claims: [{claim_id, note_id, note_title, tab_id,
/// tab_label, held_by, actor_type, since, expires_at, ttl_seconds, renewed, yours, notes:
/// [{text, posted_at, provenance}]}], truncated, as_of, notice}`.
pub fn list_claims(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: Option<&str>) -> Result<RestReply, Failure> {
    let ids: Vec<(&str, &str)> = note_id.map(|n| ("note_id", n)).into_iter().collect();
    answer(kv, who, &ids, 200, |kv| Ok(json!(claims::board(kv, who, env.now_us(), note_id)?)))
}

/// [`list_claims`] on a routed request.
pub(super) fn serve(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let note = c.query("note_id");
    list_claims(c.kv, c.env, c.who, note)
}
