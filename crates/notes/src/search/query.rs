//! Queries: words (all must match), `"quoted phrases"` and `prefix*`, case-
//! and accent-insensitive, with words matched by stem.
//!
//! A query runs in four stages. **Catching up**: the notes still marked
//! dirty (their postings may lag their committed heads, see
//! [`crate::index`]) are merged first when there are many, and the rest are
//! proved directly against their committed heads. **Proposing**: each clause's postings (a prefix's
//! terms come from the dictionary) give candidate tabs of the clean notes;
//! those in every clause, and the dirty notes' tabs that match, are ranked
//! by BM25 from count classes. **Proving**: in that order, each candidate's
//! note head is read as the caller (tenant, agent visibility), its tab must
//! still be there (and of the asked type), and the query must match the
//! tab's committed content; only then is it a hit, scored again by BM25 on
//! the real counts and given a snippet. A page holds the next hits in the
//! proposed order (sorted by their real scores within the page); the cursor
//! is the position in that order, tied to the query.

use std::collections::{BTreeSet, HashMap, HashSet};

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Serialize;

use crate::args::{decode_cursor, encode_cursor};
use crate::env::{Env, Identity};
use crate::head::{Reader, visible_head};
use crate::index::doc::Doc;
use crate::index::merge;
use crate::index::postings::{self, EntryRef};
use crate::index::tokens::{Tokenizer, Word};
use crate::index::{Field, dict, fields};
use crate::keys;
use crate::kv::TenantKv;
use crate::model::{Head, Tab, TabKind, sha_hex};
use crate::note_index::index_slice;
use crate::refusal::{Out, Refusal};
use crate::results::{Notice, Provenance};

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
/// Candidates whose heads are read in one batch.
const PROVE_BATCH: usize = 16;
/// With more dirty notes than this, a query merges before it answers.
const INLINE_MERGE_AT: usize = 16;
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
    /// The clause as ids of `tok`, for matching texts it reads.
    fn matcher(&self, tok: &mut Tokenizer) -> Matcher {
        match self {
            Clause::Word(s) => Matcher::Word(tok.stem_id(s)),
            Clause::Prefix(p) => Matcher::Prefix(p.clone()),
            Clause::Phrase(ws) => Matcher::Phrase(ws.iter().map(|w| tok.stem_id(w)).collect()),
        }
    }
}

/// A clause as a tokenizer's ids.
enum Matcher {
    Word(u32),
    Prefix(String),
    Phrase(Vec<u32>),
}

