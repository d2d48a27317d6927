//! Section claims hold bytes: while someone holds a section, no other
//! writer's change may touch its lines (any operation, any door), and the
//! holder's own writes stay inside it.
use crate::common::*;
use cairn_notes::Identity;
use serde_json::{Value, json};

const NOTE: &str = "Preamble\n# Intro\nintro 1\nintro 2\n# Method\nmethod 1\n## Detail\ndetail 1\n# Results\nresults 1\n";

fn setup(w: &mut World) -> (String, Identity, Identity, Identity) {
    let (ada, bot) = (human("acme"), agent("acme"));
    let other = identity("acme", "gpt", cairn_notes::ActorType::Agent);
    let note = w.note(&ada, "Shared", true);
    let r = w.write_text(&ada, &note, NOTE, "init");
    assert_eq!(r["isError"], false, "{r}");
    (note, ada, bot, other)
}

fn claim_section(w: &mut World, who: &Identity, note: &str, section: &str) -> Value {
    w.call(who, "claim_note", json!({"note_id": note, "tab_id": "markdown", "section_id": section}))["structuredContent"].clone()
}

fn text(w: &mut World, note: &str) -> String {
    w.tab(&human("acme"), note, "markdown")["text"].as_str().unwrap().to_string()
}

fn section(w: &mut World, who: &Identity, note: &str, id: &str) -> Value {
    w.ok(who, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "section_id": id}))
}

fn replace_section(w: &mut World, who: &Identity, note: &str, id: &str, body: &str, key: &str) -> Value {
    let s = section(w, who, note, id);
    w.call(
        who,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": s["version"], "idempotency_key": key,
        "operation": "replace_section", "section_id": id, "expected_section_hash": s["section_hash"], "text": body}),
    )["structuredContent"]
        .clone()
}

fn edit(w: &mut World, who: &Identity, note: &str, op: Value, key: &str) -> Value {
    let v = w.version(who, note);
    let mut args = json!({"note_id": note, "tab_id": "markdown", "expected_version": v, "idempotency_key": key});
    args.as_object_mut().unwrap().extend(op.as_object().unwrap().clone());
    w.call(who, "edit_note_tab", args)["structuredContent"].clone()
}

#[test]
fn a_claimed_section_refuses_every_other_writer_and_nothing_is_written() {
    let mut w = World::new();
    let (note, ada, bot, other) = setup(&mut w);
    let c = claim_section(&mut w, &bot, &note, "method");
    assert_eq!((c["section_id"].as_str(), c["tab_id"].as_str()), (Some("method"), Some("markdown")), "{c}");
    let before = (text(&mut w, &note), w.version(&ada, &note));
    let attempts = [
        json!({"operation": "replace_text", "text": NOTE.replace("method 1", "mine now")}),
        json!({"operation": "replace_in_text", "old_text": "detail 1", "new_text": "detail one"}),
        json!({"operation": "replace_text", "text": NOTE.replace("# Method\nmethod 1\n## Detail\ndetail 1\n", "")}),
        json!({"operation": "replace_text", "text": NOTE.replace("# Results", "added to method\n# Results")}),
    ];
    for (i, op) in attempts.into_iter().enumerate() {
        let r = edit(&mut w, &other, &note, op, &format!("other-{i}"));
        assert_eq!(r["error"], "claim_conflict", "attempt {i}: {r}");
        assert_eq!((r["section_id"].as_str(), r["held_by"].as_str()), (Some("method"), Some("CLAUDE")));
        assert!(r["expires_at"].is_string() && r["message"].as_str().unwrap().contains("section method"));
    }
    let r = replace_section(&mut w, &ada, &note, "detail", "## Detail\nthe person's\n", "ada-1");
    assert_eq!(r["error"], "claim_conflict", "a subsection is inside the claimed section: {r}");
    // The people's door: a whole-tab save from the editor.
    let put = rest_put(&mut w, &ada, &note, &NOTE.replace("method 1", "typed in the editor"));
    assert_eq!((put.0, put.1["error"].as_str()), (409, Some("claim_conflict")), "{}", put.1);
    assert_eq!((text(&mut w, &note), w.version(&ada, &note)), before, "nothing was written");
}

fn rest_put(w: &mut World, who: &Identity, note: &str, body: &str) -> (u16, Value) {
    use cairn_notes::rest::{self, Incoming, Query};
    let v = w.version(who, note);
    let path = format!("/api/v1/notes/{note}/tabs/markdown");
    let (route, params) = rest::route("PUT", &path).unwrap();
    let query = Query::new();
    let payload = serde_json::to_vec(&json!({"expected_version": v, "text": body})).unwrap();
    let key = format!("put-{v}");
    let r = route.serve(&w.kv, &mut w.env, who, Incoming { params, query: &query, body: &payload, idempotency_key: Some(&key) }).unwrap();
    (r.status, r.body)
}

