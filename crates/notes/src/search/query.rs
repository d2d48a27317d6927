//! Queries: words (all must match), `"quoted phrases"` and `prefix*`, case-
//! and accent-insensitive, with words matched by stem.
//!
//! A query runs in two stages. **Proposing**: each clause's postings give
//! candidate tabs, those in every clause are ranked by BM25 from the
//! postings' count classes. **Proving**: in that order, each candidate's
//! note head is read as the caller (tenant, agent visibility), its tab must
//! still be there (and of the asked type), and the query must match the
//! tab's committed content; only then is it a hit, scored again by BM25 on
//! the real counts and given a snippet. A page holds the next hits in the
//! proposed order (sorted by their real scores within the page); the cursor
//! is the position in that order, tied to the query.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::index::postings::{self, Entry};
use crate::index::tokens::{self, Word};
use crate::index::{Field, fields};
use crate::env::Identity;
use crate::head::{Reader, visible_head};
use crate::keys;
use crate::kv::TenantKv;
use crate::model::{Tab, TabKind, sha_hex, tab_provenance};
use crate::note_index::index_slice;
use crate::refusal::{NOTICE, Out, Refusal};
use crate::args::{decode_cursor, encode_cursor};

/// Longest query, in characters.
pub(crate) const MAX_QUERY_CHARS: usize = 200;
/// Most words in a query (phrase words and prefixes count one each).
pub(crate) const MAX_TERMS: usize = 8;
/// Shortest prefix before `*`, in characters.
const MIN_PREFIX_CHARS: usize = 2;
/// Most index terms one prefix may stand for.
const MAX_EXPANSIONS: usize = 64;
/// Most candidates proved by one call (a page may come back short, with a cursor).
const PROVE_BUDGET: usize = 400;
/// Snippet context before and after the match, in bytes (cut at word ends).
const SNIPPET_BEFORE: usize = 60;
const SNIPPET_AFTER: usize = 120;

/// BM25 parameters.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// One part of a query.
#[derive(Debug, Clone, PartialEq)]
enum Clause {
    /// A word, matched by stem.
    Word(String),
    /// A folded prefix: any word starting with it.
    Prefix(String),
    /// Words in this order, next to each other (by stem).
    Phrase(Vec<String>),
}

impl Clause {
    fn matches(&self, field: &[Word]) -> Vec<(usize, usize)> {
        match self {
            Clause::Word(s) => field.iter().enumerate().filter(|(_, w)| &w.stem == s).map(|(i, _)| (i, i + 1)).collect(),
            Clause::Prefix(p) => field.iter().enumerate().filter(|(_, w)| w.folded.starts_with(p.as_str())).map(|(i, _)| (i, i + 1)).collect(),
            Clause::Phrase(ws) => (0..field.len().saturating_sub(ws.len() - 1))
                .filter(|&i| ws.iter().enumerate().all(|(k, s)| &field[i + k].stem == s))
                .map(|i| (i, i + ws.len()))
                .collect(),
        }
    }
}

/// A parsed query.
#[derive(Debug, Clone, PartialEq)]
struct Query {
    clauses: Vec<Clause>,
}

fn bad(message: impl Into<String>) -> Refusal {
    Refusal::invalid("query", message)
}

/// Parses a query, refusing what cannot be run with the reason.
fn parse(text: &str) -> Result<Query, Refusal> {
    let chars = text.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(Refusal::too_large("query", format!("query has {chars} characters; the limit is {MAX_QUERY_CHARS}")));
    }
    let stemmer = tokens::stemmer();
    let mut clauses = Vec::new();
    let parts: Vec<&str> = text.split('"').collect();
    if parts.len() % 2 == 0 {
        return Err(bad("a quoted phrase is not closed: add the closing \""));
    }
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 1 {
            let ws: Vec<String> = tokens::words(&stemmer, part).into_iter().map(|w| w.stem).collect();
            match ws.len() {
                0 => {}
                1 => clauses.push(Clause::Word(ws[0].clone())),
                _ => clauses.push(Clause::Phrase(ws)),
            }
            continue;
        }
        for chunk in part.split_whitespace() {
            let (body, prefix) = match chunk.strip_suffix('*') {
                Some(b) => (b, true),
                None => (chunk, false),
            };
            if body.contains('*') {
                return Err(bad(format!("\"{chunk}\": * may only end a word (prefix*)")));
            }
            let mut ws = tokens::words(&stemmer, body);
            let last = if prefix { ws.pop() } else { None };
            clauses.extend(ws.into_iter().map(|w| Clause::Word(w.stem)));
            if prefix {
                let Some(p) = last else { return Err(bad(format!("\"{chunk}\": a prefix needs letters before *"))) };
                if p.folded.chars().count() < MIN_PREFIX_CHARS {
                    return Err(bad(format!("\"{chunk}\": a prefix needs at least {MIN_PREFIX_CHARS} letters before *")));
                }
                clauses.push(Clause::Prefix(p.folded));
            }
        }
    }
    let terms: usize = clauses.iter().map(|c| if let Clause::Phrase(ws) = c { ws.len() } else { 1 }).sum();
    if terms == 0 {
        return Err(bad("query has no words to search for"));
    }
    if terms > MAX_TERMS {
        return Err(Refusal::too_large("query", format!("query has {terms} words; the limit is {MAX_TERMS}")));
    }
    Ok(Query { clauses })
}

