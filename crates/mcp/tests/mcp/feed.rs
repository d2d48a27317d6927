//! The change feed (`subscriptions/listen`): the acknowledgement first,
//! a notification for each watched resource that moved as the caller sees
//! it and for nothing else, never of a note an agent may not see, a clean
//! end, and bounds on what a stream watches and how many a subject holds.
use std::cell::RefCell;
use std::time::Duration;

use cairn_kv::memory::MemoryStore;
use cairn_mcp::feed::{Ended, Filter, MAX_STREAMS, MAX_URIS, Pace, Settings, Sink, Slots, Watcher, listen, look};
use serde_json::{Value, json};

use crate::common::*;

/// A pace that waits for nothing and runs, at each wait, the next of its
/// steps (what people and agents do between two looks).
pub(crate) struct Steps<'a> {
    steps: RefCell<Vec<Box<dyn FnMut() + 'a>>>,
    clock: std::cell::Cell<Duration>,
    /// Lost at each wait besides the wait itself (slow looks).
    lag: std::cell::Cell<Duration>,
    waits: std::cell::Cell<usize>,
}

impl<'a> Steps<'a> {
    pub(crate) fn new(steps: Vec<Box<dyn FnMut() + 'a>>) -> Self {
        let mut steps = steps;
        steps.reverse();
        Steps { steps: RefCell::new(steps), clock: Default::default(), lag: Default::default(), waits: Default::default() }
    }
}

impl Pace for Steps<'_> {
    async fn sleep(&self, d: Duration) {
        self.clock.set(self.clock.get() + d + self.lag.get());
        self.waits.set(self.waits.get() + 1);
        if let Some(mut step) = self.steps.borrow_mut().pop() {
            step();
        }
    }
    fn now(&self) -> Duration {
        self.clock.get()
    }
}

/// Frames as the client reads them; gone after `limit` frames.
#[derive(Default)]
pub(crate) struct Client {
    pub(crate) frames: Vec<String>,
    limit: Option<usize>,
    left: std::cell::Cell<bool>,
}

impl Sink for Client {
    async fn send(&mut self, frame: String) -> bool {
        if self.limit.is_some_and(|l| self.frames.len() >= l) {
            return false;
        }
        self.frames.push(frame);
        true
    }
    fn gone(&self) -> bool {
        self.left.get()
    }
}

impl Client {
    /// The JSON messages sent, in order (comment lines left out).
    pub(crate) fn messages(&self) -> Vec<Value> {
        let data = |f: &String| f.lines().find_map(|l| l.strip_prefix("data: ")).filter(|d| !d.is_empty()).map(str::to_string);
        self.frames.iter().filter_map(data).map(|d| serde_json::from_str(&d).unwrap()).collect()
    }

    /// The method (or `result`/`error`) and URI of every message.
    pub(crate) fn said(&self) -> Vec<(String, String)> {
        self.messages()
            .iter()
            .map(|m| {
                let what = m["method"].as_str().map(str::to_string).unwrap_or_else(|| if m.get("result").is_some() { "result".into() } else { "error".into() });
                (what, m["params"]["uri"].as_str().unwrap_or_default().to_string())
            })
            .collect()
    }
}

/// A watcher as the router makes one: every watched head read in one batch.
fn direct<'a>(core: &'a Core, who: &'a cairn_auth::Principal) -> Watcher<'a, Core> {
    Watcher { who, tools: core, heads: Some(core.store()) }
}

/// Ten looks, a tenth of a second apart: a two-second stream in tests.
pub(crate) fn settings() -> Settings {
    Settings { every: Duration::from_millis(100), lifetime: Duration::from_secs(1), keepalive: Duration::from_secs(60) }
}

fn filter(list: bool, uris: &[String]) -> Filter {
    Filter::of_listen(&json!({"notifications": {"resourcesListChanged": list, "resourceSubscriptions": uris}})).unwrap()
}

