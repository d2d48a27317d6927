//! The history sweep: what is past retention leaves the store, so a note's
//! stored size follows its retention window, not its age.
//!
//! For one note, with `F` the lowest version still retained (every version
//! under it is past retention by both rules, with a [`CLOCK_MARGIN`] on the
//! age rule):
//!
//! 1. **One head commit** (the ordinary `crate::head::transact`) sets
//!    `history_floor = F`, records each tab's *base* (the version of its
//!    newest entry under `F` that did not delete it, so a retained version of
//!    a tab unchanged since then still reads), drops the head's own entries
//!    under `F` (a base among them moves to its own key first), and moves
//!    `blob_gen` on from `g` to `g + 1`.
//! 2. **Mark**: every blob name the committed head `H` refers to, and every
//!    one an entry at or above `F` or a base refers to (a sheet's manifest and
//!    its row blocks).
//! 3. **Sweep**: delete the note's blobs of generations `≤ g` that are not
//!    marked, the spilled entries in `[old floor, F)` that are not bases, and
//!    the idempotency records of writes under `F` that are past the age rule
//!    too (a retry that late finds its `expected_version` long gone).
//!
//! # Why no committed write ever loses a blob
//!
//! Writers put content blobs under the generation of the head they decide on
//! (`crate::write::commit`), and commit only if that head is still the
//! current one. Take a blob `b` of generation `≤ g` that the sweep deletes,
//! and any head `H'` committed after `H` that refers to `b`. `H'` decided on
//! a head of generation `g + 1` (every head after `H` has it), so it did not
//! write `b` itself; it took `b` from the head it decided on, or from a
//! history entry (a restore, or an `at_version` read turned into a write).
//! By induction on the heads after `H`, the reference goes back to `H` itself
//! (marked) or to an entry that was retained when a head after `H` decided
//! on it; every head after `H` carries the floor `F`, under which nothing is
//! retained but the bases, so that entry is at or above `F` or is a base
//! (marked). Both contradict `b` being deleted. No clock enters this: hosts
//! whose clocks disagree only disagree on when a version stops reading. A writer that put a generation-`g` blob but decided on a head
//! before `H` fails its swap and writes again under `g + 1`: what it left is
//! garbage, and deleting it is right.
//!
//! Entries are immutable and only ever written for new versions, so deleting
//! the ones under `F` races with nobody; a reader that read the head before
//! the sweep and then misses an entry answers "past retention"
//! (`crate::history`), never another version's content.
//!
//! Blobs that a lost swap left behind in the current generation are swept by
//! the next sweep that moves the floor. Blobs written before generations
//! existed (`blob/<hash>`, shared by the tenant) are never swept.

use std::collections::{BTreeMap, BTreeSet};

use crate::env::Env;
use crate::head::{Decision, Limit, Reader, transact};
use crate::history::DAY_US;
use crate::keys;
use crate::kv::TenantKv;
use crate::model::{Head, HistoryEntry, IdemRecord, Tab, TabKind, decode, encode, nonce};
use crate::note_index::index_slice;
use crate::refusal::{Code, Failure, Halt};
use crate::sheet::load_manifest;

/// How much older than the age rule a version must be before the sweep
/// drops it, so a reader whose clock is behind the sweeper's seldom sees a
/// version go before its own clock says so. Safety does not rest on it (see
/// the module docs); with `days = 0` (count-only retention) it does not apply.
pub const CLOCK_MARGIN: std::time::Duration = std::time::Duration::from_secs(10 * 60);
/// Keys read, listed or deleted per store call.
const BATCH: usize = 256;

/// What one sweep of a tenant did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HistorySweep {
    /// Notes whose floor moved.
    pub notes: usize,
    /// Spilled history entries deleted.
    pub entries: usize,
    /// Content blobs deleted.
    pub blobs: usize,
    /// Idempotency records deleted (writes under the floor and past the age rule).
    pub idempotency: usize,
    /// Audit records deleted (claim events and refused calls past retention
    /// or past [`AUDIT_KEPT`]).
    pub audit: usize,
    /// Bytes of content the swept notes store now (their retained versions).
    pub bytes: u64,
}

impl std::ops::AddAssign for HistorySweep {
    fn add_assign(&mut self, o: HistorySweep) {
        self.notes += o.notes;
        self.entries += o.entries;
        self.blobs += o.blobs;
        self.idempotency += o.idempotency;
        self.audit += o.audit;
        self.bytes += o.bytes;
    }
}

/// Audit records kept per note (claim events) and per tenant (refused
/// calls) at most, besides the age rule; the oldest go first.
pub const AUDIT_KEPT: usize = 10_000;

/// What a tenant stores, as of its last history sweep (`usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    /// Notes.
    pub notes: u64,
    /// Bytes of content, every retained version counted.
    pub bytes: u64,
    /// When the sweep counted (µs).
    pub at: u64,
}

