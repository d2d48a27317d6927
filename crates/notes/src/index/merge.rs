//! Bringing the postings up to the committed heads: the notes a commit
//! marked dirty are merged one *transition* at a time (see [`crate::index`]
//! for the invariant and why it holds).
//!
//! One transition of a note, from the [`Doc`] record's revision `d` to the
//! committed head's revision `h`:
//!
//! 1. read the head and the note's `srch/doc` record;
//! 2. work out the tabs' terms at `h` (tabs that say what they said at `d`
//!    keep their recorded terms; the rest are read and tokenized);
//! 3. **claim** the transition: swap the record to `h`, marked as applying
//!    since now (a lost swap means another merger got there: leave the note);
//! 4. add the new terms to the dictionary, then upsert the entries whose
//!    counts changed (revision `h`), then remove entries of terms `h` no
//!    longer has (only entries no newer than `h`);
//! 5. mark the record done, and delete the note's dirty markers up to `h`.
//!
//! A record found applying for longer than [`STUCK_US`] is taken over: the
//! new transition re-adds every term of its head, so whatever the stuck one
//! removed is back. A marker ahead of the head (its commit has not landed,
//! or never will: the writer crashed between marker and swap) older than
//! [`FENCE_AFTER_US`] is fenced: one empty commit of the head makes sure no
//! attempt based on an older head can land, and the next merge clears it.

use std::collections::{BTreeMap, BTreeSet};

use cairn_kv::Observed;

use crate::env::Env;
use crate::head::{Decision, Limit, Reader, transact};
use crate::keys;
use crate::kv::{Held, TenantKv};
use crate::model::{Head, nonce};
use crate::refusal::{Failure, Halt, Out};

use super::doc::{Doc, DocTab};
use super::tokens::Tokenizer;
use super::{dict, postings, tab_terms};

/// A transition unfinished this long (µs) is taken over by the next merge.
pub(crate) const STUCK_US: u64 = 30_000_000;
/// A dirty marker ahead of its note's head this long (µs, by its writer's
/// clock) is fenced: its writer is gone.
pub(crate) const FENCE_AFTER_US: u64 = 120_000_000;
/// Markers listed per page.
const PAGE: usize = 1000;

/// What a merge did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MergeReport {
    /// Notes with dirty markers looked at.
    pub notes: u64,
    /// Transitions carried out (postings brought up to a head).
    pub transitions: u64,
    /// Of those, transitions that took over a stuck one.
    pub taken_over: u64,
    /// Notes left dirty because another merger is bringing them up to date.
    pub in_progress: u64,
    /// Dirty markers deleted (the postings cover them).
    pub markers_cleared: u64,
    /// Empty commits that fenced off a writer that never swapped.
    pub fenced: u64,
    /// Notes with dirty markers still in the store after the merge.
    pub still_dirty: u64,
}

impl std::ops::AddAssign for MergeReport {
    fn add_assign(&mut self, o: Self) {
        self.notes += o.notes;
        self.transitions += o.transitions;
        self.taken_over += o.taken_over;
        self.in_progress += o.in_progress;
        self.markers_cleared += o.markers_cleared;
        self.fenced += o.fenced;
        self.still_dirty += o.still_dirty;
    }
}

/// The dirty markers of a tenant: note → its markers' revisions, in order.
pub(crate) type Dirty = BTreeMap<String, Vec<u64>>;

/// Every dirty marker of the tenant.
pub(crate) fn dirty(kv: &TenantKv) -> Result<Dirty, Failure> {
    let mut out = Dirty::new();
    let mut after: Option<String> = None;
    loop {
        let page = kv.list_prefix(keys::SEARCH_DIRTY, after.as_deref(), PAGE)?;
        for key in &page {
            let rest = &key[keys::SEARCH_DIRTY.len()..];
            let Some((note, rev)) = rest.rsplit_once('/') else { continue };
            let Ok(rev) = u64::from_str_radix(rev, 16) else { continue };
            out.entry(note.to_string()).or_default().push(rev);
        }
        match page.last() {
            Some(last) if page.len() == PAGE => after = Some(last[keys::SEARCH_DIRTY.len()..].to_string()),
            _ => break,
        }
    }
    Ok(out)
}

