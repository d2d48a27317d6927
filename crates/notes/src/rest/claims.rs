//! `/api/v1/claims/{claim}`: one claim's routes (renew, release, post a
//! note on it, force-release).

use serde::Deserialize;
use serde_json::{Value, json};

use cairn_kv::Store;

use crate::args::{ClaimRef, MAX_CLAIM_NOTE_CHARS, check_chars, check_ttl, parse, parse_claim_id};
use crate::claims;
use crate::env::{Env, Identity};
use crate::kv::TenantKv;
use crate::refusal::{Failure, Out};

use super::{Ctx, RestReply, answer};

/// An operation on one claim: the caller's tenant view and the parsed claim id, then
/// `f`, answered with `ok` on success.
fn on_claim(kv: &dyn Store, who: &Identity, claim_id: &str, ok: u16, f: impl FnOnce(&TenantKv, &ClaimRef) -> Out<Value>) -> Result<RestReply, Failure> {
    answer(kv, who, &[], ok, |kv| f(kv, &parse_claim_id(claim_id)?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RenewBody {
    #[serde(default)]
    ttl_seconds: Option<u64>,
}

/// Extends a live claim the caller holds (`{ttl_seconds?}`, default: the claim's ttl).
/// 200 with the claim; 403 `forbidden` for someone else's; 404 when it is not live.
pub fn renew_claim(kv: &dyn Store, env: &mut dyn Env, who: &Identity, claim_id: &str, args: Value) -> Result<RestReply, Failure> {
    on_claim(kv, who, claim_id, 200, |kv, r| {
        let a: RenewBody = parse(args)?;
        check_ttl(a.ttl_seconds)?;
        Ok(json!(claims::renew(kv, env, who, claim_id, r, a.ttl_seconds, "rest_renew_claim")?))
    })
}

/// Releases a claim the caller holds. 200 with `{claim_id, note_id, tab_id, released,
/// already_released, reason}`; a repeat is 200 with `already_released: true`; 403 for
/// someone else's claim.
pub fn release_claim(kv: &dyn Store, env: &mut dyn Env, who: &Identity, claim_id: &str) -> Result<RestReply, Failure> {
    on_claim(kv, who, claim_id, 200, |kv, r| Ok(json!(claims::release(kv, env, who, claim_id, r, false, "rest_release_claim")?)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoteBody {
    text: String,
}

/// Posts an ephemeral note (`{text}`, 1-2000 characters) on a live claim the caller holds.
/// 201 with `{claim_id, note_id, tab_id, posted_at, content_hash, notes_on_claim,
/// dropped_oldest, expires_at}`.
pub fn post_claim_note(kv: &dyn Store, env: &mut dyn Env, who: &Identity, claim_id: &str, args: Value) -> Result<RestReply, Failure> {
    on_claim(kv, who, claim_id, 201, |kv, r| {
        let a: NoteBody = parse(args)?;
        check_chars("text", &a.text, 1, MAX_CLAIM_NOTE_CHARS)?;
        Ok(json!(claims::post_note(kv, env, who, claim_id, r, &a.text, "rest_post_claim_note")?))
    })
}

/// Force-releases anyone's claim: only for a caller with role Admin AND actor type Human
/// (a role check; no token scope grants it). Audited with who did it (event `forced`).
/// 200 with the release result (`forced: true`, `forced_by`); 403 `forbidden` otherwise.
pub fn force_release_claim(kv: &dyn Store, env: &mut dyn Env, who: &Identity, claim_id: &str) -> Result<RestReply, Failure> {
    answer(kv, who, &[], 200, |kv| Ok(json!(claims::force_release(kv, env, who, claim_id)?)))
}

/// `POST …/renew`: [`renew_claim`].
pub(super) fn serve_renew(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let claim = c.param("claim");
    renew_claim(c.kv, c.env, c.who, claim, c.body)
}

/// `DELETE /api/v1/claims/{claim}`: [`release_claim`].
pub(super) fn serve_release(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let claim = c.param("claim");
    release_claim(c.kv, c.env, c.who, claim)
}

/// `POST …/notes`: [`post_claim_note`].
pub(super) fn serve_post_note(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let claim = c.param("claim");
    post_claim_note(c.kv, c.env, c.who, claim, c.body)
}

/// `POST …/force-release`: [`force_release_claim`].
pub(super) fn serve_force_release(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let claim = c.param("claim");
    force_release_claim(c.kv, c.env, c.who, claim)
}