/// The tenant's usage as of its last history sweep (zero before the first).
pub(crate) fn usage(kv: &TenantKv) -> Result<Usage, Failure> {
    match kv.get(keys::USAGE)? {
        Some(raw) => decode("tenant usage", &raw),
        None => Ok(Usage::default()),
    }
}

/// `usage`, for the host and operators.
pub fn tenant_usage(store: &dyn cairn_kv::Store, tenant: &str) -> Result<Usage, Failure> {
    usage(&TenantKv::system(store, tenant)?)
}

const LIMIT: Limit = Limit { field: "note_id", message: "the note head exceeds the store's value limit" };

/// Sweeps every note of `tenant` (see the module docs). Meant to run
/// periodically (the embedded host's sweep; on Spin, the REST component's
/// sweep route); writers never wait for it. An invalid tenant id is a
/// [`Failure::Store`] (a host bug).
pub fn sweep_history(store: &dyn cairn_kv::Store, env: &mut dyn Env, tenant: &str) -> Result<HistorySweep, Failure> {
    let kv = TenantKv::system(store, tenant)?;
    let mut total = HistorySweep::default();
    let mut pos = 0;
    let mut notes = 0u64;
    loop {
        let (ids, count) = index_slice(&kv, pos, BATCH)?;
        pos += ids.len();
        for id in &ids {
            total += sweep_note(&kv, env, id)?;
            total.audit += sweep_audit(&kv, env, &format!("{}{id}/", keys::CLAIM_AUDIT))?;
            notes += 1;
        }
        if ids.is_empty() || pos >= count {
            break;
        }
    }
    total.audit += sweep_audit(&kv, env, keys::REFUSED)?;
    let counted = Usage { notes, bytes: total.bytes, at: env.now_us() };
    kv.set(keys::USAGE, &encode(&counted))?;
    Ok(total)
}

/// Deletes audit records under `prefix` (keyed by time, oldest first) that
/// are older than the retention's days or beyond the newest [`AUDIT_KEPT`].
fn sweep_audit(kv: &TenantKv, env: &dyn Env, prefix: &str) -> Result<usize, Failure> {
    let oldest = env.now_us().saturating_sub(env.retention().days.saturating_mul(DAY_US));
    let mut all: Vec<String> = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let listed = kv.list_prefix(prefix, after.as_deref(), BATCH)?;
        let Some(last) = listed.last() else { break };
        after = Some(last[prefix.len()..].to_string());
        let done = listed.len() < BATCH;
        all.extend(listed);
        if done {
            break;
        }
    }
    let over = all.len().saturating_sub(AUDIT_KEPT);
    let at = |k: &str| k[prefix.len()..].get(..20).and_then(|t| t.parse::<u64>().ok());
    let doomed: Vec<String> = all.iter().enumerate().filter(|(i, k)| *i < over || at(k).is_some_and(|t| t < oldest)).map(|(_, k)| k.clone()).collect();
    for chunk in doomed.chunks(BATCH) {
        kv.delete_many(chunk)?;
    }
    Ok(doomed.len())
}

/// The window the sweep drops under: retention with the clock margin.
fn droppable(head: &Head, e: &HistoryEntry, env: &dyn Env) -> bool {
    let keep = env.retention();
    let now = env.now_us();
    let age = head.version.saturating_sub(e.version);
    age >= keep.max_versions || (age >= keep.versions && now.saturating_sub(e.at) >= age_limit(keep.days))
}

/// How old a version must be before the sweep drops it.
fn age_limit(days: u64) -> u64 {
    if days == 0 { 0 } else { days.saturating_mul(DAY_US).saturating_add(CLOCK_MARGIN.as_micros() as u64) }
}