impl Matcher {
    /// Where the clause matches in a field's words: word ranges.
    fn matches(&self, tok: &Tokenizer, field: &[Word]) -> Vec<(usize, usize)> {
        match self {
            Matcher::Word(s) => field.iter().enumerate().filter(|(_, w)| w.stem == *s).map(|(i, _)| (i, i + 1)).collect(),
            Matcher::Prefix(p) => field.iter().enumerate().filter(|(_, w)| tok.folded(w.folded).starts_with(p.as_str())).map(|(i, _)| (i, i + 1)).collect(),
            Matcher::Phrase(ws) => (0..field.len().saturating_sub(ws.len() - 1))
                .filter(|&i| ws.iter().enumerate().all(|(k, s)| field[i + k].stem == *s))
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
fn parse(tok: &mut Tokenizer, text: &str) -> Result<Query, Refusal> {
    let chars = text.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(Refusal::too_large("query", format!("query has {chars} characters; the limit is {MAX_QUERY_CHARS}")));
    }
    let mut clauses = Vec::new();
    let parts: Vec<&str> = text.split('"').collect();
    if parts.len().is_multiple_of(2) {
        return Err(bad("a quoted phrase is not closed: add the closing \""));
    }
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 1 {
            let found = tok.words(part);
            let ws: Vec<String> = found.iter().map(|w| tok.stem_text(w.stem).to_string()).collect();
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
            let mut ws = tok.words(body);
            let last = if prefix { ws.pop() } else { None };
            clauses.extend(ws.iter().map(|w| Clause::Word(tok.stem_text(w.stem).to_string())));
            if prefix {
                let Some(p) = last else { return Err(bad(format!("\"{chunk}\": a prefix needs letters before *"))) };
                let folded = tok.folded(p.folded).to_string();
                if folded.chars().count() < MIN_PREFIX_CHARS {
                    return Err(bad(format!("\"{chunk}\": a prefix needs at least {MIN_PREFIX_CHARS} letters before *")));
                }
                clauses.push(Clause::Prefix(folded));
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

/// The starts of the index terms a prefix stands for: the prefix, and its
/// own stem when that differs and is long enough. Index terms are stems: a
/// word starting with the prefix may have a stem that does not ("happy" is
/// "happi"); proving then checks the words themselves.
fn prefix_starts(tok: &mut Tokenizer, prefix: &str) -> Vec<String> {
    let stem = tok.stem(prefix);
    let mut out = vec![prefix.to_string()];
    if stem != prefix && stem.chars().count() >= MIN_PREFIX_CHARS {
        out.push(stem);
    }
    out
}

/// The indexed terms a prefix stands for, with `also` (the terms of the
/// dirty notes that start so): at most [`MAX_EXPANSIONS`].
fn expand(kv: &TenantKv, starts: &[String], prefix: &str, also: &BTreeSet<String>) -> Out<Vec<String>> {
    let mut terms: BTreeSet<String> = also.clone();
    for s in starts {
        terms.extend(dict::starting_with(kv, s)?);
    }
    if terms.len() > MAX_EXPANSIONS {
        return Err(Refusal::too_large("query", format!("\"{prefix}*\" stands for more than {MAX_EXPANSIONS} indexed words: use a longer prefix")).into());
    }
    Ok(terms.into_iter().collect())
}

/// A candidate tab: (note, tab).
type Cand<'a> = (&'a str, &'a str);
/// A clause's candidates with their (tf, len) count classes.
type Proposed<'a> = HashMap<Cand<'a>, (u8, u8)>;

/// One clause's candidates from its postings (`records`: per term, its
/// records), leaving out the notes in `skip`, and for an agent
/// (`agents_only`) every note not approved for agents.
fn propose<'a>(clause: &Clause, records: &'a [Vec<Vec<u8>>], skip: &HashSet<&str>, agents_only: bool) -> Out<Proposed<'a>> {
    let mut out: Proposed<'a> = HashMap::new();
    let phrase = matches!(clause, Clause::Phrase(_));
    for (i, term_records) in records.iter().enumerate() {
        let mut this: Proposed<'a> = HashMap::new();
        for raw in term_records {
            postings::each_ref(raw, |e: EntryRef<'a>| {
                if !skip.contains(e.note) && (e.agents || !agents_only) {
                    this.insert((e.note, e.tab), (e.tf, e.len));
                }
            })?;
        }
        if phrase && i > 0 {
            // Every word of a phrase: the fewest of them counts.
            out.retain(|c, v| match this.get(c) {
                Some((tf, len)) => {
                    *v = (v.0.min(*tf), v.1.max(*len));
                    true
                }
                None => false,
            });
        } else {
            for (c, (tf, len)) in this {
                let v = out.entry(c).or_insert((tf, len));
                *v = (v.0.max(tf), v.1.max(len));
            }
        }
    }
    Ok(out)
}

/// Whether a clean note's index record shows that its tab `tab_id` cannot
/// match: the tab is not there, or lacks a word or a phrase word, or never
/// has two phrase words next to each other. A note that is not dirty has
/// a record of a committed head at least as new as every change
/// acknowledged before the query listed the dirty notes (its marker is
/// deleted only once a merge has brought the record that far), so it never
/// rules out a match a caller could expect.
fn rules_out(doc: &Doc, tab_id: &str, clauses: &[Clause]) -> bool {
    let Some(t) = doc.tab(tab_id) else { return true };
    clauses.iter().any(|c| match c {
        Clause::Word(s) => t.has_term(s) == Some(false),
        Clause::Phrase(ws) => ws.iter().any(|w| t.has_term(w) == Some(false)) || ws.windows(2).any(|p| t.has_pair(&p[0], &p[1]) == Some(false)),
        Clause::Prefix(_) => false,
    })
}

/// BM25 of one clause: inverse document frequency times the saturated count.
fn bm25(idf: f64, tf: f64, len: f64, avg_len: f64) -> f64 {
    idf * (tf * (K1 + 1.0)) / (tf + K1 * (1.0 - B + B * len / avg_len.max(1.0)))
}

fn idf(docs: f64, df: f64) -> f64 {
    (1.0 + (docs - df + 0.5) / (df + 0.5)).ln()
}

/// What proving a tab found: each clause's count, the tab's length in words,
/// and the snippet (field, text).
struct Proof {
    counts: Vec<usize>,
    len: usize,
    field: String,
    snippet: String,
}

impl Proof {
    fn matches(&self) -> bool {
        self.counts.iter().all(|n| *n > 0)
    }
}

/// Matches the query (its clauses as `matchers`) against a tab's committed fields.
fn prove(tok: &mut Tokenizer, matchers: &[Matcher], fields: &[Field]) -> Proof {
    let words: Vec<Vec<Word>> = fields.iter().map(|f| tok.words(&f.text)).collect();
    let len: usize = words.iter().map(Vec::len).sum();
    let mut counts = Vec::with_capacity(matchers.len());
    // Per field: how many clauses match in it, and its first match.
    let mut per_field: Vec<(usize, Option<(usize, usize)>)> = vec![(0, None); words.len()];
    for m in matchers {
        let mut n = 0;
        for (fi, ws) in words.iter().enumerate() {
            let found = m.matches(tok, ws);
            if let Some(first) = found.first() {
                per_field[fi].0 += 1;
                per_field[fi].1.get_or_insert(*first);
            }
            n += found.len();
        }
        counts.push(n);
    }
    // The snippet comes from the field that matches the most of the query (the first such).
    let best = per_field.iter().map(|(k, _)| *k).max().unwrap_or(0);
    let at = per_field.iter().position(|(k, m)| *k == best && m.is_some());
    let (field, snippet) = match at.and_then(|fi| per_field[fi].1.map(|m| (fi, m))) {
        Some((fi, (a, b))) => (fields[fi].name.clone(), snippet(&fields[fi].text, words[fi][a].start, words[fi][b - 1].end)),
        None => (String::new(), String::new()),
    };
    Proof { counts, len, field, snippet }
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

// What `search_notes` (and so the REST search) answers.
/// A page of hits.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Found {
    /// The query as asked.
    query: String,
    /// The hits on this page, best first.
    hits: Vec<SearchHit>,
    /// Pass it back as cursor for more hits; null when there are no more.
    #[schemars(schema_with = "crate::results::shape::cursor_or_null")]
    next_cursor: Option<String>,
    notice: Notice,
}

/// A tab that matches the query.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SearchHit {
    /// The note's exact id.
    note_id: String,
    /// The note's title.
    note_title: String,
    /// The tab's exact id: read it next.
    tab_id: String,
    /// The tab's type.
    #[serde(rename = "type")]
    kind: TabKind,
    /// The tab's label.
    label: String,
    /// The field that matched: label, title, text, a slide's title, body or notes, a sheet's name or cell, a source's title or URL, a file's name.
    field: String,
    /// The matching words with some text around them (… where it was cut).
    snippet: String,
    /// How well the tab matches (higher is better).
    #[schemars(schema_with = "number")]
    score: f64,
    /// The note's version.
    version: u64,
    /// The tab's own version.
    tab_version: u64,
    /// Who wrote the tab, and when.
    provenance: Provenance,
}

/// A number.
fn number(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "number"})
}

