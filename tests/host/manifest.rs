//! The manifest is read the way Spin reads it, and refused where Spin would.
use crate::harness::*;
use cairn::manifest::{Manifest, OutboundRule, Route};

fn load(text: &str) -> anyhow::Result<Manifest> {
    let dir = scratch("manifest");
    let p = dir.join("spin.toml");
    std::fs::write(&p, text).unwrap();
    Manifest::load(&p)
}

const HEAD: &str = "spin_manifest_version = 2\n[application]\nname = \"t\"\n";

#[test]
fn component_ids_must_be_kebab_case_as_in_spin() {
    let err = load(&format!("{HEAD}[component.list_note_tabs]\nsource = \"x.wasm\"\n")).unwrap_err();
    assert!(format!("{err:#}").contains("kebab-case"), "{err:#}");
    assert!(load(&format!("{HEAD}[component.list-note-tabs]\nsource = \"x.wasm\"\n")).is_ok());
}

#[test]
fn a_trigger_naming_an_unknown_component_is_refused() {
    let err = load(&format!("{HEAD}[[trigger.http]]\nroute = \"/a\"\ncomponent = \"ghost\"\n")).unwrap_err();
    assert!(format!("{err:#}").contains("ghost"), "{err:#}");
}

#[test]
fn exact_routes_beat_wildcards_and_longer_prefixes_win() {
    let m = load(&format!(
        "{HEAD}[[trigger.http]]\nroute = \"/...\"\ncomponent = \"all\"\n\
         [[trigger.http]]\nroute = \"/api/...\"\ncomponent = \"api\"\n\
         [[trigger.http]]\nroute = \"/api/health\"\ncomponent = \"exact\"\n\
         [[trigger.http]]\nroute = {{ private = true }}\ncomponent = \"hidden\"\n\
         [component.all]\nsource = \"a.wasm\"\n[component.api]\nsource = \"b.wasm\"\n\
         [component.exact]\nsource = \"c.wasm\"\n[component.hidden]\nsource = \"d.wasm\"\n"
    ))
    .unwrap();
    let at = |p: &str| m.route(p).map(|(c, _)| c.id.clone());
    assert_eq!(at("/api/health").as_deref(), Some("exact"));
    assert_eq!(at("/api/notes/1").as_deref(), Some("api"));
    assert_eq!(at("/api").as_deref(), Some("api"));
    assert_eq!(at("/apiary").as_deref(), Some("all"));
    assert_eq!(at("/").as_deref(), Some("all"));
    assert_eq!(m.component("hidden").unwrap().routes, vec![Route::Private]);
}

#[test]
fn outbound_rules_match_scheme_host_and_port() {
    let r = OutboundRule::parse("http://*.spin.internal").unwrap();
    assert!(r.allows("http", "router.spin.internal", 80));
    assert!(!r.allows("https", "router.spin.internal", 443));
    assert!(!r.allows("http", "spin.internal.evil.com", 80));
    let r = OutboundRule::parse("https://api.example.com:8443").unwrap();
    assert!(r.allows("https", "api.example.com", 8443));
    assert!(!r.allows("https", "api.example.com", 443));
    assert!(OutboundRule::parse("example.com").is_err());
}

#[test]
fn a_missing_wasm_file_names_the_component_and_the_fix() {
    let dir = scratch("missing");
    let manifest = dir.join("spin.toml");
    std::fs::write(&manifest, format!("{HEAD}[component.ghost]\nsource = \"nope.wasm\"\n")).unwrap();
    let log = Cairn::try_start(Start { manifest, ..Start::default() }).err().expect("startup must fail");
    assert!(log.contains("ghost") && log.contains("cairn build"), "{log}");
}

#[test]
fn dependencies_are_read_with_spins_inheritance_rules() {
    let m = load(&format!(
        "{HEAD}[component.router]\nsource = \"r.wasm\"\ndependencies_inherit_configuration = true\n\
         [component.router.dependencies]\n\"read-note-tab\" = {{ path = \"t.wasm\", export = \"cairn:platform/tool@0.1.0\" }}\n\
         \"ns:pkg/iface@1.0.0\" = {{ path = \"i.wasm\" }}\n"
    ))
    .unwrap();
    let deps = &m.component("router").unwrap().dependencies;
    let tab = deps.iter().find(|d| d.import == "read-note-tab").unwrap();
    assert!(tab.inherit && tab.source.ends_with("t.wasm") && tab.export == "cairn:platform/tool@0.1.0");
    // Without an export, the import's own name is the export.
    let iface = deps.iter().find(|d| d.import == "ns:pkg/iface@1.0.0").unwrap();
    assert_eq!(iface.export, "ns:pkg/iface@1.0.0");
    // Not inheriting is the default, as in Spin.
    let m = load(&format!("{HEAD}[component.a]\nsource = \"a.wasm\"\n[component.a.dependencies]\n\"x\" = {{ path = \"x.wasm\" }}\n")).unwrap();
    assert!(!m.component("a").unwrap().dependencies[0].inherit);
}

#[test]
fn dependency_mistakes_are_refused_naming_the_fix() {
    let cases = [
        // Plain names are kebab-case.
        ("\"read_note_tab\" = { path = \"t.wasm\" }", "kebab-case"),
        // Registry sources are not fetched.
        ("\"x\" = { version = \"1.0\", registry = \"example.com\" }", "registry"),
        // Partial inheritance is not offered.
        ("\"x\" = { path = \"x.wasm\", inherit_configuration = [\"key_value_stores\"] }", "all of the"),
        // A dependency naming a component that does not exist.
        ("\"x\" = { component = \"ghost\" }", "ghost"),
    ];
    for (line, needle) in cases {
        let text = format!("{HEAD}[component.a]\nsource = \"a.wasm\"\n[component.a.dependencies]\n{line}\n");
        let err = format!("{:#}", load(&text).unwrap_err());
        assert!(err.contains(needle) && err.contains("\"a\""), "{line}: {err}");
    }
    // Both inheritance switches at once.
    let err = load(&format!(
        "{HEAD}[component.a]\nsource = \"a.wasm\"\ndependencies_inherit_configuration = true\n\
         [component.a.dependencies]\n\"x\" = {{ path = \"x.wasm\", inherit_configuration = false }}\n"
    ))
    .unwrap_err();
    assert!(format!("{err:#}").contains("one or the other"), "{err:#}");
    // A component with its own configuration cannot be a dependency.
    let err = load(&format!(
        "{HEAD}[component.tool]\nsource = \"t.wasm\"\nkey_value_stores = [\"default\"]\n\
         [component.a]\nsource = \"a.wasm\"\n[component.a.dependencies]\n\"x\" = {{ component = \"tool\" }}\n"
    ))
    .unwrap_err();
    assert!(format!("{err:#}").contains("its own key_value_stores"), "{err:#}");
}
