//! Text tabs hold up to 1,000,000 bytes, stored in chunks under the value limit.
use crate::common::*;
use cairn_notes::kv::MAX_VALUE_BYTES;
use serde_json::json;

#[test]
fn text_of_exactly_one_megabyte_is_stored_in_chunks_and_read_back_whole() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Long", true);
    let text: String = (0..1_000_000).map(|i| (b'a' + (i % 26) as u8) as char).collect();
    let r = w.write_text(&ada, &note, &text, "k1");
    assert_eq!(r["isError"], false, "{}", r["structuredContent"]);
    assert!(w.kv.max_value_len() <= MAX_VALUE_BYTES);
    let blobs = w.kv.dump().into_iter().filter(|(k, _)| k.contains("/blob/")).count();
    assert!(blobs >= 2, "chunked into several blobs, got {blobs}");
    assert_eq!(w.tab(&ada, &note, "markdown")["text"].as_str().unwrap(), text);
}

#[test]
fn text_over_one_megabyte_is_refused_too_large_and_nothing_written() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Long", true);
    let before = w.kv.notes_state();
    for text in ["x".repeat(1_000_001), "€".repeat(333_334)] {
        let r = w.write_text(&ada, &note, &text, "k1");
        assert_eq!(r["isError"], true);
        assert_eq!(r["structuredContent"]["error"], "too_large");
        assert_eq!(r["structuredContent"]["field"], "text");
    }
    assert_eq!(w.kv.notes_state(), before);
}

#[test]
fn slides_over_the_document_limit_are_refused_too_large() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Deck", true);
    let deck = w.create_tab(&ada, &note, "slides", "Deck");
    let big: Vec<_> = (0..120).map(|_| json!({"title": "t", "body": "b".repeat(10_000)})).collect();
    let before = w.kv.notes_state();
    let r = w.refused(
        &ada,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": deck, "expected_version": 2,
        "idempotency_key": "k", "operation": "replace_tab_data", "data": {"slides": big}}),
    );
    assert_eq!(r["error"], "too_large");
    assert_eq!(w.kv.notes_state(), before, "refused before any blob is written");
}
