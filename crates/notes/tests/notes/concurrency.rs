//! Many writers racing on one note: no lost lines, no duplicate tabs or sources.
use crate::common::*;
use cairn_notes::{Identity, SimEnv};
use serde_json::{Value, json};

fn call(kv: &TestKv, env: &mut SimEnv, who: &Identity, tool: &str, args: Value) -> Value {
    checked_call(kv, env, who, tool, args)["structuredContent"].clone()
}

#[test]
fn writers_that_reread_and_reapply_on_conflict_lose_no_lines() {
    let mut w = World::new();
    let note = w.note(&human("acme"), "Shared", true);
    let kv = &w.kv;
    let (writers, lines) = (4, 25);
    std::thread::scope(|s| {
        for t in 0..writers {
            let note = note.clone();
            s.spawn(move || {
                let who = identity("acme", &format!("w{t}"), if t % 2 == 0 { cairn_notes::ActorType::Agent } else { cairn_notes::ActorType::Human });
                let mut env = SimEnv::new(100 + t as u64);
                for i in 0..lines {
                    let mut attempt = 0;
                    loop {
                        attempt += 1;
                        let read = call(kv, &mut env, &who, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
                        let text = format!("{}line-{t}-{i}\n", read["text"].as_str().unwrap());
                        let r = call(
                            kv,
                            &mut env,
                            &who,
                            "edit_note_tab",
                            json!({"note_id": note, "tab_id": "markdown",
                            "expected_version": read["version"], "idempotency_key": format!("w{t}-{i}-{attempt}"),
                            "operation": "replace_text", "text": text}),
                        );
                        if r.get("error").is_none() {
                            break;
                        }
                        assert_eq!(r["error"], "version_conflict");
                        std::thread::yield_now();
                    }
                }
            });
        }
    });
    let text = w.tab(&human("acme"), &note, "markdown")["text"].as_str().unwrap().to_string();
    for t in 0..writers {
        for i in 0..lines {
            assert!(text.contains(&format!("line-{t}-{i}\n")), "line-{t}-{i} lost");
        }
    }
    assert_eq!(text.lines().count(), writers * lines);
    assert_eq!(w.version(&human("acme"), &note), 1 + (writers * lines) as u64);
}

#[test]
fn racing_resends_and_repeats_create_no_duplicate_tabs_or_sources() {
    let mut w = World::new();
    let note = w.note(&human("acme"), "Shared", true);
    let kv = &w.kv;
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let note = note.clone();
            s.spawn(move || {
                let who = agent("acme");
                let mut env = SimEnv::new(t + 1);
                for _ in 0..10 {
                    // The same create resent (same key, same base), and the same page cited with fresh keys.
                    let c = call(
                        kv,
                        &mut env,
                        &who,
                        "create_note_tab",
                        json!({"note_id": note, "expected_version": 1,
                        "idempotency_key": "the-deck", "tab_type": "slides"}),
                    );
                    assert!(c.get("error").is_none(), "{c}");
                    loop {
                        let v = call(kv, &mut env, &who, "list_note_tabs", json!({"note_id": note}))["version"].clone();
                        let key = format!("src-{t}-{}", env.now_us);
                        env.advance_us(1);
                        let r = call(
                            kv,
                            &mut env,
                            &who,
                            "add_note_source",
                            json!({"note_id": note, "expected_version": v,
                            "idempotency_key": key, "title": "Report", "url": format!("https://www.example.org/report/?utm_source={t}")}),
                        );
                        if r.get("error").is_none() {
                            break;
                        }
                    }
                }
            });
        }
    });
    let tabs = w.ok(&human("acme"), "list_note_tabs", json!({"note_id": note}));
    assert_eq!(tabs["tabs"].as_array().unwrap().iter().filter(|t| t["type"] == "slides").count(), 1);
    let att = w.ok(&human("acme"), "list_note_attachments", json!({"note_id": note, "kind": "sources"}));
    assert_eq!(att["total"], 1);
}