pub(crate) fn edit(core: &Core, note: &str, version: u64, text: &str) {
    let args = json!({"note_id": note, "tab_id": "markdown", "expected_version": version, "idempotency_key": format!("k{version}{text}"),
                      "operation": "replace_text", "text": text});
    let r: Value = serde_json::from_str(&core.direct(&person(), "edit_note_tab", args)).unwrap();
    assert_ne!(r["isError"], true, "{r}");
}

pub(crate) fn tab(note: &str) -> String {
    format!("cairn://notes/{note}/tabs/markdown")
}

pub(crate) fn updated(uri: &str) -> (String, String) {
    ("notifications/resources/updated".into(), uri.into())
}

fn said(what: &str) -> (String, String) {
    (what.into(), String::new())
}

#[test]
fn a_change_to_a_watched_tab_is_told_once_after_the_acknowledgement_and_the_stream_ends_with_its_result() {
    let core = Core::new();
    let watched = core.note(&person(), "Watched", true);
    let other = core.note(&person(), "Other", true);
    let f = filter(false, &[tab(&watched)]);
    let steps = Steps::new(vec![Box::new(|| edit(&core, &other, 1, "elsewhere")), Box::new(|| edit(&core, &watched, 1, "here")), Box::new(|| {})]);
    let mut client = Client::default();
    let ended = block_on(listen(&json!("s1"), &f, &settings(), &direct(&core, &agent()), &steps, &mut client));
    assert_eq!(ended, Ended::Lifetime);
    assert_eq!(client.said(), [said("notifications/subscriptions/acknowledged"), updated(&tab(&watched)), said("result")]);
    let m = client.messages();
    assert_eq!(m[0]["params"]["notifications"], json!({"resourceSubscriptions": [tab(&watched)]}), "the acknowledgement names what will be sent");
    for message in &m {
        let meta = if message.get("result").is_some() { &message["result"]["_meta"] } else { &message["params"]["_meta"] };
        assert_eq!(meta["io.modelcontextprotocol/subscriptionId"], "s1", "every message names its stream: {message}");
    }
    assert_eq!(m[2]["id"], "s1", "the stream ends with the listen request's result");
}

#[test]
fn an_agent_is_not_told_of_a_note_before_a_person_approves_it_and_is_told_when_they_do() {
    let core = Core::new();
    let draft = core.note(&person(), "Draft", false);
    let f = filter(true, &[format!("cairn://notes/{draft}")]);
    let steps = Steps::new(vec![
        Box::new(|| edit(&core, &draft, 1, "a person's first words")),
        Box::new(|| {
            core.note(&person(), "Another draft", false);
        }),
        Box::new(|| core.update_note(&person(), &draft, 2, "Draft", true)),
    ]);
    let mut client = Client::default();
    block_on(listen(&json!(7), &f, &settings(), &direct(&core, &agent()), &steps, &mut client));
    assert_eq!(
        client.said(),
        [
            said("notifications/subscriptions/acknowledged"),
            said("notifications/resources/list_changed"),
            updated(&format!("cairn://notes/{draft}")),
            said("result")
        ],
        "the edit and the unapproved note say nothing to an agent; the approval says both"
    );
}

#[test]
fn a_person_is_told_of_every_change_they_may_see() {
    let core = Core::new();
    let draft = core.note(&person(), "Draft", false);
    let f = filter(true, &[tab(&draft)]);
    let steps = Steps::new(vec![
        Box::new(|| edit(&core, &draft, 1, "words")),
        Box::new(|| {
            core.note(&person(), "New", false);
        }),
    ]);
    let mut client = Client::default();
    block_on(listen(&json!(1), &f, &settings(), &direct(&core, &person()), &steps, &mut client));
    let said = client.said();
    assert_eq!(said[1..3], [updated(&tab(&draft)), ("notifications/resources/list_changed".into(), String::new())], "{said:?}");
}

