//! Postings: for each term, which tabs hold it, in [`BUCKETS`] records per
//! term (`srch/t/<term>/<bucket>`, the bucket from the note id's hash), so a
//! record stays small however many notes share a common word, and a query
//! reads one term with one `get_many`.
//!
//! An entry is `(note_id, tab_id, rev, tf, len)`: `rev` is the head revision
//! of the commit that needed it (see [`crate::index`] for why), `tf` and
//! `len` are the term's count in the tab and the tab's length in words, both
//! as classes (`⌊log₂ n⌋`), so an edit rewrites an entry only when a count
//! doubles or halves, not on every word typed. The `tf` byte's top bit
//! ([`AGENTS`]) says whether the note was approved for agents at `rev`, so
//! an agent's query never proposes, counts or ranks a note it may not see
//! (a transition that flips the approval rewrites every entry of the note).
//!
//! Records are rewritten with compare-and-swap; an emptied record stays as an
//! empty value (the contract has no conditional delete), which reads as no entries.

use crate::kv::TenantKv;
use crate::model::sha_hex;
use crate::refusal::{Failure, Out};

use super::codec::{Reader, put_varint};

/// The bit of an entry's `tf` byte that says its note was approved for
/// agents at the entry's revision (count classes never reach it).
pub(crate) const AGENTS: u8 = 0x80;

/// A `tf` byte: the count class, and the agents bit when `agents`.
pub(crate) fn tf_byte(class: u8, agents: bool) -> u8 {
    assert!(class & AGENTS == 0, "count classes stay below the agents bit");
    if agents { class | AGENTS } else { class }
}

/// Records per term.
pub(crate) const BUCKETS: usize = 32;
/// Prefix of every posting key (then `<term>/<bucket:02>`).
pub(crate) const PREFIX: &str = "srch/t/";

/// One tab that holds a term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub note: String,
    pub tab: String,
    pub rev: u64,
    pub tf: u8,
    pub len: u8,
}

/// `⌊log₂ n⌋` (0 for 0 and 1), at most 31.
pub(crate) fn class(n: u64) -> u8 {
    (63 - n.max(1).leading_zeros()).min(31) as u8
}

/// The middle of a class: the count a ranking assumes for it.
pub(crate) fn unclass(c: u8) -> f64 {
    (1u64 << c) as f64 * 1.4
}

/// The bucket of a note.
pub(crate) fn bucket(note_id: &str) -> usize {
    usize::from_str_radix(&sha_hex(note_id.as_bytes())[..4], 16).unwrap_or(0) % BUCKETS
}

/// The record of `term` for notes in `bucket`.
pub(crate) fn key(term: &str, bucket: usize) -> String {
    format!("{PREFIX}{term}/{bucket:02}")
}

/// Every record of `term`.
pub(crate) fn keys(term: &str) -> Vec<String> {
    (0..BUCKETS).map(|b| key(term, b)).collect()
}

/// The term a posting key belongs to.
pub(crate) fn term_of(key: &str) -> Option<&str> {
    key.strip_prefix(PREFIX)?.rsplit_once('/').map(|(t, _)| t)
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.push(s.len() as u8);
    out.extend_from_slice(s.as_bytes());
}

/// What a record's errors call it.
const WHAT: &str = "search posting record";

/// A string written by [`put_str`] (a length byte, then the bytes).
#[inline]
fn short_str<'a>(r: &mut Reader<'a>) -> Result<&'a str, Failure> {
    let n = r.byte()? as usize;
    r.str(n)
}

/// Encodes entries (sorted by note, then tab).
pub(crate) fn encode(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * 32);
    for e in entries {
        put_str(&mut out, &e.note);
        put_str(&mut out, &e.tab);
        put_varint(&mut out, e.rev);
        out.push(e.tf);
        out.push(e.len);
    }
    out
}

/// Decodes a record; anything malformed is a corrupt store, never a guess.
pub(crate) fn decode(bytes: &[u8]) -> Result<Vec<Entry>, Failure> {
    let mut out = Vec::new();
    let mut r = Reader::new(bytes, WHAT);
    while !r.done() {
        let note = short_str(&mut r)?.to_string();
        let tab = short_str(&mut r)?.to_string();
        let rev = r.varint()?;
        let (tf, len) = (r.byte()?, r.byte()?);
        out.push(Entry { note, tab, rev, tf, len });
    }
    Ok(out)
}

