//! Outbound HTTP: `<id>.spin.internal` is served in-process, including
//! private components; hosts missing from `allowed_outbound_hosts` are denied;
//! stores missing from `key_value_stores` are denied.
use crate::harness::*;

fn fixture() -> Cairn {
    require_built(&["health.wasm", "misbehave.wasm"]);
    Cairn::start(Start { manifest: fixtures(), ..Start::default() })
}

#[test]
fn spin_internal_reaches_a_private_component_in_process() {
    let cairn = fixture();
    let r = cairn.get("/misbehave/chain");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().starts_with("200 "), "{}", r.text());
    assert!(r.text().contains(r#""status":"ok""#), "{}", r.text());
}

#[test]
fn a_host_missing_from_allowed_outbound_hosts_is_denied() {
    let cairn = fixture();
    let r = cairn.get("/misbehave/denied");
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.text().contains("outbound failed"), "{}", r.text());
    let log = cairn.wait_for_log("outbound request denied");
    assert!(log.contains("outbound request denied"), "{log}");
}

#[test]
fn a_store_missing_from_key_value_stores_is_access_denied() {
    let cairn = fixture();
    let r = cairn.get("/misbehave/kv");
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(r.text().contains("AccessDenied"), "{}", r.text());
}