#[test]
fn writes_elsewhere_in_the_note_pass_while_a_section_is_held() {
    let mut w = World::new();
    let (note, ada, bot, other) = setup(&mut w);
    claim_section(&mut w, &bot, &note, "method");
    let r = edit(&mut w, &other, &note, json!({"operation": "replace_in_text", "old_text": "intro 2", "new_text": "intro two"}), "o-1");
    assert!(r.get("error").is_none(), "{r}");
    // A line added right before the claimed heading belongs to the section above it.
    let r = edit(&mut w, &other, &note, json!({"operation": "replace_in_text", "old_text": "intro two\n", "new_text": "intro two\nintro three\n"}), "o-2");
    assert!(r.get("error").is_none(), "{r}");
    let now = text(&mut w, &note);
    let put = rest_put(&mut w, &ada, &note, &now.replace("results 1", "results by a person"));
    assert_eq!(put.0, 200, "{}", put.1);
    assert!(text(&mut w, &note).contains("# Method\nmethod 1\n## Detail\ndetail 1\n# Results\nresults by a person\n"));
}

#[test]
fn the_holder_cannot_write_outside_its_section() {
    let mut w = World::new();
    let (note, _ada, bot, _other) = setup(&mut w);
    claim_section(&mut w, &bot, &note, "method");
    let before = text(&mut w, &note);
    let r = edit(&mut w, &bot, &note, json!({"operation": "replace_in_text", "old_text": "results 1", "new_text": "results 2"}), "b-1");
    assert_eq!((r["error"].as_str(), r["section_id"].as_str(), r["line"].as_u64()), (Some("outside_claim"), Some("method"), Some(10)), "{r}");
    assert!(r["next_step"].as_str().unwrap().contains("release_claim"));
    let r = edit(&mut w, &bot, &note, json!({"operation": "replace_text", "text": "# Method\nmethod 1\n"}), "b-2");
    assert_eq!(r["error"], "outside_claim");
    assert_eq!(text(&mut w, &note), before, "nothing was written");
    // Inside, any operation goes, and a line added at the section's end stays in it.
    let r = edit(&mut w, &bot, &note, json!({"operation": "replace_in_text", "old_text": "detail 1\n", "new_text": "detail 1\ndetail 2\n"}), "b-3");
    assert!(r.get("error").is_none(), "{r}");
    assert!(text(&mut w, &note).contains("detail 2\n# Results"));
}

#[test]
fn a_holder_entering_another_holders_section_is_told_about_that_holder_whatever_the_claim_order() {
    for bot_first in [true, false] {
        let mut w = World::new();
        let (note, _ada, bot, other) = setup(&mut w);
        let (first, second) = if bot_first { (&bot, &other) } else { (&other, &bot) };
        claim_section(&mut w, first, &note, if bot_first { "intro" } else { "results" });
        claim_section(&mut w, second, &note, if bot_first { "results" } else { "intro" });
        let before = text(&mut w, &note);
        let r = replace_section(&mut w, &bot, &note, "results", "# Results\ntaken over\n", "bot-in-results");
        assert_eq!((r["error"].as_str(), r["section_id"].as_str()), (Some("claim_conflict"), Some("results")), "bot first {bot_first}: {r}");
        assert_eq!(text(&mut w, &note), before, "nothing was written");
    }
}

#[test]
fn the_holder_renaming_its_section_keeps_the_claim() {
    let mut w = World::new();
    let (note, _ada, bot, other) = setup(&mut w);
    claim_section(&mut w, &bot, &note, "method");
    let r = replace_section(&mut w, &bot, &note, "method", "# Methods\nrewritten\n", "b-1");
    assert_eq!(r["section_id"], "methods", "{r}");
    let board = w.board(&bot);
    assert_eq!(board[0]["section_id"], "methods");
    let r = replace_section(&mut w, &other, &note, "methods", "# Methods\ntaken\n", "o-1");
    assert_eq!(r["error"], "claim_conflict", "the claim followed the rename: {r}");
    let o = w.ok(&other, "read_note_outline", json!({"note_id": note}));
    let methods = o["sections"].as_array().unwrap().iter().find(|s| s["section_id"] == "methods").unwrap().clone();
    assert_eq!(methods["claimed_by"]["held_by"], "CLAUDE");
}

