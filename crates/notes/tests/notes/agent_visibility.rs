//! Agents see only notes approved for agents; anything else is not_found for them.
use crate::common::*;
use cairn_notes::rest;
use serde_json::json;

#[test]
fn agent_cannot_see_or_write_an_unapproved_note() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let hidden = w.note(&ada, "People only", false);
    let missing = w.refused(&bot, "list_note_tabs", json!({"note_id": "note-nope"}));
    let r = w.refused(&bot, "list_note_tabs", json!({"note_id": hidden}));
    assert_eq!(r, missing);
    let r = w.refused(&bot, "read_note_tab", json!({"note_id": hidden, "tab_id": "markdown"}));
    assert_eq!(r["error"], "not_found");
    let before = w.kv.notes_state();
    let r = w.refused(
        &bot,
        "edit_note_tab",
        json!({"note_id": hidden, "tab_id": "markdown", "expected_version": 1,
        "idempotency_key": "k", "operation": "replace_text", "text": "x"}),
    );
    assert_eq!(r["error"], "not_found");
    let r = w.refused(
        &bot,
        "add_note_source",
        json!({"note_id": hidden, "expected_version": 1,
        "idempotency_key": "k", "title": "t", "url": "https://example.org"}),
    );
    assert_eq!(r["error"], "not_found");
    assert_eq!(w.kv.notes_state(), before);
    let g = rest::get_note(&w.kv, &bot, &hidden).unwrap();
    assert_eq!(g.status, 404);
    // The person sees it.
    assert_eq!(w.ok(&ada, "list_note_tabs", json!({"note_id": hidden}))["note_id"], hidden.as_str());
}

#[test]
fn list_notes_shows_agents_only_approved_notes_and_people_all() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let open = w.note(&ada, "Open", true);
    w.note(&ada, "Closed", false);
    let agent_view = w.ok(&bot, "list_notes", json!({}));
    let ids: Vec<&str> = agent_view["notes"].as_array().unwrap().iter().map(|n| n["note_id"].as_str().unwrap()).collect();
    assert_eq!(ids, [open.as_str()]);
    assert_eq!(w.ok(&ada, "list_notes", json!({}))["notes"].as_array().unwrap().len(), 2);
}

#[test]
fn agent_can_work_in_an_approved_note() {
    let mut w = World::new();
    let bot = agent("acme");
    let note = w.note(&human("acme"), "Open", true);
    let r = w.write_text(&bot, &note, "from the agent", "k1");
    assert_eq!(r["isError"], false);
    let read = w.tab(&bot, &note, "markdown");
    assert!(read["provenance"]["updated_by"].as_str().unwrap().contains("agent"));
}

/// A person writes a secret into a note agents may not see, replaces it with
/// clean text, then approves the note: every road an agent has to a past
/// version stops at the approval.
mod through_time {
    use super::*;
    use cairn_notes::search;

    struct Redacted {
        w: World,
        note: String,
        secret_version: u64,
        approved_at: u64,
    }

    fn redacted() -> Redacted {
        let mut w = World::new();
        let ada = human("acme");
        let note = w.note(&ada, "Draft", false);
        w.write_text(&ada, &note, "the launch password is swordfish\n", "secret");
        let secret_version = w.version(&ada, &note);
        w.write_text(&ada, &note, "nothing to see here\n", "clean");
        let v = w.version(&ada, &note);
        let r = rest::update_note(&w.kv, &mut w.env, &ada, &note, json!({"expected_version": v, "approved_for_agents": true})).unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
        let approved_at = r.body["version"].as_u64().unwrap();
        Redacted { w, note, secret_version, approved_at }
    }

