//! search_notes finds what notes say, in every field, ranked, with snippets,
//! a page at a time; bad queries are refused naming the query.
use crate::common::*;
use serde_json::{Value, json};

fn search(w: &mut World, who: &cairn_notes::Identity, args: Value) -> Value {
    w.ok(who, "search_notes", args)
}

/// (note_id, tab_id) of every hit.
fn hits(r: &Value) -> Vec<(String, String)> {
    r["hits"].as_array().unwrap().iter().map(|h| (h["note_id"].as_str().unwrap().into(), h["tab_id"].as_str().unwrap().into())).collect()
}

/// The note of every hit of every page of `args` (at most 100 pages), in page order.
fn every_page(w: &mut World, who: &cairn_notes::Identity, args: Value) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    for _ in 0..100 {
        let mut a = args.clone();
        if !cursor.is_null() {
            a["cursor"] = cursor.clone();
        }
        let r = search(w, who, a);
        assert!(r["hits"].as_array().unwrap().len() <= args["limit"].as_u64().unwrap_or(10) as usize);
        seen.extend(hits(&r).into_iter().map(|(n, _)| n));
        cursor = r["next_cursor"].clone();
        if cursor.is_null() {
            return seen;
        }
    }
    panic!("more than 100 pages");
}

fn q(w: &mut World, who: &cairn_notes::Identity, query: &str) -> Vec<(String, String)> {
    hits(&search(w, who, json!({"query": query})))
}

#[test]
fn a_word_in_the_markdown_text_finds_its_tab_with_a_snippet_version_and_provenance() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Quarterly plan", true);
    w.write_text(&ada, &note, "We ship the launch brief on Friday.\nEverything else waits.", "k1");
    let r = search(&mut w, &ada, json!({"query": "brief"}));
    let h = &r["hits"][0];
    assert_eq!(hits(&r), vec![(note.clone(), "markdown".to_string())]);
    assert_eq!(h["field"], "text");
    assert!(h["snippet"].as_str().unwrap().contains("launch brief"), "{h}");
    assert_eq!(h["version"], w.version(&ada, &note));
    assert!(h["provenance"]["updated_by"].as_str().unwrap().contains("human"), "{h}");
    assert_eq!(r["notice"], cairn_notes::NOTICE);
}

#[test]
fn case_accents_and_word_endings_do_not_matter() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Menu", true);
    w.write_text(&ada, &note, "The Café launches crème brûlée", "k1");
    for query in ["cafe", "CAFÉ", "launch", "launching", "creme brulee", "Crème"] {
        assert_eq!(q(&mut w, &ada, query).len(), 1, "{query}");
    }
}

#[test]
fn all_words_must_match_and_a_phrase_must_match_in_order() {
    let mut w = World::new();
    let ada = human("acme");
    let a = w.note(&ada, "A", true);
    w.write_text(&ada, &a, "red apples and green pears", "k1");
    let b = w.note(&ada, "B", true);
    w.write_text(&ada, &b, "green apples and red pears", "k1");
    assert_eq!(q(&mut w, &ada, "apples pears").len(), 2);
    assert_eq!(q(&mut w, &ada, "apples plums").len(), 0, "every word must match");
    assert_eq!(q(&mut w, &ada, "\"red apples\""), vec![(a.clone(), "markdown".into())]);
    assert_eq!(q(&mut w, &ada, "\"green apples\""), vec![(b.clone(), "markdown".into())]);
    assert_eq!(q(&mut w, &ada, "\"apples red\"").len(), 0, "order counts in a phrase");
}

#[test]
fn a_prefix_matches_every_word_that_starts_with_it() {
    let mut w = World::new();
    let ada = human("acme");
    let a = w.note(&ada, "A", true);
    w.write_text(&ada, &a, "roadmap for the quarter", "k1");
    let b = w.note(&ada, "B", true);
    w.write_text(&ada, &b, "the road ahead", "k1");
    assert_eq!(q(&mut w, &ada, "road*").len(), 2);
    assert_eq!(q(&mut w, &ada, "roadm*"), vec![(a, "markdown".into())]);
    assert_eq!(q(&mut w, &ada, "roadmaps*").len(), 0, "a prefix longer than every word");
}