/// A candidate tab: (note, tab).
type Cand = (String, String);

/// One clause's candidates, with their count classes, and its document frequency.
struct Proposed {
    tabs: BTreeMap<Cand, (u8, u8)>,
}

/// The posting keys of every indexed word starting with `prefix` (at most
/// [`MAX_EXPANSIONS`] words), as listed: grouped by word.
fn index_keys_with_prefix(kv: &TenantKv, prefix: &str) -> Out<Vec<String>> {
    // Index terms are stems: a prefix longer than its own stem ("launches*")
    // is looked up by the stem, and proved against the words themselves.
    let stem = tokens::stemmer().stem(prefix).into_owned();
    let from = if prefix.starts_with(&stem) { stem } else { prefix.to_string() };
    let mut terms = BTreeSet::new();
    let mut keys = Vec::new();
    let mut after: Option<String> = None;
    let listed = format!("{}{from}", postings::PREFIX);
    loop {
        let page = kv.list_prefix(&listed, after.as_deref(), 512)?;
        let Some(last) = page.last() else { break };
        // The next page starts after this one's last key (named relative to the prefix).
        let next = last[listed.len()..].to_string();
        let full = page.len() == 512;
        terms.extend(page.iter().filter_map(|k| postings::term_of(k)).map(str::to_string));
        keys.extend(page);
        if terms.len() > MAX_EXPANSIONS {
            return Err(Refusal::too_large(
                "query",
                format!("\"{prefix}*\" stands for more than {MAX_EXPANSIONS} indexed words: use a longer prefix"),
            )
            .into());
        }
        if !full {
            break;
        }
        after = Some(next);
    }
    Ok(keys)
}

fn propose(kv: &TenantKv, clause: &Clause) -> Out<Proposed> {
    let merge = |lists: Vec<Vec<Entry>>, all: bool| {
        let n = lists.len();
        let mut seen: BTreeMap<Cand, (usize, u8, u8)> = BTreeMap::new();
        for list in lists {
            let mut once = BTreeSet::new();
            for e in list {
                let c = (e.note, e.tab);
                if !once.insert(c.clone()) {
                    continue;
                }
                let slot = seen.entry(c).or_insert((0, if all { u8::MAX } else { 0 }, e.len));
                slot.0 += 1;
                slot.1 = if all { slot.1.min(e.tf) } else { slot.1.max(e.tf) };
                slot.2 = slot.2.max(e.len);
            }
        }
        seen.into_iter().filter(|(_, (k, _, _))| !all || *k == n).map(|(c, (_, tf, len))| (c, (tf, len))).collect()
    };
    let tabs = match clause {
        Clause::Word(s) => merge(postings::read_terms(kv, std::slice::from_ref(s))?, false),
        Clause::Phrase(ws) => merge(postings::read_terms(kv, ws)?, true),
        Clause::Prefix(p) => merge(postings::read_listed(kv, &index_keys_with_prefix(kv, p)?)?, false),
    };
    Ok(Proposed { tabs })
}

/// BM25 of one clause: inverse document frequency times the saturated count.
fn bm25(idf: f64, tf: f64, len: f64, avg_len: f64) -> f64 {
    idf * (tf * (K1 + 1.0)) / (tf + K1 * (1.0 - B + B * len / avg_len.max(1.0)))
}

fn idf(docs: f64, df: f64) -> f64 {
    (1.0 + (docs - df + 0.5) / (df + 0.5)).ln()
}

