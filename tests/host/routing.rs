//! Routing by the manifest's triggers, and one log line per request.
use crate::harness::*;

#[test]
fn public_routes_are_served_and_unknown_paths_get_404() {
    require_built(&["health.wasm", "kv_probe.wasm"]);
    let cairn = Cairn::start(Start::default());
    let ok = cairn.get("/healthz");
    assert_eq!(ok.status, 200);
    assert_eq!(ok.json()["status"], "ok");
    assert_eq!(ok.header("content-type"), Some("application/json"));
    let missing = cairn.get("/no/such/route");
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"], "not_found");
}

#[test]
fn private_routes_are_not_reachable_from_outside() {
    require_built(&["health.wasm", "misbehave.wasm"]);
    // In the fixture manifest `health` is private.
    let cairn = Cairn::start(Start { manifest: fixtures(), ..Start::default() });
    assert_eq!(cairn.get("/healthz").status, 404);
}

#[test]
fn every_request_is_logged_once_with_component_status_and_latency() {
    require_built(&["health.wasm", "kv_probe.wasm"]);
    let cairn = Cairn::start(Start::default());
    for _ in 0..3 {
        assert_eq!(cairn.get("/healthz").status, 200);
    }
    cairn.get("/nope");
    let log = cairn.wait_for_log("path=/nope");
    assert_eq!(count_lines(&log, &["request", "component=health", "status=200", "latency_us=", "path=/healthz"]), 3, "{log}");
    assert_eq!(count_lines(&log, &["request", "status=404", "path=/nope"]), 1, "{log}");
}
