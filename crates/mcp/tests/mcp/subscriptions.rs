//! `resources/subscribe` (2025-11-25) without sessions: a subject's book in
//! the `cache` store, told on the `GET /mcp` stream: a change told once,
//! one made while no stream was open told by the next, nothing told of a
//! note the caller may not see, unsubscribing stops it, and the bound and
//! bad URIs are refused with nothing written.
use cairn_mcp::feed::{Ended, RECONNECT, Watcher, follow};
use cairn_mcp::subscriptions::{Book, KEEP, MAX_SUBSCRIPTIONS};
use serde_json::{Value, json};

use crate::common::*;
use crate::feed::{Client, Steps, edit, settings, tab, updated};

fn subscribe(core: &Core, who: &cairn_auth::Principal, uri: &str) -> Value {
    ask(core, who, "resources/subscribe", json!({"uri": uri}))
}

/// One `GET /mcp` stream of `who`'s, with `steps` run between its looks.
fn stream(core: &Core, who: &cairn_auth::Principal, steps: Vec<Box<dyn FnMut() + '_>>) -> (Ended, Client) {
    let steps = Steps::new(steps);
    let mut client = Client::default();
    let watcher = Watcher { who, tools: core, heads: Some(core.store()) };
    let ended = block_on(follow(&settings(), &watcher, core.store(), core.now_us(), &steps, &mut client));
    (ended, client)
}

#[test]
fn a_subscribed_change_is_told_once_on_the_stream_and_not_again_after_a_reconnect() {
    let core = Core::new();
    let note = core.note(&person(), "Watched", true);
    assert_eq!(subscribe(&core, &agent(), &tab(&note))["result"], json!({}));
    let (ended, client) = stream(&core, &agent(), vec![Box::new(|| edit(&core, &note, 1, "here")), Box::new(|| {})]);
    assert_eq!(ended, Ended::Lifetime);
    assert!(client.frames[0].starts_with("id: ") && client.frames[0].contains(&format!("retry: {}\n", RECONNECT.as_millis())), "{:?}", client.frames[0]);
    assert_eq!(client.said(), [updated(&tab(&note))]);
    assert!(client.frames[1].starts_with("id: "), "a notification carries an event id to resume from: {:?}", client.frames[1]);
    let (_, again) = stream(&core, &agent(), vec![]);
    assert!(again.said().is_empty(), "told once: {:?}", again.frames);
}

#[test]
fn a_change_made_while_no_stream_was_open_is_told_by_the_next_stream() {
    let core = Core::new();
    let note = core.note(&person(), "Watched", true);
    subscribe(&core, &agent(), &format!("cairn://notes/{note}"));
    edit(&core, &note, 1, "while away");
    let (_, client) = stream(&core, &agent(), vec![]);
    assert_eq!(client.said(), [updated(&format!("cairn://notes/{note}"))]);
}

#[test]
fn an_agent_is_told_nothing_of_an_unapproved_note_until_a_person_approves_it() {
    let core = Core::new();
    let draft = core.note(&person(), "Draft", false);
    assert_eq!(subscribe(&core, &agent(), &tab(&draft))["result"], json!({}), "the same answer as for any note: nothing learned");
    let (_, client) = stream(&core, &agent(), vec![Box::new(|| edit(&core, &draft, 1, "secret")), Box::new(|| {})]);
    assert!(client.said().is_empty(), "an edit of a note it may not see: {:?}", client.frames);
    core.update_note(&person(), &draft, 2, "Draft", true);
    let (_, client) = stream(&core, &agent(), vec![]);
    assert_eq!(client.said(), [updated(&tab(&draft))], "approval shows the tab to the agent");
}

#[test]
fn subscriptions_are_the_subjects_own_and_another_tenant_is_told_nothing() {
    let core = Core::new();
    let note = core.note(&person(), "Ours", true);
    subscribe(&core, &agent(), &tab(&note));
    subscribe(&core, &stranger(), &tab(&note));
    let (_, theirs) = stream(&core, &stranger(), vec![Box::new(|| edit(&core, &note, 1, "ours")), Box::new(|| {})]);
    assert!(theirs.said().is_empty(), "another tenant's note is never there for them: {:?}", theirs.frames);
    let (_, ours) = stream(&core, &person(), vec![]);
    assert!(ours.said().is_empty(), "the person did not subscribe; the agent did");
    let (_, agents) = stream(&core, &agent(), vec![]);
    assert_eq!(agents.said(), [updated(&tab(&note))]);
}