#[test]
fn titles_labels_slides_sheet_cells_and_sources_are_all_searched() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Zephyr programme", true);
    let v = w.version(&ada, &note);
    let deck = w.ok(
        &ada,
        "create_note_tab",
        json!({"note_id": note, "expected_version": v, "idempotency_key": "deck",
        "tab_type": "slides", "label": "Pitch", "slides": [{"title": "Mistral opening", "body": "why now", "notes": "say tramontane"}]}),
    )["tab_id"]
        .as_str()
        .unwrap()
        .to_string();
    let sheet = w.create_tab(&ada, &note, "sheet", "Budget sirocco");
    let v = w.version(&ada, &note);
    w.ok(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": sheet, "expected_version": v, "idempotency_key": "cells",
        "operation": "sheet_set_range", "sheet_id": "s1", "start_row": 1, "start_col": 2, "values": [["harmattan", 42]]}),
    );
    let v = w.version(&ada, &note);
    w.ok(
        &ada,
        "add_note_source",
        json!({"note_id": note, "expected_version": v, "idempotency_key": "src",
        "title": "Chinook report", "url": "https://winds.example.org/foehn"}),
    );
    let find = |w: &mut World, query: &str| {
        let r = search(w, &ada, json!({"query": query}));
        assert_eq!(r["hits"].as_array().unwrap().len(), 1, "{query}: {r}");
        (r["hits"][0]["tab_id"].as_str().unwrap().to_string(), r["hits"][0]["field"].as_str().unwrap().to_string())
    };
    assert_eq!(find(&mut w, "zephyr"), ("markdown".into(), "title".into()));
    assert_eq!(find(&mut w, "pitch"), (deck.clone(), "label".into()));
    assert_eq!(find(&mut w, "mistral"), (deck.clone(), "slide 1 title".into()));
    assert_eq!(find(&mut w, "tramontane"), (deck, "slide 1 notes".into()));
    assert_eq!(find(&mut w, "sirocco"), (sheet.clone(), "label".into()));
    assert_eq!(find(&mut w, "harmattan"), (sheet.clone(), "Sheet 1 cell C2".into()));
    assert_eq!(find(&mut w, "42"), (sheet, "Sheet 1 cell D2".into()));
    assert_eq!(find(&mut w, "chinook"), ("sources".into(), "source title".into()));
    assert_eq!(find(&mut w, "foehn"), ("sources".into(), "source url".into()));
}

#[test]
fn tab_type_keeps_only_tabs_of_that_type() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Comet", true);
    w.write_text(&ada, &note, "comet notes", "k1");
    w.create_tab(&ada, &note, "sheet", "Comet data");
    assert_eq!(q(&mut w, &ada, "comet").len(), 2);
    let r = search(&mut w, &ada, json!({"query": "comet", "tab_type": "sheet"}));
    assert_eq!(r["hits"].as_array().unwrap().len(), 1);
    assert_eq!(r["hits"][0]["type"], "sheet");
}

#[test]
fn the_tab_that_says_it_most_ranks_first() {
    let mut w = World::new();
    let ada = human("acme");
    let once = w.note(&ada, "Once", true);
    w.write_text(&ada, &once, &format!("nebula {}", "filler words here ".repeat(20)), "k1");
    let often = w.note(&ada, "Often", true);
    w.write_text(&ada, &often, "nebula nebula nebula nebula and more about the nebula", "k1");
    let r = q(&mut w, &ada, "nebula");
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].0, often, "more mentions in a shorter tab rank first");
}

