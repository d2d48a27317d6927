//! Full-text search over the index in the store (`crate::index`, where
//! the invariant and its proof are): queries (`search_notes`, the REST
//! search route), [`merge`] (bringing the postings up to the committed
//! heads: the embedded host runs it in the background, queries when they
//! find many dirty notes), and [`reindex`] and [`check`].
//!
//! - `query`: parsing a query and running it (catch up, propose from the
//!   postings, prove against committed content).
//! - here: [`merge`]; [`check`] compares a tenant's index with its committed
//!   notes; [`reindex`] rebuilds it in place beside live writers.

mod query;

use std::collections::{BTreeMap, BTreeSet};

use crate::env::Env;
use crate::index::doc::{Doc, DocTab};
use crate::index::tokens::Tokenizer;
use crate::index::{Terms, dict, merge as merging, postings, tab_terms};
use crate::keys;
use crate::kv::TenantKv;
use crate::model::Head;
use crate::note_index::index_slice;
use crate::refusal::{Failure, Halt, Out};

pub use crate::dirty::measure_without_index;
pub use crate::index::merge::MergeReport;
pub(crate) use query::{Ask, Found, MAX_QUERY_CHARS, MAX_TERMS, search};

/// Dirty notes one merge takes on: a round of the embedded host's
/// background merger, the operator sweep on Spin, a query that merges first.
pub const MERGE_BUDGET: usize = 1024;

/// Brings up to `budget` of `tenant`'s dirty notes' postings up to their
/// committed heads (see `crate::index`); what it did.
pub fn merge(store: &dyn cairn_kv::Store, env: &mut dyn Env, tenant: &str, budget: usize) -> Result<MergeReport, Failure> {
    merging::merge(&TenantKv::system(store, tenant)?, env, &mut Tokenizer::default(), budget).map_err(as_failure)
}

/// What [`reindex`] did, or what [`check`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IndexReport {
    /// Notes read.
    pub notes: u64,
    /// Tabs read.
    pub tabs: u64,
    /// Distinct terms of the committed tabs.
    pub terms: u64,
    /// (note, tab, term) the committed content of a clean note (one with no
    /// dirty marker) holds and the postings lack: a broken invariant (a
    /// [`check`] that finds any fails; [`reindex`] adds them).
    pub missing: u64,
    /// Notes with dirty markers: their postings may lag their heads (and
    /// queries read them directly) until a merge catches up.
    pub dirty: u64,
    /// Entries for content no committed head holds (allowed by the
    /// invariant; [`reindex`] removes those it safely can).
    pub stale: u64,
    /// Entries whose counts are out of date (ranking only).
    pub drifted: u64,
}

/// Every committed note of the tenant: its head and its tabs' terms.
type Committed = BTreeMap<String, (Head, BTreeMap<String, Terms>)>;

fn committed(kv: &TenantKv, report: &mut IndexReport) -> Result<Committed, Failure> {
    let mut tok = Tokenizer::default();
    let mut out = Committed::new();
    let mut pos = 0;
    let mut all_terms = BTreeSet::new();
    loop {
        let (ids, total) = index_slice(kv, pos, 256)?;
        if ids.is_empty() {
            break;
        }
        pos += ids.len();
        for id in ids {
            let Some(raw) = kv.get(&keys::note(&id))? else { continue };
            let head = Head::decode(&raw)?;
            report.notes += 1;
            let mut tabs = BTreeMap::new();
            for tab in &head.tabs {
                let t = tab_terms(kv, &mut tok, &head.title, tab)?;
                all_terms.extend(t.counts.keys().cloned());
                tabs.insert(tab.id.clone(), t);
                report.tabs += 1;
            }
            out.insert(id, (head, tabs));
        }
        if pos >= total {
            break;
        }
    }
    report.terms = all_terms.len() as u64;
    Ok(out)
}

/// Every posting record key of the tenant, a page at a time.
fn each_record(kv: &TenantKv, mut f: impl FnMut(&str, Vec<postings::Entry>) -> Out<()>) -> Out<()> {
    const PAGE: usize = 500;
    let mut after: Option<String> = None;
    loop {
        let page = kv.list_prefix(postings::PREFIX, after.as_deref(), PAGE)?;
        let Some(last) = page.last() else { break };
        let next = last[postings::PREFIX.len()..].to_string();
        let values = kv.get_many(&page)?;
        for (key, raw) in page.iter().zip(values) {
            let (Some(term), Some(raw)) = (postings::term_of(key), raw) else { continue };
            f(term, postings::decode(&raw)?)?;
        }
        if page.len() < PAGE {
            break;
        }
        after = Some(next);
    }
    Ok(())
}

/// A refusal inside a rebuild (a record that stayed busy) as a failure to retry.
fn as_failure(f: Halt) -> Failure {
    match f {
        Halt::Failed(e) => e,
        Halt::Refused(r) => Failure::Store(cairn_kv::Error::Unavailable(r.message)),
    }
}

