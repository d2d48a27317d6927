//! The kv-probe component reports, rule by rule, that the store keeps the
//! CAS promise — and stays hidden from anyone without the operator token.
use crate::harness::*;

fn with_token() -> Cairn {
    require_built(&["health.wasm", "kv_probe.wasm"]);
    Cairn::start(Start { env: vec![("SPIN_VARIABLE_KV_PROBE_TOKEN", "operator-secret")], ..Start::default() })
}

#[test]
fn probe_reports_every_cas_rule_kept_on_sqlite_and_memory() {
    for store in ["sqlite", "memory"] {
        require_built(&["kv_probe.wasm"]);
        let cairn = Cairn::start(Start { env: vec![("SPIN_VARIABLE_KV_PROBE_TOKEN", "operator-secret")], args: vec!["--store", store], ..Start::default() });
        let r = cairn.request("GET", "/.well-known/cairn/kv-probe", &[("authorization", "Bearer operator-secret")], b"");
        assert_eq!(r.status, 200, "{}", r.text());
        let report = r.json();
        let checks = report["checks"].as_array().unwrap();
        assert_eq!(checks.len(), cairn_kv::conformance::SEQUENTIAL.len(), "the probe runs the whole sequential catalogue");
        for c in checks {
            assert_eq!(c["pass"], true, "{store}: rule {} failed: {}", c["rule"], c["detail"]);
        }
        assert_eq!(report["keeps_cas_promise"], true);
    }
}

#[test]
fn probe_is_hidden_without_a_configured_token() {
    require_built(&["kv_probe.wasm"]);
    let cairn = Cairn::start(Start::default());
    let r = cairn.request("GET", "/.well-known/cairn/kv-probe", &[("authorization", "Bearer anything")], b"");
    assert_eq!(r.status, 404);
}

#[test]
fn probe_refuses_a_wrong_token() {
    let cairn = with_token();
    let r = cairn.request("GET", "/.well-known/cairn/kv-probe", &[("authorization", "Bearer guess")], b"");
    assert_eq!(r.status, 401);
    assert_eq!(cairn.get("/.well-known/cairn/kv-probe").status, 401);
}

#[test]
fn probe_leaves_no_keys_behind() {
    use cairn_kv::Store;
    let cairn = with_token();
    let auth = [("authorization", "Bearer operator-secret")];
    assert_eq!(cairn.request("GET", "/.well-known/cairn/kv-probe", &auth, b"").status, 200);
    let state = cairn.state_dir.clone();
    let (status, log) = cairn.terminate();
    assert!(status.success(), "{log}");
    let store = cairn_kv_sqlite::SqliteStore::open(&state.join("kv.db"), false).unwrap();
    let left = store.list_keys("default", None, 100).unwrap();
    assert!(left.iter().all(|k| !k.starts_with("kv-probe/")), "probe keys left behind: {left:?}");
}

#[test]
fn probe_does_not_run_a_harmful_check_on_a_store_nobody_vouches_for() {
    require_built(&["kv_probe.wasm"]);
    // commit_check on: the operator does not vouch for the store.
    let cairn =
        Cairn::start(Start { env: vec![("SPIN_VARIABLE_KV_PROBE_TOKEN", "operator-secret"), ("SPIN_VARIABLE_COMMIT_CHECK", "on")], ..Start::default() });
    let report = cairn.request("GET", "/.well-known/cairn/kv-probe", &[("authorization", "Bearer operator-secret")], b"").json();
    let checks = report["checks"].as_array().unwrap();
    let (skipped, ran): (Vec<&serde_json::Value>, Vec<&serde_json::Value>) = checks.iter().partition(|c| c["run"] == false);
    let names: Vec<&str> = skipped.iter().map(|c| c["rule"].as_str().unwrap()).collect();
    assert_eq!(names, ["increment_refuses_a_value_that_is_not_a_counter"], "{report}");
    assert!(skipped[0]["detail"].as_str().unwrap().contains("commit_check"), "the report says how to run it: {report}");
    assert!(ran.iter().all(|c| c["pass"] == true), "{report}");
    assert_eq!((report["keeps_cas_promise"].is_null(), report["vouched"].as_bool()), (true, Some(false)), "not known, not false: {report}");
}
