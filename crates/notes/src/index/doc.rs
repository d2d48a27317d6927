//! What the index holds of one note, `srch/doc/<note_id>`: the head
//! revision its postings were brought to, whether that transition is done,
//! and each tab's terms as of that revision (so the next transition knows
//! what to remove without reading old content back).
//!
//! Binary: a version byte, then varints and length-prefixed strings. A
//! tab's term list is dropped (kept as "unknown") when the record would
//! otherwise pass [`MAX_DOC_RECORD`]; a transition away from an unknown list
//! adds every term of the new content and removes nothing (the leftovers are
//! harmless, see [`crate::index`], and `cairn reindex` drops them).

use crate::model::TabKind;
use crate::refusal::Failure;

use super::Terms;
use super::codec::{Reader, put_varint};

/// Largest encoded record kept with every term list.
pub(crate) const MAX_DOC_RECORD: usize = 768 * 1024;
/// Format 2 adds whether agents may see the note; a format-1 record reads
/// as not approved (its entries carry no agents bit either), and the next
/// transition of an approved note rewrites every entry with it.
const FORMAT: u8 = 2;

/// One tab as the index holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DocTab {
    pub id: String,
    pub content_hash: String,
    pub label: String,
    /// Whether the note's title is one of the tab's fields (the markdown tab).
    pub titled: bool,
    /// The tab's length in words.
    pub len: u64,
    /// Each term's count, sorted by term; `None`: not kept (too many).
    pub terms: Option<Vec<(String, u64)>>,
    /// The stem pairs that follow each other ([`super::pair_hash`], sorted);
    /// `None` when the terms are not kept either.
    pub pairs: Option<Vec<u32>>,
}

impl DocTab {
    /// The tab `tab` as indexed with `terms`.
    pub(crate) fn of(tab: &crate::model::Tab, terms: &Terms) -> DocTab {
        DocTab {
            id: tab.id.clone(),
            content_hash: tab.content_hash.clone(),
            label: tab.label.clone(),
            titled: tab.kind == TabKind::Markdown,
            len: terms.len,
            terms: Some(terms.counts.iter().map(|(t, n)| (t.clone(), *n)).collect()),
            pairs: Some(terms.pairs.clone()),
        }
    }

    /// Whether this is what `tab` of a note titled `title` says, as indexed
    /// under `indexed_title`: same content, label and (for a titled tab) title.
    pub(crate) fn says_the_same(&self, tab: &crate::model::Tab, title: &str, indexed_title: &str) -> bool {
        self.content_hash == tab.content_hash && self.label == tab.label && (!self.titled || title == indexed_title)
    }

    /// The terms as a [`Terms`], when kept.
    pub(crate) fn terms(&self) -> Option<Terms> {
        self.terms.as_ref().map(|list| Terms { counts: list.iter().cloned().collect(), len: self.len, pairs: self.pairs.clone().unwrap_or_default() })
    }

    /// Whether the tab may hold `stem` (`None`: the terms are not kept).
    pub(crate) fn has_term(&self, stem: &str) -> Option<bool> {
        self.terms.as_ref().map(|list| list.binary_search_by(|(t, _)| t.as_str().cmp(stem)).is_ok())
    }

    /// Whether the tab may hold `b` right after `a` (`None`: not kept).
    pub(crate) fn has_pair(&self, a: &str, b: &str) -> Option<bool> {
        self.pairs.as_ref().map(|list| list.binary_search(&super::pair_hash(a, b)).is_ok())
    }
}

/// The record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Doc {
    /// The head revision the postings were (or are being) brought to.
    pub rev: u64,
    /// 0 when the transition to `rev` is done; else when (µs, by the clock of
    /// the merger that claimed it) it was claimed.
    pub applying_since: u64,
    /// The note's title at `rev`.
    pub title: String,
    /// Whether the note was approved for agents at `rev` (its entries carry
    /// [`super::postings::AGENTS`] then).
    pub agents: bool,
    pub tabs: Vec<DocTab>,
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// A string written by [`put_str`].
fn text(r: &mut Reader) -> Result<String, Failure> {
    let n = r.varint()? as usize;
    Ok(r.str(n)?.to_string())
}

impl Doc {
    fn encode_with(&self, keep: &[bool]) -> Vec<u8> {
        let mut out = vec![FORMAT];
        put_varint(&mut out, self.rev);
        put_varint(&mut out, self.applying_since);
        put_str(&mut out, &self.title);
        out.push(self.agents as u8);
        put_varint(&mut out, self.tabs.len() as u64);
        for (t, keep) in self.tabs.iter().zip(keep) {
            put_str(&mut out, &t.id);
            put_str(&mut out, &t.content_hash);
            put_str(&mut out, &t.label);
            out.push(t.titled as u8);
            put_varint(&mut out, t.len);
            match (&t.terms, keep) {
                (Some(list), true) => {
                    out.push(1);
                    put_varint(&mut out, list.len() as u64);
                    for (term, n) in list {
                        put_str(&mut out, term);
                        put_varint(&mut out, *n);
                    }
                    let pairs = t.pairs.as_deref().unwrap_or_default();
                    put_varint(&mut out, pairs.len() as u64);
                    for p in pairs {
                        out.extend_from_slice(&p.to_le_bytes());
                    }
                }
                _ => out.push(0),
            }
        }
        out
    }

