//! The one head transaction. Every change to a note — a write, a claim
//! operation, the sweep — commits through [`transact`], and every other small
//! record Cairn rewrites in place (the tenant's indexes) through [`update`].
//!
//! One attempt of [`transact`]: read the head (absent or hidden: `not_found`)
//! → drop the claims that lapsed → let the operation decide on the head →
//! write the lapsed claims' records → bump the head's `rev` → check the size
//! → swap. A lost swap starts a new attempt from the fresh read the store
//! handed back; after [`MAX_ATTEMPTS`] the operation is refused as `busy` and
//! nothing was written.
//!
//! Why this is enough for every rule: the head is the only mutable record of
//! a note, and the swap is its only writer. An operation's decisions (the
//! idempotency key, the claims, the version, the apply) are all taken on the
//! head it is about to replace, so they hold in the state that commits; if
//! anyone committed in between, the swap fails and the decisions are taken
//! again. Everything an operation writes besides the head (content blobs,
//! spilled records, audit records) is immutable or keyed by the operation
//! itself, is written before the swap, and is reachable only through the head
//! that the swap commits: a lost swap leaves nothing anyone can see.
//! The head's `rev` grows with every commit, so even a store that compares
//! values instead of versions sees every change.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::claim_audit::{drop_lapsed, write_expired};
use crate::env::Identity;
use crate::keys;
use crate::kv::TenantKv;
use crate::model::{Claim, Head, decode, encode};
use crate::refusal::{Code, Fail, Out, Refusal};

/// Attempts of every compare-and-swap loop before it gives up as `busy`.
pub(crate) const MAX_ATTEMPTS: usize = 32;

/// Who reads the head.
#[derive(Clone, Copy)]
pub(crate) enum Reader<'a> {
    /// A caller: agents see only notes approved for agents.
    Caller(&'a Identity),
    /// The system (the sweep): every head.
    System,
}

/// What one attempt of an operation decided.
pub(crate) enum Decision<R> {
    /// Commit the changed head, then answer.
    Commit(R),
    /// Answer; the head has no change of its own, but claims that lapsed are
    /// still dropped (a commit) when there are any.
    Answer(R),
    /// Answer and leave the head exactly as it is.
    Leave(R),
}

/// How a head that outgrew the store's value limit is refused.
pub(crate) struct Limit {
    /// The argument blamed.
    pub field: &'static str,
    /// The refusal's message.
    pub message: &'static str,
}

/// Decodes a head and applies the visibility rule: a note the reader may not
/// see is the same `not_found` as a note that does not exist.
pub(crate) fn visible_head(bytes: &[u8], reader: Reader) -> Out<Head> {
    let head: Head = decode("note head", bytes)?;
    match reader {
        Reader::Caller(who) if !head.visible_to(who) => Err(Refusal::not_found("note").into()),
        _ => Ok(head),
    }
}

/// Reads the head of a note the caller may see (no transaction: for reads).
pub(crate) fn load_head(kv: &TenantKv, who: &Identity, note_id: &str) -> Out<Head> {
    match kv.get(&keys::note(note_id))? {
        Some(bytes) => visible_head(&bytes, Reader::Caller(who)),
        None => Err(Refusal::not_found("note").into()),
    }
}

/// Runs `op` on the head of `note_id` as one transaction (see the module docs).
///
/// `now` is fixed by the caller for every attempt, so records an attempt writes
/// before a lost swap are rewritten with the same keys and bytes by the next.
/// `op` gets the head with lapsed claims already dropped, and those claims.
pub(crate) fn transact<R>(
    kv: &TenantKv,
    note_id: &str,
    reader: Reader,
    now: u64,
    limit: &Limit,
    busy: &str,
    mut op: impl FnMut(&mut Head, &[Claim]) -> Out<Decision<R>>,
) -> Out<R> {
    let key = keys::note(note_id);
    let mut held = kv.read(&key)?;
    for _ in 0..MAX_ATTEMPTS {
        let Some(raw) = &held.value else {
            return Err(Refusal::not_found("note").into());
        };
        let mut head = visible_head(raw, reader)?;
        let expired = drop_lapsed(&mut head, now);
        let answer = match op(&mut head, &expired)? {
            Decision::Leave(r) => return Ok(r),
            Decision::Answer(r) if expired.is_empty() => return Ok(r),
            Decision::Answer(r) | Decision::Commit(r) => r,
        };
        write_expired(kv, note_id, &expired)?;
        head.rev += 1;
        let bytes = encode(&head);
        if bytes.len() > cairn_kv::MAX_VALUE_BYTES {
            return Err(Refusal::too_large(limit.field, limit.message).into());
        }
        match kv.swap(&key, held.observed, &bytes)? {
            None => return Ok(answer),
            Some(fresh) => held = fresh,
        }
    }
    Err(Refusal::busy(busy).into())
}

/// Whether an outcome is the `busy` refusal of a contended loop.
pub(crate) fn is_busy<T>(out: &Out<T>) -> bool {
    matches!(out, Err(Fail::Refused(r)) if r.code == Code::Busy)
}

/// Read-modify-swap of a small record that is not a note head (the tenant's
/// note list, its claim index, the tenant registry), with the same bounded
/// retries. An absent record is first created as `T::default()`, so that
/// writers racing on a store that upserts absent keys write the same bytes.
/// `f` changes the record, or answers `false` to leave it as it is.
pub(crate) fn update<T: Serialize + DeserializeOwned + Default>(
    kv: &TenantKv,
    key: &str,
    what: &str,
    busy: &str,
    mut f: impl FnMut(&mut T) -> Out<bool>,
) -> Out<()> {
    let mut held = kv.read(key)?;
    for _ in 0..MAX_ATTEMPTS {
        let (mut record, creating) = match &held.value {
            Some(raw) => (decode::<T>(what, raw)?, false),
            None => (T::default(), true),
        };
        let changed = if creating { true } else { f(&mut record)? };
        if !changed {
            return Ok(());
        }
        match kv.swap(key, held.observed, &encode(&record))? {
            None if creating => held = kv.read(key)?,
            None => return Ok(()),
            Some(fresh) => held = fresh,
        }
    }
    Err(Refusal::busy(busy).into())
}
