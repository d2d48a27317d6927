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

use std::collections::BTreeMap;

use crate::env::Env;
use crate::head::{Decision, Limit, Reader, transact};
use crate::keys;
use crate::kv::TenantKv;
use crate::model::{Head, decode, nonce};
use crate::refusal::{Fail, Failure, Out};

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

/// Merges up to `budget` dirty notes of the tenant (all of them when it is
/// larger than their number), oldest listing order first.
pub(crate) fn merge(kv: &TenantKv, env: &mut dyn Env, tok: &mut Tokenizer, budget: usize) -> Out<MergeReport> {
    let all = dirty(kv)?;
    let mut report = MergeReport::default();
    let total = all.len();
    for (note, revs) in all.into_iter().take(budget) {
        report.notes += 1;
        if !merge_note(kv, env, tok, &note, &revs, &mut report)? {
            report.still_dirty += 1;
        }
    }
    report.still_dirty += total.saturating_sub(budget) as u64;
    Ok(report)
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
    Ok(Doc { rev: head.rev, applying_since: now.max(1), title: head.title.clone(), tabs })
}

/// Writes the postings of the transition from `old` to `next` (see the
/// module docs); `take_over` re-adds every term of `next`.
fn apply(kv: &TenantKv, note: &str, old: Option<&Doc>, next: &Doc, take_over: bool) -> Out<()> {
    let rev = next.rev;
    let mut added: BTreeMap<&str, Vec<(String, u8, u8)>> = BTreeMap::new();
    let mut dropped: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for tab in &next.tabs {
        let Some(terms) = &tab.terms else { continue };
        let before = if take_over { None } else { old.and_then(|d| d.tab(&tab.id)).and_then(DocTab::terms) };
        let len = postings::class(tab.len);
        for (term, n) in terms {
            let now = (postings::class(*n), len);
            if before.as_ref().and_then(|b| b.classes(term)) != Some(now) {
                added.entry(term.as_str()).or_default().push((tab.id.clone(), now.0, now.1));
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
    dict::add(kv, added.keys().copied())?;
    for (term, tabs) in &added {
        postings::upsert(kv, term, note, rev, tabs)?;
    }
    for (term, tabs) in &dropped {
        postings::remove(kv, term, note, tabs, rev)?;
    }
    Ok(())
}

/// Marks the record done if it is still the transition `next` claimed.
fn finish(kv: &TenantKv, key: &str, next: &Doc) -> Out<()> {
    let held = kv.read(key)?;
    let Some(raw) = &held.value else { return Ok(()) };
    let mut doc = Doc::decode(raw)?;
    if doc.rev != next.rev || doc.applying_since != next.applying_since {
        return Ok(());
    }
    doc.applying_since = 0;
    // A lost swap: someone took the transition over or moved on; theirs stands.
    let _ = kv.swap(key, held.observed, &doc.encode())?;
    Ok(())
}

/// Merges one note: answers whether it is clean afterwards (no marker left).
fn merge_note(kv: &TenantKv, env: &mut dyn Env, tok: &mut Tokenizer, note: &str, revs: &[u64], report: &mut MergeReport) -> Out<bool> {
    let now = env.now_us();
    let Some(raw) = kv.get(&keys::note(note))? else {
        // A note whose creation has not landed (or never will: its writer
        // died between the marker and the head). Only old markers go.
        return clear_unlanded(kv, note, revs, now, report);
    };
    let head: Head = decode("note head", &raw)?;
    let doc_key = keys::search_doc(note);
    let held = kv.read(&doc_key)?;
    let doc = held.value.as_deref().map(Doc::decode).transpose()?;
    let mut covered = doc.as_ref().filter(|d| d.applying_since == 0).map_or(0, |d| d.rev);
    if covered < head.rev {
        if let Some(d) = doc.as_ref().filter(|d| d.applying_since != 0 && now.saturating_sub(d.applying_since) < STUCK_US) {
            // Another merger is on it (or was, moments ago).
            let _ = d;
            report.in_progress += 1;
            return Ok(false);
        }
        let take_over = doc.as_ref().is_some_and(|d| d.applying_since != 0);
        let next = match next_doc(kv, tok, &head, doc.as_ref(), now) {
            Ok(n) => n,
            // Content gone since the head was read (a later commit and a
            // history sweep): the head moved on; the next merge sees it.
            Err(Failure::Corrupt(_)) if kv.get(&keys::note(note))?.as_deref() != Some(&raw[..]) => {
                report.in_progress += 1;
                return Ok(false);
            }
            Err(e) => return Err(e.into()),
        };
        if kv.swap(&doc_key, held.observed, &next.encode())?.is_some() {
            report.in_progress += 1;
            return Ok(false);
        }
        apply(kv, note, doc.as_ref(), &next, take_over)?;
        finish(kv, &doc_key, &next)?;
        report.transitions += 1;
        report.taken_over += take_over as u64;
        covered = head.rev;
    }
    let (done, ahead): (Vec<u64>, Vec<u64>) = revs.iter().partition(|r| **r <= covered);
    if !done.is_empty() {
        kv.delete_many(&done.iter().map(|r| keys::search_dirty(note, *r)).collect::<Vec<_>>())?;
        report.markers_cleared += done.len() as u64;
    }
    if ahead.is_empty() {
        return Ok(true);
    }
    // Markers ahead of the head: a commit on its way, or one that never
    // landed. Fence the note against the old ones' writers.
    if ahead.iter().any(|r| marker_age(kv, note, *r, now).is_some_and(|age| age > FENCE_AFTER_US)) {
        fence(kv, env, note)?;
        report.fenced += 1;
    }
    Ok(false)
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
    match transact(kv, note, Reader::System, now, &nonce, &limit, "the note is busy; the fence waits for the next merge", |_, _| {
        Ok(Decision::Commit(()))
    }) {
        Ok(()) | Err(Fail::Refused(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Markers of a note with no head: deleted once older than [`FENCE_AFTER_US`].
fn clear_unlanded(kv: &TenantKv, note: &str, revs: &[u64], now: u64, report: &mut MergeReport) -> Out<bool> {
    let old: Vec<String> = revs
        .iter()
        .filter(|r| marker_age(kv, note, **r, now).is_none_or(|age| age > FENCE_AFTER_US))
        .map(|r| keys::search_dirty(note, *r))
        .collect();
    if !old.is_empty() {
        kv.delete_many(&old)?;
        report.markers_cleared += old.len() as u64;
    }
    Ok(old.len() == revs.len())
}