#[test]
fn unsubscribing_stops_the_notifications() {
    let core = Core::new();
    let note = core.note(&person(), "Watched", true);
    subscribe(&core, &agent(), &tab(&note));
    assert_eq!(ask(&core, &agent(), "resources/unsubscribe", json!({"uri": tab(&note)}))["result"], json!({}));
    edit(&core, &note, 1, "unwatched");
    let (_, client) = stream(&core, &agent(), vec![]);
    assert!(client.said().is_empty(), "{:?}", client.frames);
    assert_eq!(Book::load(core.store(), &agent(), core.now_us()).unwrap(), Book::default());
}

#[test]
fn a_subscription_past_the_bound_is_refused_naming_it_and_nothing_is_written() {
    let core = Core::new();
    for i in 0..MAX_SUBSCRIPTIONS {
        assert_eq!(subscribe(&core, &agent(), &format!("cairn://notes/n{i}"))["result"], json!({}));
    }
    assert_eq!(subscribe(&core, &agent(), "cairn://notes/n0")["result"], json!({}), "subscribing again is not a new subscription");
    let r = subscribe(&core, &agent(), "cairn://notes/one-more");
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains(&format!("at most {MAX_SUBSCRIPTIONS} subscriptions")), "{r}");
    let book = Book::load(core.store(), &agent(), core.now_us()).unwrap();
    assert_eq!(book.entries.len(), MAX_SUBSCRIPTIONS);
    assert!(!book.uris().contains(&"cairn://notes/one-more".to_string()));
}

#[test]
fn a_uri_that_is_not_a_cairn_resource_is_refused_naming_it() {
    let core = Core::new();
    for (params, says) in [
        (json!({"uri": "test://watched-resource"}), "test://watched-resource is not a Cairn resource"),
        (json!({"uri": "cairn://notes/a/b"}), "is not a Cairn resource"),
        (json!({}), "params.uri is required"),
    ] {
        let r = ask(&core, &agent(), "resources/subscribe", params);
        assert_eq!(r["error"]["code"], -32602, "{r}");
        assert!(r["error"]["message"].as_str().unwrap().contains(says), "{r}");
    }
    assert_eq!(Book::load(core.store(), &agent(), core.now_us()).unwrap(), Book::default(), "nothing written");
}

#[test]
fn subscribing_needs_the_read_scope() {
    for method in ["resources/subscribe", "resources/unsubscribe"] {
        let body = rpc(1, method, json!({"uri": "cairn://notes/x"})).to_string();
        let request = cairn_mcp::Request::read(body.as_bytes(), |_| None).unwrap();
        assert_eq!(request.scopes().collect::<Vec<_>>(), ["notes:read"], "{method}");
    }
}

#[test]
fn a_book_lapses_after_its_keep_and_a_stream_keeps_it() {
    let core = Core::new();
    subscribe(&core, &agent(), "cairn://notes/x");
    core.advance_us(KEEP.as_micros() as u64 - 1_000_000);
    stream(&core, &agent(), vec![]);
    core.advance_us(2_000_000);
    assert_eq!(Book::load(core.store(), &agent(), core.now_us()).unwrap().uris(), ["cairn://notes/x"], "the stream kept it");
    core.advance_us(KEEP.as_micros() as u64);
    assert_eq!(Book::load(core.store(), &agent(), core.now_us()).unwrap(), Book::default(), "lapsed an hour after its last use");
}

#[test]
fn on_a_store_that_reports_every_swap_failed_as_spins_redis_does_a_subscription_is_kept_and_acknowledged() {
    let core = Core::new();
    core.faults.set_vouched(false);
    core.faults.report_every_swap_failed(true);
    for uri in ["cairn://notes/x", "cairn://notes/y", "cairn://notes/x"] {
        assert_eq!(subscribe(&core, &agent(), uri)["result"], json!({}), "{uri}");
    }
    assert_eq!(ask(&core, &agent(), "resources/unsubscribe", json!({"uri": "cairn://notes/y"}))["result"], json!({}));
    assert_eq!(Book::load(core.store(), &agent(), core.now_us()).unwrap().uris(), ["cairn://notes/x"]);
}

#[test]
fn a_store_out_of_reach_refuses_the_subscription_as_unavailable() {
    let core = Core::new();
    core.faults.set_unavailable(true);
    let answer = post(&core, &agent(), rpc(1, "resources/subscribe", json!({"uri": "cairn://notes/x"})).to_string().as_bytes(), &[]).unwrap();
    assert!(matches!(answer, cairn_mcp::Answer::Unavailable(_)), "{answer:?}");
}
