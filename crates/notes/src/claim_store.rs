//! What claims keep outside the note head: audit records, the tenant's claim index, and
//! the sweep that expires lapsed claims.
//!
//! Keys (all under `t/<tenant>/`):
//! - `audit/claims/<note_id>/<time µs:020>-<tag>`: one immutable record per claim event
//!   (granted, renewed, released, expired, forced, noted, refused). `tag` is 8 characters:
//!   the operation's random nonce for an operation's own record (drawn once, so a retried
//!   attempt rewrites the same key, and the record left is the operation's final outcome),
//!   or the first 8 hex digits of sha256(claim_id) for a claim that ended inside another
//!   commit (expired: time = expires_at, so whoever drops it writes the same bytes).
//! - `claims/index`: the tenant's claim index, `{rev, notes: {note_id: due µs}}`: every
//!   note whose head holds a claim is listed with a due time no later than the earliest
//!   expiry of its claims (it may list more notes, and earlier times: the sweep corrects
//!   both). The presence board and the sweep start here instead of scanning notes.
//!
//! Keeping the index exact without a transaction across two keys (see
//! [`crate::model::Head::claims_due`]): a claimer writes the index (always bumping its
//! `rev`) before the head CAS that adds a claim expiring before the head's `claims_due`;
//! the sweep reads the index with a CAS handle *first*, then commits each due head
//! (always a head commit, even when nothing lapsed: dropping lapsed claims and setting
//! `claims_due` to the new earliest expiry), and last swaps the index. A claimer whose
//! head swap lands after the sweep's head commit read the sweep's `claims_due`, so it
//! wrote the index after the sweep read it: the sweep's index swap fails and it starts
//! over. A claimer whose head swap lands before it is seen by the sweep. So nothing ever
//! raises an index entry above a live claim's expiry, and nothing takes a note with
//! claims off the index (a test races claimers against the sweep to check this).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::env::{ActorType, Env, Identity};
use crate::kv::{Kv, KvError, MAX_VALUE_BYTES, TenantKv};
use crate::model::{
    Claim, EndedClaim, Head, Who, canonical_json, decode, encode, rfc3339, sha_hex,
};
use crate::reply::{Fail, Out, Refusal};
use crate::store::note_key;
use crate::txn::MAX_ATTEMPTS;

/// The tenant's claim index key.
pub(crate) const CLAIM_INDEX_KEY: &str = "claims/index";
/// Notes with claims one tenant may have at once (keeps the index far below the value limit).
pub(crate) const MAX_CLAIMED_NOTES: usize = 10_000;
/// Recently ended claims kept in a head.
pub(crate) const ENDED_KEPT: usize = 32;
/// Times the sweep starts over when claimers keep moving the index.
const SWEEP_ROUNDS: usize = 8;

pub(crate) fn claim_audit_key(note_id: &str, at: u64, tag: &str) -> String {
    format!("audit/claims/{note_id}/{at:020}-{tag}")
}

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

fn who_json(w: &Who) -> Value {
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
pub(crate) fn put_record<K: Kv>(kv: &TenantKv<K>, key: &str, rec: &Value) -> Result<(), KvError> {
    kv.set(key, canonical_json(rec).as_bytes())
}

/// Removes lapsed claims from the head (expiry is a release with reason `expired`);
/// returns them for their audit records.
pub(crate) fn drop_lapsed(head: &mut Head, now: u64) -> Vec<Claim> {
    let (live, lapsed): (Vec<Claim>, Vec<Claim>) = std::mem::take(&mut head.claims)
        .into_iter()
        .partition(|c| c.live(now));
    head.claims = live;
    for c in &lapsed {
        note_ended(head, &c.claim_id, "expired", c.expires_at);
    }
    lapsed
}

/// Remembers that a claim ended (so a second release can say how).
pub(crate) fn note_ended(head: &mut Head, claim_id: &str, reason: &str, at: u64) {
    head.ended.push(EndedClaim {
        claim_id: claim_id.to_string(),
        reason: reason.to_string(),
        at,
    });
    if head.ended.len() > ENDED_KEPT {
        let cut = head.ended.len() - ENDED_KEPT;
        head.ended.drain(..cut);
    }
}

/// The `expired` records of claims a commit drops: deterministic keys and bytes, written
/// before the head CAS.
pub(crate) fn write_expired<K: Kv>(
    kv: &TenantKv<K>,
    note_id: &str,
    expired: &[Claim],
) -> Result<(), KvError> {
    for c in expired {
        let rec = Record {
            event: "expired",
            action: "expire",
            at: c.expires_at,
            note_id,
            claim: Some(c),
            by: None,
        }
        .json(json!({"reason": "expired"}));
        put_record(
            kv,
            &claim_audit_key(note_id, c.expires_at, &claim_tag(&c.claim_id)),
            &rec,
        )?;
    }
    Ok(())
}

/// A record about a claim that ended inside another commit (e.g. its tab was deleted).
pub(crate) fn write_ended<K: Kv>(
    kv: &TenantKv<K>,
    note_id: &str,
    claim: &Claim,
    reason: &str,
    action: &'static str,
    by: &Identity,
    at: u64,
) -> Result<(), KvError> {
    let rec = Record {
        event: "released",
        action,
        at,
        note_id,
        claim: Some(claim),
        by: Some(by),
    }
    .json(json!({"reason": reason}));
    put_record(
        kv,
        &claim_audit_key(note_id, at, &claim_tag(&claim.claim_id)),
        &rec,
    )
}

/// The tenant's claim index.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct ClaimIndex {
    pub rev: u64,
    pub notes: BTreeMap<String, u64>,
}

