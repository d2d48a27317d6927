//! Every tool's wiring is generated from the core's tool table
//! (`cairn generate`, [`cairn::wiring`]): the tree holds exactly what the
//! table implies, a missing or stale piece is named with the line to
//! write, and a new tool needs nothing but its file and its table line.
use crate::harness::root;
use cairn::manifest::{Manifest, Route};
use cairn::wiring::{self, TOOL_EXPORT, ToolName};
use cairn_notes::tools::TOOLS;
use std::path::{Path, PathBuf};

/// The files the generator touches, copied into a scratch root.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cairn-wiring-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for file in ["spin.toml", "guest/src/slots.rs", wiring::TOOLS_LIST_FIXTURE] {
        let to = dir.join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root().join(file), &to).unwrap();
    }
    copy_dir(&root().join("wit"), &dir.join("wit"));
    for t in wiring::table() {
        for file in ["Cargo.toml", "src/lib.rs"] {
            let rel = format!("components/{}/{file}", t.component());
            let to = dir.join(&rel);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(root().join(&rel), &to).unwrap();
        }
    }
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The manifest at `dir` with its variables at their defaults.
fn manifest(dir: &Path) -> Manifest {
    let mut m = Manifest::load(&dir.join("spin.toml")).unwrap();
    let defaults = m.variables.iter().map(|(k, v)| (k.clone(), v.default.clone().unwrap_or_default())).collect();
    m.resolve_outbound(&defaults).unwrap();
    m
}

/// The import names of the `router-slots` world of the WIT at `dir`.
fn slots(dir: &Path) -> Vec<String> {
    let mut resolve = wit_parser::Resolve::default();
    let (pkg, _) = resolve.push_dir(dir.join("wit")).unwrap();
    let world = resolve.packages[pkg].worlds["router-slots"];
    resolve.worlds[world].imports.keys().map(|k| resolve.name_world_key(k)).collect()
}