/// A proved hit, with its unrounded score.
struct Hit {
    score: f64,
    found: SearchHit,
}

/// A ranked candidate: its estimated score, and for a dirty note's tab the
/// proof already made.
struct Ranked<'a> {
    score: f64,
    cand: Cand<'a>,
    proof: Option<&'a DirtyProof<'a>>,
}

/// The heads of `notes` the caller may see, by note id.
fn visible_heads(kv: &TenantKv, who: &Identity, notes: &[&str]) -> Out<HashMap<String, Head>> {
    let raw = kv.get_many(&notes.iter().map(|n| keys::note(n)).collect::<Vec<_>>())?;
    Ok(notes.iter().zip(raw).filter_map(|(id, raw)| raw.and_then(|r| visible_head(&r, Reader::Caller(who)).ok()).map(|h| (id.to_string(), h))).collect())
}

fn real_score(p: &Proof, idfs: &[f64], avg_len: f64) -> f64 {
    p.counts.iter().zip(idfs).map(|(tf, idf)| bm25(*idf, *tf as f64, p.len as f64, avg_len)).sum()
}

/// A tab of a dirty note proved now against its committed head: the head,
/// the tab's index, the proof.
type DirtyProof<'h> = (&'h Head, usize, Proof);

/// What a query is checked with: its clauses' matchers and, per clause,
/// the term starts a prefix stands for.
struct Checks<'q> {
    clauses: &'q [Clause],
    matchers: Vec<Matcher>,
    starts: Vec<Vec<String>>,
}

