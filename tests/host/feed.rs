//! The change feed on a real host: `subscriptions/listen` answers with a
//! stream, an agent is told of a person's change within a second (on one
//! host, and across hosts sharing Redis), never of a note it may not see,
//! the stream ends with its result, and a subject's streams are bounded.
//! The 2025-11-25 way, `resources/subscribe` and the `GET /mcp` stream,
//! tells the same changes, and a client without subscriptions holds nothing.
use crate::app::*;
use crate::harness::*;
use cairn_mcp::feed::MAX_STREAMS;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A stream being read: each message as it arrived.
pub struct Listening {
    /// The status of the answer.
    pub status: u16,
    /// Its content type.
    pub content_type: String,
    /// The `retry:` the stream's first event asked for, in milliseconds.
    pub retry: Option<u64>,
    messages: mpsc::Receiver<(Instant, Value)>,
    connection: TcpStream,
}

impl Listening {
    /// Closes the connection, as a client that goes away does.
    pub fn hang_up(&self) {
        let _ = self.connection.shutdown(std::net::Shutdown::Both);
    }

    /// The next message within `wait`.
    pub fn next(&self, wait: Duration) -> Option<(Instant, Value)> {
        self.messages.recv_timeout(wait).ok()
    }

    /// The next message's method (or `result`/`error`) and URI within `wait`.
    pub fn next_said(&self, wait: Duration) -> Option<(Instant, String, String)> {
        let (at, m) = self.next(wait)?;
        let what = m["method"].as_str().map(str::to_string).unwrap_or_else(|| if m.get("result").is_some() { "result".into() } else { format!("error {m}") });
        Some((at, what, m["params"]["uri"].as_str().unwrap_or_default().to_string()))
    }
}

/// Posts a `subscriptions/listen` for `notifications` as the holder of
/// `token`, and reads its stream on a thread of its own until it ends.
pub fn listen(host: &Cairn, token: &str, notifications: Value) -> Listening {
    let body = json!({"jsonrpc": "2.0", "id": "feed", "method": "subscriptions/listen", "params": {"notifications": notifications}}).to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n",
        host.addr,
        body.len()
    );
    stream(host, head + &body)
}

/// Opens `GET /mcp` as the holder of `token` (the 2025-11-25 stream of its
/// subscriptions), and reads it on a thread of its own until it ends.
pub fn follow(host: &Cairn, token: &str) -> Listening {
    stream(host, format!("GET /mcp HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {token}\r\naccept: text/event-stream\r\n\r\n", host.addr))
}

/// Sends `request` and reads its answer's head, then its events.
fn stream(host: &Cairn, request: String) -> Listening {
    let mut s = TcpStream::connect(host.addr).unwrap();
    // A refusal may come (and the connection close) before the body is out.
    let _ = s.write_all(request.as_bytes());
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let connection = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    let (mut status, mut content_type, mut chunked) = (0, String::new(), false);
    let mut line = String::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if status == 0 {
            status = l.split(' ').nth(1).unwrap().parse().unwrap();
        } else if let Some((k, v)) = l.split_once(':') {
            match k.trim().to_ascii_lowercase().as_str() {
                "content-type" => content_type = v.trim().to_string(),
                "transfer-encoding" => chunked = v.contains("chunked"),
                _ => {}
            }
        }
    }
    let (tx, messages) = mpsc::channel();
    let (retry_tx, retry_rx) = mpsc::channel();
    std::thread::spawn(move || read_events(r, chunked, tx, retry_tx));
    let retry = if status == 200 { retry_rx.recv_timeout(Duration::from_secs(5)).ok().flatten() } else { None };
    Listening { status, content_type, retry, messages, connection }
}

/// Reads Server-Sent Events (inside HTTP chunks when `chunked`) and sends
/// each `data:` message with the instant it was read.
fn read_events(mut r: BufReader<TcpStream>, chunked: bool, tx: mpsc::Sender<(Instant, Value)>, retry: mpsc::Sender<Option<u64>>) {
    let mut text = String::new();
    let mut first = true;
    let mut line = String::new();
    loop {
        let piece = if chunked {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
            if size == 0 {
                return;
            }
            let mut data = vec![0; size + 2];
            if r.read_exact(&mut data).is_err() {
                return;
            }
            data.truncate(size);
            data
        } else {
            let mut data = vec![0; 4096];
            match r.read(&mut data) {
                Ok(0) | Err(_) => return,
                Ok(n) => data[..n].to_vec(),
            }
        };
        text.push_str(&String::from_utf8_lossy(&piece));
        while let Some(end) = text.find("\n\n") {
            let event: String = text.drain(..end + 2).collect();
            if std::mem::take(&mut first) {
                let _ = retry.send(event.lines().find_map(|l| l.strip_prefix("retry: ")?.parse().ok()));
            }
            for data in event.lines().filter_map(|l| l.strip_prefix("data: ")).filter(|d| !d.is_empty()) {
                if tx.send((Instant::now(), serde_json::from_str(data).unwrap())).is_err() {
                    return;
                }
            }
        }
    }
}

