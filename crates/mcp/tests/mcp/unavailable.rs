//! A tool or its store out of reach stops the whole request: no result can
//! be trusted to have happened or not, so nothing is answered but 503 and
//! a message to retry with the same idempotency keys, and the messages after
//! it do not run.
use crate::common::*;
use cairn_mcp::Answer;
use serde_json::json;

const RETRY: &str = "; retry the request (same idempotency keys) shortly";

fn unavailable(answer: Answer) -> String {
    assert_eq!(answer.status(), 503, "{answer:?}");
    match answer {
        Answer::Unavailable(why) => why,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_store_out_of_reach_answers_503_naming_the_tool_and_asking_for_a_retry() {
    let core = Core::new();
    core.faults.set_unavailable(true);
    let why = unavailable(post(&core, &agent(), call(1, "list_notes", json!({})).to_string().as_bytes(), &[]).unwrap());
    assert!(why.starts_with("tool list_notes: ") && why.ends_with(RETRY), "{why}");
}

#[test]
fn the_messages_after_an_unreachable_call_do_not_run() {
    let core = Core::new();
    let note = core.note(&person(), "Full disk", true);
    core.faults.set_full(true);
    let edit = json!({"note_id": note, "tab_id": "markdown", "expected_version": 1, "idempotency_key": "full", "operation": "replace_text", "text": "y"});
    let batch = json!([
        call(1, "list_notes", json!({})),
        call(2, "edit_note_tab", edit),
        call(3, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"})),
        rpc(4, "ping", json!({})),
    ]);
    let why = unavailable(post(&core, &agent(), batch.to_string().as_bytes(), &[]).unwrap());
    assert!(why.starts_with("tool edit_note_tab: ") && why.ends_with(RETRY), "{why}");
    assert_eq!(core.calls(), ["list_notes", "edit_note_tab"]);
}

#[test]
fn a_resource_read_with_the_store_out_of_reach_stops_the_request_too() {
    let core = Core::new();
    let note = core.note(&person(), "Out of reach", true);
    core.faults.set_unavailable(true);
    for (method, params) in [("resources/read", json!({"uri": format!("cairn://notes/{note}")})), ("resources/list", json!({}))] {
        let why = unavailable(post(&core, &agent(), rpc(1, method, params).to_string().as_bytes(), &[]).unwrap());
        assert!(why.ends_with(RETRY), "{method}: {why}");
    }
}
