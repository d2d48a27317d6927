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
//!
//! # On a store that lies
//!
//! All of the above rests on the swap telling the truth. A store Cairn cannot
//! vouch for ([`cairn_kv::Store::vouched`] is false: a host's store behind
//! `wasi:keyvalue`, unless the `commit_check` variable says otherwise) may
//! report a lost swap as written (Spin's Redis backend takes the nil reply of
//! an `EXEC` whose `WATCH`ed key changed for success) or, after a reconnect
//! between `WATCH` and `EXEC`, write blindly over a newer head. On such a
//! store every attempt also
//!
//! 1. re-reads the head right before its swap and starts over if anyone
//!    committed since the read it decided on: the swap then goes out on a
//!    handle not a moment old, so a blind write can only hit a commit that
//!    lands in the instant between that read and the swap;
//! 2. writes a commit marker of its own into the head (the operation's nonce
//!    and the attempt number), kept among the [`MARKERS_KEPT`] newest;
//! 3. after a swap reported as done, waits [`SETTLE`] and reads the head back,
//!    and answers only if its marker is there (in the head it wrote, or in a
//!    later head that moved on from it). A marker that is not there means the
//!    swap did not land, or was overwritten: the attempt starts over from the
//!    head it read back, as after a lost swap. It is never acknowledged.
//!
//! A store may also report a swap failed that landed (Spin's Redis backend
//! reports every swap failed). A fresh head that carries this attempt's
//! marker holds the commit: the attempt is confirmed as in step 3 and
//! answered as written, never decided again on its own result (which would
//! answer a keyed write as its own replay and an unkeyed one as a conflict).
//!
//! The wait is what closes the blind write: a swap that could overwrite this
//! commit went out on a read taken before this commit landed, and every
//! writer sends its swap within [`SWAP_AFTER_READ`] of its read (else it reads
//! again), so such a swap has landed by the time this writer reads back, as
//! long as a request reaches the store within `SETTLE - SWAP_AFTER_READ`
//! (3 ms): the overwrite is seen, and this write starts over instead of being
//! acknowledged. These two are the only places the core reads a clock of its
//! own; they order real requests, never a record.
//!
//! Starting over is safe for every operation: a keyed write finds its own
//! idempotency record if it did land, a claim finds itself held (a
//! heartbeat), and any other write is conditional on the version it read.
//!
//! Asserted before every swap, against the head decided on ([`Base::check`]):
//! `rev` moves by one, the note version by at most one and then with its
//! history entry, id counters and the blob generation never go back, the
//! records the head keeps stay bounded, and the head fits the value limit.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::claim_audit::{ENDED_KEPT, drop_lapsed, write_expired};
use crate::dirty;
use crate::env::Identity;
use crate::keys;
use crate::kv::{Held, TenantKv};
use crate::model::{Claim, Head, decode, encode};
use crate::refusal::{Code, Halt, Out, Refusal};

