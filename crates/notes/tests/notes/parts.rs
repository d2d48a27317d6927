//! Big notes in parts: windows of lines, sections from the outline, and
//! what changed since a version, each read without the whole tab.
use crate::common::*;
use serde_json::{Value, json};

fn big_note(w: &mut World, who: &cairn_notes::Identity) -> (String, String) {
    let note = w.note(who, "Report", true);
    let mut text = String::from("Preamble line\n");
    for s in ["Intro", "Method", "Results"] {
        text.push_str(&format!("# {s}\n"));
        for i in 0..50 {
            text.push_str(&format!("{s} line {i}\n"));
        }
    }
    let r = w.write_text(who, &note, &text, "big-1");
    assert_eq!(r["isError"], false, "{r}");
    (note, text)
}

fn read(w: &mut World, who: &cairn_notes::Identity, note: &str, extra: Value) -> Value {
    let mut args = json!({"note_id": note, "tab_id": "markdown"});
    args.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    w.ok(who, "read_note_tab", args)
}

#[test]
fn windows_read_every_line_once_and_say_where_the_next_starts() {
    let mut w = World::new();
    let ada = human("acme");
    let (note, text) = big_note(&mut w, &ada);
    let mut got = String::new();
    let mut at = 1;
    let mut reads = 0;
    loop {
        let r = read(&mut w, &ada, &note, json!({"start_line": at, "max_lines": 40}));
        assert_eq!(r["total_lines"], 154);
        assert_eq!(r["start_line"], at);
        got.push_str(r["text"].as_str().unwrap());
        reads += 1;
        match r["next"].as_u64() {
            Some(n) => at = n,
            None => break,
        }
    }
    assert_eq!((got, reads), (text, 4));
}

#[test]
fn a_window_beyond_the_end_is_empty_with_total_lines() {
    let mut w = World::new();
    let ada = human("acme");
    let (note, _) = big_note(&mut w, &ada);
    let r = read(&mut w, &ada, &note, json!({"start_line": 1000}));
    assert_eq!((r["text"].as_str(), r["total_lines"].as_u64(), r.get("next")), (Some(""), Some(154), None));
    assert_eq!(r["truncated"], false);
}

#[test]
fn a_capped_read_always_says_truncated() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Long", true);
    let line = "x".repeat(999);
    let text: String = (0..60).map(|_| format!("{line}\n")).collect();
    w.write_text(&ada, &note, &text, "long-1");
    let r = read(&mut w, &ada, &note, json!({"start_line": 1}));
    assert_eq!(r["truncated"], true);
    assert_eq!(r["end_line"], 24, "24 lines of 1,000 characters fill the 24,000 cap");
    assert_eq!(r["next"], 25);
    assert!(r["text"].as_str().unwrap().chars().count() <= cairn_notes::env::DEFAULT_READ_MAX_CHARS);
    // A read of the whole tab is capped the same way, and says so.
    let whole = read(&mut w, &ada, &note, json!({}));
    assert_eq!((whole["truncated"].as_bool(), whole["next"].as_u64(), whole["total_lines"].as_u64()), (Some(true), Some(25), Some(60)));
    assert!(whole["next_step"].as_str().unwrap().contains("replace_text"), "the cut read warns against writing it back whole");
    // max_chars lifts the cap for a caller that wants the whole tab.
    let all = read(&mut w, &ada, &note, json!({"max_chars": 1_000_000}));
    assert_eq!((all["text"].as_str(), all["truncated"].as_bool()), (Some(text.as_str()), Some(false)));
    // A deployment's variable sets the default cap.
    w.env.read_max_chars = 5_000;
    assert_eq!(read(&mut w, &ada, &note, json!({}))["end_line"], 5);
}

#[test]
fn a_read_that_fits_says_it_is_whole() {
    let mut w = World::new();
    let ada = human("acme");
    let (note, text) = big_note(&mut w, &ada);
    let r = read(&mut w, &ada, &note, json!({}));
    assert_eq!((r["text"].as_str(), r["truncated"].as_bool(), r["total_lines"].as_u64()), (Some(text.as_str()), Some(false), Some(154)));
    assert!(r.get("next").is_none());
}

