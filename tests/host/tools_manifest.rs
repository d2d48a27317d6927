//! `spin.toml` and the core's tool table name the same tools: every tool in
//! `cairn_notes::tools::TOOLS` has its component (route `/tools/<tool>`, the
//! default store, the identity secret and the commit check, its build), its
//! `tool_url_<tool>` variable (defaulting to the component in this
//! application), the router's mapping and outbound host for it, the
//! router's dependency composing it (Spin's component dependencies, the
//! same `.wasm`, its `cairn:platform/tool` export) and its slot in
//! `wit/tools.wit`'s `router-slots` world; and nothing in the manifest or
//! the slot list names a tool the table does not have. Adding a tool and
//! forgetting a block fails here, naming what is missing.
use crate::harness::root;
use cairn::manifest::{Manifest, Route};
use cairn_notes::tools::TOOLS;

/// The interface every tool component exports for composition.
const TOOL_EXPORT: &str = "cairn:platform/tool@0.1.0";

/// The import names of `wit/tools.wit`'s `router-slots` world.
fn slots() -> Vec<String> {
    let mut resolve = wit_parser::Resolve::default();
    let (pkg, _) = resolve.push_dir(root().join("wit")).unwrap();
    let world = resolve.packages[pkg].worlds["router-slots"];
    resolve.worlds[world].imports.keys().map(|k| resolve.name_world_key(k)).collect()
}

/// The manifest with its variables at their defaults (as a host without
/// overrides resolves them).
fn manifest() -> Manifest {
    let mut m = Manifest::load(&root().join("spin.toml")).unwrap();
    let defaults = m.variables.iter().map(|(k, v)| (k.clone(), v.default.clone().unwrap_or_default())).collect();
    m.resolve_outbound(&defaults).unwrap();
    m
}

#[test]
fn every_tool_in_the_table_has_its_component_variable_route_and_outbound_host() {
    let m = manifest();
    let router = m.component("router").expect("the router component");
    let mut missing = Vec::new();
    for tool in TOOLS {
        let id = tool.component();
        let var = format!("tool_url_{}", tool.name);
        match m.component(&id) {
            None => missing.push(format!("{}: no [component.{id}]", tool.name)),
            Some(c) => {
                if c.routes != [Route::Exact(format!("/tools/{}", tool.name))] {
                    missing.push(format!("{}: component {id} needs exactly the route /tools/{}", tool.name, tool.name));
                }
                if c.key_value_stores != ["default", "cache"] {
                    missing.push(format!("{}: component {id} must open the default store and the cache (for identity nonces), only", tool.name));
                }
                for var in ["identity_secret", "commit_check"] {
                    if !c.variables.contains_key(var) {
                        missing.push(format!("{}: component {id} lacks the variable {var}", tool.name));
                    }
                }
                if !c.source.ends_with(format!("target/wasm32-wasip2/wasm/{}.wasm", tool.name)) {
                    missing.push(format!("{}: component {id} has source {}", tool.name, c.source.display()));
                }
                let builds = c.build.as_ref().is_some_and(|b| b.command.split_whitespace().any(|w| w == id));
                if !builds {
                    missing.push(format!("{}: component {id} has no build command building -p {id}", tool.name));
                }
            }
        }
        match m.variables.get(&var).and_then(|v| v.default.as_deref()) {
            Some(d) if d == format!("http://{id}.spin.internal") => {}
            _ => missing.push(format!("{}: no application variable {var} defaulting to http://{id}.spin.internal", tool.name)),
        }
        if router.variables.get(&var).map(|t| t.replace(' ', "")) != Some(format!("{{{{{var}}}}}")) {
            missing.push(format!("{}: the router lacks {var} = \"{{{{ {var} }}}}\"", tool.name));
        }
        if !router.allowed_outbound_hosts.iter().any(|r| r.allows("http", &format!("{id}.spin.internal"), 80)) {
            missing.push(format!("{}: the router may not call http://{id}.spin.internal", tool.name));
        }
        match router.dependencies.iter().find(|d| d.import == id) {
            None => missing.push(format!("{}: [component.router.dependencies] lacks \"{id}\"", tool.name)),
            Some(d) => {
                if !d.source.ends_with(format!("target/wasm32-wasip2/wasm/{}.wasm", tool.name)) {
                    missing.push(format!("{}: the router's dependency {id} is {}", tool.name, d.source.display()));
                }
                if d.export != TOOL_EXPORT {
                    missing.push(format!("{}: the router's dependency {id} must fill it with {TOOL_EXPORT}", tool.name));
                }
                if !d.inherit {
                    missing.push(format!("{}: the router's dependency {id} must inherit its configuration", tool.name));
                }
            }
        }
        if !slots().contains(&id) {
            missing.push(format!("{}: wit/tools.wit's router-slots world has no import {id}", tool.name));
        }
    }
    assert!(missing.is_empty(), "spin.toml is missing parts of tools in the table:\n{}", missing.join("\n"));
}

#[test]
fn the_manifest_names_no_tool_the_table_lacks() {
    let m = manifest();
    let known: Vec<String> = TOOLS.iter().map(|t| t.component()).collect();
    let mut extra = Vec::new();
    for c in &m.components {
        let tool_route = c.routes.iter().any(|r| matches!(r, Route::Exact(p) | Route::Wildcard(p) if p.starts_with("/tools")));
        if tool_route && !known.contains(&c.id) {
            extra.push(format!("component {} is routed under /tools but is no tool in the table", c.id));
        }
    }
    for var in m.variables.keys().filter_map(|v| v.strip_prefix("tool_url_")) {
        if !TOOLS.iter().any(|t| t.name == var) {
            extra.push(format!("variable tool_url_{var} names no tool in the table"));
        }
    }
    let router = m.component("router").unwrap();
    for d in &router.dependencies {
        if !known.contains(&d.import) {
            extra.push(format!("router dependency {} names no tool in the table", d.import));
        }
    }
    for slot in slots() {
        if !known.contains(&slot) {
            extra.push(format!("wit/tools.wit's router-slots import {slot} names no tool in the table"));
        }
    }
    for var in router.variables.keys().filter_map(|v| v.strip_prefix("tool_url_")) {
        if !TOOLS.iter().any(|t| t.name == var) {
            extra.push(format!("router variable tool_url_{var} names no tool in the table"));
        }
    }
    assert!(extra.is_empty(), "{}", extra.join("\n"));
}
