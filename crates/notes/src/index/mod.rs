//! The full-text index: Cairn's own data in the key-value store. Commits
//! only mark what they changed ([`marker`], written before the head swap);
//! the index itself is brought up to date by a merge ([`merge`]) that any
//! reader of the index may run: the embedded host's background merger, a
//! query that finds many marks, `cairn reindex`. Queries, [`crate::search::reindex`]
//! and [`crate::search::check`] are in [`crate::search`].
//!
//! - `tokens`: words, folded and stemmed (one rule for index and query).
//! - `codec`: the varints and reader the binary records share.
//! - `postings`: term → tabs records, and their encoding.
//! - `doc`: what the index holds of one note (its [`doc::Doc`] record).
//! - `dict`: the terms by their first two characters, for prefix queries.
//! - `merge`: bringing notes' postings up to their committed heads.
//! - here: what a tab says ([`fields`]), its [`Terms`], and the mark a commit leaves.
//!
//! # The invariant, and why a crash cannot break it
//!
//! For every note, either the postings hold every term of every tab of its
//! committed head, or a **dirty marker** `srch/dirty/<note>/<rev>` with `rev`
//! at least the head's revision is in the store. Postings may hold more
//! (terms a note no longer has): a query only ever *proposes* candidates from
//! them, treats every note with a marker as a candidate too, and answers a
//! hit only after reading the note's committed head as the caller
//! (visibility, the tab still there, its type) and finding the query in the
//! tab's committed content. So:
//!
//! - **A hit never points at content that was never committed**, nor at a
//!   deleted tab, a note withdrawn from agents, or another tenant (keys are
//!   under the tenant's prefix): hits come from committed heads only.
//! - **A committed change is searchable the moment it is acknowledged**
//!   (the bound is zero): the commit that changes what a tab says writes its
//!   marker (the revision it commits) *before* its head swap, and a marker is
//!   deleted only by a merge that has brought the postings up to a committed
//!   head of at least that revision. A crash before the swap leaves a marker
//!   for a commit that never landed (the note is proved directly until a
//!   merge or a later commit passes that revision); a crash during a merge
//!   leaves its markers in place.
//!
//! Why a merge keeps the invariant: merges of one note form a chain of
//! *transitions* `d → h` claimed one at a time by compare-and-swap on the
//! note's `srch/doc` record (which holds the terms of `d`). A transition adds
//! (with revision `h`) the entries `h` needs that `d` lacked, then removes the
//! entries of terms `h` lacks, but only entries no newer than `h`; only then
//! is it marked done, and only then are markers up to `h` deleted. Entries
//! carry the revision of the transition that wrote them (an upsert never
//! lowers it), so a slow remover of an older transition can never drop an
//! entry a newer transition needs (its revision is higher). A transition
//! found unfinished for longer than [`merge::STUCK_US`] (its merger crashed,
//! or is slow) is taken over by one that re-adds *every* term of the new
//! head, whatever the stuck one removed; a slow original that carries on is
//! harmless for the same reason.
//!
//! What this costs a write: one small `set` before the swap (nothing at all
//! for a write that leaves every tab's words as they were: a claim, a
//! rename of nothing, a sweep).

mod codec;
pub(crate) mod dict;
pub(crate) mod doc;
pub(crate) mod merge;
pub(crate) mod postings;
pub(crate) mod tokens;

use std::collections::BTreeMap;

use crate::content::{get_blob, load_list, load_slides, load_text};
use crate::kv::TenantKv;
use crate::model::{FileMeta, Source, Tab, TabKind, decode};
use crate::refusal::Failure;
use crate::sheet::load_manifest;
use tokens::Tokenizer;

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

/// A tab's terms: each stem's count, the tab's length in words, and the
/// pairs of stems that follow each other in a field ([`pair_hash`]es,
/// sorted), which let a phrase rule out a tab without reading it.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Terms {
    pub counts: BTreeMap<String, u64>,
    pub len: u64,
    pub pairs: Vec<u32>,
}

/// The hash of a stem followed by another (FNV-1a, 32 bits).
pub(crate) fn pair_hash(a: &str, b: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for byte in a.bytes().chain(std::iter::once(0)).chain(b.bytes()) {
        h = (h ^ u32::from(byte)).wrapping_mul(0x0100_0193);
    }
    h
}

impl Terms {
    pub(crate) fn of(tok: &mut Tokenizer, fields: &[Field]) -> Terms {
        let mut t = Terms::default();
        let mut pairs = std::collections::HashSet::new();
        for f in fields {
            let mut prev: Option<u32> = None;
            tok.each_id(&f.text, |tok, w| {
                let stem = tok.stem_text(w.stem);
                match t.counts.get_mut(stem) {
                    Some(n) => *n += 1,
                    None => {
                        t.counts.insert(stem.to_string(), 1);
                    }
                }
                if let Some(p) = prev {
                    pairs.insert(pair_hash(tok.stem_text(p), stem));
                }
                prev = Some(w.stem);
                t.len += 1;
            });
        }
        t.pairs = pairs.into_iter().collect();
        t.pairs.sort_unstable();
        t
    }

    /// The (tf, len) classes the postings keep for `term`.
    pub(crate) fn classes(&self, term: &str) -> Option<(u8, u8)> {
        self.counts.get(term).map(|n| (postings::class(*n), postings::class(self.len)))
    }
}

/// The terms of a tab of a note titled `title`.
pub(crate) fn tab_terms(kv: &TenantKv, tok: &mut Tokenizer, title: &str, tab: &Tab) -> Result<Terms, Failure> {
    Ok(Terms::of(tok, &fields(kv, title, tab)?))
}