/// A proved hit.
struct Hit {
    score: f64,
    json: Value,
}

/// The tab's words per field, once per field.
fn field_words(fields: &[Field]) -> Vec<Vec<Word>> {
    let stemmer = tokens::stemmer();
    fields.iter().map(|f| tokens::words(&stemmer, &f.text)).collect()
}

/// Proves a candidate: every clause matches the committed content. Returns
/// each clause's count, the tab's length and the snippet (field, text).
fn prove(q: &Query, fields: &[Field]) -> Option<(Vec<f64>, f64, String, String)> {
    let words = field_words(fields);
    let len: usize = words.iter().map(Vec::len).sum();
    let mut counts = Vec::new();
    // Per field: how many clauses match in it, and its first match.
    let mut per_field: Vec<(usize, Option<(usize, usize)>)> = vec![(0, None); words.len()];
    for clause in &q.clauses {
        let mut n = 0;
        for (fi, ws) in words.iter().enumerate() {
            let m = clause.matches(ws);
            if let Some(first) = m.first() {
                per_field[fi].0 += 1;
                per_field[fi].1.get_or_insert(*first);
            }
            n += m.len();
        }
        if n == 0 {
            return None;
        }
        counts.push(n as f64);
    }
    // The snippet comes from the field that matches the most of the query (the first such).
    let best = per_field.iter().map(|(k, _)| *k).max()?;
    let fi = per_field.iter().position(|(k, _)| *k == best)?;
    let (a, b) = per_field[fi].1?;
    let (field, ws) = (&fields[fi], &words[fi]);
    Some((counts, len as f64, field.name.clone(), snippet(&field.text, ws[a].start, ws[b - 1].end)))
}

/// The text around `start..end`, cut at spaces, with `…` where it was cut.
fn snippet(text: &str, start: usize, end: usize) -> String {
    let mut from = start.saturating_sub(SNIPPET_BEFORE);
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    if from > 0 {
        from = text[from..start].find(char::is_whitespace).map_or(start, |i| from + i + 1);
    }
    let mut to = (end + SNIPPET_AFTER).min(text.len());
    while !text.is_char_boundary(to) {
        to += 1;
    }
    if to < text.len() {
        to = text[end..to].rfind(char::is_whitespace).map_or(to, |i| end + i);
    }
    let body: String = text[from..to].split_whitespace().collect::<Vec<_>>().join(" ");
    format!("{}{body}{}", if from > 0 { "…" } else { "" }, if to < text.len() { "…" } else { "" })
}

/// What `search_notes` and the REST search route are asked.
pub(crate) struct Ask<'a> {
    pub query: &'a str,
    pub tab_type: Option<TabKind>,
    pub limit: usize,
    pub cursor: Option<&'a str>,
}

