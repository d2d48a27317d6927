//! History: every committed version of a tab stays readable (`read_note_tab`
//! with `at_version`), listed newest first (`list_note_history`), diffed and
//! restored by people; a restore is an ordinary conditional write that adds
//! a version; history never crosses tenants or shows agents a hidden note.
use crate::common::*;
use cairn_notes::rest;
use serde_json::{Value, json};

fn read_at(w: &mut World, who: &cairn_notes::env::Identity, note: &str, tab: &str, v: u64) -> Value {
    w.call(who, "read_note_tab", json!({"note_id": note, "tab_id": tab, "at_version": v}))["structuredContent"].clone()
}

fn three_versions(w: &mut World, who: &cairn_notes::env::Identity) -> String {
    let note = w.note(who, "History", true);
    for (i, text) in ["one\n", "one\ntwo\n", "one\ntwo\nthree\n"].iter().enumerate() {
        let r = w.write_text(who, &note, text, &format!("k{i}"));
        assert_eq!(r["isError"], false, "{r}");
    }
    note
}

#[test]
fn every_committed_version_reads_back_as_it_was() {
    let mut w = World::new();
    let ada = human("acme");
    let note = three_versions(&mut w, &ada);
    // Version 1 is the created note: the markdown tab is empty.
    assert_eq!(read_at(&mut w, &ada, &note, "markdown", 1)["text"], "");
    assert_eq!(read_at(&mut w, &ada, &note, "markdown", 2)["text"], "one\n");
    assert_eq!(read_at(&mut w, &ada, &note, "markdown", 3)["text"], "one\ntwo\n");
    let now = read_at(&mut w, &ada, &note, "markdown", 4);
    assert_eq!(now["text"], "one\ntwo\nthree\n");
    assert_eq!(now["at_version"], 4);
    assert_eq!(now["tab_version"], 4);
    assert!(now["provenance"]["updated_by"].as_str().unwrap().contains("human"), "{now}");
    assert!(now["notice"].is_string());
}

#[test]
fn history_lists_versions_newest_first_in_pages() {
    let mut w = World::new();
    let ada = human("acme");
    let note = three_versions(&mut w, &ada);
    // More than the head keeps, so the older entries come from their own keys.
    for i in 0..12 {
        let v = w.version(&ada, &note);
        let r = w.call(
            &ada,
            "edit_note_tab",
            json!({"note_id": note, "tab_id": "markdown", "expected_version": v,
            "idempotency_key": format!("a{i}"), "operation": "append_text", "text": format!("line {i}")}),
        );
        assert_eq!(r["isError"], false, "{r}");
    }
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let mut args = json!({"note_id": note, "limit": 5});
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let page = w.ok(&ada, "list_note_history", args);
        for e in page["entries"].as_array().unwrap() {
            seen.push(e["version"].as_u64().unwrap());
            assert!(e["by"]["actor_type"].is_string() && e["at"].is_string(), "{e}");
        }
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(seen, (1..=16).rev().collect::<Vec<u64>>());
    // Filtered by tab: the create_note entry names no tab.
    let only = w.ok(&ada, "list_note_history", json!({"note_id": note, "tab_id": "markdown", "limit": 50}));
    let actions: Vec<&str> = only["entries"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions.len(), 15);
    assert_eq!(actions[0], "append_text");
    assert_eq!(*actions.last().unwrap(), "replace_text");
    let newest = &only["entries"][0];
    assert_eq!(newest["size_bytes"].as_u64().unwrap() as usize, w.tab(&ada, &note, "markdown")["text"].as_str().unwrap().len());
}

#[test]
fn at_version_out_of_range_is_refused_naming_the_field() {
    let mut w = World::new();
    let ada = human("acme");
    let note = three_versions(&mut w, &ada);
    for v in [0, 5, 99] {
        let r = w.refused(&ada, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "at_version": v}));
        assert_eq!(r["error"], "invalid_argument", "{r}");
        assert_eq!(r["field"], "at_version", "{r}");
    }
}

