//! A tenant's stored bytes, exact at write time, on every host, with or
//! without a sweep.
//!
//! The store's promise is one compare-and-swap per key, so no commit can
//! write a note's head and a tenant-wide total together. The total is
//! therefore a counter of its own (`usage/bytes`, moved only by the store's
//! atomic `increment`), kept in step with the heads by a charge before each
//! commit and a refund where a charged commit did not land:
//!
//! - a write that adds content **charges** its bytes (`Charge::take`)
//!   after it decided to commit and right before its swap: the counter moves
//!   first, and if it passed `quota_bytes` the charge is taken back and the
//!   write refused `quota_exceeded`, nothing written;
//! - an attempt whose swap is known not to have landed (the swap failed and
//!   the attempt runs again, or the write ended refused) is **refunded**;
//!   a store failure after the charge leaves its outcome unknown, and the
//!   charge stays;
//! - the history sweep **refunds** what it freed, after the commit that
//!   dropped it from the note's count (`Head::stored_bytes`).
//!
//! **Invariant: counter ≥ Σ `stored_bytes` of the tenant's heads, and no
//! commit passes the quota.** A head's count grows only by a write that
//! charged the same bytes before its swap; a charge is taken back only when
//! its swap cannot have landed; a head's count shrinks only by a sweep commit,
//! refunded after it. So the counter never falls below what the heads
//! store. Two writers racing for the last bytes both move the counter before
//! either swaps, and the one whose increment passes the quota is refused: the
//! increments are atomic, so their sum is exact. The counter can only
//! over-count, by the writes in flight, by a host killed between a charge
//! and its swap, or by a store failure after a charge: the quota then
//! refuses early, never late.
//!
//! A tenant whose content predates the counter is counted the first time a
//! charge finds the counter at zero: the charge then adds the bytes its
//! heads store (a tenant with a zero counter stores nothing else).

use std::cell::Cell;

use crate::keys;
use crate::kv::TenantKv;
use crate::note_index::index_slice;
use crate::refusal::{Code, Failure, Out, Refusal};

/// Heads read per store call when a tenant's content is first counted.
const COUNT_BATCH: usize = 256;

/// The bytes one write attempt charged, to take back if its swap did not land.
#[derive(Default)]
pub(crate) struct Charge(Cell<u64>);

impl Charge {
    /// Charges `bytes` to the tenant's counter, refused `quota_exceeded`
    /// (the charge taken back) when it would pass `quota`. `version`: the
    /// note's version the refusal names.
    pub fn take(&self, kv: &TenantKv, quota: u64, bytes: u64, version: u64) -> Out<()> {
        assert_eq!(self.0.get(), 0, "an attempt charges once, after the last one was refunded");
        let delta = i64::try_from(bytes).unwrap_or(i64::MAX);
        let mut total = kv.increment(keys::USAGE_BYTES, delta)?;
        if total == delta {
            // The counter was at zero: count what the tenant stored before it.
            let before = stored_by_heads(kv)?;
            if before > 0 {
                total = kv.increment(keys::USAGE_BYTES, i64::try_from(before).unwrap_or(i64::MAX))?;
            }
        }
        let used = u64::try_from(total).unwrap_or(0).saturating_sub(bytes);
        if u64::try_from(total).unwrap_or(u64::MAX) > quota {
            kv.increment(keys::USAGE_BYTES, -delta)?;
            return Err(over_quota(quota, used, bytes, version).into());
        }
        self.0.set(bytes);
        Ok(())
    }

    /// Takes back what the last attempt charged (its swap did not land).
    pub fn refund(&self, kv: &TenantKv) -> Result<(), Failure> {
        let bytes = self.0.replace(0);
        if bytes > 0 {
            release(kv, bytes)?;
        }
        Ok(())
    }
}

/// Takes `bytes` off the tenant's counter: content that left the heads'
/// count (the history sweep), or a charge whose commit did not land.
pub(crate) fn release(kv: &TenantKv, bytes: u64) -> Result<(), Failure> {
    if bytes > 0 {
        kv.increment(keys::USAGE_BYTES, -i64::try_from(bytes).unwrap_or(i64::MAX))?;
    }
    Ok(())
}

/// The tenant's counter: the stored bytes its quota is checked against.
pub fn counted_bytes(store: &dyn cairn_kv::Store, tenant: &str) -> Result<u64, Failure> {
    let kv = TenantKv::system(store, tenant)?;
    Ok(u64::try_from(kv.increment(keys::USAGE_BYTES, 0)?).unwrap_or(0))
}

/// What the tenant's notes store by their own count (Σ of their heads'
/// `stored_bytes`): what the counter must never fall below.
pub fn stored_by_notes(store: &dyn cairn_kv::Store, tenant: &str) -> Result<u64, Failure> {
    stored_by_heads(&TenantKv::system(store, tenant)?)
}

/// Σ `stored_bytes` of the tenant's heads.
fn stored_by_heads(kv: &TenantKv) -> Result<u64, Failure> {
    let mut total = 0u64;
    let mut pos = 0;
    loop {
        let (ids, count) = index_slice(kv, pos, COUNT_BATCH)?;
        pos += ids.len();
        let keys: Vec<String> = ids.iter().map(|id| keys::note(id)).collect();
        for raw in kv.get_many(&keys)?.into_iter().flatten() {
            total = total.saturating_add(crate::model::Head::decode(&raw).map_or(0, |h| h.stored_bytes));
        }
        if ids.is_empty() || pos >= count {
            return Ok(total);
        }
    }
}

/// The refusal of a write that would store `adding` bytes past `quota`.
fn over_quota(quota: u64, used: u64, adding: u64, version: u64) -> Refusal {
    Refusal::new(Code::QuotaExceeded, format!("the tenant stores {used} bytes of content; this write would add {adding}, past its quota of {quota} bytes"))
        .with_version(version)
        .with("quota", "quota_bytes")
        .with("limit", quota)
        .with("used", used)
}