/// Sweeps one note; a note that is gone or stays busy is left for the next sweep.
///
/// Plan the new floor from what is droppable ([`plan_floor`]), move it in
/// one commit that also bumps the blob generation ([`commit_floor`]), mark
/// every blob a kept version or a base still uses ([`mark_kept`]), then
/// delete the older generations' unmarked blobs, the entries under the floor
/// and the idempotency records past the age rule.
pub(crate) fn sweep_note(kv: &TenantKv, env: &mut dyn Env, note_id: &str) -> Result<HistorySweep, Failure> {
    let Some(raw) = kv.get(&keys::note(note_id))? else {
        return Ok(HistorySweep::default());
    };
    let before = Head::decode(&raw)?;
    let left = || Ok(HistorySweep { bytes: before.stored_bytes, ..HistorySweep::default() });
    let old_floor = before.history_floor.max(1);
    let Some((floor, below)) = plan_floor(kv, env, note_id, &before)? else { return left() };
    if floor <= old_floor {
        return left();
    }
    let Some(head) = commit_floor(kv, env, note_id, &before, floor, &below)? else { return left() };
    let swept_gen = head.blob_gen - 1;
    let marked = mark_kept(kv, note_id, &head, floor)?;

    // Sweep the blobs of the generations before the new one.
    let blobs = delete_listed(kv, &format!("blob/{note_id}/"), |listed| {
        Ok(listed
            .iter()
            .filter(|k| {
                let name = &k["blob/".len()..];
                let generation = name[note_id.len() + 1..].split('/').next().and_then(|g| g.parse::<u64>().ok());
                generation.is_some_and(|g| g <= swept_gen) && !marked.contains(name)
            })
            .cloned()
            .collect())
    })?;
    // The spilled entries under the floor but the bases.
    let bases: BTreeSet<u64> = head.history_bases.values().copied().collect();
    // Every version under the floor, whether it is spilled yet or not: an
    // entry a writer spilled from the head since the read goes too.
    // And the bases a newer entry replaced.
    let replaced = before.history_bases.values().copied().filter(|v| *v < old_floor && !bases.contains(v));
    let gone: Vec<String> = (old_floor..floor).filter(|v| !bases.contains(v)).chain(replaced).map(|v| keys::history(note_id, v)).collect();
    for chunk in gone.chunks(BATCH) {
        kv.delete_many(chunk)?;
    }
    let idem = sweep_idempotency(kv, env, note_id, floor)?;
    Ok(HistorySweep { notes: 1, entries: gone.len(), blobs, idempotency: idem, audit: 0, bytes: head.stored_bytes })
}

/// The new floor (the first version that must stay) and the entries under
/// it, from the old floor up, oldest first (spilled ones, then the head's
/// own), as far as they are droppable. `None`: a spilled entry is missing,
/// swept by a sweep racing this one; leave it the note.
fn plan_floor(kv: &TenantKv, env: &dyn Env, note_id: &str, before: &Head) -> Result<Option<(u64, Vec<HistoryEntry>)>, Failure> {
    let old_floor = before.history_floor.max(1);
    let in_head = before.history.first().map_or(before.version + 1, |e| e.version);
    let mut below = Vec::new();
    let mut floor = old_floor;
    let mut v = old_floor;
    'walk: while v < in_head {
        let upto = (v + BATCH as u64 - 1).min(in_head - 1);
        let names: Vec<String> = (v..=upto).map(|v| keys::history(note_id, v)).collect();
        for bytes in kv.get_many(&names)? {
            // Every version under the head's own entries was spilled.
            let Some(bytes) = bytes else { return Ok(None) };
            let e: HistoryEntry = decode("history entry", &bytes)?;
            if !droppable(before, &e, env) {
                break 'walk;
            }
            floor = e.version + 1;
            below.push(e);
        }
        v = upto + 1;
    }
    if floor == in_head.max(old_floor) {
        for e in &before.history {
            if !droppable(before, e, env) {
                break;
            }
            floor = e.version + 1;
            below.push(e.clone());
        }
    }
    Ok(Some((floor, below)))
}

/// Per tab, its newest entry under the new floor: the old bases unless a
/// newer entry below the floor changed (or deleted) the tab.
fn new_bases(before: &Head, below: &[HistoryEntry]) -> BTreeMap<String, u64> {
    let mut bases: BTreeMap<String, u64> = before.history_bases.clone();
    for e in below {
        if let Some(t) = &e.tab_id {
            if e.deleted {
                bases.remove(t);
            } else if e.tab.is_some() {
                bases.insert(t.clone(), e.version);
            }
        }
    }
    bases
}

/// Moves the floor and the bases in one commit that also starts a new blob
/// generation, and lets the tenant's counter go of what left the note's
/// count. `None`: left for the next sweep (another sweep moved the floor,
/// or the note is gone or busy).
fn commit_floor(kv: &TenantKv, env: &mut dyn Env, note_id: &str, before: &Head, floor: u64, below: &[HistoryEntry]) -> Result<Option<Head>, Failure> {
    let bases = new_bases(before, below);
    let now = env.now_us();
    let nonce = nonce(env);
    let committed = transact(kv, note_id, Reader::System, now, &nonce, &LIMIT, "busy", |head, _| {
        // Another sweep moved the floor since the read: its bases are not
        // ours to overwrite; the next sweep starts from its floor.
        if head.history_floor != before.history_floor {
            return Ok(Decision::Leave(None));
        }
        head.history_floor = floor;
        head.history_bases = bases.clone();
        head.blob_gen += 1;
        // The content those versions stored leaves the note's count (a base's stays).
        let dropped: u64 = below.iter().filter(|e| !bases.values().any(|b| *b == e.version)).map(|e| e.bytes).sum();
        head.stored_bytes = head.stored_bytes.saturating_sub(dropped);
        // The head's own entries under the floor go; a base among them moves
        // to its own key first (the same bytes a later spill would write).
        let (gone, kept): (Vec<HistoryEntry>, Vec<HistoryEntry>) = std::mem::take(&mut head.history).into_iter().partition(|e| e.version < floor);
        head.history = kept;
        let spill: Vec<(String, Vec<u8>)> =
            gone.iter().filter(|e| bases.values().any(|b| *b == e.version)).map(|e| (keys::history(note_id, e.version), encode(e))).collect();
        if !spill.is_empty() {
            kv.set_many(&spill)?;
        }
        Ok(Decision::Commit(Some((head.clone(), dropped))))
    });
    match committed {
        Ok(Some((h, dropped))) => {
            // Committed: the tenant's counter lets go of what left the note's count.
            crate::quota::release(kv, dropped)?;
            Ok(Some(h))
        }
        Ok(None) => Ok(None),
        Err(Halt::Refused(r)) if matches!(r.code, Code::NotFound | Code::Busy) => Ok(None),
        Err(Halt::Refused(r)) => Err(Failure::Corrupt(format!("history sweep of {note_id}: {}", r.message))),
        Err(Halt::Failed(e)) => Err(e),
    }
}

