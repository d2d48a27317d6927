//! The full-text index: Cairn's own data in the key-value store, kept by
//! the write path (the one head transaction calls [`stage`] before its swap
//! and [`Staged::finish`] after it). Queries, [`crate::search::reindex`] and
//! [`crate::search::check`] are in [`crate::search`].
//!
//! - `tokens`: words, folded and stemmed (one rule for index and query).
//! - `postings`: term → tabs records, and their encoding.
//! - here: what a tab says ([`fields`]), its [`Terms`], and how a commit keeps
//!   the index ([`Before`], [`stage`], [`Staged`]).
//!
//! # The invariant, and why a crash cannot break it
//!
//! The postings are a **superset** of the committed notes: for the head `H`
//! of every note and every term of every tab of `H`, there is an entry
//! `(note, tab)` for the term. They may hold more (entries of writes that
//! never committed, or of words since deleted): a query only ever *proposes*
//! candidates from them, and answers a hit only after reading the note's
//! committed head (visibility, the tab still there, the tab type) and the
//! tab's committed content, and finding the query in it. So:
//!
//! - **A hit never points at content that was never committed**, nor at a
//!   deleted tab, a note withdrawn from agents, or another tenant (keys are
//!   under the tenant's prefix): hits come from committed heads only.
//! - **A committed change is searchable the moment it is acknowledged**
//!   (the bound is zero): a writer adds the entries its new content needs
//!   *before* the head swap that commits it, as it writes content blobs.
//!   A crash before the swap leaves extra entries (harmless); a crash after
//!   it leaves entries for words the commit removed (harmless too, and
//!   dropped by the next write that removes them again or by `cairn reindex`).
//!
//! Keeping the superset while removing entries needs one more rule, because
//! a writer removes the entries of words its commit dropped *after* the swap,
//! while another writer may already be adding the same word back for a
//! commit still to land. Every entry carries `rev`, the head revision of the
//! commit that added it (at least: an upsert never lowers it), and a removal
//! drops only entries with `rev ≤ R`, where `R` is the revision of a committed
//! head that holds the word in none of the tabs. Proof: take any commit `C`
//! (revision `c`) whose tab holds the word. If `C`'s base lacked it, `C`
//! upserted the entry with `rev ≥ c` before its swap; a removal based on a
//! head of revision `R < c` cannot drop it, and one based on `R ≥ c` is based
//! on a head committed after `C`, which is no longer the head. If `C`'s base
//! held the word, apply the same argument to that base, down to the commit
//! that added the word. The compare-and-swap on each record makes a removal
//! that read an older record start over, so it sees a newer upsert.
//!
//! On a store Cairn cannot vouch for (one that may report a lost swap as
//! done, or write blindly), a writer that confirms its head commit also reads
//! its entries back after the commit's settle wait and writes any that are
//! missing before it answers: an acknowledged change is searchable then too.

pub(crate) mod postings;
pub(crate) mod tokens;

use std::collections::BTreeMap;

use crate::content::{get_blob, load_list, load_slides, load_text};
use crate::kv::TenantKv;
use crate::model::{FileMeta, Head, Source, Tab, TabKind, decode};
use crate::refusal::{Failure, Out};
use crate::sheet::load_manifest;

/// One searchable field of a tab: what it is called in a hit, and its text.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub name: String,
    pub text: String,
}

/// A1-style name of a cell.
pub(crate) fn cell_name(row: u64, col: u64) -> String {
    let mut c = col + 1;
    let mut s = Vec::new();
    while c > 0 {
        s.push(b'A' + ((c - 1) % 26) as u8);
        c = (c - 1) / 26;
    }
    s.reverse();
    format!("{}{}", String::from_utf8(s).unwrap_or_default(), row + 1)
}

