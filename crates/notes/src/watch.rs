//! What a change feed sees of notes: a stamp per watched note or tab, read
//! for many at once with one batched read of their heads.
//!
//! The invariant a feed rests on: **a stamp moves exactly when what the
//! caller would read there moves, and is `None` exactly when the caller may
//! not read it.** It holds because a stamp is taken from the head through
//! `visible_head`, the check every read tool makes (tenant by key prefix,
//! agents only on notes approved for agents): a note's stamp is its
//! version, which every commit moves; a tab's is the tab's version, which
//! every change to that tab moves. A head the caller may not see, an
//! absent note or tab, or another tenant's, is `None` alike, so a watcher
//! learns nothing a read would not tell it. (Tested against the read tools
//! themselves: `crates/mcp/tests/mcp/feed.rs`.)

use cairn_kv::Store;

use crate::env::Identity;
use crate::head::{Reader, visible_head};
use crate::keys;
use crate::kv::TenantKv;
use crate::refusal::{Failure, Halt};

/// A watched resource: a note, or one tab of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watched<'a> {
    /// A note (its version).
    Note(&'a str),
    /// A tab of a note (the tab's version).
    Tab(&'a str, &'a str),
}

impl<'a> Watched<'a> {
    fn note(&self) -> &'a str {
        match self {
            Watched::Note(n) | Watched::Tab(n, _) => n,
        }
    }
}

/// The stamp of each of `watched` as `who` sees it, in order (see the
/// module docs); one batched read of the distinct notes' heads. A head that
/// does not decode is an error, as for any read.
pub fn stamps(store: &dyn Store, who: &Identity, watched: &[Watched<'_>]) -> Result<Vec<Option<u64>>, Failure> {
    let Some(kv) = TenantKv::new(store, &who.tenant) else {
        return Ok(vec![None; watched.len()]);
    };
    let mut notes: Vec<&str> = watched.iter().map(Watched::note).collect();
    notes.sort_unstable();
    notes.dedup();
    let heads = kv.get_many(&notes.iter().map(|n| keys::note(n)).collect::<Vec<_>>())?;
    assert_eq!(heads.len(), notes.len(), "a batched read answers every key");
    let mut seen = Vec::with_capacity(notes.len());
    for bytes in &heads {
        seen.push(match bytes {
            None => None,
            Some(b) => match visible_head(b, Reader::Caller(who)) {
                Ok(head) => Some(head),
                Err(Halt::Refused(_)) => None,
                Err(Halt::Failed(e)) => return Err(e),
            },
        });
    }
    Ok(watched
        .iter()
        .map(|w| {
            let head = seen[notes.binary_search(&w.note()).ok()?].as_ref()?;
            match w {
                Watched::Note(_) => Some(head.version),
                Watched::Tab(_, tab) => head.tabs.iter().find(|t| t.id == *tab).map(|t| t.version),
            }
        })
        .collect())
}