/// A person's edit of a note's markdown tab; the instant it was acknowledged.
pub fn edit(host: &Cairn, note: &str, text: &str) -> Instant {
    let token = host.token(&person());
    let read = host.call(&token, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}))["structuredContent"].clone();
    let key = format!("feed-{text}");
    let r = host.call(
        &token,
        "edit_note_tab",
        json!({"note_id": note, "tab_id": "markdown", "expected_version": read["version"], "idempotency_key": key, "operation": "replace_text", "text": text}),
    );
    assert_ne!(r["isError"], true, "{r}");
    Instant::now()
}

fn tab(note: &str) -> String {
    format!("cairn://notes/{note}/tabs/markdown")
}

#[test]
fn an_agent_is_told_of_a_persons_edit_within_a_second_and_never_of_an_unapproved_note() {
    let host = start();
    let shared = host.create_note(&person(), "Shared", true);
    let draft = host.create_note(&person(), "Draft", false);
    let feed = listen(&host, &host.token(&agent()), json!({"resourceSubscriptions": [tab(&shared), tab(&draft)]}));
    assert_eq!((feed.status, feed.content_type.as_str()), (200, "text/event-stream"));
    let (_, ack) = feed.next(Duration::from_secs(5)).expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["notifications"]["resourceSubscriptions"], json!([tab(&shared), tab(&draft)]));
    edit(&host, &draft, "a person's private words");
    let edited = edit(&host, &shared, "words for everyone");
    let (at, what, uri) = feed.next_said(Duration::from_secs(5)).expect("a notification");
    assert_eq!((what.as_str(), uri.as_str()), ("notifications/resources/updated", tab(&shared).as_str()), "the unapproved draft is never named");
    let took = at.duration_since(edited);
    assert!(took < Duration::from_secs(1), "told after {took:?}");
    assert!(feed.next_said(Duration::from_millis(800)).is_none(), "one change, one notification");
}

#[test]
fn a_stream_ends_with_its_result_when_its_lifetime_is_up() {
    let host = start_with(vec![("SPIN_VARIABLE_FEED_STREAM_SECONDS", "2")], vec![]);
    let began = Instant::now();
    let feed = listen(&host, &host.token(&agent()), json!({"resourcesListChanged": true}));
    let (_, ack, _) = feed.next_said(Duration::from_secs(5)).unwrap();
    assert_eq!(ack, "notifications/subscriptions/acknowledged");
    host.create_note(&person(), "New for agents", true);
    let (_, changed, _) = feed.next_said(Duration::from_secs(5)).unwrap();
    assert_eq!(changed, "notifications/resources/list_changed");
    let (at, end, _) = feed.next_said(Duration::from_secs(10)).unwrap();
    assert_eq!(end, "result");
    let lasted = at.duration_since(began);
    assert!(lasted >= Duration::from_secs(2) && lasted < Duration::from_secs(5), "the stream lasted {lasted:?}");
    assert!(feed.next(Duration::from_secs(2)).is_none(), "nothing after the result: the stream is closed");
}