/// Reads the claim index (empty when absent).
pub(crate) fn read_index<K: Kv>(kv: &TenantKv<K>) -> Result<ClaimIndex, KvError> {
    match kv.get(CLAIM_INDEX_KEY)? {
        Some(raw) => decode("claim index", &raw),
        None => Ok(ClaimIndex::default()),
    }
}

/// Lists `note_id` in the claim index with a due time ≤ `due` (one CAS, bounded retries).
/// Always bumps the index `rev`, even when the entry was already low enough: that is what
/// makes a concurrent sweep start over (see the module docs).
pub(crate) fn index_lower<K: Kv>(kv: &TenantKv<K>, note_id: &str, due: u64) -> Out<()> {
    for _ in 0..64 {
        let (cas, raw) = kv.read_cas(CLAIM_INDEX_KEY)?;
        let Some(raw) = raw else {
            // A constant first value, so racing creators on an upserting store agree.
            kv.swap(cas, encode(&ClaimIndex::default()))?;
            continue;
        };
        let mut idx: ClaimIndex = decode("claim index", &raw)?;
        match idx.notes.get_mut(note_id) {
            Some(d) => *d = (*d).min(due),
            None => {
                if idx.notes.len() >= MAX_CLAIMED_NOTES {
                    return Err(Refusal::too_large(
                        "note_id",
                        format!(
                            "this tenant already holds claims on {MAX_CLAIMED_NOTES} notes; \
                             release some claims first"
                        ),
                    )
                    .into());
                }
                idx.notes.insert(note_id.to_string(), due);
            }
        }
        idx.rev += 1;
        if kv.swap(cas, encode(&idx))? {
            return Ok(());
        }
    }
    Err(Fail::Refused(Refusal::new(
        "busy",
        "the tenant's claim index is busy; nothing was claimed",
    )))
}

/// What the sweep learned about one note.
enum NoteSweep {
    /// The head is gone: take it off the index.
    Gone,
    /// The head stayed busy: leave its entry as it is.
    Busy,
    /// The head now promises this due time (`None`: no claims left).
    Due(Option<u64>, usize),
}

/// Drops a note's lapsed claims and records its new earliest expiry in the head.
fn sweep_note<K: Kv>(kv: &TenantKv<K>, note_id: &str, now: u64) -> Result<NoteSweep, KvError> {
    let key = note_key(note_id);
    for _ in 0..MAX_ATTEMPTS {
        let (cas, raw) = kv.read_cas(&key)?;
        let Some(raw) = raw else {
            return Ok(NoteSweep::Gone);
        };
        let mut head: Head = decode("note head", &raw)?;
        let expired = drop_lapsed(&mut head, now);
        let due = head.claims.iter().map(|c| c.expires_at).min();
        // Always a head commit, even with nothing lapsed: the index entry is about to move
        // (it was due, so it rises or goes), and a claimer that read the head before this
        // commit must fail its swap and re-read `claims_due`, or its claim could be added
        // under an entry the sweep is taking away.
        write_expired(kv, note_id, &expired)?;
        head.claims_due = due;
        head.rev += 1;
        let bytes = encode(&head);
        if bytes.len() > MAX_VALUE_BYTES {
            return Ok(NoteSweep::Busy);
        }
        if kv.swap(cas, bytes)? {
            return Ok(NoteSweep::Due(due, expired.len()));
        }
    }
    Ok(NoteSweep::Busy)
}

/// Releases (reason `expired`) every lapsed claim of `tenant`; returns how many.
///
/// Cheap when nothing is due: one read of the tenant's claim index, whose entries carry
/// each note's earliest expiry; only notes due by now are read and committed. Meant to be
/// called periodically (the embedded host: every 60 s per tenant; on Spin: a route an
/// external scheduler calls). Expiry does not depend on it: every transaction on a head
/// drops lapsed claims, and no read shows one. Also shrinks the index (notes whose claims
/// all ended leave it). An invalid tenant id is a [`KvError::Store`] (a host bug).
pub fn sweep_expired_claims<K: Kv>(
    kv: &K,
    env: &mut impl Env,
    tenant: &str,
) -> Result<usize, KvError> {
    let kv = TenantKv::new(kv, tenant)
        .ok_or_else(|| KvError::Store(format!("invalid tenant id {tenant:?}")))?;
    let mut expired = 0;
    for _ in 0..SWEEP_ROUNDS {
        let now = env.now_us();
        let (cas, raw) = kv.read_cas(CLAIM_INDEX_KEY)?;
        let Some(raw) = raw else {
            return Ok(expired);
        };
        let mut idx: ClaimIndex = decode("claim index", &raw)?;
        let due: Vec<String> = idx
            .notes
            .iter()
            .filter(|(_, d)| **d <= now)
            .map(|(n, _)| n.clone())
            .collect();
        if due.is_empty() {
            return Ok(expired);
        }
        for note_id in due {
            match sweep_note(&kv, &note_id, now)? {
                NoteSweep::Gone => {
                    idx.notes.remove(&note_id);
                }
                NoteSweep::Busy => {}
                NoteSweep::Due(d, n) => {
                    expired += n;
                    match d {
                        Some(d) => {
                            idx.notes.insert(note_id, d);
                        }
                        None => {
                            idx.notes.remove(&note_id);
                        }
                    }
                }
            }
        }
        idx.rev += 1;
        if kv.swap(cas, encode(&idx))? {
            return Ok(expired);
        }
    }
    Ok(expired)
}
