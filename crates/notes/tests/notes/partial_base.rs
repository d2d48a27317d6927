//! A whole-tab write never lands on a read that returned part of the tab:
//! reads hand out `"<n>:part"` tokens for parts, whole-tab writes refuse
//! them with nothing written, patches take them, and the naive
//! read-then-replace client loses no line however big its tab grows.
use crate::common::*;
use cairn_notes::Identity;
use serde_json::{Value, json};

/// A note a person made (approved for agents) whose markdown tab holds
/// `lines` numbered lines of ~60 bytes.
fn note_of(w: &mut World, lines: usize) -> (String, String) {
    let who = &human("acme");
    let note = w.note(who, "Big", true);
    let text: String = (0..lines).map(|i| format!("line {i:06} of a tab that keeps growing, one line at a time\n")).collect();
    let r = w.write_text(who, &note, &text, "fill");
    assert_eq!(r["isError"], false, "{r}");
    (note, text)
}

fn read(w: &mut World, who: &Identity, note: &str, extra: Value) -> Value {
    let mut args = json!({"note_id": note, "tab_id": "markdown"});
    args.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    w.ok(who, "read_note_tab", args)
}

fn edit(w: &mut World, who: &Identity, note: &str, version: &Value, key: &str, op: Value) -> Value {
    let mut args = json!({"note_id": note, "tab_id": "markdown", "expected_version": version, "idempotency_key": key});
    args.as_object_mut().unwrap().extend(op.as_object().unwrap().clone());
    w.call(who, "edit_note_tab", args)
}

#[test]
fn a_cut_read_hands_out_a_part_token_and_a_whole_read_a_number() {
    let mut w = World::new();
    let ada = human("acme");
    let (note, _) = note_of(&mut w, 2_700);
    let cut = read(&mut w, &ada, &note, json!({}));
    assert_eq!((cut["truncated"].as_bool(), cut["extent"].as_str()), (Some(true), Some("part")));
    assert_eq!(cut["version"], "2:part");
    assert_eq!(cut["tab_version"], "2:part");
    assert!(cut["write_back"].as_str().unwrap().contains("replace_text is refused"), "{}", cut["write_back"]);
    let whole = read(&mut w, &ada, &note, json!({"max_chars": 1_000_000}));
    assert_eq!((whole["truncated"].as_bool(), whole["extent"].as_str()), (Some(false), Some("whole")));
    assert_eq!(whole["version"], 2);
    assert_eq!(whole["tab_version"], 2);
}

#[test]
fn replace_text_on_a_cut_read_is_refused_and_nothing_is_written() {
    let mut w = World::new();
    let bot = agent("acme");
    let ada = human("acme");
    let (note, text) = note_of(&mut w, 2_700);
    let cut = read(&mut w, &bot, &note, json!({}));
    let before = w.kv.notes_state();
    let mine = format!("{}bot's line\n", cut["text"].as_str().unwrap());
    let r = edit(&mut w, &bot, &note, &cut["version"], "bot-1", json!({"operation": "replace_text", "text": mine}));
    let refused = &r["structuredContent"];
    assert_eq!((r["isError"].as_bool(), refused["error"].as_str()), (Some(true), Some("partial_base")), "{refused}");
    assert_eq!(refused["field"], "expected_version");
    assert!(refused["read_max_chars"].as_u64().unwrap() >= text.chars().count() as u64, "{refused}");
    assert!(refused["next_step"].as_str().unwrap().contains("append_text"), "{refused}");
    assert_eq!(w.kv.notes_state(), before, "nothing written");
    let now = read(&mut w, &ada, &note, json!({"max_chars": 1_000_000}));
    assert_eq!(now["text"], text.as_str(), "every line past the cut is still there");
}

#[test]
fn a_whole_read_at_the_refusals_size_is_written_back_whole() {
    let mut w = World::new();
    let bot = agent("acme");
    let (note, text) = note_of(&mut w, 2_700);
    let cut = read(&mut w, &bot, &note, json!({}));
    let r = edit(&mut w, &bot, &note, &cut["version"], "bot-1", json!({"operation": "replace_text", "text": "x"}));
    let need = r["structuredContent"]["read_max_chars"].clone();
    let whole = read(&mut w, &bot, &note, json!({"max_chars": need}));
    assert_eq!(whole["extent"], "whole");
    let mine = format!("{}bot's line\n", whole["text"].as_str().unwrap());
    let r = edit(&mut w, &bot, &note, &whole["version"], "bot-2", json!({"operation": "replace_text", "text": mine}));
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(read(&mut w, &bot, &note, json!({"max_chars": 1_000_000}))["text"], format!("{text}bot's line\n"));
}