    #[test]
    fn at_version_before_the_approval_is_not_found_for_an_agent_and_readable_for_a_person() {
        let Redacted { mut w, note, secret_version, approved_at } = redacted();
        let bot = agent("acme");
        let r = w.refused(&bot, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "at_version": secret_version}));
        assert_eq!((r["error"].as_str(), r["field"].as_str()), (Some("not_found"), Some("at_version")));
        assert!(!r.to_string().contains("swordfish"));
        let now = w.ok(&bot, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "at_version": approved_at}));
        assert_eq!(now["text"], "nothing to see here\n");
        let ada = human("acme");
        let then = w.ok(&ada, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "at_version": secret_version}));
        assert!(then["text"].as_str().unwrap().contains("swordfish"));
    }

    #[test]
    fn history_lists_nothing_from_before_the_approval_to_an_agent() {
        let Redacted { mut w, note, approved_at, .. } = redacted();
        let bot = agent("acme");
        let h = w.ok(&bot, "list_note_history", json!({"note_id": note}));
        let versions: Vec<u64> = h["entries"].as_array().unwrap().iter().map(|e| e["version"].as_u64().unwrap()).collect();
        assert_eq!(versions, vec![approved_at], "{h}");
        assert!(h["next_cursor"].is_null());
        let r = rest::note_history(&w.kv, &mut w.env, &bot, &note, None, None, None).unwrap();
        assert_eq!(r.body["entries"].as_array().unwrap().len(), 1, "{}", r.body);
        let ada = human("acme");
        assert_eq!(w.ok(&ada, "list_note_history", json!({"note_id": note}))["entries"].as_array().unwrap().len() as u64, approved_at);
    }

    #[test]
    fn rest_versions_diffs_merges_and_restores_stop_at_the_approval_for_an_agent() {
        let Redacted { mut w, note, secret_version, approved_at } = redacted();
        let bot = agent("acme");
        let v = rest::tab_version(&w.kv, &mut w.env, &bot, &note, "markdown", &secret_version.to_string()).unwrap();
        assert_eq!(v.status, 404, "{}", v.body);
        let d = rest::tab_diff(&w.kv, &mut w.env, &bot, &note, "markdown", Some(&secret_version.to_string()), None).unwrap();
        assert_eq!(d.status, 404, "{}", d.body);
        let m = rest::merge_draft(&w.kv, &mut w.env, &bot, &note, "markdown", json!({"base_version": secret_version, "text": "x\n"})).unwrap();
        assert_eq!(m.status, 404, "{}", m.body);
        let before = w.kv.notes_state();
        let r =
            rest::restore_tab(&w.kv, &mut w.env, &bot, &note, "markdown", json!({"from_version": secret_version, "expected_version": approved_at})).unwrap();
        assert_eq!(r.status, 404, "{}", r.body);
        assert_eq!(w.kv.notes_state(), before, "nothing written");
        for reply in [v, d, m, r] {
            assert!(!reply.body.to_string().contains("swordfish"));
        }
    }

    #[test]
    fn an_agent_cannot_rebase_a_patch_over_versions_it_may_not_see() {
        let Redacted { mut w, note, secret_version, .. } = redacted();
        let bot = agent("acme");
        let r = w.refused(
            &bot,
            "edit_note_tab",
            json!({"note_id": note, "tab_id": "markdown", "expected_version": secret_version,
            "idempotency_key": "rb", "operation": "append_text", "text": "more", "rebase": true}),
        );
        assert_eq!(r["error"], "version_conflict", "{r}");
    }

    #[test]
    fn withdrawing_and_approving_again_hides_what_was_written_in_between() {
        let Redacted { mut w, note, .. } = redacted();
        let ada = human("acme");
        let bot = agent("acme");
        let v = w.version(&ada, &note);
        rest::update_note(&w.kv, &mut w.env, &ada, &note, json!({"expected_version": v, "approved_for_agents": false})).unwrap();
        w.write_text(&ada, &note, "second secret: marlin\n", "secret-2");
        let hidden = w.version(&ada, &note);
        w.write_text(&ada, &note, "clean again\n", "clean-2");
        let v = w.version(&ada, &note);
        let again = rest::update_note(&w.kv, &mut w.env, &ada, &note, json!({"expected_version": v, "approved_for_agents": true})).unwrap().body["version"]
            .as_u64()
            .unwrap();
        let r = w.refused(&bot, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "at_version": hidden}));
        assert_eq!(r["error"], "not_found");
        assert_eq!(w.ok(&bot, "read_note_tab", json!({"note_id": note, "tab_id": "markdown", "at_version": again}))["text"], "clean again\n");
    }

    #[test]
    fn an_agent_may_not_create_an_approved_note_over_rest() {
        let mut w = World::new();
        let bot = agent("acme");
        let before = w.kv.notes_state();
        let r = rest::create_note(&w.kv, &mut w.env, &bot, json!({"title": "Mine", "approved_for_agents": true})).unwrap();
        assert_eq!((r.status, r.body["error"].as_str(), r.body["field"].as_str()), (403, Some("forbidden"), Some("approved_for_agents")));
        assert_eq!(w.kv.notes_state(), before, "nothing written");
        assert_eq!(rest::create_note(&w.kv, &mut w.env, &bot, json!({"title": "Mine"})).unwrap().status, 201);
    }

    #[test]
    fn search_statistics_and_cursors_for_an_agent_count_only_notes_it_may_see() {
        let mut w = World::new();
        let ada = human("acme");
        let bot = agent("acme");
        let open = w.note(&ada, "Open", true);
        w.write_text(&ada, &open, "alpha beta\n", "o");
        // The same visible note, scored against a tenant with no hidden
        // notes and against one with many hidden notes saying "alpha".
        let score_of = |w: &mut World| -> f64 {
            search::merge(&w.kv, &mut w.env, "acme", 1000).unwrap();
            let r = w.ok(&bot, "search_notes", json!({"query": "alpha beta"}));
            assert_eq!(r["hits"].as_array().unwrap().len(), 1, "{r}");
            assert!(r["next_cursor"].is_null(), "{r}");
            r["hits"][0]["score"].as_f64().unwrap()
        };
        let alone = score_of(&mut w);
        for i in 0..30 {
            let n = w.note(&ada, &format!("Hidden {i}"), false);
            w.write_text(&ada, &n, "alpha alpha alpha\n", &format!("h{i}"));
        }
        let among_hidden = score_of(&mut w);
        assert_eq!(alone, among_hidden, "hidden notes moved an agent's ranking");
        // A person's ranking does count them.
        let person = w.ok(&ada, "search_notes", json!({"query": "alpha"}));
        assert_eq!(person["hits"].as_array().unwrap().len(), 10, "{person}");
        // Approval flips take the note in and out of an agent's statistics.
        let r = w.ok(&bot, "search_notes", json!({"query": "alpha"}));
        assert_eq!(r["hits"].as_array().unwrap().len(), 1);
    }
}