/// Every blob name the note still uses: its tabs now, and every version
/// from the floor up and every base.
fn mark_kept(kv: &TenantKv, note_id: &str, head: &Head, floor: u64) -> Result<BTreeSet<String>, Failure> {
    let mut marked: BTreeSet<String> = BTreeSet::new();
    for t in &head.tabs {
        mark_tab(kv, t, &mut marked)?;
    }
    let keep: Vec<u64> = (floor..=head.version).chain(head.history_bases.values().copied()).collect();
    for chunk in keep.chunks(BATCH) {
        let (held, spilled): (Vec<u64>, Vec<u64>) = chunk.iter().partition(|v| head.history.iter().any(|e| e.version == **v));
        let mut snapshots: Vec<HistoryEntry> = head.history.iter().filter(|e| held.contains(&e.version)).cloned().collect();
        let names: Vec<String> = spilled.iter().map(|v| keys::history(note_id, *v)).collect();
        for bytes in kv.get_many(&names)?.into_iter().flatten() {
            snapshots.push(decode("history entry", &bytes)?);
        }
        for e in snapshots {
            if let Some(t) = &e.tab {
                mark_tab(kv, t, &mut marked)?;
            }
        }
    }
    Ok(marked)
}

/// Deletes the spilled idempotency records of writes under the floor that
/// are also past the age rule: a retry that late is not a retry (its
/// `expected_version` is long gone, so it is refused as a conflict).
fn sweep_idempotency(kv: &TenantKv, env: &dyn Env, note_id: &str, floor: u64) -> Result<usize, Failure> {
    let oldest = env.now_us().saturating_sub(age_limit(env.retention().days));
    delete_listed(kv, &format!("idem/{note_id}/"), |listed| {
        let mut doomed = Vec::new();
        for (k, bytes) in listed.iter().zip(kv.get_many(listed)?) {
            let Some(bytes) = bytes else { continue };
            let r: IdemRecord = decode("idempotency record", &bytes)?;
            let version = r.result()?.get("version").and_then(serde_json::Value::as_u64).unwrap_or(u64::MAX);
            if r.at < oldest && version < floor {
                doomed.push(k.clone());
            }
        }
        Ok(doomed)
    })
}

/// Pages through the keys under `prefix` ([`BATCH`] at a time), deletes the
/// ones `pick` chooses from each page, and returns how many it deleted.
fn delete_listed(kv: &TenantKv, prefix: &str, mut pick: impl FnMut(&[String]) -> Result<Vec<String>, Failure>) -> Result<usize, Failure> {
    let mut after: Option<String> = None;
    let mut deleted = 0;
    loop {
        let listed = kv.list_prefix(prefix, after.as_deref(), BATCH)?;
        let Some(last) = listed.last() else { break };
        after = Some(last[prefix.len()..].to_string()); // keys strictly after it
        let doomed = pick(&listed)?;
        deleted += doomed.len();
        if !doomed.is_empty() {
            kv.delete_many(&doomed)?;
        }
        if listed.len() < BATCH {
            break;
        }
    }
    Ok(deleted)
}

/// Adds every blob name a tab refers to (for a sheet, its manifest's blocks too).
fn mark_tab(kv: &TenantKv, t: &Tab, marked: &mut BTreeSet<String>) -> Result<(), Failure> {
    let fresh = t.blobs.iter().any(|b| !marked.contains(b));
    marked.extend(t.blobs.iter().cloned());
    if fresh && t.kind == TabKind::Sheet && !t.blobs.is_empty() {
        let m = load_manifest(kv, &t.blobs)?;
        for s in &m.sheets {
            marked.extend(s.blocks.values().cloned());
        }
    }
    Ok(())
}