/// What a tab says, field by field: its label; the note's title (for the
/// markdown tab, the note's main tab); the text, the slides' fields, the
/// sheets' names and cells, the sources' titles and URLs, the files' names.
pub(crate) fn fields(kv: &TenantKv, title: &str, tab: &Tab) -> Result<Vec<Field>, Failure> {
    let f = |name: &str, text: &str| Field { name: name.to_string(), text: text.to_string() };
    let mut out = vec![f("label", &tab.label)];
    match tab.kind {
        TabKind::Markdown => {
            out.push(f("title", title));
            out.push(f("text", &load_text(kv, tab)?));
        }
        TabKind::Slides => {
            for (i, s) in load_slides(kv, tab)?.iter().enumerate() {
                let n = i + 1;
                out.push(f(&format!("slide {n} title"), &s.title));
                out.push(f(&format!("slide {n} body"), &s.body));
                out.push(f(&format!("slide {n} notes"), &s.notes));
            }
        }
        TabKind::Sheet => {
            let manifest = load_manifest(kv, &tab.blobs)?;
            for sheet in &manifest.sheets {
                out.push(f(&format!("sheet {} name", sheet.sheet_id), &sheet.name));
                for (b, hash) in &sheet.blocks {
                    let block: Vec<Vec<serde_json::Value>> = decode("sheet block", &get_blob(kv, hash)?)?;
                    for (i, row) in block.iter().enumerate() {
                        for (j, v) in row.iter().enumerate() {
                            let text = match v {
                                serde_json::Value::String(s) => s.clone(),
                                serde_json::Value::Null => continue,
                                other => other.to_string(),
                            };
                            let r = b * crate::sheet::BLOCK_ROWS + i as u64;
                            out.push(Field { name: format!("{} cell {}", sheet.name, cell_name(r, j as u64)), text });
                        }
                    }
                }
            }
        }
        TabKind::Sources => {
            for s in load_list::<Source>(kv, tab)? {
                out.push(f("source title", &s.title));
                out.push(f("source url", &s.url));
            }
        }
        TabKind::Files => {
            for file in load_list::<FileMeta>(kv, tab)? {
                out.push(f("file name", &file.name));
            }
        }
    }
    Ok(out)
}

/// A tab's terms: each stem's count, and the tab's length in words.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Terms {
    pub counts: BTreeMap<String, u64>,
    pub len: u64,
}

impl Terms {
    pub(crate) fn of(fields: &[Field]) -> Terms {
        let stemmer = tokens::stemmer();
        let mut t = Terms::default();
        for f in fields {
            for w in tokens::words(&stemmer, &f.text) {
                *t.counts.entry(w.stem).or_default() += 1;
                t.len += 1;
            }
        }
        t
    }

    /// The (tf, len) classes the postings keep for `term`.
    pub(crate) fn classes(&self, term: &str) -> Option<(u8, u8)> {
        self.counts.get(term).map(|n| (postings::class(*n), postings::class(self.len)))
    }
}

/// The terms of a tab of a note titled `title`.
pub(crate) fn tab_terms(kv: &TenantKv, title: &str, tab: &Tab) -> Result<Terms, Failure> {
    Ok(Terms::of(&fields(kv, title, tab)?))
}

/// What a commit's change to the index is measured against: the head's tabs
/// and title as read, before the operation changed them.
pub(crate) struct Before {
    title: String,
    tabs: Vec<Tab>,
}

impl Before {
    /// Takes note of a head as read.
    pub(crate) fn of(head: &Head) -> Before {
        Before { title: head.title.clone(), tabs: head.tabs.clone() }
    }

    /// A note that does not exist yet.
    pub(crate) fn nothing() -> Before {
        Before { title: String::new(), tabs: Vec::new() }
    }