#[test]
fn people_read_whole_tabs_unless_they_ask_for_a_cap() {
    use cairn_notes::rest::{self, Incoming, Query};
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Long", true);
    let text: String = (0..60).map(|i| format!("{i:04} {}\n", "y".repeat(995))).collect();
    w.write_text(&ada, &note, &text, "long-1");
    let path = format!("/api/v1/notes/{note}/tabs/markdown");
    let mut get = |query: &[(&str, &str)]| {
        let (route, params) = rest::route("GET", &path).unwrap();
        let query: Query = query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        route.serve(&w.kv, &mut w.env, &ada, Incoming { params, query: &query, body: b"", idempotency_key: None }).unwrap()
    };
    let whole = get(&[]);
    assert_eq!((whole.body["text"].as_str(), whole.body["truncated"].as_bool()), (Some(text.as_str()), Some(false)));
    let capped = get(&[("max_chars", "3000")]);
    assert_eq!((capped.body["truncated"].as_bool(), capped.body["next"].as_u64()), (Some(true), Some(3)));
}

#[test]
fn slides_read_by_index_range_and_a_cut_says_where_the_rest_starts() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Deck", true);
    let deck = w.create_tab(&ada, &note, "slides", "Deck");
    for i in 0..6 {
        let v = w.version(&ada, &note);
        w.ok(
            &ada,
            "edit_note_tab",
            json!({"note_id": note, "tab_id": deck, "expected_version": v, "idempotency_key": format!("s{i}"),
            "operation": "slide_add", "title": format!("Slide {i}"), "body": "b".repeat(2_000), "notes": ""}),
        );
    }
    let r = w.ok(&ada, "read_note_tab", json!({"note_id": note, "tab_id": deck, "start_index": 2, "max_slides": 3}));
    let idx: Vec<u64> = r["slides"].as_array().unwrap().iter().map(|s| s["index"].as_u64().unwrap()).collect();
    assert_eq!((idx, r["total_slides"].as_u64(), r["next"].as_u64(), r["truncated"].as_bool()), (vec![2, 3, 4], Some(6), Some(5), Some(false)));
    let capped = w.ok(&ada, "read_note_tab", json!({"note_id": note, "tab_id": deck, "max_chars": 5_000}));
    assert_eq!((capped["slides"].as_array().unwrap().len(), capped["truncated"].as_bool(), capped["next"].as_u64()), (2, Some(true), Some(2)));
    let past = w.ok(&ada, "read_note_tab", json!({"note_id": note, "tab_id": deck, "start_index": 9}));
    assert_eq!((past["slides"].as_array().unwrap().len(), past["total_slides"].as_u64(), past.get("next")), (0, Some(6), None));
    let bad = w.refused(&ada, "read_note_tab", json!({"note_id": note, "tab_id": deck, "max_slides": 0}));
    assert_eq!(bad["field"], "max_slides");
    let wrong = w.refused(&ada, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "start_index": 0}));
    assert_eq!(wrong["field"], "tab_id");
}

#[test]
fn hunks_past_the_cap_say_truncated_and_where_to_read_instead() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Growing", true);
    let old: String = (0..80).map(|i| format!("keep {i}\n")).collect();
    w.write_text(&ada, &note, &old, "g-0");
    let since = w.version(&ada, &note);
    let text: String = (0..80).map(|i| format!("keep {i}\n{i:03} {}\n", "z".repeat(500))).collect();
    w.write_text(&ada, &note, &text, "g-1");
    let r = read(&mut w, &ada, &note, json!({"since_version": since, "max_chars": 2_000}));
    assert_eq!(r["truncated"], true, "{r}");
    let shown: usize = r["hunks"].as_array().unwrap().iter().map(|h| h["text"].as_str().unwrap().chars().count()).sum();
    assert!(shown <= 2_000 && r["next"].as_u64().unwrap() > 1);
}