#[test]
fn pages_follow_each_other_with_no_hit_twice_and_none_skipped() {
    let mut w = World::new();
    let ada = human("acme");
    let mut notes = Vec::new();
    for i in 0..23 {
        let n = w.note(&ada, &format!("Note {i}"), true);
        w.write_text(&ada, &n, &format!("orbit {}", "x ".repeat(i)), "k1");
        notes.push(n);
    }
    let seen = every_page(&mut w, &ada, json!({"query": "orbit", "limit": 5}));
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), seen.len(), "no hit twice");
    notes.sort();
    assert_eq!(sorted, notes, "every note once");
}

#[test]
fn a_cursor_from_another_query_is_refused() {
    let mut w = World::new();
    let ada = human("acme");
    for i in 0..3 {
        let n = w.note(&ada, &format!("Star {i}"), true);
        w.write_text(&ada, &n, "star", "k1");
    }
    let r = search(&mut w, &ada, json!({"query": "star", "limit": 1}));
    let cursor = r["next_cursor"].as_str().unwrap().to_string();
    let bad = w.refused(&ada, "search_notes", json!({"query": "planet", "cursor": cursor}));
    assert_eq!(bad["error"], "invalid_argument");
    assert_eq!(bad["field"], "cursor");
}

#[test]
fn bad_queries_are_refused_naming_the_query_and_why() {
    let mut w = World::new();
    let ada = human("acme");
    for (query, code, says) in [
        ("", "invalid_argument", "no words"),
        ("\"unclosed", "invalid_argument", "not closed"),
        ("x*", "invalid_argument", "at least 2"),
        ("one two three four five six seven eight nine", "too_large", "limit"),
    ] {
        let r = w.refused(&ada, "search_notes", json!({"query": query}));
        assert_eq!(r["error"], code, "{query}");
        assert_eq!(r["field"], "query", "{query}");
        assert!(r["message"].as_str().unwrap().contains(says), "{query}: {r}");
    }
    let r = w.refused(&ada, "search_notes", json!({"query": "x".repeat(201)}));
    assert_eq!(r["field"], "query");
    let r = w.refused(&ada, "search_notes", json!({"query": "ok", "limit": 21}));
    assert_eq!(r["field"], "limit");
    let r = w.refused(&ada, "search_notes", json!({"query": "ok", "tab_type": "poem"}));
    assert_eq!(r["error"], "invalid_argument");
}

#[test]
fn a_prefix_that_stands_for_too_many_words_is_refused_with_what_to_do() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Words", true);
    let text: Vec<String> = (0..80).map(|i| format!("qa{i:03}")).collect();
    w.write_text(&ada, &note, &text.join(" "), "k1");
    let r = w.refused(&ada, "search_notes", json!({"query": "qa*"}));
    assert_eq!(r["error"], "too_large");
    assert!(r["message"].as_str().unwrap().contains("longer prefix"), "{r}");
    assert_eq!(q(&mut w, &ada, "qa07*").len(), 1);
}

#[test]
fn a_prefix_spread_over_many_index_records_finds_every_note_once() {
    let mut w = World::new();
    let ada = human("acme");
    let mut notes = Vec::new();
    // Each note holds one of 40 words with the prefix: 24 notes a word, in
    // up to 32 records each, far more keys than one listing page holds.
    for i in 0..960 {
        let n = w.note(&ada, &format!("Many {i}"), true);
        w.write_text(&ada, &n, &format!("pfx{:03} common", i % 40), "k1");
        notes.push(n);
    }
    // The host's background merge (a query this dirty would start it too).
    cairn_notes::search::merge(&w.kv, &mut w.env, "acme", usize::MAX).unwrap();
    let records = w.kv.dump().into_iter().filter(|(k, _)| k.contains("/srch/t/pfx")).count();
    assert!(records > 600, "{records}");
    let mut seen = every_page(&mut w, &ada, json!({"query": "pfx*", "limit": 20}));
    seen.sort();
    notes.sort();
    assert_eq!(seen.len(), notes.len(), "every note once");
    assert_eq!(seen, notes);
    let report = cairn_notes::search::check(&w.kv, "acme").unwrap();
    assert_eq!((report.notes, report.missing, report.stale), (960, 0, 0), "{report:?}");
}