/// Runs a query for `who`: `{query, hits, next_cursor, notice}`.
///
/// 1. catch up the notes whose postings may lag their heads;
/// 2. prove the dirty ones now ([`prove_dirty`]);
/// 3. propose the clean ones from the postings and rank every candidate
///    ([`propose_all`], [`rank`]);
/// 4. prove the ranked candidates in that order ([`prove_ranked`]).
pub(crate) fn search(kv: &TenantKv, env: &mut dyn Env, who: &Identity, ask: &Ask) -> Out<Found> {
    let mut tok = Tokenizer::default();
    let q = parse(&mut tok, ask.query)?;
    let matchers: Vec<Matcher> = q.clauses.iter().map(|c| c.matcher(&mut tok)).collect();
    let starts = q.clauses.iter().map(|c| if let Clause::Prefix(p) = c { prefix_starts(&mut tok, p) } else { Vec::new() }).collect();
    let query = Checks { clauses: &q.clauses, matchers, starts };
    let tag = format!("search-{}", &sha_hex(format!("{}\u{0}{:?}", ask.query, ask.tab_type.map(TabKind::as_str)).as_bytes())[..12]);
    let start = decode_cursor(&tag, ask.cursor)?;

    let mut dirty = merge::dirty(kv)?;
    if dirty.len() > INLINE_MERGE_AT {
        merge::merge(kv, env, &mut tok, super::MERGE_BUDGET)?;
        dirty = merge::dirty(kv)?;
    }
    let dirty_ids: Vec<&str> = dirty.keys().map(String::as_str).collect();
    let dirty_heads = visible_heads(kv, who, &dirty_ids)?;
    let (dirty_terms, dirty_proofs) = prove_dirty(kv, &mut tok, &query, &dirty_heads, &dirty_ids, ask.tab_type)?;

    let records = propose_all(kv, &query, &dirty_terms)?;
    let agents_only = who.actor_type == crate::env::ActorType::Agent;
    let skip: HashSet<&str> = dirty_ids.iter().copied().collect();
    let proposed: Vec<Proposed> = q.clauses.iter().zip(&records).map(|(c, r)| propose(c, r, &skip, agents_only)).collect::<Out<_>>()?;
    let stats = Stats::of(kv, &proposed, &dirty_proofs, agents_only)?;
    let ranked = rank(&proposed, &dirty_proofs, &stats);

    let (hits, pos) = prove_ranked(kv, who, &mut tok, &query, ask, &ranked, &stats, start)?;
    let next_cursor = (pos < ranked.len()).then(|| encode_cursor(&tag, pos));
    Ok(Found { query: ask.query.to_string(), hits: hits.into_iter().map(|h| h.found).collect(), next_cursor, notice: Notice })
}