#[test]
fn two_writers_and_a_person_edit_three_sections_side_by_side() {
    let mut w = World::new();
    let (note, ada, bot, other) = setup(&mut w);
    claim_section(&mut w, &bot, &note, "intro");
    claim_section(&mut w, &other, &note, "results");
    claim_section(&mut w, &ada, &note, "method");
    // Each reads once, then all write on the versions they read: no false conflicts.
    let reads: Vec<(Identity, &str, Value)> = [(bot.clone(), "intro"), (other.clone(), "results"), (ada.clone(), "method")]
        .into_iter()
        .map(|(who, id)| {
            let s = section(&mut w, &who, &note, id);
            (who, id, s)
        })
        .collect();
    for (i, (who, id, s)) in reads.iter().enumerate() {
        let body = format!("{}\nby {}\n", s["text"].as_str().unwrap().lines().next().unwrap(), who.subject);
        let r = w.call(
            who,
            "edit_note_tab",
            json!({"note_id": note, "tab_id": "markdown", "expected_version": s["version"],
            "idempotency_key": format!("side-{i}"), "operation": "replace_section", "section_id": id,
            "expected_section_hash": s["section_hash"], "text": body}),
        )["structuredContent"]
            .clone();
        assert!(r.get("error").is_none(), "{who:?} on {id}: {r}");
    }
    assert_eq!(text(&mut w, &note), "Preamble\n# Intro\nby claude\n# Method\nby ada\n# Results\nby gpt\n");
}

#[test]
fn section_claims_exclude_overlapping_claims_only() {
    let mut w = World::new();
    let (note, ada, bot, other) = setup(&mut w);
    claim_section(&mut w, &bot, &note, "detail");
    // The parent holds the child's lines; the tab and the note hold everything.
    let r = claim_section(&mut w, &other, &note, "method");
    assert_eq!((r["error"].as_str(), r["section_id"].as_str()), (Some("claim_conflict"), Some("detail")), "{r}");
    assert_eq!(w.claim(&other, &note, Some("markdown"))["error"], "claim_conflict");
    assert_eq!(w.claim(&other, &note, None)["error"], "claim_conflict");
    assert!(claim_section(&mut w, &other, &note, "results").get("error").is_none());
    // One holder holds one section of a tab.
    let r = claim_section(&mut w, &bot, &note, "intro");
    assert_eq!((r["error"].as_str(), r["held_by_you"].as_bool()), (Some("claim_conflict"), Some(true)), "{r}");
    // Claiming the same section again is a heartbeat.
    let again = claim_section(&mut w, &bot, &note, "detail");
    assert_eq!(again["renewed"], true);
    // A tab claim keeps section claims out.
    let note2 = w.note(&ada, "Other", true);
    w.write_text(&ada, &note2, NOTE, "n2");
    w.claim_ok(&ada, &note2, Some("markdown"));
    assert_eq!(claim_section(&mut w, &bot, &note2, "intro")["error"], "claim_conflict");
}

#[test]
fn a_released_or_lapsed_section_claim_holds_nothing() {
    let mut w = World::new();
    let (note, _ada, bot, other) = setup(&mut w);
    let c = w.call(&bot, "claim_note", json!({"note_id": note, "tab_id": "markdown", "section_id": "method", "ttl_seconds": 60}))["structuredContent"].clone();
    assert!(c.get("error").is_none(), "{c}");
    w.advance_s(61);
    let r = edit(&mut w, &other, &note, json!({"operation": "replace_in_text", "old_text": "method 1", "new_text": "method one"}), "o-1");
    assert!(r.get("error").is_none(), "{r}");
    let r = edit(&mut w, &bot, &note, json!({"operation": "replace_in_text", "old_text": "results 1", "new_text": "results one"}), "b-1");
    assert!(r.get("error").is_none(), "the lapsed claim no longer fences its holder: {r}");
}

#[test]
fn bad_section_claims_are_refused_naming_the_field() {
    let mut w = World::new();
    let (note, ada, bot, _other) = setup(&mut w);
    let r = w.refused(&bot, "claim_note", json!({"note_id": note, "section_id": "method"}));
    assert_eq!((r["error"].as_str(), r["field"].as_str()), (Some("invalid_argument"), Some("tab_id")));
    let r = w.refused(&bot, "claim_note", json!({"note_id": note, "tab_id": "markdown", "section_id": "nope"}));
    assert_eq!((r["error"].as_str(), r["field"].as_str()), (Some("not_found"), Some("section_id")));
    let r = w.refused(&bot, "claim_note", json!({"note_id": note, "tab_id": "markdown", "section_id": "has space"}));
    assert_eq!((r["error"].as_str(), r["field"].as_str()), (Some("invalid_argument"), Some("section_id")));
    let deck = w.create_tab(&ada, &note, "slides", "Deck");
    let r = w.refused(&bot, "claim_note", json!({"note_id": note, "tab_id": deck, "section_id": "intro"}));
    assert_eq!(r["field"], "section_id");
    assert!(w.board(&bot).is_empty(), "nothing was claimed");
}
