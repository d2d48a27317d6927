//! Secrets and tokens never reach the log: a run that uses every kind of
//! credential (agent and person bearer tokens, refused ones too, the
//! identity secret on the HTTP transport between router and tools, the sweep and
//! metrics tokens, the sign-in link's person token) and fails in every way
//! it can leaves none of them in a log line, nor in any error it answers.
use crate::app::*;
use serde_json::json;

#[test]
fn no_token_or_secret_appears_in_the_log_or_in_an_answer() {
    let cairn = start_with(
        vec![
            ("SPIN_VARIABLE_SWEEP_TOKEN", "sweep-Zq81kPx"),
            ("SPIN_VARIABLE_METRICS_TOKEN", "metrics-Wm52nRt"),
            ("SPIN_VARIABLE_IDENTITY_SECRET", "identity-Hv73jLs-9c1e0b7a4d2f6e83"),
            ("SPIN_VARIABLE_TOOL_TRANSPORT", "http"),
        ],
        vec![],
    );
    let agent_token = cairn.token(&agent());
    let person_token = cairn.token(&person());
    let foreign = stranger().sign(&cairn.claims(&agent()));
    let mut answers = Vec::new();
    let note = cairn.create_note(&person(), "Secrets", true);
    for (token, tool, args) in [
        (&agent_token, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"})),
        (
            &agent_token,
            "edit_note_tab",
            json!({"note_id": note, "tab_id": "markdown", "expected_version": 99, "idempotency_key": "k", "operation": "replace_text", "text": "x"}),
        ),
        (&agent_token, "read_note_tab", json!({"note_id": "nope", "tab_id": "markdown"})),
        (&foreign, "list_notes", json!({})),
        (&"not.a.token".to_string(), "list_notes", json!({})),
    ] {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}});
        answers.push(cairn.mcp(token, &body));
    }
    answers.push(cairn.rest(&person_token, "GET", &format!("/api/v1/notes/{note}"), None));
    answers.push(cairn.rest(&person_token, "PUT", &format!("/api/v1/notes/{note}/tabs/markdown"), Some(&json!({"expected_version": 7, "text": "x"}))));
    answers.push(cairn.rest("sweep-wrong", "POST", "/api/v1/sweep-claims?tenant=acme", None));
    answers.push(cairn.rest("sweep-Zq81kPx", "POST", "/api/v1/sweep-claims?tenant=acme", None));
    answers.push(cairn.request("GET", "/metrics", &[("authorization", "Bearer metrics-Wm52nRt")], b""));
    answers.push(cairn.request("GET", "/metrics", &[("authorization", "Bearer metrics-wrong")], b""));
    let log = cairn.log();
    assert!(log.contains("request"), "the run logged its requests: {log}");
    // The startup banner prints a token and a sign-in link for the operator
    // on purpose; everything after it is the log proper.
    let after_banner = log.lines().filter(|l| !l.contains("Bearer token") && !l.contains("#token=")).collect::<Vec<_>>().join("\n");
    let secrets = [agent_token.as_str(), person_token.as_str(), foreign.as_str(), "sweep-Zq81kPx", "metrics-Wm52nRt", "identity-Hv73jLs"];
    for secret in secrets {
        // A token's signature alone is enough to give it away.
        let tail = &secret[secret.len().saturating_sub(16)..];
        assert!(!after_banner.contains(tail), "the log holds a secret ending {tail}:\n{after_banner}");
        for a in &answers {
            assert!(!a.text().contains(tail), "an answer holds a secret ending {tail}: {}", a.text());
        }
    }
}