/// Step 2: the dirty notes' tabs, proved against their committed heads,
/// and per clause the terms of theirs that a prefix stands for (they count
/// toward its limit).
fn prove_dirty<'h>(
    kv: &TenantKv,
    tok: &mut Tokenizer,
    q: &Checks,
    heads: &'h HashMap<String, Head>,
    ids: &[&str],
    tab_type: Option<TabKind>,
) -> Out<(Vec<BTreeSet<String>>, Vec<DirtyProof<'h>>)> {
    let mut terms: Vec<BTreeSet<String>> = vec![BTreeSet::new(); q.clauses.len()];
    let mut proofs = Vec::new();
    for id in ids {
        let Some(head) = heads.get(*id) else { continue };
        for (i, tab) in head.tabs.iter().enumerate() {
            if tab_type.is_some_and(|k| k != tab.kind) {
                continue;
            }
            let fs = fields(kv, &head.title, tab)?;
            for (c, st) in q.starts.iter().enumerate().filter(|(_, st)| !st.is_empty()) {
                for f in &fs {
                    tok.each(&f.text, |_, stem, _, _| {
                        if st.iter().any(|s| stem.starts_with(s.as_str())) && !terms[c].contains(stem) {
                            terms[c].insert(stem.to_string());
                        }
                    });
                }
            }
            let proof = prove(tok, &q.matchers, &fs);
            if proof.counts.iter().any(|n| *n > 0) {
                proofs.push((head, i, proof));
            }
        }
    }
    Ok((terms, proofs))
}

/// Step 3: per clause, per term, the term's postings records (one read for
/// every clause's terms).
fn propose_all(kv: &TenantKv, q: &Checks, dirty_terms: &[BTreeSet<String>]) -> Out<Vec<Vec<Vec<Vec<u8>>>>> {
    let mut terms_of: Vec<Vec<String>> = Vec::with_capacity(q.clauses.len());
    for (c, clause) in q.clauses.iter().enumerate() {
        terms_of.push(match clause {
            Clause::Word(s) => vec![s.clone()],
            Clause::Phrase(ws) => ws.clone(),
            Clause::Prefix(p) => expand(kv, &q.starts[c], p, &dirty_terms[c])?,
        });
    }
    let flat: Vec<String> = terms_of.iter().flatten().cloned().collect();
    let mut all_records = postings::read_records(kv, &flat)?.into_iter();
    Ok(terms_of.iter().map(|ts| all_records.by_ref().take(ts.len()).collect()).collect())
}

/// What BM25 ranks with: each clause's idf and the average length.
struct Stats {
    idfs: Vec<f64>,
    avg_len: f64,
}

impl Stats {
    /// Document frequencies per clause over the notes the caller may see.
    /// An agent's candidates, counts and ranking come only from notes it may
    /// see (the postings say which), so a hidden note never takes a place in
    /// the ranking and no statistic counts one: its note count is the notes
    /// any clause proposed or proved, a lower bound of what it may see.
    fn of(kv: &TenantKv, proposed: &[Proposed], dirty: &[DirtyProof], agents_only: bool) -> Out<Stats> {
        let notes = if agents_only {
            let mut seen: HashSet<&str> = proposed.iter().flat_map(|p| p.keys().map(|c| c.0)).collect();
            seen.extend(dirty.iter().map(|(h, _, _)| h.note_id.as_str()));
            seen.len().max(1) as f64
        } else {
            index_slice(kv, 0, 0)?.1.max(1) as f64
        };
        let dfs = (0..proposed.len()).map(|c| (proposed[c].len() + dirty.iter().filter(|(_, _, p)| p.counts[c] > 0).count()) as f64);
        let idfs = dfs.map(|df| idf(notes.max(df), df)).collect();
        let (mut sum, mut n) = (0.0, 0usize);
        for p in proposed {
            for (_, l) in p.values() {
                sum += postings::unclass(*l);
                n += 1;
            }
        }
        // Lengths in the postings' classes for dirty notes too, so a score
        // does not depend on whether a merge has run yet.
        for (_, _, p) in dirty {
            sum += postings::unclass(postings::class(p.len as u64));
            n += 1;
        }
        Ok(Stats { idfs, avg_len: if n == 0 { 1.0 } else { sum / n as f64 } })
    }
}

