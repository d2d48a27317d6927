//! `POST /api/v1/notes/{note}/claims`: a claim on the note or one of its tabs.

use serde::Deserialize;
use serde_json::{Value, json};

use cairn_kv::Store;

use crate::args::{check_id, check_section_id, check_ttl, parse};
use crate::claims;
use crate::env::{Env, Identity};
use crate::refusal::Failure;

use super::{Ctx, RestReply, answer_with};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimBody {
    #[serde(default)]
    tab_id: Option<String>,
    #[serde(default)]
    section_id: Option<String>,
    #[serde(default)]
    ttl_seconds: Option<u64>,
}

/// Claims a note (or one tab with `tab_id`, or one section of it with `section_id` too) for `ttl_seconds` (1-3600, default 600).
/// 201 with `{claim_id, note_id, tab_id, section_id, held_by, actor_type, since, expires_at,
/// ttl_seconds, renewed: false}` when granted; 200 with the same claim and `renewed: true`
/// when the caller already held it (a heartbeat); 409 `claim_conflict` naming the holder.
pub fn claim_note(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, args: Value) -> Result<RestReply, Failure> {
    answer_with(kv, who, &[("note_id", note_id)], |kv| {
        let a: ClaimBody = parse(args)?;
        if let Some(t) = &a.tab_id {
            check_id("tab_id", t)?;
        }
        check_section_id(a.section_id.as_deref())?;
        check_ttl(a.ttl_seconds)?;
        let c = claims::claim(kv, env, who, note_id, a.tab_id.as_deref(), a.section_id.as_deref(), a.ttl_seconds, "rest_claim_note")?;
        Ok((if c.renewed { 200 } else { 201 }, json!(c.result)))
    })
}

/// [`claim_note`] on a routed request.
pub(super) fn serve(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let note = c.param("note");
    claim_note(c.kv, c.env, c.who, note, c.body)
}