/// Notes merged together in one round: their heads and records are read,
/// their transitions claimed, their postings rewritten and their records
/// finished in one batch each (a term many of them change is rewritten once).
const ROUND: usize = 64;

/// Merges up to `budget` dirty notes of the tenant (all of them when it is
/// larger than their number), in listing order, [`ROUND`] at a time.
pub(crate) fn merge(kv: &TenantKv, env: &mut dyn Env, tok: &mut Tokenizer, budget: usize) -> Out<MergeReport> {
    let all = dirty(kv)?;
    let total = all.len();
    let picked: Vec<(String, Vec<u64>)> = all.into_iter().take(budget).collect();
    let mut report = MergeReport { notes: picked.len() as u64, ..MergeReport::default() };
    for round in picked.chunks(ROUND) {
        merge_round(kv, env, tok, round, &mut report)?;
    }
    report.still_dirty += total.saturating_sub(budget) as u64;
    Ok(report)
}

/// What a round does with one note.
enum Plan {
    /// The postings cover its head up to this revision already.
    Covered(u64),
    /// Another merger is on it (or its content moved on while being read).
    Busy,
    /// Its head is not there (its creation has not landed, or never will).
    Unlanded,
    /// A transition to claim from `old` (the record as read) to `next`.
    Claim { next: Doc, old: Option<Doc>, take_over: bool, observed: Observed },
}

/// The plan for one note, from its head (`raw`) and its record as read.
fn plan(kv: &TenantKv, tok: &mut Tokenizer, note: &str, raw: Option<Vec<u8>>, held: Held, now: u64) -> Out<Plan> {
    let Some(raw) = raw else { return Ok(Plan::Unlanded) };
    let head = Head::decode(&raw)?;
    let doc = held.value.as_deref().map(Doc::decode).transpose()?;
    let covered = doc.as_ref().filter(|d| d.applying_since == 0).map_or(0, |d| d.rev);
    if covered >= head.rev {
        return Ok(Plan::Covered(covered));
    }
    if doc.as_ref().is_some_and(|d| d.applying_since != 0 && now.saturating_sub(d.applying_since) < STUCK_US) {
        return Ok(Plan::Busy);
    }
    let take_over = doc.as_ref().is_some_and(|d| d.applying_since != 0);
    match next_doc(kv, tok, &head, doc.as_ref(), now) {
        Ok(next) => Ok(Plan::Claim { next, old: doc, take_over, observed: held.observed }),
        // Content gone since the head was read (a later commit and a
        // history sweep): the head moved on; the next round sees it.
        Err(Failure::Corrupt(_)) if kv.get(&keys::note(note))?.as_deref() != Some(&raw[..]) => Ok(Plan::Busy),
        Err(e) => Err(e.into()),
    }
}

/// One round over `notes` (see the module docs).
fn merge_round(kv: &TenantKv, env: &mut dyn Env, tok: &mut Tokenizer, notes: &[(String, Vec<u64>)], report: &mut MergeReport) -> Out<()> {
    let now = env.now_us();
    let heads = kv.get_many(&notes.iter().map(|(n, _)| keys::note(n)).collect::<Vec<_>>())?;
    let docs = kv.read_many(&notes.iter().map(|(n, _)| keys::search_doc(n)).collect::<Vec<_>>())?;
    let mut plans = Vec::with_capacity(notes.len());
    for (((note, _), raw), held) in notes.iter().zip(heads).zip(docs) {
        plans.push(plan(kv, tok, note, raw, held, now)?);
    }

    // Claim every transition at once; a lost claim means another merger got there.
    let claims: Vec<(String, Observed, Vec<u8>)> = notes
        .iter()
        .zip(&plans)
        .filter_map(|((n, _), p)| match p {
            Plan::Claim { next, observed, .. } => Some((keys::search_doc(n), *observed, next.encode())),
            _ => None,
        })
        .collect();
    let mut lost = kv.swap_each(&claims)?.into_iter();
    for p in plans.iter_mut() {
        if matches!(p, Plan::Claim { .. }) && lost.next().flatten().is_some() {
            *p = Plan::Busy;
        }
    }

    apply_claimed(kv, notes, &plans, report)?;
    clear_markers(kv, env, notes, &plans, now, report)
}

