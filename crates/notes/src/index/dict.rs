//! The dictionary: every indexed term, in records by its first two
//! characters (`srch/dict/<start>`), so a prefix query finds its terms with
//! one read instead of a listing of the postings' keys (a listing through
//! `wasi:keyvalue` pages through the whole store on hosts whose cursors are
//! opaque).
//!
//! A record is the sorted terms, one per line. Merges add a term before
//! they write its postings, so a term with postings is always in the
//! dictionary; terms are never taken out (a term no note holds any more
//! costs a prefix query one empty postings read).

use std::collections::{BTreeMap, BTreeSet};

use crate::keys;
use crate::kv::TenantKv;
use crate::refusal::{Failure, Out};

/// The record a term (or a prefix of at least two characters) belongs to.
pub(crate) fn start(term: &str) -> String {
    term.chars().take(2).collect()
}

fn parse(raw: &[u8]) -> Result<BTreeSet<String>, Failure> {
    let text = std::str::from_utf8(raw).map_err(|_| Failure::Corrupt("search dictionary record is not UTF-8".into()))?;
    Ok(text.lines().filter(|l| !l.is_empty()).map(str::to_string).collect())
}

fn render(terms: &BTreeSet<String>) -> Vec<u8> {
    let mut out = String::new();
    for t in terms {
        out.push_str(t);
        out.push('\n');
    }
    out.into_bytes()
}

/// Adds `terms` to the dictionary (the records that lack some, in batches
/// of compare-and-swaps).
pub(crate) fn add<'a>(kv: &TenantKv, terms: impl IntoIterator<Item = &'a str>) -> Out<()> {
    let mut by_key: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for t in terms {
        by_key.entry(keys::search_dict(&start(t))).or_default().push(t);
    }
    kv.rewrite_many(by_key.keys().cloned().collect(), "the search dictionary is busy; nothing more was written", |key, raw| {
        let mut have = match raw {
            Some(raw) => parse(raw)?,
            None => BTreeSet::new(),
        };
        let before = have.len();
        have.extend(by_key[key].iter().map(|t| t.to_string()));
        Ok((have.len() != before).then(|| render(&have)))
    })
}

/// The indexed terms that start with `prefix` (at least two characters).
pub(crate) fn starting_with(kv: &TenantKv, prefix: &str) -> Result<Vec<String>, Failure> {
    let Some(raw) = kv.get(&keys::search_dict(&start(prefix)))? else { return Ok(Vec::new()) };
    Ok(parse(&raw)?.into_iter().filter(|t| t.starts_with(prefix)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_found_by_any_prefix_of_two_or_more_characters() {
        let store = cairn_kv::memory::MemoryStore::new();
        let kv = TenantKv::new(&store, "acme").unwrap();
        add(&kv, ["launch", "lamp", "la", "brief", "café"]).unwrap();
        add(&kv, ["launch", "laundri"]).unwrap();
        assert_eq!(starting_with(&kv, "la").unwrap(), ["la", "lamp", "launch", "laundri"]);
        assert_eq!(starting_with(&kv, "laun").unwrap(), ["launch", "laundri"]);
        assert_eq!(starting_with(&kv, "caf").unwrap(), ["café"]);
        assert!(starting_with(&kv, "zz").unwrap().is_empty());
    }
}