#[test]
fn a_subject_past_its_streams_is_refused_429_and_a_stream_that_ended_gives_its_lease_back() {
    let host = start_with(vec![("SPIN_VARIABLE_FEED_STREAM_SECONDS", "2")], vec![]);
    let token = host.token(&agent());
    let open: Vec<Listening> = (0..MAX_STREAMS).map(|_| listen(&host, &token, json!({"resourcesListChanged": true}))).collect();
    assert!(open.iter().all(|l| l.status == 200));
    let refused = listen(&host, &token, json!({"resourcesListChanged": true}));
    assert_eq!(refused.status, 429);
    let other = listen(&host, &host.token(&person()), json!({"resourcesListChanged": true}));
    assert_eq!(other.status, 200, "another subject has leases of its own");
    for l in &open {
        while let Some((_, what, _)) = l.next_said(Duration::from_secs(6)) {
            if what == "result" {
                break;
            }
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(listen(&host, &token, json!({"resourcesListChanged": true})).status, 200, "the ended streams gave their leases back");
}

#[test]
fn a_listen_with_a_bad_filter_or_without_accepting_a_stream_is_answered_with_a_clear_error() {
    let host = start();
    let token = host.token(&agent());
    let bad = host.mcp(&token, &json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {"notifications": {"resourceSubscriptions": ["https://example.com/x"]}}}));
    assert_eq!(bad.json()["error"]["code"], -32602, "{}", bad.text());
    assert!(bad.text().contains("https://example.com/x"));
    let auth = format!("Bearer {token}");
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen", "params": {"notifications": {"resourcesListChanged": true}}});
    let plain = host.request(
        "POST",
        "/mcp",
        &[("authorization", &auth), ("content-type", "application/json"), ("accept", "application/json")],
        body.to_string().as_bytes(),
    );
    assert!(plain.text().contains("Accept: text/event-stream"), "{}", plain.text());
}

