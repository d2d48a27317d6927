//! Sources: http(s) only, normalized, held once per note whatever the key.
use crate::common::*;
use cairn_notes::url::normalize_url;
use serde_json::json;

#[test]
fn url_normalization_table() {
    let same = "https://example.org/report";
    for spelling in [
        "https://example.org/report",
        "http://example.org/report",
        "https://www.example.org/report",
        "https://Example.ORG/report/",
        "https://example.org/report?utm_source=x&utm_medium=y",
        "https://example.org/report?UTM_Campaign=z",
        "https://example.org/report#section-2",
        "example.org/report",
        "www.example.org/report/",
        "HTTPS://WWW.EXAMPLE.ORG/report",
        "https://example.org:443/report",
        "http://example.org:80/report",
        "  https://example.org/report  ",
    ] {
        assert_eq!(normalize_url(spelling).as_deref(), Ok(same), "{spelling}");
    }
    let table = [
        ("https://example.org/", "https://example.org"),
        ("https://example.org", "https://example.org"),
        ("https://example.org/Report/A", "https://example.org/Report/A"),
        ("https://example.org/r?id=3&utm_source=x&b=2", "https://example.org/r?id=3&b=2"),
        ("https://example.org:8080/r", "https://example.org:8080/r"),
        ("https://wwwx.example.org/r", "https://wwwx.example.org/r"),
        ("https://[::1]:8443/r", "https://[::1]:8443/r"),
    ];
    for (input, want) in table {
        assert_eq!(normalize_url(input).as_deref(), Ok(want), "{input}");
    }
    for bad in [
        "",
        "ftp://example.org/x",
        "javascript:alert(1)",
        "mailto:a@b.c",
        "https://user:pw@example.org/",
        "https:///nohost",
        "https://exa mple.org",
        "https://example.org:99999/",
    ] {
        assert!(normalize_url(bad).is_err(), "{bad:?} must be refused");
    }
}

fn add(note: &str, version: u64, key: &str, url: &str) -> serde_json::Value {
    json!({"note_id": note, "expected_version": version, "idempotency_key": key, "title": "Report", "url": url})
}

#[test]
fn a_repeat_of_the_same_normalized_url_returns_the_existing_source_whatever_the_key() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Research", true);
    let first = w.ok(&bot, "add_note_source", add(&note, 1, "k1", "https://www.example.org/report/?utm_source=x"));
    assert_eq!(first["already_attached"], false);
    assert_eq!(first["url"], "https://example.org/report");
    let before = w.kv.notes_state();
    for (i, spelling) in ["http://example.org/report", "example.org/report#top", "https://EXAMPLE.org/report/"].iter().enumerate() {
        let again = w.ok(&bot, "add_note_source", add(&note, 1, &format!("other-key-{i}"), spelling));
        assert_eq!(again["already_attached"], true);
        assert_eq!(again["source_id"], first["source_id"]);
        assert_eq!(again["version"], 2);
    }
    assert_eq!(w.kv.notes_state(), before, "nothing written");
    let list = w.ok(&bot, "list_note_attachments", json!({"note_id": note, "kind": "sources"}));
    assert_eq!(list["attachments"].as_array().unwrap().len(), 1);
}

#[test]
fn a_key_derived_from_the_url_replays_across_turns_and_refuses_another_url() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Research", true);
    let first = w.ok(&bot, "add_note_source", add(&note, 1, "note+example.org/report", "https://example.org/report"));
    // A later turn, with a newer version and a better title: the key names the same intent.
    w.write_text(&human("acme"), &note, "moved on", "p");
    let again = w.ok(
        &bot,
        "add_note_source",
        json!({"note_id": note, "expected_version": 3,
        "idempotency_key": "note+example.org/report", "title": "Better title", "url": "http://www.example.org/report/"}),
    );
    assert_eq!(again["replayed"], true);
    assert_eq!(again["source_id"], first["source_id"]);
    let r = w.refused(&bot, "add_note_source", add(&note, 3, "note+example.org/report", "https://example.org/other"));
    assert_eq!(r["error"], "idempotency_key_reused");
}

#[test]
fn a_new_url_on_a_stale_version_is_refused() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Research", true);
    w.ok(&bot, "add_note_source", add(&note, 1, "k1", "https://example.org/a"));
    let r = w.refused(&bot, "add_note_source", add(&note, 1, "k2", "https://example.org/b"));
    assert_eq!(r["error"], "version_conflict");
    assert_eq!(r["current_version"], 2);
}

#[test]
fn non_http_urls_are_refused_naming_url_and_nothing_written() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Research", true);
    let before = w.kv.notes_state();
    for bad in ["ftp://example.org/file", "javascript:alert(1)", "file:///etc/passwd"] {
        let r = w.refused(&bot, "add_note_source", add(&note, 1, "k", bad));
        assert_eq!(r["error"], "invalid_argument");
        assert_eq!(r["field"], "url");
    }
    assert_eq!(w.kv.notes_state(), before);
}

#[test]
fn sources_are_returned_as_metadata_with_provenance() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Research", true);
    w.ok(&bot, "add_note_source", add(&note, 1, "k1", "https://example.org/a"));
    let list = w.ok(&bot, "list_note_attachments", json!({"note_id": note}));
    let item = &list["attachments"][0];
    assert_eq!(item["kind"], "source");
    assert_eq!(item["url"], "https://example.org/a");
    assert!(item["source_id"].as_str().unwrap().starts_with("src-1-"));
    for f in ["author", "updated_at", "updated_by", "content_hash"] {
        assert!(item["provenance"][f].is_string(), "{f}");
    }
}