pub(crate) use crate::kv::MAX_ATTEMPTS;
/// Commit markers kept in a head (the newest), for writers that confirm
/// their commits: a marker is found as long as fewer commits than this came
/// after it before its writer read the head back.
pub(crate) const MARKERS_KEPT: usize = 32;
/// How long a writer that confirms waits between its swap and its read-back.
pub(crate) const SETTLE: std::time::Duration = std::time::Duration::from_millis(5);
/// The longest a writer that confirms lets pass between its fresh read and its swap.
pub(crate) const SWAP_AFTER_READ: std::time::Duration = std::time::Duration::from_millis(2);
/// The delivery bound the commit check rests on: a swap that reaches the
/// store within this long of the read it was based on cannot overwrite an
/// acknowledged commit unseen (`SETTLE - SWAP_AFTER_READ`).
pub const DELIVERY_BOUND: std::time::Duration = SETTLE.saturating_sub(SWAP_AFTER_READ);

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
    /// Write these immutable records (relative keys: content blobs, spilled
    /// records, as a staging view gathered them), then commit the changed
    /// head, then answer. The records go out in one batch with the dirty
    /// marker, before the swap.
    CommitWith(R, Vec<(String, Vec<u8>)>),
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
    let head = Head::decode(bytes)?;
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
/// `nonce` is the operation's own, drawn once: each attempt's commit marker is
/// made from it. `op` gets the head with lapsed claims already dropped, and
/// those claims.
#[allow(clippy::too_many_arguments)]
pub(crate) fn transact<R>(
    kv: &TenantKv,
    note_id: &str,
    reader: Reader,
    now: u64,
    nonce: &str,
    limit: &Limit,
    busy: &str,
    mut op: impl FnMut(&mut Head, &[Claim]) -> Out<Decision<R>>,
) -> Out<R> {
    let key = keys::note(note_id);
    let confirm = kv.confirms_commits();
    let mut held = kv.read(&key)?;
    for attempt in 0..MAX_ATTEMPTS {
        let Some(raw) = &held.value else {
            return Err(Refusal::not_found("note").into());
        };
        let mut head = visible_head(raw, reader)?;
        let base = Base::of(&head);
        let before = dirty::Before::of(&head);
        let expired = drop_lapsed(&mut head, now);
        let (answer, mut writes) = match op(&mut head, &expired)? {
            Decision::Leave(r) => return Ok(r),
            Decision::Answer(r) if expired.is_empty() => return Ok(r),
            Decision::Answer(r) | Decision::Commit(r) => (r, Vec::new()),
            Decision::CommitWith(r, writes) => (r, writes),
        };
        write_expired(kv, note_id, &expired)?;
        let marker = format!("{nonce}.{attempt}");
        let bytes = seal(&mut head, &base, confirm.then_some(marker.as_str()), limit)?;
        // A change to what a tab says marks the note dirty for the search
        // index before the swap that commits it (see `index`), in the same
        // batch as the records the commit refers to.
        if let Some(marker) = dirty::marker(&before, &head, now) {
            writes.push(marker);
        }
        if !writes.is_empty() {
            kv.set_many(&writes)?;
        }
        if confirm && !fresh_for_swap(kv, &key, &mut held)? {
            continue;
        }
        match kv.swap(&key, held.observed, &bytes)? {
            None if !confirm => return Ok(answer),
            // Reported failed, and the fresh head does not carry this
            // attempt's marker: it did not land (or was overwritten).
            Some(fresh) if !confirm || !carries(&fresh, &marker) => held = fresh,
            // Reported written, or reported failed by a store that says so
            // of swaps that landed (the fresh head carries the marker):
            // confirmed like any commit, and answered as this commit.
            _ => {
                std::thread::sleep(SETTLE);
                match landed(kv, &key, &marker)? {
                    Ok(()) => return Ok(answer),
                    Err(read_back) => held = read_back,
                }
            }
        }
    }
    Err(Refusal::busy(busy).into())
}

/// Whether the head read for this attempt is still the stored one, read
/// again right before the swap (a store that cannot vouch for its swaps
/// must not be handed one on a stale read): `held` becomes the fresh read;
/// `false` when it moved, or when that read took longer than
/// [`SWAP_AFTER_READ`] to lead to the swap (read again, and decide again).
fn fresh_for_swap(kv: &TenantKv, key: &str, held: &mut Held) -> Out<bool> {
    let fresh = kv.read(key)?;
    let read_at = std::time::Instant::now();
    let same = fresh.value == held.value;
    *held = fresh;
    if !same {
        return Ok(false);
    }
    if read_at.elapsed() > SWAP_AFTER_READ {
        *held = kv.read(key)?;
        return Ok(false);
    }
    Ok(true)
}

/// The bytes of the head an attempt swaps in: its `rev` moved by one, its
/// commit `marker` kept (when it confirms its commit), within the store's
/// value limit (else `too_large` as `limit` says), and checked against the
/// head it was decided on ([`Base::check`]).
fn seal(head: &mut Head, base: &Base, marker: Option<&str>, limit: &Limit) -> Out<Vec<u8>> {
    head.rev += 1;
    if let Some(m) = marker {
        head.commits.push(m.to_string());
        let cut = head.commits.len().saturating_sub(MARKERS_KEPT);
        head.commits.drain(..cut);
    }
    let bytes = encode(head);
    if bytes.len() > cairn_kv::MAX_VALUE_BYTES {
        return Err(Refusal::too_large(limit.field, limit.message).into());
    }
    base.check(head, bytes.len(), marker);
    Ok(bytes)
}