#[test]
fn another_tenant_watching_a_note_is_told_nothing_of_it() {
    let core = Core::new();
    let note = core.note(&person(), "Ours", true);
    let f = filter(true, &[format!("cairn://notes/{note}"), tab(&note)]);
    let steps = Steps::new(vec![
        Box::new(|| edit(&core, &note, 1, "ours")),
        Box::new(|| {
            core.note(&person(), "Ours too", true);
        }),
    ]);
    let mut client = Client::default();
    block_on(listen(&json!(1), &f, &settings(), &direct(&core, &stranger()), &steps, &mut client));
    assert_eq!(client.said(), [said("notifications/subscriptions/acknowledged"), said("result")]);
}

#[test]
fn a_client_that_goes_away_ends_the_stream_at_once() {
    let core = Core::new();
    let note = core.note(&person(), "Busy", true);
    let f = filter(false, &[tab(&note)]);
    let steps = Steps::new(
        (1..=9)
            .map(|v| {
                let (core, note) = (&core, &note);
                Box::new(move || edit(core, note, v, &format!("v{v}"))) as Box<dyn FnMut()>
            })
            .collect(),
    );
    let mut client = Client { limit: Some(2), ..Client::default() };
    let ended = block_on(listen(&json!(1), &f, &settings(), &direct(&core, &agent()), &steps, &mut client));
    assert_eq!(ended, Ended::ClientGone);
    assert_eq!(client.frames.len(), 2, "the acknowledgement and one notification; the stream ended at the write that failed");
}

#[test]
fn a_client_that_hangs_up_on_a_quiet_stream_ends_it_at_the_next_look() {
    let core = Core::new();
    let note = core.note(&person(), "Quiet", true);
    let client = RefCell::new(Client::default());
    let steps = Steps::new(vec![Box::new(|| client.borrow().left.set(true))]);
    let mut sink = Client::default();
    // The hang-up is seen through the sink the stream writes to.
    struct Shared<'a>(&'a RefCell<Client>, &'a mut Client);
    impl Sink for Shared<'_> {
        async fn send(&mut self, frame: String) -> bool {
            self.1.send(frame).await
        }
        fn gone(&self) -> bool {
            self.0.borrow().gone()
        }
    }
    let ended = block_on(listen(&json!(1), &filter(false, &[tab(&note)]), &settings(), &direct(&core, &agent()), &steps, &mut Shared(&client, &mut sink)));
    assert_eq!(ended, Ended::ClientGone);
    assert_eq!(sink.frames.len(), 1, "the acknowledgement, then nothing: the hang-up ended the stream before a comment was due");
}

#[test]
fn a_store_out_of_reach_ends_the_stream_with_an_error_telling_the_client_to_listen_again() {
    let core = Core::new();
    let note = core.note(&person(), "Here", true);
    let f = filter(false, &[tab(&note)]);
    let steps = Steps::new(vec![Box::new(|| core.faults.set_unavailable(true))]);
    let mut client = Client::default();
    let ended = block_on(listen(&json!(1), &f, &settings(), &direct(&core, &agent()), &steps, &mut client));
    assert!(matches!(ended, Ended::Unavailable(_)), "{ended:?}");
    let m = client.messages();
    assert_eq!(m.len(), 2, "{m:?}");
    assert!(m[1]["error"]["message"].as_str().unwrap().contains("listen again"), "{}", m[1]);
}

#[test]
fn a_stream_whose_looks_are_slow_still_ends_at_its_lifetime() {
    let core = Core::new();
    let note = core.note(&person(), "Slow", true);
    let steps = Steps::new(Vec::new());
    // Every wait also loses 400 ms, as looks on a slow store would.
    steps.lag.set(Duration::from_millis(400));
    let mut client = Client::default();
    let ended = block_on(listen(&json!(1), &filter(false, &[tab(&note)]), &settings(), &direct(&core, &agent()), &steps, &mut client));
    assert_eq!(ended, Ended::Lifetime);
    assert!(steps.now() <= Duration::from_secs(1), "the stream ended by its clock at {:?}", steps.now());
    assert_eq!(steps.waits.get(), 2, "two looks of 500 ms fit in its second, not the ten of a quick store");
}

