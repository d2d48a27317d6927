//! `completion/complete` for the resource templates' arguments: ids the
//! caller may see, ranked, bounded, and a clear error for anything else.
use crate::common::*;
use serde_json::{Value, json};

fn complete(core: &Core, who: &cairn_auth::Principal, uri: &str, name: &str, value: &str, context: Value) -> Value {
    let params = json!({"ref": {"type": "ref/resource", "uri": uri}, "argument": {"name": name, "value": value}, "context": context});
    ask(core, who, "completion/complete", params)
}

fn values(r: &Value) -> Vec<String> {
    let v = r["result"]["completion"]["values"].as_array().unwrap_or_else(|| panic!("{r}"));
    v.iter().map(|v| v.as_str().unwrap().to_string()).collect()
}

fn error(r: &Value) -> (i64, String) {
    (r["error"]["code"].as_i64().unwrap_or_else(|| panic!("{r}")), r["error"]["message"].as_str().unwrap().to_string())
}

#[test]
fn a_note_id_completes_from_titles_the_caller_may_see_ranked_by_prefix() {
    let core = Core::new();
    let roadmap = core.note(&person(), "Roadmap 2027", true);
    let launch = core.note(&person(), "Launch: the roadmap part", true);
    let _other = core.note(&person(), "Budget", true);
    let hidden = core.note(&person(), "Roadmap draft", false);
    let r = complete(&core, &agent(), "cairn://notes/{note_id}", "note_id", "road", json!({}));
    assert_eq!(values(&r), [roadmap.clone(), launch.clone()], "title prefix first, then anywhere; the unapproved note is not named: {r}");
    assert_eq!((r["result"]["completion"]["total"].as_u64(), r["result"]["completion"]["hasMore"].as_bool()), (Some(2), Some(false)));
    // A person sees the unapproved note too; another tenant sees none of them.
    assert!(values(&complete(&core, &person(), "cairn://notes/{note_id}", "note_id", "ROAD", json!({}))).contains(&hidden));
    assert!(values(&complete(&core, &stranger(), "cairn://notes/{note_id}", "note_id", "", json!({}))).is_empty());
}

#[test]
fn a_tab_id_completes_from_the_tabs_of_the_note_in_context() {
    let core = Core::new();
    let note = core.note(&person(), "Tabs", true);
    let made: Value = serde_json::from_str(&core.direct(
        &person(),
        "create_note_tab",
        json!({"note_id": note, "expected_version": 1, "idempotency_key": "k", "tab_type": "sheet", "label": "Budget sheet"}),
    ))
    .unwrap();
    let sheet = made["structuredContent"]["tab_id"].as_str().unwrap_or_else(|| panic!("{made}")).to_string();
    let uri = "cairn://notes/{note_id}/tabs/{tab_id}";
    assert_eq!(values(&complete(&core, &agent(), uri, "tab_id", "budget", json!({"arguments": {"note_id": note}}))), [sheet]);
    assert_eq!(values(&complete(&core, &agent(), uri, "tab_id", "mark", json!({"arguments": {"note_id": note}}))), ["markdown"]);
    let (code, message) = error(&complete(&core, &agent(), uri, "tab_id", "", json!({})));
    assert_eq!(code, -32602);
    assert!(message.contains("context.arguments.note_id"), "{message}");
    let (code, _) = error(&complete(&core, &stranger(), uri, "tab_id", "", json!({"arguments": {"note_id": note}})));
    assert_eq!(code, -32002, "another tenant's note does not exist for it");
}

#[test]
fn a_completion_answers_at_most_a_hundred_values_and_says_there_are_more() {
    let core = Core::new();
    for i in 0..120 {
        core.note(&person(), &format!("Meeting {i}"), true);
    }
    let before = core.calls().len();
    let r = complete(&core, &agent(), "cairn://notes/{note_id}", "note_id", "meet", json!({}));
    assert_eq!(values(&r).len(), cairn_mcp::completion::MAX_VALUES, "{r}");
    assert_eq!(r["result"]["completion"]["total"], 120);
    assert_eq!(r["result"]["completion"]["hasMore"], true);
    assert_eq!(core.calls().len() - before, 3, "three pages of 50 read, no more");
}

#[test]
fn a_completion_reads_at_most_four_pages_of_notes_and_says_it_stopped() {
    let core = Core::new();
    for i in 0..cairn_mcp::completion::SCANNED + 30 {
        core.note(&person(), &format!("Note {i}"), true);
    }
    core.note(&person(), "Zebra, the last one", true);
    let before = core.calls().len();
    let r = complete(&core, &agent(), "cairn://notes/{note_id}", "note_id", "zebra", json!({}));
    assert_eq!(core.calls().len() - before, cairn_mcp::completion::PAGES, "no more than its pages read");
    assert!(values(&r).is_empty(), "the note past the pages read is not looked at: {r}");
    assert_eq!((r["result"]["completion"]["total"].as_u64(), r["result"]["completion"]["hasMore"].as_bool()), (Some(0), Some(true)), "{r}");
}

#[test]
fn what_cannot_be_completed_is_refused_naming_what_was_wrong() {
    let core = Core::new();
    let cases = [
        (json!({"argument": {"name": "note_id", "value": ""}}), "params.ref"),
        (json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "x", "value": ""}}), "no prompts"),
        (json!({"ref": {"type": "ref/resource", "uri": "test://watched"}, "argument": {"name": "x", "value": ""}}), "not a Cairn resource template"),
        (json!({"ref": {"type": "ref/resource", "uri": "cairn://notes/{note_id}"}, "argument": {"name": "tab_id", "value": ""}}), "no argument \"tab_id\""),
        (json!({"ref": {"type": "ref/resource", "uri": "cairn://notes/{note_id}"}, "argument": {"name": "note_id"}}), "argument.value"),
        (json!({"ref": {"type": "ref/resource", "uri": "cairn://notes/{note_id}"}, "argument": {"name": "note_id", "value": "x".repeat(300)}}), "longer than"),
    ];
    for (params, says) in cases {
        let (code, message) = error(&ask(&core, &agent(), "completion/complete", params.clone()));
        assert_eq!(code, -32602, "{params}");
        assert!(message.contains(says), "{params}: {message}");
    }
    assert!(core.calls().is_empty(), "nothing was read for a malformed completion");
}

#[test]
fn both_eras_declare_completions_and_logging() {
    let core = Core::new();
    let init = ask(&core, &agent(), "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}));
    let discover = ask(&core, &agent(), "server/discover", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}));
    for r in [&init, &discover] {
        assert_eq!((&r["result"]["capabilities"]["completions"], &r["result"]["capabilities"]["logging"]), (&json!({}), &json!({})), "{r}");
    }
}

#[test]
fn a_known_log_level_is_acknowledged_and_an_unknown_one_is_refused_with_the_levels() {
    let core = Core::new();
    for level in cairn_mcp::logging::LEVELS {
        assert_eq!(ask(&core, &agent(), "logging/setLevel", json!({"level": level}))["result"], json!({}), "{level}");
    }
    let (code, message) = error(&ask(&core, &agent(), "logging/setLevel", json!({"level": "verbose"})));
    assert_eq!(code, -32602);
    assert!(message.contains("\"verbose\"") && message.contains("warning"), "{message}");
    let (code, _) = error(&ask(&core, &agent(), "logging/setLevel", json!({})));
    assert_eq!(code, -32602);
}