/// Writes the claimed transitions (their dictionary words, then their
/// postings) and marks each record done that is still the transition it
/// claimed.
fn apply_claimed(kv: &TenantKv, notes: &[(String, Vec<u64>)], plans: &[Plan], report: &mut MergeReport) -> Out<()> {
    let mut words: BTreeSet<String> = BTreeSet::new();
    let mut ops: BTreeMap<String, Vec<postings::Op>> = BTreeMap::new();
    for ((note, _), p) in notes.iter().zip(plans) {
        if let Plan::Claim { next, old, take_over, .. } = p {
            changes(note, old.as_ref(), next, *take_over, &mut words, &mut ops);
        }
    }
    dict::add(kv, words.iter().map(String::as_str))?;
    kv.rewrite_many(ops.keys().cloned().collect(), "the search index is busy; nothing more was written", |key, raw| {
        Ok(postings::apply_ops_raw(raw.unwrap_or_default(), &ops[key])?)
    })?;

    // Done: each record that is still the transition it claimed.
    let claimed: Vec<(&str, &Doc)> =
        notes.iter().zip(plans).filter_map(|((n, _), p)| if let Plan::Claim { next, .. } = p { Some((n.as_str(), next)) } else { None }).collect();
    let reads = kv.read_many(&claimed.iter().map(|(n, _)| keys::search_doc(n)).collect::<Vec<_>>())?;
    let mut finishes = Vec::new();
    for ((note, next), held) in claimed.iter().zip(reads) {
        let Some(raw) = held.value else { continue };
        let mut doc = Doc::decode(&raw)?;
        if doc.rev == next.rev && doc.applying_since == next.applying_since {
            doc.applying_since = 0;
            finishes.push((keys::search_doc(note), held.observed, doc.encode()));
        }
    }
    // A lost swap: someone took the transition over or moved on; theirs stands.
    kv.swap_each(&finishes)?;
    for p in plans {
        if let Plan::Claim { take_over, .. } = p {
            report.transitions += 1;
            report.taken_over += *take_over as u64;
        }
    }
    Ok(())
}

/// Markers the postings now cover go; a note with markers ahead of its head
/// is fenced when they are old.
fn clear_markers(kv: &TenantKv, env: &mut dyn Env, notes: &[(String, Vec<u64>)], plans: &[Plan], now: u64, report: &mut MergeReport) -> Out<()> {
    let mut gone = Vec::new();
    for ((note, revs), p) in notes.iter().zip(plans) {
        let covered = match p {
            Plan::Covered(rev) => *rev,
            Plan::Claim { next, .. } => next.rev,
            Plan::Busy => {
                report.in_progress += 1;
                report.still_dirty += 1;
                continue;
            }
            Plan::Unlanded => {
                if !clear_unlanded(kv, note, revs, now, report)? {
                    report.still_dirty += 1;
                }
                continue;
            }
        };
        let (done, ahead): (Vec<u64>, Vec<u64>) = revs.iter().partition(|r| **r <= covered);
        gone.extend(done.iter().map(|r| keys::search_dirty(note, *r)));
        if ahead.is_empty() {
            continue;
        }
        report.still_dirty += 1;
        // A commit on its way, or one that never landed: fence the note against old ones' writers.
        if ahead.iter().any(|r| marker_age(kv, note, *r, now).is_some_and(|age| age > FENCE_AFTER_US)) {
            fence(kv, env, note)?;
            report.fenced += 1;
        }
    }
    kv.delete_many(&gone)?;
    report.markers_cleared += gone.len() as u64;
    Ok(())
}

/// The terms of `head`'s tabs as a new record for revision `head.rev`,
/// applying since `now`: tabs that say what `old` recorded keep its terms.
fn next_doc(kv: &TenantKv, tok: &mut Tokenizer, head: &Head, old: Option<&Doc>, now: u64) -> Result<Doc, Failure> {
    let mut tabs = Vec::with_capacity(head.tabs.len());
    for tab in &head.tabs {
        let kept = old.and_then(|d| d.tab(&tab.id).filter(|t| t.terms.is_some() && t.says_the_same(tab, &head.title, &d.title)));
        tabs.push(match kept {
            Some(t) => t.clone(),
            None => DocTab::of(tab, &tab_terms(kv, tok, &head.title, tab)?),
        });
    }
    Ok(Doc { rev: head.rev, applying_since: now.max(1), title: head.title.clone(), agents: head.approved_for_agents, tabs })
}