#[test]
fn a_deleted_tab_reads_at_its_old_versions_and_restores_under_its_old_id() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Deck", true);
    let slides = w.create_tab(&ada, &note, "slides", "Pitch");
    let v = w.version(&ada, &note);
    w.ok(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": slides, "expected_version": v, "idempotency_key": "s1",
        "operation": "slide_add", "title": "Why now"}),
    );
    let before_delete = w.version(&ada, &note);
    let r = rest::delete_tab(&w.kv, &mut w.env, &ada, &note, &slides, json!({"expected_version": before_delete})).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(w.refused(&ada, "read_note_tab", json!({"note_id": note, "tab_id": slides}))["error"], "not_found");
    // Within retention the old version reads as it was.
    let old = read_at(&mut w, &ada, &note, &slides, before_delete);
    assert_eq!(old["slides"][0]["title"], "Why now", "{old}");
    // At the delete itself the tab is gone.
    let gone = read_at(&mut w, &ada, &note, &slides, before_delete + 1);
    assert_eq!(gone["error"], "not_found", "{gone}");
    // Restoring brings it back under the same id, as a new version.
    let now = w.version(&ada, &note);
    let r =
        rest::restore_tab(&w.kv, &mut w.env, &ada, &note, &slides, json!({"from_version": before_delete, "expected_version": now, "idempotency_key": "r1"}))
            .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["undeleted"], true);
    assert_eq!(r.body["version"], now + 1);
    let back = w.tab(&ada, &note, &slides);
    assert_eq!(back["slides"][0]["title"], "Why now");
    assert_eq!(back["label"], "Pitch");
    // The history keeps the delete and the restore.
    let h = w.ok(&ada, "list_note_history", json!({"note_id": note, "tab_id": slides}));
    let actions: Vec<&str> = h["entries"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(&actions[..2], ["restore", "delete_tab"]);
    assert_eq!(h["entries"][1]["deleted"], true);
}

#[test]
fn restore_creates_a_new_version_and_the_old_one_stays() {
    let mut w = World::new();
    let ada = human("acme");
    let note = three_versions(&mut w, &ada);
    let r = rest::restore_tab(&w.kv, &mut w.env, &ada, &note, "markdown", json!({"from_version": 2, "expected_version": 4, "idempotency_key": "r"})).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["version"], 5);
    assert_eq!(r.body["restored_from"], 2);
    assert_eq!(w.tab(&ada, &note, "markdown")["text"], "one\n");
    // Nothing in the past moved.
    assert_eq!(read_at(&mut w, &ada, &note, "markdown", 4)["text"], "one\ntwo\nthree\n");
    // A replay answers the first result; nothing new is written.
    let again =
        rest::restore_tab(&w.kv, &mut w.env, &ada, &note, "markdown", json!({"from_version": 2, "expected_version": 4, "idempotency_key": "r"})).unwrap();
    assert_eq!(again.body["replayed"], true);
    assert_eq!(w.version(&ada, &note), 5);
}

#[test]
fn a_restore_on_a_stale_version_is_refused_and_nothing_written() {
    let mut w = World::new();
    let ada = human("acme");
    let note = three_versions(&mut w, &ada);
    let before = w.kv.dump();
    let r = rest::restore_tab(&w.kv, &mut w.env, &ada, &note, "markdown", json!({"from_version": 2, "expected_version": 3})).unwrap();
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.body["error"], "version_conflict");
    assert_eq!(r.body["current_version"], 4);
    assert_eq!(before, w.kv.dump(), "a refused restore wrote something");
    let r = rest::restore_tab(&w.kv, &mut w.env, &ada, &note, "markdown", json!({"from_version": 9, "expected_version": 4})).unwrap();
    assert_eq!((r.status, r.body["field"].as_str()), (400, Some("from_version")), "{}", r.body);
}

#[test]
fn a_diff_shows_the_lines_that_changed_and_refuses_a_backwards_range() {
    let mut w = World::new();
    let ada = human("acme");
    let note = three_versions(&mut w, &ada);
    let r = rest::tab_diff(&w.kv, &mut w.env, &ada, &note, "markdown", Some("2"), Some("4")).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let lines = &r.body["hunks"][0]["lines"];
    let inserted: Vec<&str> = lines.as_array().unwrap().iter().filter(|l| l["op"] == "insert").map(|l| l["text"].as_str().unwrap()).collect();
    assert_eq!(inserted, ["two", "three"]);
    assert!(r.body["unified"].as_str().unwrap().contains("+three"), "{}", r.body);
    let back = rest::tab_diff(&w.kv, &mut w.env, &ada, &note, "markdown", Some("4"), Some("2")).unwrap();
    assert_eq!((back.status, back.body["field"].as_str()), (400, Some("from")), "{}", back.body);
}