/// Every candidate every clause proposed, and every dirty tab that matches,
/// best first by BM25 from count classes (ties by note and tab id).
fn rank<'a>(proposed: &'a [Proposed<'a>], dirty: &'a [DirtyProof<'a>], stats: &Stats) -> Vec<Ranked<'a>> {
    let smallest = (0..proposed.len()).min_by_key(|i| proposed[*i].len()).unwrap_or(0);
    let mut ranked: Vec<Ranked> = proposed[smallest]
        .keys()
        .filter(|c| proposed.iter().all(|p| p.contains_key(*c)))
        .map(|c| {
            let score = proposed
                .iter()
                .zip(&stats.idfs)
                .map(|(p, idf)| {
                    let (tf, len) = p[c];
                    bm25(*idf, postings::unclass(tf), postings::unclass(len), stats.avg_len)
                })
                .sum();
            Ranked { score, cand: *c, proof: None }
        })
        .collect();
    for d in dirty {
        let (head, i, proof) = d;
        if !proof.matches() {
            continue;
        }
        let len = postings::unclass(postings::class(proof.len as u64));
        let score = proof.counts.iter().zip(&stats.idfs).map(|(n, idf)| bm25(*idf, postings::unclass(postings::class(*n as u64)), len, stats.avg_len)).sum();
        ranked.push(Ranked { score, cand: (head.note_id.as_str(), head.tabs[*i].id.as_str()), proof: Some(d) });
    }
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.cand.cmp(&b.cand)));
    ranked
}

/// Step 4: proves the ranked candidates from `start`, in order and in
/// batches, until `ask.limit` hits or [`PROVE_BUDGET`] candidates; the hits
/// (best first) and the position after the last candidate looked at.
#[allow(clippy::too_many_arguments)]
fn prove_ranked(
    kv: &TenantKv,
    who: &Identity,
    tok: &mut Tokenizer,
    q: &Checks,
    ask: &Ask,
    ranked: &[Ranked],
    stats: &Stats,
    start: usize,
) -> Out<(Vec<Hit>, usize)> {
    let mut hits: Vec<Hit> = Vec::new();
    let mut pos = start;
    let budget_end = start + PROVE_BUDGET;
    while pos < ranked.len() && hits.len() < ask.limit && pos < budget_end {
        let batch = &ranked[pos..ranked.len().min(pos + PROVE_BATCH).min(budget_end)];
        let out = ruled_out(kv, q, batch)?;
        let need: Vec<&str> =
            batch.iter().filter(|r| r.proof.is_none() && !out.contains(&r.cand)).map(|r| r.cand.0).collect::<BTreeSet<_>>().into_iter().collect();
        let heads = visible_heads(kv, who, &need)?;
        for r in batch {
            pos += 1;
            let hit = match r.proof {
                Some((head, i, proof)) => {
                    let score = real_score(proof, &stats.idfs, stats.avg_len);
                    Some(Hit { score, found: hit(head, &head.tabs[*i], proof, score) })
                }
                None if out.contains(&r.cand) => None,
                None => prove_one(kv, tok, q, ask.tab_type, &heads, r.cand, stats)?,
            };
            if let Some(h) = hit {
                hits.push(h);
                if hits.len() == ask.limit {
                    break;
                }
            }
        }
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    Ok((hits, pos))
}

/// A phrase's candidates (its words anywhere in a tab) mostly fail: their
/// notes' index records rule most of them out unread.
fn ruled_out<'a>(kv: &TenantKv, q: &Checks, batch: &[Ranked<'a>]) -> Out<HashSet<Cand<'a>>> {
    let mut out: HashSet<Cand> = HashSet::new();
    if !q.clauses.iter().any(|c| matches!(c, Clause::Phrase(_))) {
        return Ok(out);
    }
    let notes: Vec<&str> = batch.iter().filter(|r| r.proof.is_none()).map(|r| r.cand.0).collect::<BTreeSet<_>>().into_iter().collect();
    let raw = kv.get_many(&notes.iter().map(|n| keys::search_doc(n)).collect::<Vec<_>>())?;
    let docs: HashMap<&str, Doc> = notes.iter().zip(raw).filter_map(|(n, raw)| Some((*n, Doc::decode(&raw?).ok()?))).collect();
    out.extend(batch.iter().filter(|r| r.proof.is_none() && docs.get(r.cand.0).is_some_and(|d| rules_out(d, r.cand.1, q.clauses))).map(|r| r.cand));
    Ok(out)
}