#[test]
fn a_client_that_hangs_up_gives_its_lease_back_within_a_moment() {
    let host = start_with(vec![("SPIN_VARIABLE_FEED_STREAM_SECONDS", "20")], vec![]);
    let token = host.token(&agent());
    let open: Vec<Listening> = (0..MAX_STREAMS).map(|_| listen(&host, &token, json!({"resourcesListChanged": true}))).collect();
    for l in &open {
        assert_eq!(l.next_said(Duration::from_secs(5)).unwrap().1, "notifications/subscriptions/acknowledged");
    }
    assert_eq!(listen(&host, &token, json!({"resourcesListChanged": true})).status, 429);
    open.iter().for_each(Listening::hang_up);
    let asked = Instant::now();
    let again = loop {
        let l = listen(&host, &token, json!({"resourcesListChanged": true}));
        if l.status == 200 || asked.elapsed() > Duration::from_secs(40) {
            break l;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(again.status, 200, "the streams whose clients left ended and gave their leases back");
    assert!(asked.elapsed() < Duration::from_secs(2), "within a look or two: {:?}", asked.elapsed());
}

#[test]
fn a_change_through_one_host_reaches_a_stream_on_another_sharing_redis_within_a_second() {
    let redis = crate::redis::start();
    let hosts = crate::scale_out::hosts_on(&redis, 2, &[], &[]);
    let note = hosts[1].create_note(&person(), "Across hosts", true);
    let feed = listen(&hosts[0], &hosts[0].token(&agent()), json!({"resourceSubscriptions": [tab(&note)]}));
    assert_eq!(feed.next_said(Duration::from_secs(5)).unwrap().1, "notifications/subscriptions/acknowledged");
    for i in 0..3 {
        let edited = edit(&hosts[1], &note, &format!("through the other host {i}"));
        let (at, what, uri) = feed.next_said(Duration::from_secs(5)).expect("a notification");
        assert_eq!((what.as_str(), uri.as_str()), ("notifications/resources/updated", tab(&note).as_str()));
        assert!(at.duration_since(edited) < Duration::from_secs(1), "told after {:?}", at.duration_since(edited));
    }
}

#[test]
fn two_dozen_open_streams_leave_the_host_answering_everyone_else_at_once() {
    let host = start();
    let streams: Vec<Listening> = (0..24)
        .map(|i| {
            let sub = format!("agent-{}", i / 2);
            let who = Who { sub: &sub, ..agent() };
            listen(&host, &host.token(&who), json!({"resourcesListChanged": true}))
        })
        .collect();
    assert!(streams.iter().all(|l| l.status == 200), "{:?}", streams.iter().map(|l| l.status).collect::<Vec<_>>());
    for l in &streams {
        assert_eq!(l.next_said(Duration::from_secs(5)).unwrap().1, "notifications/subscriptions/acknowledged");
    }
    let began = Instant::now();
    let ping = host.mcp(&host.token(&person()), &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
    assert_eq!(ping.status, 200, "{}", ping.text());
    assert!(began.elapsed() < Duration::from_secs(1), "a ping waited {:?} behind the streams", began.elapsed());
}

/// Subscribes the holder of `token` to `uri` with `resources/subscribe`.
fn subscribe(host: &Cairn, token: &str, uri: &str) {
    let r = host.mcp(token, &json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": uri}}));
    assert_eq!(r.json()["result"], json!({}), "{}", r.text());
}

#[test]
fn a_subscribed_agent_is_told_on_the_get_stream_within_a_second_and_a_change_while_away_on_reconnect() {
    let host = start_with(vec![("SPIN_VARIABLE_FEED_STREAM_SECONDS", "3")], vec![]);
    let token = host.token(&agent());
    let note = host.create_note(&person(), "Subscribed", true);
    let draft = host.create_note(&person(), "Draft", false);
    subscribe(&host, &token, &tab(&note));
    subscribe(&host, &token, &tab(&draft));
    let feed = follow(&host, &token);
    assert_eq!((feed.status, feed.content_type.as_str(), feed.retry), (200, "text/event-stream", Some(cairn_mcp::feed::RECONNECT.as_millis() as u64)));
    edit(&host, &draft, "a person's private words");
    let edited = edit(&host, &note, "for the subscriber");
    let (at, what, uri) = feed.next_said(Duration::from_secs(5)).expect("a notification");
    assert_eq!((what.as_str(), uri.as_str()), ("notifications/resources/updated", tab(&note).as_str()), "the unapproved draft is never named");
    assert!(at.duration_since(edited) < Duration::from_secs(1), "told after {:?}", at.duration_since(edited));
    assert!(feed.next(Duration::from_secs(5)).is_none(), "told once, then the stream ends at its lifetime");
    edit(&host, &note, "while no stream was open");
    let again = follow(&host, &token);
    let (_, what, uri) = again.next_said(Duration::from_secs(5)).expect("the change made while away");
    assert_eq!((what.as_str(), uri.as_str()), ("notifications/resources/updated", tab(&note).as_str()));
}

#[test]
fn a_get_without_subscriptions_is_a_short_answer_that_holds_no_lease() {
    let host = start();
    let token = host.token(&agent());
    for _ in 0..MAX_STREAMS + 2 {
        let idle = follow(&host, &token);
        assert_eq!((idle.status, idle.retry), (200, Some(cairn_mcp::feed::RECONNECT_IDLE.as_millis() as u64)));
        assert!(idle.next(Duration::from_secs(2)).is_none(), "nothing to tell, and the answer is over");
    }
    let open: Vec<Listening> = (0..MAX_STREAMS).map(|_| listen(&host, &token, json!({"resourcesListChanged": true}))).collect();
    assert!(open.iter().all(|l| l.status == 200), "no lease was held by the short answers");
    subscribe(&host, &token, "cairn://notes/anything");
    assert_eq!(follow(&host, &token).status, 429, "a held GET stream shares the subject's leases with listen");
}

/// Opens the editor's `events` stream of `note` as the holder of `token`.
fn events(host: &Cairn, token: &str, note: &str) -> Listening {
    stream(
        host,
        format!("GET /api/v1/notes/{note}/events HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {token}\r\naccept: text/event-stream\r\n\r\n", host.addr),
    )
}

#[test]
fn the_editors_events_stream_tells_each_change_within_a_second_and_shares_the_subjects_leases() {
    let host = start();
    let token = host.token(&person());
    let note = host.create_note(&person(), "Open in the editor", true);
    let page = events(&host, &token, &note);
    assert_eq!((page.status, page.content_type.as_str()), (200, "text/event-stream"));
    let (_, first) = page.next(Duration::from_secs(5)).expect("the state first");
    assert_eq!((first["changed"].as_bool(), first["version"].as_u64()), (Some(true), Some(1)), "{first}");
    let edited = edit(&host, &note, "typed elsewhere");
    let (at, moved) = page.next(Duration::from_secs(5)).expect("the change");
    assert_eq!(moved["version"], 2, "{moved}");
    assert_ne!(moved["etag"], first["etag"]);
    assert!(at.duration_since(edited) < Duration::from_secs(1), "told after {:?}", at.duration_since(edited));
    assert!(page.next(Duration::from_millis(1500)).is_none(), "one change, one event");
    let second = listen(&host, &token, json!({"resourcesListChanged": true}));
    assert_eq!(second.status, 200);
    assert_eq!(events(&host, &token, &note).status, 429, "the editor and the MCP feed share the subject's {MAX_STREAMS} leases");
    let stranger = events(&host, &host.token(&Who { tenant: "globex", ..person() }), &note);
    assert_eq!(stranger.status, 200, "a stream of its own");
    let (_, refused) = stranger.next(Duration::from_secs(5)).expect("the refusal");
    assert_eq!(refused["error"], "not_found", "another tenant's note is not there: {refused}");
    assert!(stranger.next(Duration::from_secs(2)).is_none(), "the refusal ends the stream");
}