#[test]
fn an_idle_stream_sends_a_comment_line_so_proxies_keep_it() {
    let core = Core::new();
    let note = core.note(&person(), "Quiet", true);
    let steps = Steps::new(Vec::new());
    let mut client = Client::default();
    let s = Settings { keepalive: Duration::from_millis(300), ..settings() };
    block_on(listen(&json!(1), &filter(false, &[tab(&note)]), &s, &direct(&core, &agent()), &steps, &mut client));
    let comments = client.frames.iter().filter(|f| f.starts_with(':')).count();
    assert_eq!(comments, 3, "ten quiet looks, a comment after every third: {:?}", client.frames);
}

#[test]
fn the_batched_look_sees_exactly_what_the_read_tools_show_each_caller() {
    let core = Core::new();
    let open = core.note(&person(), "Open", true);
    let draft = core.note(&person(), "Draft", false);
    let made: Value = serde_json::from_str(&core.direct(
        &person(),
        "create_note_tab",
        json!({"note_id": open, "expected_version": 1, "idempotency_key": "t", "tab_type": "sheet", "label": "Sheet"}),
    ))
    .unwrap();
    let sheet = made["structuredContent"]["tab_id"].as_str().unwrap().to_string();
    let uris = vec![
        format!("cairn://notes/{open}"),
        tab(&open),
        format!("cairn://notes/{open}/tabs/{sheet}"),
        format!("cairn://notes/{open}/tabs/no-such-tab"),
        format!("cairn://notes/{draft}"),
        tab(&draft),
        "cairn://notes/no-such-note".to_string(),
    ];
    let f = filter(true, &uris);
    let agree = |when: &str| {
        for who in [agent(), person(), stranger()] {
            let by_tools = block_on(look(&f, &Watcher { who: &who, tools: &core, heads: None })).unwrap();
            let batched = block_on(look(&f, &direct(&core, &who))).unwrap();
            assert_eq!(batched, by_tools, "{when}, as {}", who.subject);
        }
    };
    agree("at first");
    let seen = |who: &cairn_auth::Principal| block_on(look(&f, &direct(&core, who))).unwrap().uris().iter().map(Option::is_some).collect::<Vec<_>>();
    assert_eq!(seen(&person()), [true, true, true, false, true, true, false], "a person sees both notes, not what does not exist");
    assert_eq!(seen(&agent()), [true, true, true, false, false, false, false], "an agent does not see the draft");
    assert_eq!(seen(&stranger()), [false; 7], "another tenant sees nothing");
    edit(&core, &open, 2, "moved");
    agree("after an edit");
    edit(&core, &draft, 1, "private");
    agree("after an edit of the draft");
    core.update_note(&person(), &draft, 2, "Draft", true);
    agree("after the draft's approval");
    core.update_note(&person(), &open, 3, "Open", false);
    agree("after the approval was taken back");
}

mod refusals {
    use super::*;

    fn listen_params(notifications: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": 3, "method": "subscriptions/listen", "params": {"notifications": notifications}})
    }

    fn refusal(body: &Value) -> (i64, String) {
        let text = body.to_string();
        let request = cairn_mcp::Request::read(text.as_bytes(), |_| None).unwrap();
        let reply = request.listen().expect("a listen sent alone").expect_err("refused");
        (reply["error"]["code"].as_i64().unwrap(), reply["error"]["message"].as_str().unwrap().to_string())
    }

    #[test]
    fn a_uri_that_is_not_a_cairn_resource_is_refused_naming_it() {
        let (code, msg) = refusal(&listen_params(json!({"resourceSubscriptions": ["file:///etc/passwd"]})));
        assert_eq!(code, -32602);
        assert!(msg.contains("file:///etc/passwd"), "{msg}");
    }