#[test]
fn the_outline_names_sections_and_a_section_reads_alone() {
    let mut w = World::new();
    let ada = agent("acme");
    let person = human("acme");
    let (note, _) = big_note(&mut w, &person);
    let o = w.ok(&ada, "read_note_outline", json!({"note_id": note}));
    let ids: Vec<&str> = o["sections"].as_array().unwrap().iter().map(|s| s["section_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["intro", "method", "results"]);
    let method = &o["sections"][1];
    assert_eq!((method["start_line"].as_u64(), method["end_line"].as_u64(), method["level"].as_u64()), (Some(53), Some(103), Some(1)));
    let r = read(&mut w, &ada, &note, json!({"section_id": "method"}));
    assert!(r["text"].as_str().unwrap().starts_with("# Method\nMethod line 0\n"));
    assert_eq!(r["text"].as_str().unwrap().lines().count(), 51);
    assert_eq!(r["section_hash"], method["section_hash"]);
    assert_eq!(r["version"], o["version"]);
}

#[test]
fn a_section_id_survives_edits_to_other_sections() {
    let mut w = World::new();
    let ada = human("acme");
    let (note, text) = big_note(&mut w, &ada);
    let before = w.ok(&ada, "read_note_outline", json!({"note_id": note}));
    w.write_text(&ada, &note, &text.replace("Intro line 3\n", "Intro line 3\nan added line\n"), "big-2");
    let after = w.ok(&ada, "read_note_outline", json!({"note_id": note}));
    assert_eq!(before["sections"][2]["section_id"], after["sections"][2]["section_id"]);
    assert_eq!(before["sections"][2]["section_hash"], after["sections"][2]["section_hash"]);
    assert_ne!(before["sections"][0]["section_hash"], after["sections"][0]["section_hash"]);
    assert_eq!(after["sections"][2]["start_line"], before["sections"][2]["start_line"].as_u64().unwrap() + 1);
}

#[test]
fn since_version_returns_only_what_changed() {
    let mut w = World::new();
    let ada = human("acme");
    let (note, text) = big_note(&mut w, &ada);
    let seen = w.version(&ada, &note);
    w.write_text(&ada, &note, &text.replace("Method line 7\n", "Method line seven\n"), "big-2");
    let r = read(&mut w, &ada, &note, json!({"since_version": seen}));
    assert_eq!(r.get("text"), None, "no whole text");
    assert_eq!(r["since_version"], seen);
    assert_eq!(r["version"], format!("{}:part", seen + 1), "hunks are part of the tab: a part token");
    assert_eq!(r["hunks"], json!([{"old_start": 61, "old_lines": 1, "new_start": 61, "new_lines": 1, "text": "Method line seven\n"}]));
}

#[test]
fn bad_parts_are_refused_naming_the_field() {
    let mut w = World::new();
    let ada = human("acme");
    let (note, _) = big_note(&mut w, &ada);
    let v = w.version(&ada, &note);
    let field = |w: &mut World, extra: Value| {
        let mut args = json!({"note_id": note, "tab_id": "markdown"});
        args.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let r = w.refused(&ada, "read_note_tab", args);
        (r["error"].as_str().unwrap().to_string(), r["field"].as_str().unwrap_or("").to_string())
    };
    let invalid = |f: &str| ("invalid_argument".to_string(), f.to_string());
    assert_eq!(field(&mut w, json!({"start_line": 0})), invalid("start_line"));
    assert_eq!(field(&mut w, json!({"start_line": -3})), invalid("start_line"));
    assert_eq!(field(&mut w, json!({"max_lines": 0})), invalid("max_lines"));
    assert_eq!(field(&mut w, json!({"max_lines": 10_000_000})), invalid("max_lines"));
    assert_eq!(field(&mut w, json!({"section_id": "no-such-section"})), ("not_found".to_string(), "section_id".to_string()));
    assert_eq!(field(&mut w, json!({"since_version": v + 5})), invalid("since_version"));
    assert_eq!(field(&mut w, json!({"since_version": 0})), invalid("since_version"));
    assert_eq!(field(&mut w, json!({"section_id": "intro", "start_line": 3})), invalid("section_id"));
    let sheet = w.create_tab(&ada, &note, "sheet", "Numbers");
    let r = w.refused(&ada, "read_note_tab", json!({"note_id": note, "tab_id": sheet, "start_line": 1}));
    assert_eq!(r["field"], "tab_id");
    let r = w.refused(&ada, "read_note_outline", json!({"note_id": note, "tab_id": sheet}));
    assert_eq!(r["field"], "tab_id");
}

#[test]
fn people_read_the_same_parts_over_rest() {
    use cairn_notes::rest::{self, Incoming, Query};
    let mut w = World::new();
    let ada = human("acme");
    let (note, _) = big_note(&mut w, &ada);
    let get = |w: &mut World, path: String, query: &[(&str, &str)]| {
        let (route, params) = rest::route("GET", &path).unwrap();
        let query: Query = query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let incoming = Incoming { params, query: &query, body: b"", idempotency_key: None };
        route.serve(&w.kv, &mut w.env, &ada, incoming).unwrap()
    };
    let tab = format!("/api/v1/notes/{note}/tabs/markdown");
    let outline = get(&mut w, format!("{tab}/outline"), &[]);
    assert_eq!((outline.status, outline.body["sections"][2]["section_id"].as_str()), (200, Some("results")));
    let section = get(&mut w, tab.clone(), &[("section_id", "results")]);
    assert_eq!(section.body["start_line"], outline.body["sections"][2]["start_line"]);
    let window = get(&mut w, tab.clone(), &[("start_line", "2"), ("max_lines", "3")]);
    assert_eq!(window.body["text"], "# Intro\nIntro line 0\nIntro line 1\n");
    assert_eq!(window.body["next"], 5);
    let bad = get(&mut w, tab.clone(), &[("max_lines", "lots")]);
    assert_eq!((bad.status, bad.body["field"].as_str()), (400, Some("max_lines")));
    let found = get(&mut w, format!("{tab}/outline"), &[("heading", "METH"), ("max_level", "1")]);
    assert_eq!(found.body["sections"].as_array().unwrap().len(), 1);
    assert_eq!(found.body["sections"][0]["section_id"], "method");
}

#[test]
fn an_outline_filtered_by_heading_and_level_lists_only_what_matches() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Deep", true);
    w.write_text(&ada, &note, "# Plan\n## Risks\nr\n## Costs\nc\n# Risks again\nx\n", "deep-1");
    let ids = |o: &Value| o["sections"].as_array().unwrap().iter().map(|s| s["section_id"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    let o = w.ok(&ada, "read_note_outline", json!({"note_id": note, "heading": "risks"}));
    assert_eq!(ids(&o), vec!["risks", "risks-again"]);
    let o = w.ok(&ada, "read_note_outline", json!({"note_id": note, "max_level": 1}));
    assert_eq!(ids(&o), vec!["plan", "risks-again"]);
    let o = w.ok(&ada, "read_note_outline", json!({"note_id": note, "max_sections": 1}));
    assert_eq!((ids(&o), o["truncated"].as_bool(), o["next"].as_u64()), (vec!["plan".to_string()], Some(true), Some(2)));
    for (field, bad) in [("heading", json!("  ")), ("max_level", json!(7)), ("max_sections", json!(501))] {
        let r = w.refused(&ada, "read_note_outline", json!({"note_id": note, field: bad}));
        assert_eq!((r["error"].as_str(), r["field"].as_str()), (Some("invalid_argument"), Some(field)));
    }
}

fn outline_of(w: &mut World, who: &cairn_notes::Identity, note: &str) -> Value {
    w.ok(who, "read_note_outline", json!({"note_id": note}))
}

/// `replace_section` of the section `(id, expected hash)` of the note's markdown tab at version `v`.
fn replace_section(w: &mut World, who: &cairn_notes::Identity, note: &str, v: u64, (id, hash): (&str, &Value), text: &str, key: &str) -> Value {
    w.call(
        who,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": v, "idempotency_key": key,
        "operation": "replace_section", "section_id": id, "expected_section_hash": hash, "text": text}),
    )
}

#[test]
fn a_section_edit_lands_over_changes_elsewhere_and_keeps_them() {
    let mut w = World::new();
    let (ada, bot) = (human("acme"), agent("acme"));
    let (note, text) = big_note(&mut w, &ada);
    let o = outline_of(&mut w, &bot, &note);
    let read_at = num(&o["version"]);
    // A person changes the intro after the agent read the outline.
    w.write_text(&ada, &note, &text.replace("Intro line 1\n", "Intro line one\n"), "person-1");
    let r = replace_section(&mut w, &bot, &note, read_at, ("method", &o["sections"][1]["section_hash"]), "# Method\nrewritten\n", "bot-1");
    assert_eq!(r["isError"], false, "{r}");
    let done = &r["structuredContent"];
    assert_eq!((done["rebased"].as_bool(), done["section_id"].as_str()), (Some(true), Some("method")));
    assert_eq!(done["rebased_over"], json!([read_at + 1]));
    let now = w.tab(&ada, &note, "markdown")["text"].as_str().unwrap().to_string();
    assert!(now.contains("Intro line one\n"), "the person's change is kept");
    assert!(now.contains("# Method\nrewritten\n# Results\n"), "{now}");
    assert!(!now.contains("Method line 3"));
}

#[test]
fn a_section_edit_over_a_changed_section_is_refused_and_nothing_is_written() {
    let mut w = World::new();
    let (ada, bot) = (human("acme"), agent("acme"));
    let (note, text) = big_note(&mut w, &ada);
    let o = outline_of(&mut w, &bot, &note);
    w.write_text(&ada, &note, &text.replace("Method line 9\n", "Method line nine\n"), "person-1");
    let before = w.kv.notes_state();
    let r = replace_section(&mut w, &bot, &note, num(&o["version"]), ("method", &o["sections"][1]["section_hash"]), "# Method\nmine\n", "bot-1");
    let refused = &r["structuredContent"];
    assert_eq!((refused["error"].as_str(), refused["field"].as_str()), (Some("version_conflict"), Some("expected_section_hash")), "{refused}");
    let now = outline_of(&mut w, &bot, &note);
    assert_eq!(refused["section_hash"], now["sections"][1]["section_hash"]);
    assert_eq!(refused["chars"], now["sections"][1]["chars"]);
    assert_eq!(w.kv.notes_state(), before, "nothing written");
}

#[test]
fn a_new_heading_renames_the_section_and_the_result_says_so() {
    let mut w = World::new();
    let ada = human("acme");
    let (note, _) = big_note(&mut w, &ada);
    let o = outline_of(&mut w, &ada, &note);
    let v = num(&o["version"]);
    let r = replace_section(&mut w, &ada, &note, v, ("results", &o["sections"][2]["section_hash"]), "# Findings\nall good\n", "k-1");
    assert_eq!(r["structuredContent"]["section_id"], "findings", "{r}");
    let ids: Vec<Value> = outline_of(&mut w, &ada, &note)["sections"].as_array().unwrap().iter().map(|s| s["section_id"].clone()).collect();
    assert_eq!(ids, [json!("intro"), json!("method"), json!("findings")]);
}

#[test]
fn bad_section_edits_are_refused_naming_the_field() {
    let mut w = World::new();
    let ada = human("acme");
    let (note, _) = big_note(&mut w, &ada);
    let o = outline_of(&mut w, &ada, &note);
    let v = num(&o["version"]);
    let before = w.kv.notes_state();
    let r = replace_section(&mut w, &ada, &note, v, ("method", &json!("not-a-hash")), "# Method\n", "k-1");
    assert_eq!(r["structuredContent"]["field"], "expected_section_hash", "{r}");
    let r = replace_section(&mut w, &ada, &note, v, ("no-such", &o["sections"][1]["section_hash"]), "# Method\n", "k-2");
    assert_eq!((r["structuredContent"]["error"].as_str(), r["structuredContent"]["field"].as_str()), (Some("not_found"), Some("section_id")));
    let r = replace_section(&mut w, &ada, &note, v + 3, ("method", &o["sections"][1]["section_hash"]), "# Method\n", "k-3");
    assert_eq!(r["structuredContent"]["error"], "version_conflict", "{r}");
    assert_eq!(w.kv.notes_state(), before, "nothing written");
}

#[test]
fn an_outline_of_many_headings_is_read_in_pages_that_say_so() {
    use cairn_notes::tools::read_note_outline::MAX_OUTLINE_SECTIONS;
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Headings", true);
    // 1,200 one-character headings: a few KB of text, 1,200 sections.
    let text = "#\n".repeat(1200);
    w.write_text(&ada, &note, &text, "h-1");
    let mut seen = 0;
    let mut at = json!(null);
    loop {
        let mut args = json!({"note_id": note});
        if !at.is_null() {
            args["start_line"] = at.clone();
        }
        let page = w.ok(&ada, "read_note_outline", args);
        let n = page["sections"].as_array().unwrap().len();
        assert!(n <= MAX_OUTLINE_SECTIONS);
        seen += n;
        assert_eq!(page["truncated"], page.get("next").is_some());
        match page.get("next") {
            Some(next) => at = next.clone(),
            None => break,
        }
    }
    assert_eq!(seen, 1200, "every section once across the pages");
    let r = w.refused(&ada, "read_note_outline", json!({"note_id": note, "start_line": 0}));
    assert_eq!(r["field"], "start_line");
}

#[test]
fn a_window_starting_past_any_line_is_empty_and_never_overflows() {
    let mut w = World::new();
    let ada = human("acme");
    let (note, _) = big_note(&mut w, &ada);
    let r = read(&mut w, &ada, &note, json!({"start_line": u64::MAX, "max_lines": 100_000}));
    assert_eq!((r["text"].as_str(), r["total_lines"].as_u64(), r.get("next")), (Some(""), Some(154), None));
}

#[test]
fn a_section_longer_than_the_cap_reads_in_part_without_a_hash_to_replace_it_with() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Long section", true);
    let body: String = (0..40).map(|i| format!("{i:02} {}\n", "q".repeat(997))).collect();
    w.write_text(&ada, &note, &format!("# Long\n{body}# Short\nend\n"), "long-1");
    let cut = read(&mut w, &ada, &note, json!({"section_id": "long"}));
    assert_eq!((cut["truncated"].as_bool(), cut.get("section_hash"), cut["chars"].as_u64()), (Some(true), None, Some(40_047)));
    assert!(cut["next_step"].as_str().unwrap().contains("replace_section needs the whole section"));
    let whole = read(&mut w, &ada, &note, json!({"section_id": "long", "max_chars": 100_000}));
    assert_eq!((whole["truncated"].as_bool(), whole["section_hash"].is_string()), (Some(false), true));
}

