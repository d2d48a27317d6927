//! The tenant's claim index, and the sweep that expires lapsed claims.
//!
//! `claims/index` is `{rev, notes: {note_id: due µs}}`: every note whose head
//! holds a claim is listed with a due time no later than the earliest expiry
//! of its claims (it may list more notes, and earlier times: the sweep
//! corrects both). The presence board and the sweep start here instead of
//! scanning notes.
//!
//! Keeping the index exact without a transaction across two keys (see
//! [`crate::model::Head::claims_due`]): a claimer writes the index (always
//! bumping its `rev`) before the head commit that adds a claim expiring before
//! the head's `claims_due`; the sweep reads the index with a CAS handle
//! *first*, then commits each due head (always a head commit, even when
//! nothing lapsed: dropping lapsed claims and setting `claims_due` to the new
//! earliest expiry), and last swaps the index. A claimer whose head commit
//! lands after the sweep's head commit read the sweep's `claims_due`, so it
//! wrote the index after the sweep read it: the sweep's index swap fails and
//! it starts over. A claimer whose head commit lands before it is seen by the
//! sweep. So nothing ever raises an index entry above a live claim's expiry,
//! and nothing takes a note with claims off the index (a test races claimers
//! against the sweep at every store operation to check this).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::env::Env;
use crate::head::{Decision, Limit, MAX_ATTEMPTS, Reader, transact, update};
use crate::keys::CLAIM_INDEX;
use crate::kv::TenantKv;
use crate::model::{decode, encode, nonce};
use crate::refusal::{Code, Failure, Halt, Out, Refusal};

/// Notes with claims one tenant may have at once (keeps the index far below the value limit).
pub(crate) const MAX_CLAIMED_NOTES: usize = 10_000;

/// The tenant's claim index.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct ClaimIndex {
    pub rev: u64,
    pub notes: BTreeMap<String, u64>,
}

/// Reads the claim index (empty when absent).
pub(crate) fn read_index(kv: &TenantKv) -> Result<ClaimIndex, Failure> {
    match kv.get(CLAIM_INDEX)? {
        Some(raw) => decode("claim index", &raw),
        None => Ok(ClaimIndex::default()),
    }
}

/// Lists `note_id` in the claim index with a due time ≤ `due`.
/// Always bumps the index `rev`, even when the entry was already low enough: that is what
/// makes a concurrent sweep start over (see the module docs).
pub(crate) fn index_lower(kv: &TenantKv, note_id: &str, due: u64) -> Out<()> {
    update(kv, CLAIM_INDEX, "claim index", "the tenant's claim index is busy; nothing was claimed", |idx: &mut ClaimIndex| {
        match idx.notes.get_mut(note_id) {
            Some(d) => *d = (*d).min(due),
            None => {
                if idx.notes.len() >= MAX_CLAIMED_NOTES {
                    return Err(Refusal::too_large(
                        "note_id",
                        format!("this tenant already holds claims on {MAX_CLAIMED_NOTES} notes; release some claims first"),
                    )
                    .into());
                }
                idx.notes.insert(note_id.to_string(), due);
            }
        }
        idx.rev += 1;
        Ok(true)
    })
}

/// What the sweep learned about one note.
enum NoteSweep {
    /// The head is gone: take it off the index.
    Gone,
    /// The head stayed busy (or cannot be committed): leave its entry as it is.
    Busy,
    /// The head now promises this due time (`None`: no claims left), and how many lapsed.
    Due(Option<u64>, usize),
}

const SWEEP_LIMIT: Limit = Limit { field: "note_id", message: "the note head exceeds the store's value limit" };

/// Drops a note's lapsed claims and records its new earliest expiry in the head.
///
/// Always a head commit, even with nothing lapsed: the index entry is about to move (it
/// was due, so it rises or goes), and a claimer that read the head before this commit
/// must fail its swap and re-read `claims_due`, or its claim could be added under an
/// entry the sweep is taking away.
fn sweep_note(kv: &TenantKv, note_id: &str, now: u64, nonce: &str) -> Result<NoteSweep, Failure> {
    let out = transact(kv, note_id, Reader::System, now, nonce, &SWEEP_LIMIT, "busy", |head, expired| {
        let due = head.claims.iter().map(|c| c.expires_at).min();
        head.claims_due = due;
        Ok(Decision::Commit(NoteSweep::Due(due, expired.len())))
    });
    match out {
        Ok(s) => Ok(s),
        Err(Halt::Refused(r)) if r.code == Code::NotFound => Ok(NoteSweep::Gone),
        Err(Halt::Refused(_)) => Ok(NoteSweep::Busy),
        Err(Halt::Failed(e)) => Err(e),
    }
}

/// Releases (reason `expired`) every lapsed claim of `tenant`; returns how many.
///
/// Cheap when nothing is due: one read of the tenant's claim index, whose entries carry
/// each note's earliest expiry; only notes due by now are read and committed. Meant to be
/// called periodically (the embedded host: every 60 s per tenant; on Spin: a route an
/// external scheduler calls). Expiry does not depend on it: every transaction on a head
/// drops lapsed claims, and no read shows one. Also shrinks the index (notes whose claims
/// all ended leave it). An invalid tenant id is a [`Failure::Store`] (a host bug).
pub fn sweep_expired_claims(store: &dyn cairn_kv::Store, env: &mut dyn Env, tenant: &str) -> Result<usize, Failure> {
    let kv = TenantKv::system(store, tenant)?;
    let mut expired = 0;
    for _ in 0..MAX_ATTEMPTS {
        let now = env.now_us();
        let held = kv.read(CLAIM_INDEX)?;
        let Some(raw) = &held.value else {
            return Ok(expired);
        };
        let mut idx: ClaimIndex = decode("claim index", raw)?;
        let due: Vec<String> = idx.notes.iter().filter(|(_, d)| **d <= now).map(|(n, _)| n.clone()).collect();
        if due.is_empty() {
            return Ok(expired);
        }
        for note_id in due {
            match sweep_note(&kv, &note_id, now, &nonce(env))? {
                NoteSweep::Gone => {
                    idx.notes.remove(&note_id);
                }
                NoteSweep::Busy => {}
                NoteSweep::Due(d, n) => {
                    expired += n;
                    match d {
                        Some(d) => idx.notes.insert(note_id, d),
                        None => idx.notes.remove(&note_id),
                    };
                }
            }
        }
        idx.rev += 1;
        if kv.swap(CLAIM_INDEX, held.observed, &encode(&idx))?.is_none() {
            return Ok(expired);
        }
    }
    Ok(expired)
}