/// One clean candidate proved against its head, if the caller may see it.
fn prove_one(
    kv: &TenantKv,
    tok: &mut Tokenizer,
    q: &Checks,
    tab_type: Option<TabKind>,
    heads: &HashMap<String, Head>,
    cand: Cand,
    stats: &Stats,
) -> Out<Option<Hit>> {
    let Some(head) = heads.get(cand.0) else { return Ok(None) };
    let Some(tab) = head.tabs.iter().find(|t| t.id == cand.1) else { return Ok(None) };
    if tab_type.is_some_and(|k| k != tab.kind) {
        return Ok(None);
    }
    let proof = prove(tok, &q.matchers, &fields(kv, &head.title, tab)?);
    Ok(proof.matches().then(|| {
        let score = real_score(&proof, &stats.idfs, stats.avg_len);
        Hit { score, found: hit(head, tab, &proof, score) }
    }))
}

fn hit(head: &Head, tab: &Tab, proof: &Proof, score: f64) -> SearchHit {
    SearchHit {
        note_id: head.note_id.clone(),
        note_title: head.title.clone(),
        tab_id: tab.id.clone(),
        kind: tab.kind,
        label: tab.label.clone(),
        field: proof.field.clone(),
        snippet: proof.snippet.clone(),
        score: (score * 1000.0).round() / 1000.0,
        version: head.version,
        tab_version: tab.version,
        provenance: Provenance::of(tab),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stem(w: &str) -> String {
        Tokenizer::default().stem(w)
    }

    #[test]
    fn words_phrases_and_prefixes_parse_into_clauses() {
        let q = parse(&mut Tokenizer::default(), r#"Launch "the Brief" plan*"#).unwrap();
        assert_eq!(q.clauses, vec![Clause::Word(stem("launch")), Clause::Phrase(vec![stem("the"), stem("brief")]), Clause::Prefix("plan".into())]);
    }

    #[test]
    fn bad_queries_are_refused_naming_the_query() {
        let mut tok = Tokenizer::default();
        for (q, says) in [
            ("", "no words"),
            ("   \"\" ", "no words"),
            ("\"open phrase", "not closed"),
            ("a*", "at least 2"),
            ("*", "letters before"),
            ("in*side", "may only end"),
        ] {
            let r = parse(&mut tok, q).unwrap_err();
            assert_eq!(r.extra.get("field").and_then(|f| f.as_str()), Some("query"), "{q}");
            assert!(r.message.contains(says), "{q}: {}", r.message);
        }
        assert!(parse(&mut tok, &"word ".repeat(MAX_TERMS + 1)).unwrap_err().message.contains("limit"));
        assert!(parse(&mut tok, &"x".repeat(MAX_QUERY_CHARS + 1)).unwrap_err().message.contains("limit"));
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