    #[test]
    fn a_stream_past_its_bound_of_resources_is_refused_naming_the_bound() {
        let uris: Vec<String> = (0..=MAX_URIS).map(|i| format!("cairn://notes/n{i}")).collect();
        let (code, msg) = refusal(&listen_params(json!({"resourceSubscriptions": uris})));
        assert_eq!(code, -32602);
        assert!(msg.contains(&format!("at most {MAX_URIS}")), "{msg}");
    }

    #[test]
    fn a_listen_without_notifications_or_with_a_flag_that_is_not_a_boolean_is_refused() {
        let body = json!({"jsonrpc": "2.0", "id": 3, "method": "subscriptions/listen", "params": {}});
        assert!(refusal(&body).1.contains("params.notifications"));
        assert!(refusal(&listen_params(json!({"resourcesListChanged": "yes"}))).1.contains("resourcesListChanged"));
    }

    #[test]
    fn a_listen_in_a_batch_is_refused_and_the_rest_of_the_batch_runs() {
        let core = Core::new();
        let batch = json!([listen_params(json!({"resourcesListChanged": true})), rpc(4, "ping", json!({}))]);
        let replies: Value = serde_json::from_str(&match post(&core, &agent(), batch.to_string().as_bytes(), &[]) {
            Ok(cairn_mcp::Answer::Reply(r)) => r,
            other => panic!("{other:?}"),
        })
        .unwrap();
        assert_eq!(replies[0]["error"]["code"], -32600);
        assert!(replies[0]["error"]["message"].as_str().unwrap().contains("send it alone"));
        assert_eq!(replies[1]["result"], json!({}));
    }

    #[test]
    fn kinds_cairn_never_sends_are_left_out_of_the_acknowledgement() {
        let f = Filter::of_listen(&json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true}})).unwrap();
        assert_eq!(f.acknowledged(), json!({}));
    }
}

mod leases {
    use super::*;

    #[test]
    fn a_subject_holds_at_most_its_bound_of_streams_and_a_given_back_lease_is_free_again() {
        let kv = MemoryStore::new();
        let life = Duration::from_secs(20);
        let held: Vec<Slots> = (0..MAX_STREAMS).map(|_| Slots::claim(&kv, "acme", "agent-1", 1_000, life).unwrap().expect("a free lease")).collect();
        assert_eq!(Slots::claim(&kv, "acme", "agent-1", 1_000, life).unwrap(), None, "every lease is held");
        assert!(Slots::claim(&kv, "acme", "ada", 1_000, life).unwrap().is_some(), "another subject has leases of its own");
        held[0].release(&kv).unwrap();
        assert!(Slots::claim(&kv, "acme", "agent-1", 2_000, life).unwrap().is_some(), "a lease given back is free");
    }

    #[test]
    fn on_a_store_that_reports_every_swap_failed_as_spins_redis_does_the_bound_still_holds_exactly() {
        let (kv, faults) = cairn_kv::faults::Faulty::new(std::sync::Arc::new(MemoryStore::new()));
        faults.set_vouched(false);
        faults.report_every_swap_failed(true);
        let life = Duration::from_secs(20);
        for i in 0..MAX_STREAMS {
            let lease = Slots::claim(&kv, "acme", "agent-1", 1_000 + i as u64, life).unwrap();
            assert!(lease.is_some(), "a landed claim reported failed is still this claim's (lease {i})");
        }
        assert_eq!(Slots::claim(&kv, "acme", "agent-1", 2_000, life).unwrap(), None, "and no more than the bound");
    }

    #[test]
    fn a_lease_whose_host_died_lapses_after_the_stream_lifetime_and_a_margin() {
        let kv = MemoryStore::new();
        let life = Duration::from_secs(20);
        for _ in 0..MAX_STREAMS {
            Slots::claim(&kv, "acme", "agent-1", 0, life).unwrap().unwrap();
        }
        assert_eq!(Slots::claim(&kv, "acme", "agent-1", 24_000_000, life).unwrap(), None, "still within the lifetime and margin");
        let late = Slots::claim(&kv, "acme", "agent-1", 25_000_001, life).unwrap();
        assert!(late.is_some(), "lapsed");
    }
}
