//! Tenants never see each other, and agents see only approved notes; a
//! refusal never reveals that something exists.
use crate::app::*;
use serde_json::json;

#[test]
fn another_tenants_note_is_not_found_exactly_like_a_missing_one() {
    let cairn = start();
    let note = cairn.create_note(&person(), "acme only", true);
    let mut foreign = agent();
    foreign.tenant = "globex";
    let t = cairn.token(&foreign);
    let theirs = cairn.call(&t, "list_note_tabs", json!({"note_id": note}));
    let missing = cairn.call(&t, "list_note_tabs", json!({"note_id": "note-doesnotexist"}));
    assert_eq!(theirs["isError"], true);
    assert_eq!(theirs["structuredContent"]["error"], "not_found");
    let strip = |mut v: serde_json::Value| {
        v["structuredContent"].as_object_mut().unwrap().remove("note_id");
        v["structuredContent"]["message"].take();
        v["content"].take();
        v
    };
    assert_eq!(strip(theirs), strip(missing), "a foreign note must look exactly like a missing one");
    let listed = cairn.call(&t, "list_notes", json!({}));
    assert_eq!(listed["structuredContent"]["notes"], json!([]));
    let mut foreign_person = person();
    foreign_person.tenant = "globex";
    let r = cairn.rest(&cairn.token(&foreign_person), "GET", &format!("/api/v1/notes/{note}"), None);
    assert_eq!(r.status, 404);
}

#[test]
fn agents_see_only_notes_a_person_approved() {
    let cairn = start();
    let hidden = cairn.create_note(&person(), "private draft", false);
    let shared = cairn.create_note(&person(), "shared brief", true);
    let t = cairn.token(&agent());
    let listed = cairn.call(&t, "list_notes", json!({}));
    let ids: Vec<&str> = listed["structuredContent"]["notes"].as_array().unwrap().iter().map(|n| n["note_id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![shared.as_str()]);
    let r = cairn.call(&t, "read_note_tab", json!({"note_id": hidden, "tab_id": "markdown"}));
    assert_eq!(r["structuredContent"]["error"], "not_found");
    let r = cairn.rest(&cairn.token(&person()), "GET", &format!("/api/v1/notes/{hidden}"), None);
    assert_eq!(r.status, 200, "the person still sees the draft");
}
