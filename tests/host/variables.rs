//! Variables: manifest defaults, component templates, and
//! `SPIN_VARIABLE_<NAME>` overrides from the environment.
use crate::harness::*;

#[test]
fn component_variables_expand_the_manifest_default() {
    require_built(&["health.wasm", "misbehave.wasm"]);
    let cairn = Cairn::start(Start { manifest: fixtures(), ..Start::default() });
    assert_eq!(cairn.get("/misbehave/variable").text(), "hello from the manifest!");
}

#[test]
fn spin_variable_environment_overrides_the_default() {
    require_built(&["health.wasm", "misbehave.wasm"]);
    let cairn = Cairn::start(Start { manifest: fixtures(), env: vec![("SPIN_VARIABLE_GREETING", "hi")], ..Start::default() });
    assert_eq!(cairn.get("/misbehave/variable").text(), "hi!");
}

#[test]
fn a_required_variable_without_a_value_stops_startup_with_its_name() {
    let dir = scratch("required");
    let manifest = dir.join("spin.toml");
    std::fs::write(&manifest, "spin_manifest_version = 2\n[application]\nname = \"x\"\n[variables]\napi_key = { required = true }\n").unwrap();
    let log = Cairn::try_start(Start { manifest, ..Start::default() }).err().expect("startup must fail");
    assert!(log.contains("api_key") && log.contains("SPIN_VARIABLE_API_KEY"), "{log}");
}
