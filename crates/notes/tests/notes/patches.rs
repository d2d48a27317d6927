//! Patches that carry intent: `append_text` and `replace_in_text` change
//! part of the markdown text; with `rebase: true` a patch based on an older
//! version is applied only when no change since touches or borders its
//! lines, and says so; anything else is a `version_conflict`.
use crate::common::*;
use serde_json::{Value, json};

fn patch(w: &mut World, who: &cairn_notes::env::Identity, note: &str, v: u64, key: &str, op: Value) -> Value {
    let mut args = json!({"note_id": note, "tab_id": "markdown", "expected_version": v, "idempotency_key": key});
    for (k, val) in op.as_object().unwrap() {
        args[k] = val.clone();
    }
    w.call(who, "edit_note_tab", args)["structuredContent"].clone()
}

fn text(w: &mut World, who: &cairn_notes::env::Identity, note: &str) -> String {
    w.tab(who, note, "markdown")["text"].as_str().unwrap().to_string()
}

const DOC: &str = "# Brief\nintro\n\n## Plan\nstep one\nstep two\n\n## Risks\nnone yet\n";

fn doc(w: &mut World) -> (cairn_notes::env::Identity, String) {
    let ada = human("acme");
    let note = w.note(&ada, "Brief", true);
    assert_eq!(w.write_text(&ada, &note, DOC, "doc")["isError"], false);
    (ada, note)
}

#[test]
fn append_text_adds_a_line_at_the_end() {
    let mut w = World::new();
    let (ada, note) = doc(&mut w);
    let r = patch(&mut w, &ada, &note, 2, "a", json!({"operation": "append_text", "text": "- new risk"}));
    assert_eq!(r["version"], 3, "{r}");
    assert_eq!(text(&mut w, &ada, &note), format!("{DOC}- new risk\n"));
}

#[test]
fn replace_in_text_needs_exactly_one_occurrence() {
    let mut w = World::new();
    let (ada, note) = doc(&mut w);
    let r = patch(&mut w, &ada, &note, 2, "r0", json!({"operation": "replace_in_text", "old_text": "step", "new_text": "phase"}));
    assert_eq!(r["error"], "invalid_argument", "{r}");
    assert_eq!(r["field"], "old_text");
    assert!(r["message"].as_str().unwrap().contains("occurs 2 times"), "{r}");
    let r = patch(&mut w, &ada, &note, 2, "r1", json!({"operation": "replace_in_text", "old_text": "absent", "new_text": "x"}));
    assert!(r["message"].as_str().unwrap().contains("occurs 0 times"), "{r}");
    let r = patch(&mut w, &ada, &note, 2, "r2", json!({"operation": "replace_in_text", "old_text": "", "new_text": "x"}));
    assert_eq!(r["field"], "old_text", "{r}");
    assert_eq!(w.version(&ada, &note), 2, "a refused patch wrote something");
    let r = patch(&mut w, &ada, &note, 2, "r3", json!({"operation": "replace_in_text", "old_text": "none yet", "new_text": "supply"}));
    assert_eq!(r["version"], 3, "{r}");
    assert_eq!(text(&mut w, &ada, &note), DOC.replace("none yet", "supply"));
}

#[test]
fn without_rebase_a_moved_version_is_a_conflict() {
    let mut w = World::new();
    let (ada, note) = doc(&mut w);
    patch(&mut w, &ada, &note, 2, "p", json!({"operation": "replace_in_text", "old_text": "intro", "new_text": "Intro."}));
    let r = patch(&mut w, &ada, &note, 2, "a", json!({"operation": "append_text", "text": "late"}));
    assert_eq!(r["error"], "version_conflict", "{r}");
    assert_eq!(r["current_version"], 3);
}

