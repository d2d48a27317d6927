//! `GET /metrics`: hidden without the operator's token, and after a small
//! load its counts add up: requests by component, route and status, tool
//! calls by tool and outcome on both transports, store operations and swaps.
use crate::app::*;
use serde_json::json;
use std::time::Duration;

/// The value of the sample `name{labels}` (labels in the exporter's order), 0 if absent.
pub(crate) fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(series, _)| {
            let (n, rest) = series.split_once('{').unwrap_or((series, ""));
            n == name && labels.iter().all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")))
        })
        .map(|(_, v)| v.parse::<f64>().unwrap())
        .sum()
}

/// `GET /metrics` with the operator token the tests configure (`scrape-me`).
pub(crate) fn scrape(cairn: &crate::harness::Cairn) -> String {
    let r = cairn.request("GET", "/metrics", &[("authorization", "Bearer scrape-me")], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("content-type").unwrap().starts_with("text/plain"));
    r.text()
}

#[test]
fn metrics_are_hidden_without_the_token_and_refuse_a_wrong_one() {
    let hidden = start();
    assert_eq!(hidden.get("/metrics").status, 404);
    let cairn = start_with(vec![("SPIN_VARIABLE_METRICS_TOKEN", "scrape-me")], vec![]);
    assert_eq!(cairn.get("/metrics").status, 401);
    assert_eq!(cairn.request("GET", "/metrics", &[("authorization", "Bearer guess")], b"").status, 401);
}

#[test]
fn after_a_small_load_the_counts_add_up() {
    let cairn = start_with(vec![("SPIN_VARIABLE_METRICS_TOKEN", "scrape-me")], vec![]);
    let agent = cairn.token(&agent());
    let note = cairn.create_note(&person(), "metered", true);
    for _ in 0..5 {
        let r = cairn.call(&agent, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
        assert_eq!(r["isError"], false);
    }
    for _ in 0..3 {
        let r = cairn.call(&agent, "read_note_tab", json!({"note_id": note, "tab_id": "no-such-tab"}));
        assert_eq!(r["structuredContent"]["error"], "not_found");
    }
    let stale = cairn.call(
        &agent,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "operation": "replace_text",
        "text": "x\n", "expected_version": 99, "idempotency_key": "metrics-stale"}),
    );
    assert_eq!(stale["structuredContent"]["error"], "version_conflict");
    for _ in 0..2 {
        assert_eq!(cairn.get("/healthz").status, 200);
    }
    let text = scrape(&cairn);
    let tool = |outcome: &str| sample(&text, "cairn_tool_calls_total", &[("tool", "read_note_tab"), ("transport", "composed"), ("outcome", outcome)]);
    assert_eq!((tool("ok"), tool("not_found")), (5.0, 3.0), "{text}");
    assert_eq!(sample(&text, "cairn_tool_calls_total", &[("tool", "edit_note_tab"), ("outcome", "version_conflict")]), 1.0);
    // Every tool call came in as one request to the router's /mcp, all 200.
    let mcp = sample(&text, "cairn_http_requests_total", &[("component", "router"), ("route", "/mcp"), ("status", "200")]);
    assert_eq!(mcp, 9.0, "{text}");
    assert_eq!(sample(&text, "cairn_http_request_duration_seconds_count", &[("component", "router"), ("route", "/mcp")]), mcp);
    assert_eq!(sample(&text, "cairn_http_requests_total", &[("component", "health"), ("status", "200")]), 2.0);
    assert_eq!(sample(&text, "cairn_http_requests_total", &[("component", "rest"), ("status", "201")]), 1.0, "the note's creation");
    // The note's creation wrote through swaps; the refused edit wrote nothing.
    assert!(sample(&text, "cairn_cas_swaps_total", &[("store", "default"), ("outcome", "written")]) >= 1.0, "{text}");
    let ops = |name: &str, op: &str| sample(&text, name, &[("store", "default"), ("op", op)]);
    let reads: f64 = ["get", "read", "get_many"].iter().map(|op| ops("cairn_store_operations_total", op)).sum();
    assert!(reads >= 9.0, "each tool call reads the note's head at least once: {reads}");
    for op in ["get", "read", "get_many"] {
        assert_eq!(ops("cairn_store_operation_duration_seconds_count", op), ops("cairn_store_operations_total", op), "{op}");
    }
    // Instances are reused (unless CAIRN_MAX_INSTANCE_REUSE_COUNT=1), then
    // end after their idle timeout (1 s).
    let live = sample(&text, "cairn_instances_in_use", &[]);
    assert!((0.0..=16.0).contains(&live), "the few instances that served (a pool per connection thread) stay for their next request: {live}");
    let mut in_use = live;
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(100));
        in_use = sample(&scrape(&cairn), "cairn_instances_in_use", &[]);
        if in_use == 0.0 {
            break;
        }
    }
    assert_eq!(in_use, 0.0, "idle instances end after their idle timeout");
}

#[test]
fn tool_calls_over_http_are_counted_on_their_road() {
    let cairn = start_with(vec![("SPIN_VARIABLE_METRICS_TOKEN", "scrape-me"), ("SPIN_VARIABLE_TOOL_TRANSPORT", "http")], vec![]);
    let agent = cairn.token(&agent());
    let note = cairn.create_note(&person(), "over http", true);
    for _ in 0..4 {
        cairn.call(&agent, "list_note_tabs", json!({"note_id": note}));
    }
    let text = scrape(&cairn);
    assert_eq!(sample(&text, "cairn_tool_calls_total", &[("tool", "list_note_tabs"), ("transport", "http"), ("outcome", "ok")]), 4.0, "{text}");
    assert_eq!(sample(&text, "cairn_tool_calls_total", &[("tool", "list_note_tabs"), ("transport", "composed")]), 0.0);
}