#[test]
fn patches_take_a_part_token_and_answer_with_one() {
    let mut w = World::new();
    let bot = agent("acme");
    let (note, text) = note_of(&mut w, 2_700);
    let cut = read(&mut w, &bot, &note, json!({}));
    let r = edit(&mut w, &bot, &note, &cut["version"], "a-1", json!({"operation": "append_text", "text": "appended"}));
    assert_eq!(r["isError"], false, "{r}");
    let done = r["structuredContent"].clone();
    assert_eq!(done["version"], "3:part", "a patch on part of a tab leaves its writer with part of it");
    // The token the patch answered with still cannot pass for a whole read.
    let r = edit(&mut w, &bot, &note, &done["version"], "a-2", json!({"operation": "replace_text", "text": "only this"}));
    assert_eq!(r["structuredContent"]["error"], "partial_base", "{r}");
    // A replay answers the first result, token included.
    let again = edit(&mut w, &bot, &note, &cut["version"], "a-1", json!({"operation": "append_text", "text": "appended"}));
    assert_eq!((again["structuredContent"]["replayed"].as_bool(), &again["structuredContent"]["version"]), (Some(true), &json!("3:part")));
    assert_eq!(read(&mut w, &bot, &note, json!({"max_chars": 1_000_000}))["text"], format!("{text}appended\n"));
}

#[test]
fn windows_sections_outlines_changes_and_past_versions_hand_out_part_tokens() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Doc", true);
    let text = "# Intro\nhello\n# Method\nsteps\n";
    assert_eq!(w.write_text(&ada, &note, text, "k1")["isError"], false);
    assert_eq!(w.write_text(&ada, &note, &format!("{text}more\n"), "k2")["isError"], false);
    let part = |r: &Value| (r["version"].as_str().map(str::to_string), r["extent"].as_str().map(str::to_string));
    let expect = (Some("3:part".to_string()), Some("part".to_string()));
    assert_eq!(part(&read(&mut w, &ada, &note, json!({"start_line": 2, "max_lines": 2}))), expect, "a window");
    assert_eq!(part(&read(&mut w, &ada, &note, json!({"section_id": "method"}))), expect, "a section");
    assert_eq!(part(&read(&mut w, &ada, &note, json!({"since_version": 2}))), expect, "the changes since");
    assert_eq!(part(&read(&mut w, &ada, &note, json!({"at_version": 2}))), expect, "a past version");
    let outline = w.ok(&ada, "read_note_outline", json!({"note_id": note, "tab_id": "markdown"}));
    assert_eq!(outline["version"], "3:part", "an outline holds no text");
    // A window that holds every line is the whole tab.
    let all = read(&mut w, &ada, &note, json!({"start_line": 1, "max_lines": 100}));
    assert_eq!((all["version"].as_u64(), all["extent"].as_str()), (Some(3), Some("whole")));
    let now = read(&mut w, &ada, &note, json!({"at_version": 3}));
    assert_eq!((now["version"].as_u64(), now["extent"].as_str()), (Some(3), Some("whole")), "at_version of now is now");
}