#[test]
fn the_tree_holds_exactly_the_wiring_the_tool_table_generates() {
    let stale = wiring::check(&root(), &wiring::table());
    assert!(stale.is_empty(), "run `cairn generate`:\n{}", stale.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"));
}

#[test]
fn a_removed_tool_block_or_slot_is_named_with_the_line_to_write() {
    let dir = scratch("removed");
    let toml = std::fs::read_to_string(dir.join("spin.toml")).unwrap();
    let block = "[component.renew-claim.variables]\n";
    assert!(toml.contains(block));
    std::fs::write(dir.join("spin.toml"), toml.replace(block, "")).unwrap();
    let wit = std::fs::read_to_string(dir.join("wit/tools.wit")).unwrap();
    std::fs::write(dir.join("wit/tools.wit"), wit.replace("    import list-claims: interface {", "    import list-claimz: interface {")).unwrap();
    std::fs::remove_file(dir.join("components/claim-note/src/lib.rs")).unwrap();
    let stale: Vec<String> = wiring::check(&dir, &wiring::table()).iter().map(ToString::to_string).collect();
    let all = stale.join("\n");
    assert!(
        stale.iter().any(|s| s.starts_with("spin.toml: region tool-components is stale") && s.contains("expected `[component.renew-claim.variables]`")),
        "{all}"
    );
    assert!(stale.iter().any(|s| s.starts_with("wit/tools.wit: region router-slots") && s.contains("expected `    import list-claims: interface {`")), "{all}");
    assert!(stale.iter().any(|s| s == "components/claim-note/src/lib.rs: is missing (run `cairn generate`)"), "{all}");
    assert_eq!(stale.len(), 3, "{all}");
    // Regenerating mends all three.
    wiring::write(&dir, &wiring::table()).unwrap();
    assert_eq!(wiring::check(&dir, &wiring::table()), vec![]);
    assert_eq!(std::fs::read_to_string(dir.join("spin.toml")).unwrap(), toml);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_new_tool_needs_only_its_table_line_and_the_generator() {
    let dir = scratch("new-tool");
    let mut tools = wiring::table();
    tools.push(ToolName("summarize_note"));
    let stale = wiring::check(&dir, &tools);
    assert!(stale.iter().any(|s| s.file == "components/summarize-note/Cargo.toml"), "{stale:#?}");
    wiring::write(&dir, &tools).unwrap();
    assert_eq!(wiring::check(&dir, &tools), vec![]);

    let m = manifest(&dir);
    let c = m.component("summarize-note").expect("the new tool's component");
    assert_eq!(c.routes, [Route::Exact("/tools/summarize_note".into())]);
    assert_eq!(c.key_value_stores, ["default", "cache"]);
    assert!(c.source.ends_with("target/wasm32-wasip2/wasm/summarize_note.wasm"));
    assert!(c.build.as_ref().unwrap().command.split_whitespace().any(|w| w == "summarize-note"));
    for var in ["identity_secret", "commit_check", "tool_transport"] {
        assert!(c.variables.contains_key(var), "{var}");
    }
    let var = m.variables.get("tool_url_summarize_note").and_then(|v| v.default.clone());
    assert_eq!(var.as_deref(), Some("http://summarize-note.spin.internal"));
    let router = m.component("router").unwrap();
    assert!(router.allowed_outbound_hosts.iter().any(|r| r.allows("http", "summarize-note.spin.internal", 80)));
    assert!(router.variables.contains_key("tool_url_summarize_note"));
    let dep = router.dependencies.iter().find(|d| d.import == "summarize-note").expect("the router's dependency");
    assert!(dep.inherit && dep.export == TOOL_EXPORT && dep.source.ends_with("summarize_note.wasm"));
    assert!(slots(&dir).contains(&"summarize-note".to_string()));
    let arms = std::fs::read_to_string(dir.join("guest/src/slots.rs")).unwrap();
    assert!(arms.contains("\"summarize-note\" => slot!(summarize_note),"));
    let lib = std::fs::read_to_string(dir.join("components/summarize-note/src/lib.rs")).unwrap();
    assert!(lib.contains("cairn_guest::tool_component!(summarize_note);"));
    // Taking it out of the table again names its package as left over.
    let stale = wiring::check(&dir, &wiring::table());
    assert!(stale.iter().any(|s| s.file == "components/summarize-note" && s.what.contains("delete it")), "{stale:#?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_manifest_names_no_tool_the_table_lacks() {
    let m = manifest(&root());
    let known: Vec<String> = TOOLS.iter().map(|t| t.component()).collect();
    let mut extra = Vec::new();
    for c in &m.components {
        let tool_route = c.routes.iter().any(|r| matches!(r, Route::Exact(p) | Route::Wildcard(p) if p.starts_with("/tools")));
        if tool_route && !known.contains(&c.id) {
            extra.push(format!("component {} is routed under /tools but is no tool in the table", c.id));
        }
    }
    for slot in slots(&root()) {
        if !known.contains(&slot) {
            extra.push(format!("wit/tools.wit's router-slots import {slot} names no tool in the table"));
        }
    }
    assert!(extra.is_empty(), "{}", extra.join("\n"));
}

/// Each tool component links its own tool and no other: the tool's
/// description (the first words, before any figure is put in) is in its
/// own `.wasm` and in no other tool's. A tool component that reached the
/// table (`TOOLS`) would link every tool through their `TOOL` entries,
/// which once made every tool component as large as all of them together.
#[test]
fn each_tool_component_links_its_own_tool_alone() {
    let files: Vec<String> = TOOLS.iter().map(|t| format!("{}.wasm", t.name)).collect();
    crate::harness::require_built(&files.iter().map(String::as_str).collect::<Vec<_>>());
    let marks: Vec<(&str, String)> = TOOLS.iter().map(|t| (t.name, (t.description)().chars().take(24).collect())).collect();
    for (i, (name, mark)) in marks.iter().enumerate() {
        assert!(marks[..i].iter().all(|(_, m)| m != mark), "{name}'s description begins as another's: {mark:?}");
    }
    for (name, _) in &marks {
        // The marks are plain text: a lossy reading of the binary keeps them.
        let text = String::from_utf8_lossy(&std::fs::read(root().join(format!("target/wasm32-wasip2/wasm/{name}.wasm"))).unwrap()).into_owned();
        for (other, mark) in &marks {
            let found = text.contains(mark.as_str());
            if other == name {
                assert!(found, "{name}.wasm lacks its own tool ({mark:?})");
            } else {
                assert!(!found, "{name}.wasm links {other} too ({mark:?})");
            }
        }
    }
}