    /// Encodes the record, dropping the term lists of the largest tabs until
    /// it fits [`MAX_DOC_RECORD`].
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut keep = vec![true; self.tabs.len()];
        let mut order: Vec<usize> = (0..self.tabs.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.tabs[i].terms.as_ref().map_or(0, Vec::len)));
        let mut out = self.encode_with(&keep);
        for i in order {
            if out.len() <= MAX_DOC_RECORD {
                break;
            }
            keep[i] = false;
            out = self.encode_with(&keep);
        }
        out
    }

    /// Decodes a record; anything malformed is a corrupt store.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Doc, Failure> {
        let mut r = Reader::new(bytes, "search doc record");
        let format = r.byte()?;
        if format != FORMAT && format != 1 {
            return Err(r.bad());
        }
        let rev = r.varint()?;
        let applying_since = r.varint()?;
        let title = text(&mut r)?;
        let agents = format >= 2 && r.byte()? != 0;
        let n = r.varint()? as usize;
        let mut tabs = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            let id = text(&mut r)?;
            let content_hash = text(&mut r)?;
            let label = text(&mut r)?;
            let titled = r.byte()? != 0;
            let len = r.varint()?;
            let (terms, pairs) = match r.byte()? {
                0 => (None, None),
                _ => {
                    let k = r.varint()? as usize;
                    let mut list = Vec::with_capacity(k.min(1 << 16));
                    for _ in 0..k {
                        list.push((text(&mut r)?, r.varint()?));
                    }
                    let k = r.varint()? as usize;
                    let mut pairs = Vec::with_capacity(k.min(1 << 16));
                    for _ in 0..k {
                        pairs.push(u32::from_le_bytes([r.byte()?, r.byte()?, r.byte()?, r.byte()?]));
                    }
                    (Some(list), Some(pairs))
                }
            };
            tabs.push(DocTab { id, content_hash, label, titled, len, terms, pairs });
        }
        if !r.done() {
            return Err(r.bad());
        }
        Ok(Doc { rev, applying_since, title, agents, tabs })
    }

    /// The tab `id`, if the record has it.
    pub(crate) fn tab(&self, id: &str) -> Option<&DocTab> {
        self.tabs.iter().find(|t| t.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tab(id: &str, terms: Option<Vec<(&str, u64)>>) -> DocTab {
        DocTab {
            id: id.into(),
            content_hash: "abc".into(),
            label: "Notes".into(),
            titled: id == "markdown",
            len: 7,
            pairs: terms.as_ref().map(|_| vec![3, 9]),
            terms: terms.map(|l| l.into_iter().map(|(t, n)| (t.to_string(), n)).collect()),
        }
    }

    #[test]
    fn a_record_round_trips_and_garbage_is_corrupt() {
        let doc = Doc {
            rev: 300,
            applying_since: 17,
            title: "Café plan".into(),
            agents: true,
            tabs: vec![tab("markdown", Some(vec![("cafe", 2), ("plan", 1)])), tab("t2", None)],
        };
        let bytes = doc.encode();
        assert_eq!(Doc::decode(&bytes).unwrap(), doc);
        assert!(Doc::decode(&bytes[..bytes.len() - 1]).is_err(), "cut short");
        assert!(Doc::decode(&[9, 1, 2]).is_err(), "another format");
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Doc::decode(&longer).is_err(), "trailing bytes");
    }

    #[test]
    fn an_oversized_record_drops_the_largest_term_lists_first() {
        let many: Vec<(String, u64)> = (0..120_000).map(|i| (format!("term{i:07}"), 1)).collect();
        let doc = Doc {
            rev: 1,
            applying_since: 0,
            title: String::new(),
            agents: false,
            tabs: vec![DocTab { terms: Some(many), pairs: Some(vec![1; 1000]), ..tab("t1", None) }, tab("markdown", Some(vec![("small", 1)]))],
        };
        let bytes = doc.encode();
        assert!(bytes.len() <= MAX_DOC_RECORD, "{} bytes", bytes.len());
        let back = Doc::decode(&bytes).unwrap();
        assert_eq!(back.tabs[0].terms, None, "the big list is dropped");
        assert_eq!(back.tabs[1].terms, Some(vec![("small".to_string(), 1)]), "the small one is kept");
    }
}
