//! Fuzzing what an operator writes (proptest, shrinking): the manifest,
//! mutated line by line from the real `spin.toml`; runtime config files of
//! random tables; `allowed_outbound_hosts` entries. No panic: each is read,
//! or refused with an error (a runtime config's names its file).
//! `CAIRN_FUZZ_CASES` cases per target (default 300).
use cairn::manifest::{Manifest, OutboundRule};
use cairn::stores::Stores;
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("CAIRN_FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(300)
}

/// One scratch dir per target for the whole run (each case overwrites its file).
fn dir(name: &'static str) -> std::path::PathBuf {
    use std::collections::BTreeMap;
    use std::sync::Mutex;
    static DIRS: Mutex<BTreeMap<&'static str, std::path::PathBuf>> = Mutex::new(BTreeMap::new());
    DIRS.lock().unwrap().entry(name).or_insert_with(|| crate::harness::scratch(name)).clone()
}

fn noise() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,30}",
        Just("\"\"".to_string()),
        Just("[]".to_string()),
        Just("{ private = true }".to_string()),
        Just("\"/...\"".to_string()),
        Just("\"{{ missing }}\"".to_string()),
        Just("2".to_string()),
        Just("\"http://*:*\"".to_string()),
    ]
}

#[derive(Debug, Clone)]
enum Edit {
    Drop(usize),
    Twice(usize),
    Value(usize, String),
    Cut(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<usize>().prop_map(Edit::Drop),
        any::<usize>().prop_map(Edit::Twice),
        (any::<usize>(), noise()).prop_map(|(i, v)| Edit::Value(i, v)),
        any::<usize>().prop_map(Edit::Cut),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn a_mutated_manifest_is_read_or_refused_with_a_message_and_never_panics(edits in proptest::collection::vec(edit(), 1..4)) {
        let original = std::fs::read_to_string(crate::harness::root().join("spin.toml")).unwrap();
        let mut lines: Vec<String> = original.lines().map(str::to_string).collect();
        for e in edits {
            if lines.is_empty() {
                break;
            }
            let n = lines.len();
            match e {
                Edit::Drop(i) => { lines.remove(i % n); }
                Edit::Twice(i) => { let l = lines[i % n].clone(); lines.insert(i % n, l); }
                Edit::Value(i, v) => {
                    let l = &mut lines[i % n];
                    if let Some((k, _)) = l.split_once('=') { *l = format!("{k}= {v}"); }
                }
                Edit::Cut(i) => lines.truncate(i % n),
            }
        }
        let dir = dir("fuzz-manifest");
        let path = dir.join("spin.toml");
        std::fs::write(&path, lines.join("\n")).unwrap();
        if let Err(e) = Manifest::load(&path) {
            let msg = format!("{e:#}");
            prop_assert!(!msg.is_empty(), "an empty error");
        }
    }

    #[test]
    fn a_random_runtime_config_is_read_or_refused_naming_the_field(label in "[a-z_]{0,8}", kind in prop_oneof![Just("redis".to_string()), Just("spin".to_string()), Just("memory".to_string()), "[a-z]{0,6}"], key in "[a-z_]{1,8}", value in noise()) {
        let dir = dir("fuzz-rc");
        let path = dir.join("rc.toml");
        std::fs::write(&path, format!("[key_value_store.{label}]\ntype = \"{kind}\"\n{key} = {value}\n")).unwrap();
        if let Err(e) = Stores::from_file(&path) {
            prop_assert!(format!("{e:#}").contains("rc.toml"), "the error does not name the file: {e:#}");
        }
    }

    #[test]
    fn an_outbound_host_entry_is_parsed_or_refused_without_a_panic(entry in prop_oneof!["\\PC{0,40}", "(https?|redis|\\*)://[a-z0-9.*{}-]{0,12}(:[0-9*]{0,6})?(/[a-z]{0,4})?"]) {
        if let Err(e) = OutboundRule::parse(&entry) {
            prop_assert!(!e.to_string().is_empty());
        }
    }
}
