//! Every built component imports only what Spin's platform world offers
//! (read from Spin's own source, `../shared/spin`) and what Cairn's
//! contract in wit/ names, and is a WASI 0.3 service; the check itself
//! refuses what it must.
use crate::harness::*;
use cairn::cmd::compat::{Offered, check_manifest, satisfies, spin_wit, split};

fn spin_world() -> Offered {
    Offered::from_wit_dir(&spin_wit(&root(), None).unwrap(), "spin:up", "platform").unwrap()
}

#[test]
fn every_component_in_spin_toml_is_spin_compatible() {
    require_built(&["health.wasm", "kv_probe.wasm"]);
    let problems = check_manifest(&root().join("spin.toml"), &root(), None).unwrap();
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_check_sees_key_value_imports_of_the_probe() {
    require_built(&["kv_probe.wasm"]);
    let (imports, exports) = cairn::cmd::compat::component_interfaces(&root().join("target/wasm32-wasip2/wasm/kv_probe.wasm")).unwrap();
    assert!(imports.iter().any(|i| i == "wasi:keyvalue/atomics@0.2.0-draft2"), "{imports:?}");
    assert!(exports.iter().any(|e| e == "wasi:http/handler@0.3.0"), "a WASI 0.3 service: {exports:?}");
}

#[test]
fn a_core_module_or_a_cut_component_is_refused_naming_the_file() {
    require_built(&["kv_probe.wasm"]);
    let dir = scratch("compat-bad");
    let core = dir.join("core.wasm");
    std::fs::write(&core, b"\0asm\x01\0\0\0").unwrap();
    let err = format!("{:#}", cairn::cmd::compat::component_interfaces(&core).unwrap_err());
    assert!(err.contains("core.wasm is not a WebAssembly component"), "{err}");
    let whole = std::fs::read(root().join("target/wasm32-wasip2/wasm/kv_probe.wasm")).unwrap();
    let cut = dir.join("cut.wasm");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let err = format!("{:#}", cairn::cmd::compat::component_interfaces(&cut).unwrap_err());
    assert!(err.contains("cut.wasm is not a valid component"), "{err}");
}

#[test]
fn imports_spin_does_not_offer_are_refused() {
    let spin = spin_world();
    assert!(spin.refuse("wasi:keyvalue/store@0.2.0-draft2").is_none());
    assert!(spin.refuse("wasi:http/types@0.2.0").is_none());
    assert!(spin.refuse("wasi:http/types@0.2.6").is_none());
    assert!(spin.refuse("fermyon:spin/variables@2.0.0").is_none());
    assert!(spin.refuse("wasi:http/handler@0.3.0").is_none() || spin.refuse("wasi:http/client@0.3.0").is_none());
    assert!(spin.refuse("wasi:http/client@0.3.0").is_none(), "Spin 4.1 offers the final WASI 0.3 client");
    // Newer than Spin's 0.2.6, as a newer `wasi` crate would import.
    let newer = spin.refuse("wasi:http/types@0.2.12").expect("0.2.12 must be refused");
    assert!(newer.contains("0.2.6"), "{newer}");
    assert!(spin.refuse("wasi:keyvalue/store@0.2.0-draft3").is_some());
    assert!(spin.refuse("wasi:nn/inference@0.2.0").is_some());
}

#[test]
fn imports_outside_our_contract_are_refused() {
    let ours = Offered::from_wit_dir(&root().join("wit"), "cairn:platform", "guest").unwrap();
    assert!(ours.refuse("wasi:keyvalue/atomics@0.2.0-draft2").is_none());
    assert!(ours.refuse("fermyon:spin/variables@2.0.0").is_none());
    // The host offers Spin's older key-value interface; the contract does not use it.
    assert!(ours.refuse("fermyon:spin/key-value@2.0.0").is_some());
    // Spin offers these, our contract does not.
    assert!(ours.refuse("fermyon:spin/llm@2.0.0").is_some());
    assert!(ours.refuse("spin:postgres/postgres@4.0.0").is_some());
}

#[test]
fn versions_compare_the_way_hosts_link_them() {
    let v = |s: &str| split(&format!("x:y/z@{s}")).1;
    assert!(satisfies(&v("0.2.6"), &v("0.2.0")));
    assert!(!satisfies(&v("0.2.6"), &v("0.2.12")));
    assert!(!satisfies(&v("0.3.0"), &v("0.2.0")));
    assert!(satisfies(&v("2.1.0"), &v("2.0.3")));
    assert!(!satisfies(&v("0.2.0-draft2"), &v("0.2.0-draft")));
}

#[test]
fn a_dependency_must_export_what_the_manifest_says_and_fill_a_real_import() {
    require_built(&["health.wasm", "kv_probe.wasm", "read_note_tab.wasm"]);
    let wasm = |n: &str| root().join(format!("target/wasm32-wasip2/wasm/{n}.wasm")).display().to_string();
    let dir = scratch("compat-deps");
    let manifest = dir.join("spin.toml");
    std::fs::write(
        &manifest,
        format!(
            "spin_manifest_version = 2\n[application]\nname = \"t\"\n\
             [component.health]\nsource = \"{}\"\n[component.health.dependencies]\n\
             \"not-imported\" = {{ path = \"{}\", export = \"cairn:platform/tool@0.1.0\" }}\n\
             \"also-not-imported\" = {{ path = \"{}\", export = \"cairn:platform/tool@0.1.0\" }}\n",
            wasm("health"),
            wasm("kv_probe"),
            wasm("read_note_tab"),
        ),
    )
    .unwrap();
    let problems = check_manifest(&manifest, &root(), None).unwrap();
    // kv_probe exports no tool interface; read_note_tab does.
    assert!(problems.iter().any(|p| p.contains("\"not-imported\"") && p.contains("does not export cairn:platform/tool@0.1.0")), "{problems:#?}");
    assert!(!problems.iter().any(|p| p.contains("\"also-not-imported\"") && p.contains("does not export")), "{problems:#?}");
    // health imports neither name.
    assert!(problems.iter().any(|p| p.contains("\"also-not-imported\"") && p.contains("imports no such name")), "{problems:#?}");
}