/// The postings changes of the transition of `note` from `old` to `next`
/// (see the module docs; `take_over` re-adds every term of `next`, and so
/// does a change of the note's approval for agents, so every entry carries
/// the new agents bit), added to `ops` by record, and the words the
/// dictionary needs, to `words`.
fn changes(note: &str, old: Option<&Doc>, next: &Doc, take_over: bool, words: &mut BTreeSet<String>, ops: &mut BTreeMap<String, Vec<postings::Op>>) {
    let rev = next.rev;
    let bucket = postings::bucket(note);
    let take_over = take_over || old.is_some_and(|d| d.agents != next.agents);
    let mut added: BTreeMap<&str, Vec<(String, u8, u8)>> = BTreeMap::new();
    let mut dropped: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for tab in &next.tabs {
        let Some(terms) = &tab.terms else { continue };
        let before = if take_over { None } else { old.and_then(|d| d.tab(&tab.id)).and_then(DocTab::terms) };
        let len = postings::class(tab.len);
        for (term, n) in terms {
            let now = (postings::class(*n), len);
            if before.as_ref().and_then(|b| b.classes(term)) != Some(now) {
                added.entry(term.as_str()).or_default().push((tab.id.clone(), postings::tf_byte(now.0, next.agents), now.1));
            }
        }
    }
    for old_tab in old.map(|d| d.tabs.as_slice()).unwrap_or_default() {
        let Some(old_terms) = &old_tab.terms else { continue };
        let still = next.tab(&old_tab.id).and_then(|t| t.terms.as_ref());
        for (term, _) in old_terms {
            let kept = still.is_some_and(|list| list.binary_search_by(|(t, _)| t.as_str().cmp(term)).is_ok());
            if !kept {
                dropped.entry(term.as_str()).or_default().push(old_tab.id.clone());
            }
        }
    }
    for (term, tabs) in added {
        words.insert(term.to_string());
        ops.entry(postings::key(term, bucket)).or_default().push(postings::Op::Upsert { note: note.to_string(), rev, tabs });
    }
    for (term, tabs) in dropped {
        ops.entry(postings::key(term, bucket)).or_default().push(postings::Op::Remove { note: note.to_string(), up_to: rev, tabs });
    }
}

/// How long ago (µs, by the writer's clock) the marker was written; `None`
/// when it is gone or unreadable.
fn marker_age(kv: &TenantKv, note: &str, rev: u64, now: u64) -> Option<u64> {
    let raw = kv.get(&keys::search_dirty(note, rev)).ok()??;
    let at: u64 = std::str::from_utf8(&raw).ok()?.trim().parse().ok()?;
    Some(now.saturating_sub(at))
}

/// One empty commit of the note's head: every attempt based on an older
/// head now fails its swap, so no marker up to the new revision can still
/// come true; the next merge brings the record up to it and clears them.
fn fence(kv: &TenantKv, env: &mut dyn Env, note: &str) -> Out<()> {
    let limit = Limit { field: "note", message: "the note head would exceed the store's value limit" };
    let nonce = nonce(env);
    let now = env.now_us();
    match transact(kv, note, Reader::System, now, &nonce, &limit, "the note is busy; the fence waits for the next merge", |_, _| Ok(Decision::Commit(()))) {
        Ok(()) | Err(Halt::Refused(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Markers of a note with no head: deleted once older than [`FENCE_AFTER_US`].
fn clear_unlanded(kv: &TenantKv, note: &str, revs: &[u64], now: u64, report: &mut MergeReport) -> Out<bool> {
    let old: Vec<String> =
        revs.iter().filter(|r| marker_age(kv, note, **r, now).is_none_or(|age| age > FENCE_AFTER_US)).map(|r| keys::search_dirty(note, *r)).collect();
    if !old.is_empty() {
        kv.delete_many(&old)?;
        report.markers_cleared += old.len() as u64;
    }
    Ok(old.len() == revs.len())
}