#[test]
fn replace_tab_data_on_some_slides_or_a_sheet_listing_is_refused() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Deck", true);
    let deck = w.create_tab(&ada, &note, "slides", "Deck");
    let v = w.version(&ada, &note);
    let slides: Vec<Value> = (0..5).map(|i| json!({"title": format!("slide {i}")})).collect();
    w.ok(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": deck, "expected_version": v, "idempotency_key": "s",
        "operation": "slides_add_outline", "slides": slides}),
    );
    let some = w.ok(&ada, "read_note_tab", json!({"note_id": note, "tab_id": deck, "start_index": 1, "max_slides": 2}));
    assert_eq!(some["extent"], "part");
    let data = json!({"slides": [{"title": "only one"}]});
    let r = w.refused(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": deck, "expected_version": some["version"],
        "idempotency_key": "d", "operation": "replace_tab_data", "data": data}),
    );
    assert_eq!(r["error"], "partial_base", "{r}");
    let all = w.ok(&ada, "read_note_tab", json!({"note_id": note, "tab_id": deck}));
    assert_eq!((all["extent"].as_str(), all["slides"].as_array().map(Vec::len)), (Some("whole"), Some(5)));
    let sheet = w.create_tab(&ada, &note, "sheet", "Numbers");
    let listing = w.ok(&ada, "read_note_tab", json!({"note_id": note, "tab_id": sheet}));
    let r = w.refused(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": sheet, "expected_version": listing["version"],
        "idempotency_key": "e", "operation": "replace_tab_data", "data": {"sheets": [{"values": [["a"]]}]}}),
    );
    assert_eq!(r["error"], "partial_base", "{r}");
}

#[test]
fn the_peoples_whole_tab_write_refuses_a_part_token_too() {
    let mut w = World::new();
    let ada = human("acme");
    let (note, _) = note_of(&mut w, 100);
    let window = read(&mut w, &ada, &note, json!({"start_line": 1, "max_lines": 10}));
    let before = w.kv.notes_state();
    let r = cairn_notes::rest::write_tab(&w.kv, &mut w.env, &ada, &note, "markdown", json!({"expected_version": window["version"], "text": window["text"]}))
        .unwrap();
    assert_eq!((r.status, r.body["error"].as_str()), (409, Some("partial_base")), "{}", r.body);
    assert_eq!(w.kv.notes_state(), before, "nothing written");
}

#[test]
fn a_malformed_version_token_is_refused_naming_the_field() {
    let mut w = World::new();
    let ada = human("acme");
    let (note, _) = note_of(&mut w, 3);
    for bad in [json!("2"), json!("2:whole"), json!(":part"), json!("-1:part"), json!(-2), json!(2.5)] {
        let r = edit(&mut w, &ada, &note, &bad, "k", json!({"operation": "append_text", "text": "x"}));
        let refused = &r["structuredContent"];
        assert_eq!((refused["error"].as_str(), refused["field"].as_str()), (Some("invalid_argument"), Some("expected_version")), "{bad}: {refused}");
    }
}

/// The seed workload's client, unchanged: read the tab (default read),
/// write back what it read plus its own line with `replace_text` and the
/// version it read; on any refusal read again and redo. Returns the lines
/// its acknowledged writes added.
fn naive_client(w: &mut World, who: &Identity, note: &str, writes: usize, tries: usize) -> Vec<String> {
    let mut acknowledged = Vec::new();
    for i in 0..writes {
        let line = format!("naive line {i}");
        for attempt in 0..tries {
            let tab = read(w, who, note, json!({}));
            let text = format!("{}{line}\n", tab["text"].as_str().unwrap());
            let r = edit(w, who, note, &tab["version"], &format!("n-{i}-{attempt}"), json!({"operation": "replace_text", "text": text}));
            if r["isError"] == false {
                acknowledged.push(line.clone());
                break;
            }
        }
    }
    acknowledged
}

#[test]
fn the_naive_client_loses_no_line_on_tabs_of_10_kb_to_1_mb() {
    for lines in [170, 1_700, 8_000, 15_500] {
        let mut w = World::new();
        let bot = agent("acme");
        let (note, text) = note_of(&mut w, lines);
        let acknowledged = naive_client(&mut w, &bot, &note, 5, 3);
        let now = read(&mut w, &bot, &note, json!({"max_chars": 1_000_000}));
        let now = now["text"].as_str().unwrap();
        assert!(now.starts_with(&text), "{} bytes: the lines before the client's are all there", text.len());
        for line in &acknowledged {
            assert!(now.contains(line.as_str()), "{} bytes: acknowledged {line:?} is there", text.len());
        }
        // Under the read cap it makes progress; past it, it is refused, never acknowledged.
        let expect = if text.len() <= cairn_notes::env::DEFAULT_READ_MAX_CHARS { 5 } else { 0 };
        assert_eq!(acknowledged.len(), expect, "{} bytes", text.len());
    }
}
