//! One configuration, checked when the host starts: every variable of
//! `cairn-config`'s table that does not parse stops the start, naming it and
//! what it expected; and each component reads what its manifest entry hands
//! it, composed tools included.
use crate::app::*;
use crate::harness::*;
use cairn_config::{Kind, VARIABLES};
use serde_json::json;

/// A value each kind refuses.
fn refused_by(kind: Kind) -> Option<&'static str> {
    match kind {
        Kind::Text => None,
        Kind::Count { .. } => Some("10GB"),
        _ => Some("not valid at all"),
    }
}

#[test]
fn every_variable_that_does_not_parse_stops_the_start_naming_it_and_what_it_expected() {
    require_app();
    let mut checked = 0;
    for var in VARIABLES {
        let Some(bad) = refused_by(var.kind) else { continue };
        let env = format!("SPIN_VARIABLE_{}", var.name.to_ascii_uppercase());
        let log = Cairn::try_start(Start { env: vec![(&env, bad)], ..Start::default() }).err().unwrap_or_else(|| panic!("{} = {bad:?} started", var.name));
        assert!(log.contains(var.name) && log.contains(&env), "{}: {log}", var.name);
        assert!(log.contains(&var.kind.expected()), "{} names what it expected: {log}", var.name);
        if var.secret {
            assert!(!log.contains(bad), "{}: a secret's value is never repeated: {log}", var.name);
        }
        checked += 1;
    }
    assert!(checked >= 25, "only {checked} variables were checked");
}

#[test]
fn every_bad_variable_is_named_at_once() {
    require_app();
    let env = vec![("SPIN_VARIABLE_QUOTA_BYTES", "10GB"), ("SPIN_VARIABLE_TOOL_TRANSPORT", "smoke"), ("SPIN_VARIABLE_READ_MAX_CHARS", "12")];
    let log = Cairn::try_start(Start { env, ..Start::default() }).err().expect("must not start");
    for name in ["quota_bytes", "tool_transport", "read_max_chars"] {
        assert!(log.contains(name), "{name}: {log}");
    }
    assert!(log.contains("3 application variable(s)"), "{log}");
}

#[test]
fn a_renamed_variable_stops_the_start_naming_its_new_name() {
    require_app();
    for (old, new) in cairn_config::RENAMED {
        let env_name = format!("SPIN_VARIABLE_{}", old.to_ascii_uppercase());
        let log = Cairn::try_start(Start { env: vec![(env_name.as_str(), "http")], ..Start::default() }).err().expect("must not start");
        assert!(log.contains(&format!("{old} was renamed {new}")), "{log}");
    }
}

#[test]
fn the_read_cap_reaches_the_tools_composed_into_the_router() {
    require_app();
    let cairn = start_with(vec![("SPIN_VARIABLE_READ_MAX_CHARS", "1000")], vec![]);
    let (ada, bot) = (person(), agent());
    let note = cairn.create_note(&ada, "Capped", true);
    let text: String = (0..200).map(|i| format!("line {i:04} of the note\n")).collect();
    let w = cairn.rest(&cairn.token(&ada), "PUT", &format!("/api/v1/notes/{note}/tabs/markdown"), Some(&json!({"expected_version": 1, "text": text})));
    assert_eq!(w.status, 200, "{}", w.text());
    let r = cairn.call(&cairn.token(&bot), "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    let s = &r["structuredContent"];
    assert_eq!((s["truncated"].as_bool(), s["extent"].as_str()), (Some(true), Some("part")), "{s}");
    let chars = s["text"].as_str().unwrap().chars().count();
    assert!(chars <= 1_000 && chars > 900, "the operator's cap of 1,000 holds on the composed transport: {chars} characters");
}