/// Runs a query for `who`: `{query, hits, next_cursor, notice}`.
pub(crate) fn search(kv: &TenantKv, who: &Identity, ask: &Ask) -> Out<Value> {
    let q = parse(ask.query)?;
    let tag = format!("search-{}", &sha_hex(format!("{}\u{0}{:?}", ask.query, ask.tab_type.map(TabKind::as_str)).as_bytes())[..12]);
    let start = decode_cursor(&tag, ask.cursor)?;
    let proposed = q.clauses.iter().map(|c| propose(kv, c)).collect::<Result<Vec<_>, _>>()?;
    let notes = index_slice(kv, 0, 0)?.1.max(1) as f64;
    let avg_len = {
        let lens: Vec<f64> = proposed.iter().flat_map(|p| p.tabs.values().map(|(_, l)| postings::unclass(*l))).collect();
        if lens.is_empty() { 1.0 } else { lens.iter().sum::<f64>() / lens.len() as f64 }
    };
    let idfs: Vec<f64> = proposed.iter().map(|p| idf(notes.max(p.tabs.len() as f64), p.tabs.len() as f64)).collect();
    // Candidates in every clause, ranked by the postings.
    let (first, rest) = proposed.split_first().expect("a parsed query has a clause");
    let mut ranked: Vec<(f64, &Cand)> = first
        .tabs
        .iter()
        .filter(|(c, _)| rest.iter().all(|p| p.tabs.contains_key(*c)))
        .map(|(c, _)| {
            let score = proposed
                .iter()
                .zip(&idfs)
                .map(|(p, idf)| {
                    let (tf, len) = p.tabs[c];
                    bm25(*idf, postings::unclass(tf), postings::unclass(len), avg_len)
                })
                .sum();
            (score, c)
        })
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));

    let mut hits: Vec<Hit> = Vec::new();
    let mut pos = start;
    let budget_end = start + PROVE_BUDGET;
    while pos < ranked.len() && hits.len() < ask.limit && pos < budget_end {
        let batch: Vec<&Cand> = ranked[pos..ranked.len().min(pos + 32).min(budget_end)].iter().map(|(_, c)| *c).collect();
        let note_ids: Vec<String> = batch.iter().map(|c| c.0.clone()).collect::<BTreeSet<_>>().into_iter().collect();
        let heads = kv.get_many(&note_ids.iter().map(|n| keys::note(n)).collect::<Vec<_>>())?;
        let heads: BTreeMap<&str, Option<crate::model::Head>> = note_ids
            .iter()
            .zip(heads)
            .map(|(id, raw)| (id.as_str(), raw.and_then(|r| visible_head(&r, Reader::Caller(who)).ok())))
            .collect();
        for c in batch {
            pos += 1;
            let Some(head) = heads.get(c.0.as_str()).and_then(Option::as_ref) else { continue };
            let Some(tab) = head.tabs.iter().find(|t| t.id == c.1) else { continue };
            if ask.tab_type.is_some_and(|k| k != tab.kind) {
                continue;
            }
            let fs = fields(kv, &head.title, tab)?;
            let Some((counts, len, field, snip)) = prove(&q, &fs) else { continue };
            let score = counts.iter().zip(&idfs).map(|(tf, idf)| bm25(*idf, *tf, len, avg_len)).sum::<f64>();
            hits.push(Hit { score, json: hit_json(head, tab, &field, snip, score) });
            if hits.len() == ask.limit {
                break;
            }
        }
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    let next = if pos < ranked.len() { Value::from(encode_cursor(&tag, pos)) } else { Value::Null };
    Ok(json!({
        "query": ask.query,
        "hits": hits.into_iter().map(|h| h.json).collect::<Vec<_>>(),
        "next_cursor": next,
        "notice": NOTICE,
    }))
}

fn hit_json(head: &crate::model::Head, tab: &Tab, field: &str, snippet: String, score: f64) -> Value {
    json!({
        "note_id": head.note_id,
        "note_title": head.title,
        "tab_id": tab.id,
        "type": tab.kind.as_str(),
        "label": tab.label,
        "field": field,
        "snippet": snippet,
        "score": (score * 1000.0).round() / 1000.0,
        "version": head.version,
        "tab_version": tab.version,
        "provenance": tab_provenance(tab),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stem(w: &str) -> String {
        tokens::stemmer().stem(w).into_owned()
    }

    #[test]
    fn words_phrases_and_prefixes_parse_into_clauses() {
        let q = parse(r#"Launch "the Brief" plan*"#).unwrap();
        assert_eq!(q.clauses, vec![Clause::Word(stem("launch")), Clause::Phrase(vec![stem("the"), stem("brief")]), Clause::Prefix("plan".into())]);
    }

    #[test]
    fn bad_queries_are_refused_naming_the_query() {
        for (q, says) in [
            ("", "no words"),
            ("   \"\" ", "no words"),
            ("\"open phrase", "not closed"),
            ("a*", "at least 2"),
            ("*", "letters before"),
            ("in*side", "may only end"),
        ] {
            let r = parse(q).unwrap_err();
            assert_eq!(r.extra.get("field").and_then(|f| f.as_str()), Some("query"), "{q}");
            assert!(r.message.contains(says), "{q}: {}", r.message);
        }
        assert!(parse(&"word ".repeat(MAX_TERMS + 1)).unwrap_err().message.contains("limit"));
        assert!(parse(&"x".repeat(MAX_QUERY_CHARS + 1)).unwrap_err().message.contains("limit"));
    }

    #[test]
    fn a_snippet_is_cut_at_spaces_around_the_match() {
        let text = format!("{} the launch brief {}", "lead ".repeat(30), "tail ".repeat(40));
        let at = text.find("launch").unwrap();
        let s = snippet(&text, at, at + 6);
        assert!(s.starts_with('…') && s.ends_with('…') && s.contains("the launch brief"), "{s}");
        assert!(s.len() < SNIPPET_BEFORE + SNIPPET_AFTER + 20);
        assert_eq!(snippet("Café noir", 0, 5), "Café noir");
    }
}
