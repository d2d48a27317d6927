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

/// The most lines a function outside the benchmarks may take, from its
/// `fn` line to its closing brace: what fits a screen.
const MAX_FUNCTION_LINES: usize = 70;

/// The functions of `text` (up to its unit tests) longer than `max` lines:
/// (name, first line, lines). A function ends at the first line that closes
/// a brace at its own indentation (rustfmt's layout).
fn long_functions(text: &str, max: usize) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines.windows(2).position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod ")).unwrap_or(lines.len());
    let mut out = Vec::new();
    let mut i = 0;
    while i < end {
        let line = lines[i];
        let indent = line.len() - line.trim_start().len();
        let Some(name) = fn_name(line.trim_start()) else {
            i += 1;
            continue;
        };
        let open = (i..end).find(|j| lines[*j].trim_end().ends_with('{') || lines[*j].trim_end().ends_with(';'));
        let Some(open) = open.filter(|j| lines[*j].trim_end().ends_with('{')) else {
            i = open.map_or(end, |j| j + 1);
            continue;
        };
        let close = (open + 1..lines.len()).find(|j| {
            let l = lines[*j];
            l.len() > indent && l[..indent].trim().is_empty() && l[indent..].starts_with('}')
        });
        let close = close.unwrap_or(lines.len() - 1);
        if close - i + 1 > max {
            out.push((name, i + 1, close - i + 1));
        }
        i = close + 1;
    }
    out
}

/// The name of the function a line declares, if it declares one.
fn fn_name(line: &str) -> Option<String> {
    let mut rest = line;
    for prefix in ["pub(crate) ", "pub(super) ", "pub ", "const ", "async ", "unsafe ", "extern \"C\" "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let name = rest.strip_prefix("fn ")?;
    Some(name.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect())
}

#[test]
fn no_function_outside_the_benchmarks_passes_seventy_lines() {
    let mut long = Vec::new();
    for src in crate_sources().into_iter().filter(|s| !s.starts_with(root().join("bench"))) {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in files {
            for (name, line, n) in long_functions(&std::fs::read_to_string(&f).unwrap(), MAX_FUNCTION_LINES) {
                long.push(format!("{}:{line} {name}: {n} lines", f.strip_prefix(root()).unwrap().display()));
            }
        }
    }
    assert!(long.is_empty(), "functions over {MAX_FUNCTION_LINES} lines:\n{}", long.join("\n"));
}

#[test]
fn the_length_check_finds_a_long_function_and_skips_unit_tests() {
    let body: String = (0..70).map(|i| format!("    let x{i} = {i};\n")).collect();
    let long = format!("pub(crate) fn long() {{\n{body}}}\n\nfn short() {{\n    let y = 1;\n}}\n");
    assert_eq!(long_functions(&long, 70), vec![("long".to_string(), 1, 72)]);
    let in_tests = format!("fn short() {{}}\n\n#[cfg(test)]\nmod tests {{\n{}}}\n", long.replace("pub(crate) fn", "    fn"));
    assert!(long_functions(&in_tests, 70).is_empty());
}

/// The targets of a package manifest whose test harness is off
/// (`test = false`): `"lib"`, or the path of a `[[bin]]`.
fn untested_targets(manifest: &str) -> Vec<String> {
    let table: toml::Table = toml::from_str(manifest).expect("a package manifest parses");
    let off = |t: &toml::Value| t.get("test").and_then(toml::Value::as_bool) == Some(false);
    let mut out = Vec::new();
    if table.get("lib").is_some_and(off) {
        out.push("lib".to_string());
    }
    for bin in table.get("bin").and_then(toml::Value::as_array).into_iter().flatten().filter(|b| off(b)) {
        out.push(bin.get("path").and_then(toml::Value::as_str).unwrap_or("src/main.rs").to_string());
    }
    out
}

/// Whether Rust source holds a unit test.
fn has_unit_tests(text: &str) -> bool {
    text.lines().any(|l| matches!(l.trim(), "#[test]" | "#[cfg(test)]"))
}

/// A target whose test harness is off (so that `cargo test` does not compile
/// and link a harness with no test in it) holds no unit test, which would
/// otherwise never run.
#[test]
fn a_target_without_a_test_harness_has_no_unit_test() {
    let mut found = Vec::new();
    for src in crate_sources() {
        let dir = src.parent().unwrap();
        for target in untested_targets(&std::fs::read_to_string(dir.join("Cargo.toml")).unwrap()) {
            let mut files = Vec::new();
            if target == "lib" {
                rust_files(&src, &mut files);
                files.retain(|f| f != &src.join("main.rs") && !f.starts_with(src.join("bin")));
            } else {
                files.push(dir.join(&target));
            }
            found.extend(files.into_iter().filter(|f| has_unit_tests(&std::fs::read_to_string(f).unwrap())).map(|f| f.display().to_string()));
        }
    }
    assert!(found.is_empty(), "unit tests in targets whose harness is off (`test = false`): {found:?}");
}

#[test]
fn the_harness_check_reads_lib_and_bin_targets_and_finds_a_unit_test() {
    let manifest = "[package]\nname = \"x\"\n[lib]\ntest = false\n[[bin]]\nname = \"x\"\npath = \"src/x.rs\"\ntest = false\n[[bin]]\nname = \"y\"\n";
    assert_eq!(untested_targets(manifest), ["lib", "src/x.rs"]);
    assert!(has_unit_tests("fn f() {}\n#[cfg(test)]\nmod tests {}\n"));
    assert!(!has_unit_tests("//! #[test] in a comment is not a test\nfn f() {}\n"));
}
