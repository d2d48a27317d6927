//! Claim audit records, and what every head commit does with claims that
//! lapsed: drop them, remember that they ended, and record the expiry.
//!
//! Records live at `audit/claims/<note_id>/<time µs:020>-<tag>`, one
//! immutable key per event (granted, renewed, released, expired, forced,
//! noted, refused). `tag` is 8 characters: the operation's random nonce for an
//! operation's own record (drawn once, so a retried attempt rewrites the same
//! key, and the record left is the operation's final outcome), or the first 8
//! hex digits of sha256(claim_id) for a claim that ended inside another commit
//! (expired: time = expires_at, so whoever drops it writes the same bytes).

use serde_json::{Value, json};

use crate::env::{ActorType, Identity};
use crate::keys;
use crate::kv::TenantKv;
use crate::model::{Claim, EndedClaim, Head, Who, canonical_json, rfc3339, sha_hex};
use crate::refusal::Failure;

/// Recently ended claims kept in a head.
pub(crate) const ENDED_KEPT: usize = 32;

/// The tag of a record about one claim ending inside another commit.
fn claim_tag(claim_id: &str) -> String {
    sha_hex(claim_id.as_bytes())[..8].to_string()
}

pub(crate) fn actor_str(a: ActorType) -> &'static str {
    match a {
        ActorType::Agent => "agent",
        ActorType::Human => "human",
    }
}

/// Who did something, as audit records name them.
pub(crate) fn who_json(w: &Who) -> Value {
    json!({"subject": w.subject, "name": w.name, "actor_type": actor_str(w.actor_type)})
}

/// One audit record. `by` is who attempted (absent for an expiry: nobody did it).
pub(crate) struct Record<'a> {
    pub event: &'static str,
    pub action: &'static str,
    pub at: u64,
    pub note_id: &'a str,
    pub claim: Option<&'a Claim>,
    pub by: Option<&'a Identity>,
}

impl Record<'_> {
    /// The record as JSON; `extra` fields are added (error, reason, already_released, …).
    pub fn json(&self, extra: Value) -> Value {
        let mut v = json!({
            "event": self.event,
            "action": self.action,
            "at": rfc3339(self.at),
            "at_us": self.at,
            "note_id": self.note_id,
            "by": self.by.map(|w| who_json(&Who::of(w))),
        });
        if let Some(c) = self.claim {
            v["claim_id"] = c.claim_id.clone().into();
            v["tab_id"] = c.tab_id.clone().into();
            v["holder"] = who_json(&c.holder);
            v["since"] = rfc3339(c.since).into();
            v["expires_at"] = rfc3339(c.expires_at).into();
        }
        if let Value::Object(m) = extra {
            for (k, x) in m {
                v[k] = x;
            }
        }
        v
    }
}

/// Writes a record under `key` (canonical JSON: the same record is the same bytes).
pub(crate) fn put_record(kv: &TenantKv, key: &str, rec: &Value) -> Result<(), Failure> {
    kv.set(key, canonical_json(rec).as_bytes())
}

/// Removes lapsed claims from the head (expiry is a release with reason `expired`);
/// returns them for their audit records.
pub(crate) fn drop_lapsed(head: &mut Head, now: u64) -> Vec<Claim> {
    let (live, lapsed): (Vec<Claim>, Vec<Claim>) = std::mem::take(&mut head.claims).into_iter().partition(|c| c.live(now));
    head.claims = live;
    for c in &lapsed {
        note_ended(head, &c.claim_id, "expired", c.expires_at);
    }
    lapsed
}

/// Remembers that a claim ended (so a second release can say how).
pub(crate) fn note_ended(head: &mut Head, claim_id: &str, reason: &str, at: u64) {
    head.ended.push(EndedClaim { claim_id: claim_id.to_string(), reason: reason.to_string(), at });
    if head.ended.len() > ENDED_KEPT {
        let cut = head.ended.len() - ENDED_KEPT;
        head.ended.drain(..cut);
    }
}

/// The `expired` records of claims a commit drops: deterministic keys and bytes, written
/// before the head CAS.
pub(crate) fn write_expired(kv: &TenantKv, note_id: &str, expired: &[Claim]) -> Result<(), Failure> {
    for c in expired {
        let rec = Record { event: "expired", action: "expire", at: c.expires_at, note_id, claim: Some(c), by: None }.json(json!({"reason": "expired"}));
        put_record(kv, &keys::claim_audit(note_id, c.expires_at, &claim_tag(&c.claim_id)), &rec)?;
    }
    Ok(())
}

/// A record about a claim that ended inside another commit (e.g. its tab was deleted).
pub(crate) fn write_ended(kv: &TenantKv, note_id: &str, claim: &Claim, reason: &str, action: &'static str, by: &Identity, at: u64) -> Result<(), Failure> {
    let rec = Record { event: "released", action, at, note_id, claim: Some(claim), by: Some(by) }.json(json!({"reason": reason}));
    put_record(kv, &keys::claim_audit(note_id, at, &claim_tag(&claim.claim_id)), &rec)
}