/// An entry borrowed from a record (what queries read: no copies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntryRef<'a> {
    pub note: &'a str,
    pub tab: &'a str,
    /// The count class (the agents bit taken out).
    pub tf: u8,
    pub len: u8,
    /// Whether agents may see the note (at the entry's revision).
    pub agents: bool,
}

/// Calls `f` with every entry of a record, borrowed from it.
pub(crate) fn each_ref<'a>(bytes: &'a [u8], mut f: impl FnMut(EntryRef<'a>)) -> Result<(), Failure> {
    let mut r = Reader::new(bytes, WHAT);
    while !r.done() {
        let note = short_str(&mut r)?;
        let tab = short_str(&mut r)?;
        // The revision matters to writers only.
        r.varint()?;
        let (tf, len) = (r.byte()?, r.byte()?);
        f(EntryRef { note, tab, tf: tf & !AGENTS, len, agents: tf & AGENTS != 0 });
    }
    Ok(())
}

/// Where each note's entries are in a record: (note, first byte, end), in
/// record order (a note's entries are next to each other).
fn note_spans(bytes: &[u8]) -> Result<Vec<(&str, usize, usize)>, Failure> {
    let mut out: Vec<(&str, usize, usize)> = Vec::new();
    let mut r = Reader::new(bytes, WHAT);
    while !r.done() {
        let start = r.at;
        let note = short_str(&mut r)?;
        let n = r.byte()? as usize;
        r.take(n)?;
        r.varint()?;
        r.take(2)?;
        match out.last_mut() {
            Some(last) if last.0 == note => last.2 = r.at,
            _ => out.push((note, start, r.at)),
        }
    }
    Ok(out)
}

/// Applies `ops` (of any notes, in order per note) to a record's bytes
/// without decoding the entries of notes they do not touch: the new record,
/// or `None` when nothing changed. The same result as decoding, applying
/// [`apply_op`] and encoding.
pub(crate) fn apply_ops_raw(raw: &[u8], ops: &[Op]) -> Result<Option<Vec<u8>>, Failure> {
    let note_of = |op: &Op| match op {
        Op::Upsert { note, .. } | Op::Remove { note, .. } => note.clone(),
    };
    let mut touched: Vec<String> = ops.iter().map(note_of).collect();
    touched.sort();
    touched.dedup();
    let spans = note_spans(raw)?;
    let mut out = Vec::with_capacity(raw.len() + 64);
    let mut at = 0;
    let mut changed = false;
    for note in &touched {
        // This note's bytes, or where they would go.
        let (start, end) = match spans.iter().find(|(n, _, _)| *n >= note.as_str()) {
            Some((n, s, e)) if *n == note.as_str() => (*s, *e),
            Some((_, s, _)) => (*s, *s),
            None => (raw.len(), raw.len()),
        };
        out.extend_from_slice(&raw[at..start]);
        let mut entries = decode(&raw[start..end])?;
        let mut this = false;
        for op in ops.iter().filter(|op| note_of(op) == *note) {
            this |= apply_op(&mut entries, op);
        }
        if this {
            out.extend_from_slice(&encode(&entries));
            changed = true;
        } else {
            out.extend_from_slice(&raw[start..end]);
        }
        at = end;
    }
    out.extend_from_slice(&raw[at..]);
    Ok(changed.then_some(out))
}

/// The records of each of `terms` (all their buckets), in one read: per
/// term, the records that exist.
pub(crate) fn read_records(kv: &TenantKv, terms: &[String]) -> Result<Vec<Vec<Vec<u8>>>, Failure> {
    let all: Vec<String> = terms.iter().flat_map(|t| keys(t)).collect();
    let values = kv.get_many(&all)?;
    Ok(values.chunks(BUCKETS).map(|records| records.iter().flatten().cloned().collect()).collect())
}

/// Every entry of each of `terms`, from all their records, in one read.
#[cfg(test)]
pub(crate) fn read_terms(kv: &TenantKv, terms: &[String]) -> Result<Vec<Vec<Entry>>, Failure> {
    let all: Vec<String> = terms.iter().flat_map(|t| keys(t)).collect();
    let values = kv.get_many(&all)?;
    values.chunks(BUCKETS).map(|records| decode_all(records.iter().flatten())).collect()
}

