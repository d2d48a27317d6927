//! Every route of `spin.toml` reaches its own component, on a real Spin and
//! on the embedded host alike, read from what each host logs about the
//! request (Spin's trace line "Executing request ... for component <id>",
//! the embedded host's `request component=<id> ... path=<path>` line): no
//! header or route is added to find out.
//!
//! Spin's router (`routefinder` 0.5.4) does not order routes totally: with
//! the editor on the root wildcard `/...`, `/mcp`, `/healthz`, the probe
//! and the protected-resource metadata went to the editor
//! (docs/upstream/spin-router-root-wildcard.md). The editor is routed at `/`,
//! `/index.html` and `/ui/...` instead, which both hosts order the same way.
use crate::app::*;
use crate::harness::*;
use crate::spin_harness::*;
use crate::spin_or_skip;
use cairn::manifest::{Manifest, Route};

/// One request path per route of the manifest, with the component that
/// must serve it: an exact route's path, a wildcard's prefix plus `/x`.
fn route_table() -> Vec<(String, String)> {
    let m = Manifest::load(&root().join("spin.toml")).expect("spin.toml loads");
    let mut table = Vec::new();
    for c in &m.components {
        for r in &c.routes {
            let path = match r {
                Route::Exact(p) if p.is_empty() => "/".to_string(),
                Route::Exact(p) => p.clone(),
                Route::Wildcard(prefix) => format!("{prefix}/x"),
                Route::Private => continue,
            };
            table.push((path, c.id.clone()));
        }
    }
    assert!(table.len() > 20, "the manifest's routes: {table:?}");
    table
}

/// Sends every path of the table, and one no route takes.
fn visit(host: &Cairn, table: &[(String, String)]) {
    for (path, _) in table {
        host.get(path);
    }
    assert_eq!(host.get("/no/such/route").status, 404);
}

#[test]
fn a_root_wildcard_beside_other_routes_is_named_as_a_spin_hazard_and_spin_toml_has_none() {
    let m = Manifest::load(&root().join("spin.toml")).unwrap();
    assert_eq!(m.spin_route_hazards(), Vec::<String>::new());
    let dir = scratch("root-wildcard");
    let p = dir.join("spin.toml");
    std::fs::write(
        &p,
        "spin_manifest_version = 2\n[application]\nname = \"t\"\n\
         [[trigger.http]]\nroute = \"/...\"\ncomponent = \"page\"\n\
         [[trigger.http]]\nroute = \"/mcp\"\ncomponent = \"api\"\n\
         [component.page]\nsource = \"a.wasm\"\n[component.api]\nsource = \"b.wasm\"\n",
    )
    .unwrap();
    let hazards = Manifest::load(&p).unwrap().spin_route_hazards();
    assert_eq!(hazards.len(), 1, "{hazards:?}");
    assert!(hazards[0].contains("\"page\"") && hazards[0].contains("/ui/..."), "{hazards:?}");
    // Alone, a root wildcard takes everything on Spin too.
    std::fs::write(&p, "spin_manifest_version = 2\n[application]\nname = \"t\"\n[[trigger.http]]\nroute = \"/...\"\ncomponent = \"page\"\n[component.page]\nsource = \"a.wasm\"\n").unwrap();
    assert!(Manifest::load(&p).unwrap().spin_route_hazards().is_empty());
}

#[test]
fn every_route_reaches_its_own_component_on_the_embedded_host() {
    let table = route_table();
    let cairn = start();
    visit(&cairn, &table);
    let log = cairn.wait_for_log("path=/no/such/route ");
    for (path, component) in &table {
        let served: Vec<&str> = log.lines().filter(|l| l.contains(" request") && l.contains(&format!(" path={path} "))).collect();
        assert!(!served.is_empty() && served.iter().all(|l| l.contains(&format!("component={component} "))), "{path} should reach {component}: {served:?}");
    }
}

#[test]
fn every_route_reaches_its_own_component_on_spin() {
    spin_or_skip!();
    let table = route_table();
    let spin = Spin::start(SpinStart::default());
    visit(&spin, &table);
    let mut wrong = Vec::new();
    for (path, component) in &table {
        let served = spin.served_by(path);
        if served != [component.clone()] {
            wrong.push(format!("{path}: {served:?}, not {component}"));
        }
    }
    assert!(wrong.is_empty(), "on Spin:\n{}", wrong.join("\n"));
    assert!(spin.served_by("/no/such/route").is_empty(), "a path no route takes reached a component");
}