#[test]
fn history_never_crosses_tenants_and_agents_never_see_an_unapproved_notes_history() {
    let mut w = World::new();
    let ada = human("acme");
    let note = three_versions(&mut w, &ada);
    let other = human("globex");
    let r = w.refused(&other, "list_note_history", json!({"note_id": note}));
    assert_eq!(r["error"], "not_found");
    assert_eq!(w.refused(&other, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "at_version": 2}))["error"], "not_found");
    let r = rest::note_history(&w.kv, &mut w.env, &other, &note, None, None, None).unwrap();
    assert_eq!(r.status, 404);
    let hidden = w.note(&ada, "Not for agents", false);
    let bot = agent("acme");
    assert_eq!(w.refused(&bot, "list_note_history", json!({"note_id": hidden}))["error"], "not_found");
    assert_eq!(w.refused(&bot, "read_note_tab", json!({"note_id": hidden, "tab_id": "markdown", "at_version": 1}))["error"], "not_found");
    // The REST history pages with `before`.
    let r = rest::note_history(&w.kv, &mut w.env, &ada, &note, None, None, Some("2")).unwrap();
    assert_eq!(r.body["entries"].as_array().unwrap().len(), 2);
    assert_eq!(r.body["next_before"], 2);
}

#[test]
fn a_stale_draft_merges_with_the_text_now_and_shows_only_real_conflicts() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Merge", true);
    w.write_text(&ada, &note, "intro\nmiddle\nend\n", "k0");
    // The agent changes the intro; the person's draft (from version 2) changed the end.
    w.write_text(&agent("acme"), &note, "Intro!\nmiddle\nend\n", "k1");
    let before = w.kv.dump();
    let r = rest::merge_draft(&w.kv, &mut w.env, &ada, &note, "markdown", json!({"base_version": 2, "text": "intro\nmiddle\nThe end.\n"})).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["merged"], "Intro!\nmiddle\nThe end.\n");
    assert_eq!(r.body["clean"], true);
    assert_eq!(r.body["version"], 3);
    // The same line changed both ways: a conflict with all three versions.
    let r = rest::merge_draft(&w.kv, &mut w.env, &ada, &note, "markdown", json!({"base_version": 2, "text": "Hello\nmiddle\nend\n"})).unwrap();
    assert_eq!(r.body["clean"], false, "{}", r.body);
    let c = &r.body["conflicts"][0];
    assert_eq!((c["base"].as_str(), c["theirs"].as_str(), c["mine"].as_str()), (Some("intro\n"), Some("Intro!\n"), Some("Hello\n")));
    assert_eq!(before, w.kv.dump(), "a merge wrote something");
    let bad = rest::merge_draft(&w.kv, &mut w.env, &ada, &note, "markdown", json!({"base_version": 7, "text": ""})).unwrap();
    assert_eq!((bad.status, bad.body["field"].as_str()), (400, Some("base_version")));
}

#[test]
fn a_version_past_both_retention_limits_is_not_found_naming_at_version() {
    let mut w = World::new();
    w.env.retention = cairn_notes::env::Retention { versions: 2, days: 1, ..Default::default() };
    let ada = human("acme");
    let note = three_versions(&mut w, &ada);
    // Younger than a day: every version still reads, whatever the count.
    assert_eq!(read_at(&mut w, &ada, &note, "markdown", 2)["text"], "one\n");
    w.advance_s(2 * 24 * 3600);
    // Older than a day and not among the newest 2 versions (3 and 4).
    let r = read_at(&mut w, &ada, &note, "markdown", 2);
    assert_eq!((r["error"].as_str(), r["field"].as_str()), (Some("not_found"), Some("at_version")), "{r}");
    assert!(r["message"].as_str().unwrap().contains("newest 2 versions and the last 1 days"), "{r}");
    assert_eq!(read_at(&mut w, &ada, &note, "markdown", 3)["text"], "one\ntwo\n");
    // The listing stops at the window too.
    let h = w.ok(&ada, "list_note_history", json!({"note_id": note}));
    let versions: Vec<u64> = h["entries"].as_array().unwrap().iter().map(|e| e["version"].as_u64().unwrap()).collect();
    assert_eq!(versions, [4, 3]);
    assert!(h["next_cursor"].is_null());
}
