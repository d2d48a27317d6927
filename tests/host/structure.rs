//! The code's shape, checked: no crate of the workspace has a cycle among
//! its top-level modules (a module that names another through `crate::`
//! depends on it; a cycle means neither can be read, tested or moved
//! without the other). Unit tests (`#[cfg(test)]` and after) are left out:
//! a test may reach any module.
use crate::harness::root;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every crate's `src/` in the workspace.
fn crate_sources() -> Vec<PathBuf> {
    let root = root();
    let mut out = vec![root.join("src"), root.join("guest/src"), root.join("bench/src")];
    for group in ["crates", "components"] {
        for entry in std::fs::read_dir(root.join(group)).unwrap().flatten() {
            let src = entry.path().join("src");
            if src.is_dir() {
                out.push(src);
            }
        }
    }
    out
}

/// The top-level module a source file belongs to (`None`: the crate root).
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_string_lossy().to_string();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (!matches!(name.as_str(), "lib" | "main")).then_some(name)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Top-level module → the other top-level modules it names.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| top_module(src, f)).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = modules.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for f in &files {
        let Some(from) = top_module(src, f) else { continue };
        let text = std::fs::read_to_string(f).unwrap();
        // A file's unit tests (from its `#[cfg(test)]` on) may use any module:
        // they are not part of the graph the build depends on.
        let code = text.lines().take_while(|l| l.trim() != "#[cfg(test)]");
        for line in code.filter(|l| !l.trim_start().starts_with("//")) {
            for (i, _) in line.match_indices("crate::") {
                // `cairn_notes::x` is another crate; `crate::x` this one.
                if i > 0 && line[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                    continue;
                }
                let rest = &line[i + "crate::".len()..];
                let mut names: Vec<&str> = Vec::new();
                if let Some(group) = rest.strip_prefix('{') {
                    names.extend(group.split([',', '}']).map(|n| n.trim().split("::").next().unwrap_or("").trim()));
                } else {
                    names.push(rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or(""));
                }
                for n in names {
                    if n != from && modules.contains(n) {
                        g.get_mut(&from).unwrap().insert(n.to_string());
                    }
                }
            }
        }
    }
    g
}

/// A cycle in `g`, if there is one, as the modules along it.
fn cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(n: &str, g: &BTreeMap<String, BTreeSet<String>>, state: &mut BTreeMap<String, u8>, path: &mut Vec<String>) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for m in &g[n] {
            match state.get(m).copied().unwrap_or(0) {
                1 => {
                    let start = path.iter().position(|p| p == m).unwrap();
                    let mut c = path[start..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(m, g, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if state.get(n).copied().unwrap_or(0) == 0
            && let Some(c) = visit(n, g, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

#[test]
fn no_crate_has_a_module_cycle() {
    let mut found = Vec::new();
    for src in crate_sources() {
        if let Some(c) = cycle(&graph(&src)) {
            found.push(format!("{}: {}", src.display(), c.join(" → ")));
        }
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

#[test]
fn the_cycle_check_finds_a_cycle_when_there_is_one() {
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_string(), ["b".to_string()].into()),
        ("b".to_string(), ["c".to_string()].into()),
        ("c".to_string(), ["a".to_string()].into()),
        ("d".to_string(), BTreeSet::new()),
    ]
    .into();
    assert_eq!(cycle(&g), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
    let acyclic: BTreeMap<String, BTreeSet<String>> = [("a".to_string(), ["b".to_string()].into()), ("b".to_string(), BTreeSet::new())].into();
    assert_eq!(cycle(&acyclic), None);
}