/// What a commit must keep of the head it decided on: the counters that
/// only grow and the sizes of the records the head keeps.
struct Base {
    version: u64,
    rev: u64,
    tab_seq: u64,
    attach_seq: u64,
    claim_seq: u64,
    blob_gen: u64,
    idem: usize,
    history: usize,
}

impl Base {
    fn of(head: &Head) -> Self {
        Base {
            version: head.version,
            rev: head.rev,
            tab_seq: head.tab_seq,
            attach_seq: head.attach_seq,
            claim_seq: head.claim_seq,
            blob_gen: head.blob_gen,
            idem: head.idem.len(),
            history: head.history.len(),
        }
    }

    /// Checks `head`, about to be swapped in as `encoded` bytes, against the
    /// head it was decided on. `marker`: the commit marker this attempt
    /// wrote, when it confirms its commit.
    ///
    /// A broken counter would corrupt the note (two commits with one `rev`
    /// look alike to a store comparing values; a version that jumps or goes
    /// back has no history entry; an id or a blob generation handed out
    /// twice mixes up tabs, claims, attachments or content), so those are
    /// checked in every build, as are the bounds (a few comparisons beside
    /// the head's encoding).
    fn check(&self, head: &Head, encoded: usize, marker: Option<&str>) {
        assert_eq!(head.rev, self.rev + 1, "a commit moves the head's rev by exactly one");
        let moved = head.version != self.version;
        assert!(!moved || head.version == self.version + 1, "a commit moves the note version by at most one: {} → {}", self.version, head.version);
        assert!(
            !moved || head.history.last().is_some_and(|e| e.version == head.version),
            "a commit that moves the note version to {} records it in the history",
            head.version
        );
        assert!(head.tab_seq >= self.tab_seq && head.attach_seq >= self.attach_seq && head.claim_seq >= self.claim_seq, "id counters only grow");
        assert!(head.blob_gen >= self.blob_gen, "the blob generation only grows");
        // A write adds its own idempotency record and history entry and moves
        // older ones out of the head (`write::IDEM_IN_HEAD`, `HISTORY_IN_HEAD`);
        // no other commit adds either.
        assert!(head.idem.len() <= self.idem + usize::from(moved), "a commit adds at most its own idempotency record");
        assert!(head.history.len() <= self.history + usize::from(moved), "a commit adds at most its own history entry");
        assert!(head.ended.len() <= ENDED_KEPT, "at most {ENDED_KEPT} ended claims");
        assert!(head.commits.len() <= MARKERS_KEPT, "at most {MARKERS_KEPT} commit markers");
        assert!(marker.is_none_or(|m| head.commits.last().is_some_and(|c| c == m)), "a commit that confirms itself carries its marker");
        assert!(encoded <= cairn_kv::MAX_VALUE_BYTES, "the head fits the store's value limit");
    }
}

/// Whether the swap that wrote `marker` landed: the head read back carries it
/// (or moved on from the head that did). Else the read, to start over from.
fn landed(kv: &TenantKv, key: &str, marker: &str) -> Out<Result<(), Held>> {
    let back = kv.read(key)?;
    let Some(raw) = &back.value else {
        return Ok(Err(back));
    };
    let head = visible_head(raw, Reader::System)?;
    Ok(if head.commits.iter().any(|m| m == marker) { Ok(()) } else { Err(back) })
}

/// Whether a read of a head holds the commit that wrote `marker` (a head
/// that does not decode holds none).
fn carries(read: &Held, marker: &str) -> bool {
    read.value.as_deref().and_then(|raw| Head::decode(raw).ok()).is_some_and(|h| h.commits.iter().any(|m| m == marker))
}

/// Whether an outcome is the `busy` refusal of a contended loop.
pub(crate) fn is_busy<T>(out: &Out<T>) -> bool {
    matches!(out, Err(Halt::Refused(r)) if r.code == Code::Busy)
}

/// Read-modify-swap of a small record that is not a note head (the tenant's
/// note list, its claim index), with the same bounded retries. An absent
/// record is first created as `T::default()`, so that writers racing on a
/// store that upserts absent keys write the same bytes. `f` changes the
/// record, or answers `false` to leave it as it is.
///
/// `f` must be idempotent: run again on a record that already holds its
/// change, it changes nothing more (answers `false`, or makes a change that
/// does no harm twice). A swap that landed may be reported failed (see
/// [`TenantKv::swap`]); `f` then runs again on a record that holds it.
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