    /// The tabs whose searchable content differs between this and `head`:
    /// (tab id, as it was, as it is).
    fn changes<'a>(&'a self, head: &'a Head) -> Vec<(&'a str, Option<&'a Tab>, Option<&'a Tab>)> {
        let retitled = self.title != head.title;
        let mut out = Vec::new();
        for new in &head.tabs {
            let old = self.tabs.iter().find(|t| t.id == new.id);
            let same = old.is_some_and(|o| {
                o.content_hash == new.content_hash && o.label == new.label && !(retitled && new.kind == TabKind::Markdown)
            });
            if !same {
                out.push((new.id.as_str(), old, Some(new)));
            }
        }
        for old in &self.tabs {
            if !head.tabs.iter().any(|t| t.id == old.id) {
                out.push((old.id.as_str(), Some(old), None));
            }
        }
        out
    }
}

/// What a commit wrote into the index before its swap, and what it removes after.
#[must_use]
pub(crate) struct Staged {
    note: String,
    rev: u64,
    added: BTreeMap<String, Vec<(String, u8, u8)>>,
    dropped: BTreeMap<String, Vec<String>>,
}

/// Whether writes keep the index: always, but for [`measure_without_index`].
static INDEXING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// For the benchmark that measures what the index costs a write, and nothing
/// else: `true` makes every write of this process skip the index (a store
/// written so needs [`crate::search::reindex`] before its search is complete).
#[doc(hidden)]
pub fn measure_without_index(off: bool) {
    INDEXING.store(!off, std::sync::atomic::Ordering::SeqCst);
}

/// Before the swap of the head `head` (its `rev` already the one it commits):
/// adds the entries its content needs that the content it replaces did not
/// (a new word, or a count that crossed a class). See the module docs.
pub(crate) fn stage(kv: &TenantKv, before: &Before, head: &Head) -> Out<Staged> {
    let mut staged = Staged { note: head.note_id.clone(), rev: head.rev, added: BTreeMap::new(), dropped: BTreeMap::new() };
    if !INDEXING.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(staged);
    }
    let changes = before.changes(head);
    if changes.is_empty() {
        return Ok(staged);
    }
    for (tab_id, old, new) in changes {
        let old_terms = match old {
            Some(t) => tab_terms(kv, &before.title, t)?,
            None => Terms::default(),
        };
        let new_terms = match new {
            Some(t) => tab_terms(kv, &head.title, t)?,
            None => Terms::default(),
        };
        for term in new_terms.counts.keys() {
            let now = new_terms.classes(term);
            if old_terms.classes(term).map(|c| c.0) != now.map(|c| c.0) {
                let (tf, len) = now.unwrap_or_default();
                staged.added.entry(term.clone()).or_default().push((tab_id.to_string(), tf, len));
            }
        }
        for term in old_terms.counts.keys() {
            if !new_terms.counts.contains_key(term) {
                staged.dropped.entry(term.clone()).or_default().push(tab_id.to_string());
            }
        }
    }
    for (term, tabs) in &staged.added {
        postings::upsert(kv, term, &staged.note, staged.rev, tabs)?;
    }
    Ok(staged)
}

impl Staged {
    /// After the swap landed: a writer that confirms its commit first makes
    /// sure its entries are there (rewriting any a store lost), then every
    /// writer drops the entries of words its commit removed (`rev ≤` its own).
    ///
    /// The commit has landed, so nothing here may turn it into a refusal
    /// ("nothing was written") or a failure: a record that stays busy or a
    /// store that fails now leaves a stale entry (harmless) or, on a store
    /// that lies and then fails, an entry unconfirmed, for the next write of
    /// the word or `cairn reindex`.
    pub(crate) fn finish(self, kv: &TenantKv, confirm: bool) {
        if confirm {
            for (term, tabs) in &self.added {
                if !postings::covers(kv, term, &self.note, tabs, self.rev).unwrap_or(false) {
                    let _ = postings::upsert(kv, term, &self.note, self.rev, tabs);
                }
            }
        }
        for (term, tabs) in &self.dropped {
            let _ = postings::remove(kv, term, &self.note, tabs, self.rev);
        }
    }
}