#[test]
fn since_version_past_retention_is_not_found_naming_the_field() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Kept briefly", true);
    w.env.retention = cairn_notes::env::Retention { versions: 2, days: 0, max_versions: 2 };
    for i in 0..5 {
        w.write_text(&ada, &note, &format!("text {i}\n"), &format!("k-{i}"));
    }
    w.advance_s(86_400);
    let r = w.refused(&ada, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "since_version": 2}));
    assert_eq!((r["error"].as_str(), r["field"].as_str()), (Some("not_found"), Some("since_version")), "{r}");
    let v = w.version(&ada, &note);
    let recent = read(&mut w, &ada, &note, json!({"since_version": v - 1}));
    assert_eq!(recent["hunks"].as_array().unwrap().len(), 1);
}

#[test]
fn an_outline_page_stops_at_the_read_cap_and_says_where_the_rest_starts() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Many", true);
    let text: String = (0..400).map(|i| format!("# Heading number {i:03}\nbody\n")).collect();
    w.write_text(&ada, &note, &text, "many-1");
    let first = w.ok(&ada, "read_note_outline", json!({"note_id": note}));
    let listed = first["sections"].as_array().unwrap().len();
    assert!(first.to_string().chars().count() < 26_000, "an outline page stays near the 24,000-character cap");
    assert_eq!((first["truncated"].as_bool(), first["next"].as_u64()), (Some(true), Some(2 * listed as u64 + 1)));
    let all = w.ok(&ada, "read_note_outline", json!({"note_id": note, "max_chars": 1_000_000}));
    assert_eq!((all["sections"].as_array().unwrap().len(), all["truncated"].as_bool()), (400, Some(false)));
    let bad = w.refused(&ada, "read_note_outline", json!({"note_id": note, "max_chars": 0}));
    assert_eq!(bad["field"], "max_chars");
}