#[test]
fn a_rebased_patch_applies_over_changes_elsewhere_and_says_so() {
    let mut w = World::new();
    let (ada, note) = doc(&mut w);
    // The person rewrites the intro (line 2); the agent read version 2.
    patch(&mut w, &ada, &note, 2, "p", json!({"operation": "replace_in_text", "old_text": "intro", "new_text": "A better intro."}));
    let bot = agent("acme");
    let r = patch(&mut w, &bot, &note, 2, "a", json!({"operation": "append_text", "text": "- agent risk", "rebase": true}));
    assert_eq!(r["rebased"], true, "{r}");
    assert_eq!(r["rebased_over"], json!([3]));
    assert_eq!(r["version"], "4:part", "rebased over a change the agent never read: a part token");
    let r = patch(&mut w, &bot, &note, 2, "b", json!({"operation": "replace_in_text", "old_text": "step two", "new_text": "step 2", "rebase": true}));
    assert_eq!(r["rebased"], true, "{r}");
    assert_eq!(text(&mut w, &ada, &note), DOC.replace("intro", "A better intro.").replace("step two", "step 2") + "- agent risk\n");
    // A replay answers the first result.
    let again = patch(&mut w, &bot, &note, 2, "b", json!({"operation": "replace_in_text", "old_text": "step two", "new_text": "step 2", "rebase": true}));
    assert_eq!(again["replayed"], true, "{again}");
    // Rebase on the current version is an ordinary write.
    let v = w.version(&bot, &note);
    let r = patch(&mut w, &bot, &note, v, "c", json!({"operation": "append_text", "text": "x", "rebase": true}));
    assert_eq!(r["rebased"], false, "{r}");
}

#[test]
fn a_patch_on_the_line_the_person_changed_conflicts_and_never_merges_silently() {
    let mut w = World::new();
    let (ada, note) = doc(&mut w);
    patch(&mut w, &ada, &note, 2, "p", json!({"operation": "replace_in_text", "old_text": "step one", "new_text": "step one (owner: Ada)"}));
    let bot = agent("acme");
    let before = text(&mut w, &ada, &note);
    // The same line.
    let r =
        patch(&mut w, &bot, &note, 2, "same", json!({"operation": "replace_in_text", "old_text": "step one\n", "new_text": "first step\n", "rebase": true}));
    assert_eq!(r["error"], "version_conflict", "{r}");
    assert_eq!(r["current_version"], 3);
    assert!(r["next_step"].as_str().unwrap().contains("read the tab again"), "{r}");
    // The line right after it borders the change.
    let r = patch(&mut w, &bot, &note, 2, "next", json!({"operation": "replace_in_text", "old_text": "step two", "new_text": "step 2", "rebase": true}));
    assert_eq!(r["error"], "version_conflict", "{r}");
    assert!(r["rebase_refused"].as_str().unwrap().contains("borders"), "{r}");
    assert_eq!(text(&mut w, &ada, &note), before, "a refused rebase wrote something");
}

#[test]
fn an_append_conflicts_with_a_change_to_the_last_line() {
    let mut w = World::new();
    let (ada, note) = doc(&mut w);
    patch(&mut w, &ada, &note, 2, "p", json!({"operation": "append_text", "text": "person line"}));
    let bot = agent("acme");
    let r = patch(&mut w, &bot, &note, 2, "a", json!({"operation": "append_text", "text": "agent line", "rebase": true}));
    assert_eq!(r["error"], "version_conflict", "{r}");
}

#[test]
fn rebase_is_refused_where_it_cannot_apply() {
    let mut w = World::new();
    let (ada, note) = doc(&mut w);
    let cases = [
        json!({"operation": "replace_text", "text": "x", "rebase": true}),
        json!({"operation": "append_text", "text": "x", "rebase": true, "version_scope": "tab"}),
        json!({"operation": "append_text", "text": "x", "rebase": true, "base_content_hash": "0".repeat(64)}),
    ];
    for (i, op) in cases.into_iter().enumerate() {
        let r = patch(&mut w, &ada, &note, 2, &format!("k{i}"), op);
        assert_eq!(r["error"], "invalid_argument", "{r}");
        assert_eq!(r["field"], "rebase", "{r}");
    }
}