/// Compares `tenant`'s index with its committed notes (nothing written).
pub fn check(store: &dyn cairn_kv::Store, tenant: &str) -> Result<IndexReport, Failure> {
    check_kv(&TenantKv::system(store, tenant)?).map_err(as_failure)
}

/// Rebuilds `tenant`'s index in place (see `reindex_kv`).
pub fn reindex(store: &dyn cairn_kv::Store, tenant: &str) -> Result<IndexReport, Failure> {
    reindex_kv(&TenantKv::system(store, tenant)?).map_err(as_failure)
}

/// An entry no committed tab holds, safe to remove: (term, note, tab, the
/// revision of the head that lacks it).
type Stale = (String, String, String, u64);

/// Reads the committed notes, the dirty markers and every record once: what
/// the index lacks, holds in excess (with what may be removed of it) or
/// counts out of date.
fn compare(kv: &TenantKv) -> Out<(IndexReport, Committed, merging::Dirty, Vec<Stale>)> {
    let mut report = IndexReport::default();
    let notes = committed(kv, &mut report)?;
    let dirty = merging::dirty(kv)?;
    report.dirty = dirty.len() as u64;
    let mut seen: BTreeSet<(String, String, String)> = BTreeSet::new();
    let mut stale = Vec::new();
    each_record(kv, |term, entries| {
        for e in entries {
            let Some((head, tabs)) = notes.get(&e.note) else {
                // A note not in the list (or not yet): nothing is known of it; keep.
                report.stale += 1;
                continue;
            };
            match tabs.get(&e.tab).and_then(|t| t.classes(term)) {
                Some((tf, _)) => {
                    if postings::tf_byte(tf, head.approved_for_agents) != e.tf {
                        report.drifted += 1;
                    }
                    seen.insert((e.note, e.tab, term.to_string()));
                }
                None => {
                    report.stale += 1;
                    stale.push((term.to_string(), e.note, e.tab, head.rev));
                }
            }
        }
        Ok(())
    })?;
    for (note, (_, tabs)) in &notes {
        if dirty.contains_key(note) {
            continue;
        }
        for (tab, terms) in tabs {
            for term in terms.counts.keys() {
                if !seen.contains(&(note.clone(), tab.clone(), term.clone())) {
                    report.missing += 1;
                }
            }
        }
    }
    Ok((report, notes, dirty, stale))
}

fn check_kv(kv: &TenantKv) -> Out<IndexReport> {
    Ok(compare(kv)?.0)
}

/// Rebuilds the tenant's index in place, safely beside live writers: per
/// committed note, what a merge that takes a transition over does (the
/// dictionary, then every term's entry with the head's revision, then the
/// note's record, then its markers up to that revision), and then the stale
/// entries go by the removal rule of [`crate::index`]. Returns what it
/// found before it fixed it.
fn reindex_kv(kv: &TenantKv) -> Out<IndexReport> {
    // The markers as listed after the heads were read: every marker up to
    // a head's revision was written before that head, so it is among them.
    let (report, notes, dirty, stale) = compare(kv)?;
    for (note, (head, tabs)) in &notes {
        let rev = head.rev;
        let mut by_term: BTreeMap<&str, Vec<(String, u8, u8)>> = BTreeMap::new();
        for (tab, terms) in tabs {
            for term in terms.counts.keys() {
                let (tf, len) = terms.classes(term).unwrap_or_default();
                by_term.entry(term).or_default().push((tab.clone(), postings::tf_byte(tf, head.approved_for_agents), len));
            }
        }
        dict::add(kv, by_term.keys().copied())?;
        for (term, wanted) in &by_term {
            postings::upsert(kv, term, note, rev, wanted)?;
        }
        let doc = Doc {
            rev,
            applying_since: 0,
            title: head.title.clone(),
            agents: head.approved_for_agents,
            tabs: head.tabs.iter().filter_map(|t| tabs.get(&t.id).map(|terms| DocTab::of(t, terms))).collect(),
        };
        write_doc(kv, note, &doc)?;
        if let Some(revs) = dirty.get(note) {
            let done: Vec<String> = revs.iter().filter(|r| **r <= rev).map(|r| keys::search_dirty(note, *r)).collect();
            kv.delete_many(&done)?;
        }
    }
    for (term, note, tab, rev) in stale {
        postings::remove(kv, &term, &note, &[tab], rev)?;
    }
    Ok(report)
}

/// Writes a rebuilt note record unless a newer one (or this very one) is there.
fn write_doc(kv: &TenantKv, note: &str, doc: &Doc) -> Out<()> {
    let bytes = doc.encode();
    kv.rewrite_many(vec![keys::search_doc(note)], "the search index is busy; run reindex again", |_, raw| {
        let newer = raw.is_some_and(|r| Doc::decode(r).is_ok_and(|d| d.rev > doc.rev));
        Ok((!newer && raw != Some(&bytes[..])).then(|| bytes.clone()))
    })
}
