//! An agent over MCP and a person over REST append unique lines to one tab
//! at the same time, each read → write → on conflict re-read and re-apply:
//! no line is ever lost.
use crate::app::*;
use serde_json::json;
use std::sync::Arc;

const EDITS: usize = 150;

#[test]
fn two_writers_that_reapply_on_conflict_lose_no_line() {
    let cairn = Arc::new(start_with(vec![("SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE", "1000000")], vec![]));
    let note = cairn.create_note(&person(), "race", true);
    let agent_token = cairn.token(&agent());
    let person_token = cairn.token(&person());

    let agent = {
        let (cairn, note, t) = (cairn.clone(), note.clone(), agent_token.clone());
        std::thread::spawn(move || {
            let mut conflicts = 0;
            for i in 0..EDITS {
                let mut key = 0;
                loop {
                    let read = cairn.call(&t, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
                    let sc = &read["structuredContent"];
                    let text = format!("{}agent-{i}\n", sc["text"].as_str().unwrap());
                    key += 1;
                    let w = cairn.call(
                        &t,
                        "edit_note_tab",
                        json!({"note_id": note, "tab_id": "markdown",
                        "expected_version": sc["version"], "idempotency_key": format!("agent-{i}-{key}"),
                        "operation": "replace_text", "text": text}),
                    );
                    if w["isError"] == false {
                        break;
                    }
                    assert_eq!(w["structuredContent"]["error"], "version_conflict", "{w}");
                    conflicts += 1;
                }
            }
            conflicts
        })
    };
    let person = {
        let (cairn, note, t) = (cairn.clone(), note.clone(), person_token.clone());
        std::thread::spawn(move || {
            let mut conflicts = 0;
            for i in 0..EDITS {
                loop {
                    let read = cairn.call(&t, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
                    let sc = &read["structuredContent"];
                    let text = format!("{}person-{i}\n", sc["text"].as_str().unwrap());
                    let r =
                        cairn.rest(&t, "PUT", &format!("/api/v1/notes/{note}/tabs/markdown"), Some(&json!({"expected_version": sc["version"], "text": text})));
                    if r.status == 200 {
                        break;
                    }
                    assert_eq!(r.status, 409, "{}", r.text());
                    conflicts += 1;
                }
            }
            conflicts
        })
    };
    let (a, p) = (agent.join().unwrap(), person.join().unwrap());
    let read = cairn.call(&agent_token, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    let text = read["structuredContent"]["text"].as_str().unwrap().to_string();
    let lines: Vec<&str> = text.lines().collect();
    for i in 0..EDITS {
        assert!(lines.contains(&format!("agent-{i}").as_str()), "agent-{i} lost");
        assert!(lines.contains(&format!("person-{i}").as_str()), "person-{i} lost");
    }
    assert_eq!(lines.len(), 2 * EDITS, "duplicated or foreign lines");
    eprintln!("conflicts: agent {a}, person {p}; no line lost");
}
