//! What a commit tells the search index: the dirty marker it writes
//! before its swap when it changes what a tab or the title says.
//!
//! The commit path ([`crate::head::transact`]) depends on this module and
//! the index's merge depends on the commit path, never the other way: the
//! marker is all a writer knows of the index (see [`crate::index`] for the
//! invariant the markers keep).

use crate::model::{Head, Tab, TabKind};

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
    pub(crate) fn changes<'a>(&'a self, head: &'a Head) -> Vec<(&'a str, Option<&'a Tab>, Option<&'a Tab>)> {
        let retitled = self.title != head.title;
        let mut out = Vec::new();
        for new in &head.tabs {
            let old = self.tabs.iter().find(|t| t.id == new.id);
            let same = old.is_some_and(|o| o.content_hash == new.content_hash && o.label == new.label && !(retitled && new.kind == TabKind::Markdown));
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

/// Whether commits mark what they change: always, but for [`measure_without_index`].
static INDEXING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// For the benchmark that measures what the index costs a write, and nothing
/// else: `true` makes every write of this process leave no marker (a store
/// written so needs [`crate::search::reindex`] before its search is complete).
#[doc(hidden)]
pub fn measure_without_index(off: bool) {
    INDEXING.store(!off, std::sync::atomic::Ordering::SeqCst);
}

/// The dirty marker a commit of `head` (its `rev` already the one it
/// commits) writes before its swap, when it changes what a tab says
/// compared with `before`: the key, and the writer's clock (µs) as the
/// value (see `index::merge` for what it is used for).
pub(crate) fn marker(before: &Before, head: &Head, now_us: u64) -> Option<(String, Vec<u8>)> {
    if !INDEXING.load(std::sync::atomic::Ordering::Relaxed) || before.changes(head).is_empty() {
        return None;
    }
    Some((crate::keys::search_dirty(&head.note_id, head.rev), now_us.to_string().into_bytes()))
}