#[cfg(test)]
fn decode_all<'a>(records: impl Iterator<Item = &'a Vec<u8>>) -> Result<Vec<Entry>, Failure> {
    let mut out = Vec::new();
    for raw in records {
        out.extend(decode(raw)?);
    }
    Ok(out)
}

/// One change to a note's entries in a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    /// Sets the note's entries for the tabs (tab, tf, len) with `rev`, but
    /// leaves an entry that already has a higher revision exactly as it is.
    Upsert { note: String, rev: u64, tabs: Vec<(String, u8, u8)> },
    /// Removes the note's entries for the tabs whose revision is at most
    /// `up_to` (the revision of a committed head that holds the term in none
    /// of them); a newer entry belongs to a newer transition and stays.
    Remove { note: String, up_to: u64, tabs: Vec<String> },
}

/// Applies `op` to a record's entries (sorted by note, then tab); whether
/// anything changed.
pub(crate) fn apply_op(entries: &mut Vec<Entry>, op: &Op) -> bool {
    match op {
        Op::Upsert { note, rev, tabs } => {
            let mut changed = false;
            for (tab, tf, len) in tabs {
                let at = entries.binary_search_by(|e| (e.note.as_str(), e.tab.as_str()).cmp(&(note.as_str(), tab.as_str())));
                match at {
                    Ok(i) => {
                        // An older transition never overwrites what a newer one wrote.
                        let e = &mut entries[i];
                        if *rev >= e.rev && (e.rev, e.tf, e.len) != (*rev, *tf, *len) {
                            (e.rev, e.tf, e.len) = (*rev, *tf, *len);
                            changed = true;
                        }
                    }
                    Err(i) => {
                        entries.insert(i, Entry { note: note.clone(), tab: tab.clone(), rev: *rev, tf: *tf, len: *len });
                        changed = true;
                    }
                }
            }
            changed
        }
        Op::Remove { note, up_to, tabs } => {
            let before = entries.len();
            entries.retain(|e| !(e.note == *note && e.rev <= *up_to && tabs.contains(&e.tab)));
            entries.len() != before
        }
    }
}

/// Applies `op` to the record of `term` for its note's bucket, by compare-and-swap.
pub(crate) fn rewrite_one(kv: &TenantKv, term: &str, op: &Op) -> Out<()> {
    let note = match op {
        Op::Upsert { note, .. } | Op::Remove { note, .. } => note,
    };
    kv.rewrite_many(vec![key(term, bucket(note))], "the search index is busy; nothing was written", |_, raw| {
        let mut entries = raw.map(decode).transpose()?.unwrap_or_default();
        Ok(apply_op(&mut entries, op).then(|| encode(&entries)))
    })
}

/// Sets the entries of `note_id` for `term` ([`Op::Upsert`]).
pub(crate) fn upsert(kv: &TenantKv, term: &str, note_id: &str, rev: u64, tabs: &[(String, u8, u8)]) -> Out<()> {
    rewrite_one(kv, term, &Op::Upsert { note: note_id.to_string(), rev, tabs: tabs.to_vec() })
}

/// Removes the entries of `note_id` for `term` on `tabs` ([`Op::Remove`]).
pub(crate) fn remove(kv: &TenantKv, term: &str, note_id: &str, tabs: &[String], up_to: u64) -> Out<()> {
    rewrite_one(kv, term, &Op::Remove { note: note_id.to_string(), up_to, tabs: tabs.to_vec() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_garbage_is_corrupt() {
        let entries = vec![
            Entry { note: "n-a".into(), tab: "t1".into(), rev: 1, tf: 0, len: 3 },
            Entry { note: "n-b".into(), tab: "t12".into(), rev: 300_000, tf: 4, len: 9 },
        ];
        assert_eq!(decode(&encode(&entries)).unwrap(), entries);
        assert!(decode(&[5, b'a']).is_err());
        assert!(decode(&encode(&entries)[..12]).is_err(), "a record cut inside an entry");
    }

    fn entries(kv: &TenantKv, term: &str) -> Vec<(String, u64)> {
        read_terms(kv, &[term.to_string()]).unwrap().concat().into_iter().map(|e| (e.tab, e.rev)).collect()
    }

    #[test]
    fn a_removal_based_on_an_older_head_keeps_the_entry_of_a_commit_still_to_land() {
        let store = cairn_kv::memory::MemoryStore::new();
        let kv = TenantKv::new(&store, "acme").unwrap();
        // Writer B, based on head rev 5 (which lacks the word), adds it for its commit, rev 6.
        upsert(&kv, "flint", "n-1", 6, &[("markdown".into(), 0, 2)]).unwrap();
        // Writer A committed rev 5 without the word and now cleans up: B's entry stays.
        remove(&kv, "flint", "n-1", &["markdown".into()], 5).unwrap();
        assert_eq!(entries(&kv, "flint"), vec![("markdown".to_string(), 6)]);
        // A removal based on a head at or past B's commit may drop it.
        remove(&kv, "flint", "n-1", &["markdown".into()], 6).unwrap();
        assert!(entries(&kv, "flint").is_empty());
    }

    #[test]
    fn an_older_upsert_leaves_a_newer_entry_alone_and_touches_only_its_note_and_tabs() {
        let store = cairn_kv::memory::MemoryStore::new();
        let kv = TenantKv::new(&store, "acme").unwrap();
        upsert(&kv, "flint", "n-1", 9, &[("markdown".into(), 0, 2)]).unwrap();
        upsert(&kv, "flint", "n-2", 1, &[("markdown".into(), 0, 2)]).unwrap();
        upsert(&kv, "flint", "n-1", 4, &[("markdown".into(), 3, 5), ("t7".into(), 0, 1)]).unwrap();
        let mut all: Vec<(String, String, u64, u8)> =
            read_terms(&kv, &["flint".to_string()]).unwrap().concat().into_iter().map(|e| (e.note, e.tab, e.rev, e.tf)).collect();
        all.sort();
        assert_eq!(all, vec![("n-1".into(), "markdown".into(), 9, 0), ("n-1".into(), "t7".into(), 4, 0), ("n-2".into(), "markdown".into(), 1, 0)]);
        remove(&kv, "flint", "n-1", &["markdown".into(), "t7".into()], 9).unwrap();
        assert_eq!(entries(&kv, "flint"), vec![("markdown".to_string(), 1)], "n-2's entry stays");
    }

    #[test]
    fn ops_on_the_bytes_give_what_decoding_gives() {
        let e = |note: &str, tab: &str, rev: u64| Entry { note: note.into(), tab: tab.into(), rev, tf: 1, len: 2 };
        let base = vec![e("n-a", "markdown", 3), e("n-c", "markdown", 5), e("n-c", "t9", 5), e("n-e", "markdown", 1)];
        let cases: Vec<Vec<Op>> = vec![
            vec![Op::Upsert { note: "n-b".into(), rev: 7, tabs: vec![("markdown".into(), 0, 3)] }],
            vec![Op::Remove { note: "n-c".into(), up_to: 5, tabs: vec!["t9".into()] }],
            vec![Op::Remove { note: "n-c".into(), up_to: 4, tabs: vec!["t9".into()] }],
            vec![
                Op::Upsert { note: "n-z".into(), rev: 1, tabs: vec![("t1".into(), 2, 2)] },
                Op::Remove { note: "n-a".into(), up_to: 9, tabs: vec!["markdown".into()] },
            ],
            vec![
                Op::Upsert { note: "n-c".into(), rev: 6, tabs: vec![("markdown".into(), 4, 4)] },
                Op::Upsert { note: "n-0".into(), rev: 2, tabs: vec![("x".into(), 1, 1)] },
            ],
        ];
        for ops in cases {
            let mut want = base.clone();
            let changed = ops.iter().fold(false, |c, op| apply_op(&mut want, op) | c);
            let got = apply_ops_raw(&encode(&base), &ops).unwrap();
            assert_eq!(got.is_some(), changed, "{ops:?}");
            assert_eq!(decode(&got.unwrap_or_else(|| encode(&base))).unwrap(), want, "{ops:?}");
        }
        assert_eq!(
            apply_ops_raw(&[], &[Op::Upsert { note: "n".into(), rev: 1, tabs: vec![("t".into(), 0, 0)] }]).unwrap().map(|b| decode(&b).unwrap().len()),
            Some(1)
        );
    }

    #[test]
    fn classes_double() {
        assert_eq!([0, 1, 2, 3, 4, 7, 8, 1024].map(class), [0, 0, 1, 1, 2, 2, 3, 10]);
    }

    #[test]
    fn term_of_a_key_is_the_term_it_was_made_from() {
        assert_eq!(term_of(&key("launch", 7)), Some("launch"));
    }
}
