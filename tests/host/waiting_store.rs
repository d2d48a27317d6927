//! A store call that waits (here: every call to a Redis that stopped
//! answering) holds up no other request: the host runs such calls on threads
//! made for waiting (`cairn_kv::Store::waits`), so its request threads stay
//! free for requests that need no store.
use crate::app::*;
use crate::harness::*;
use crate::redis;
use crate::scale_out::hosts_on;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Stop every client of `redis` for `ms` milliseconds (`CLIENT PAUSE … ALL`):
/// the server takes their commands and answers none until the pause ends.
fn pause(redis: &redis::Server, ms: u64) {
    let ms = ms.to_string();
    let mut conn = TcpStream::connect(("127.0.0.1", redis.port)).unwrap();
    let cmd = format!("*4\r\n$6\r\nCLIENT\r\n$5\r\nPAUSE\r\n${}\r\n{ms}\r\n$3\r\nALL\r\n", ms.len());
    conn.write_all(cmd.as_bytes()).unwrap();
    let mut reply = [0u8; 5];
    conn.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"+OK\r\n", "CLIENT PAUSE answered {:?}", String::from_utf8_lossy(&reply));
}

#[test]
fn requests_that_need_no_store_are_answered_while_store_calls_hang() {
    let redis = redis::start();
    // Threads, not instance slots, are what this test is about: each hung
    // call may hold a router instance of its own, with the slot of the tool
    // it called, so the host gets slots to spare. A host whose slots are
    // all held by hung calls makes new requests wait for one (`docs/host.md`).
    let host = hosts_on(&redis, 1, &[], &["--max-instances", "1024"]).remove(0);
    let note = host.create_note(&person(), "Waiting", true);
    let token = host.token(&agent());
    // Warm: the token is verified and cached, the components instantiated once.
    host.call(&token, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));

    // More calls than the host has request threads (its connection threads), each stuck
    // in its first store call for as long as the pause lasts.
    let hung = 2 * cairn::connection_threads::default_count();
    // Long enough that a loaded machine (the whole suite runs at once) still
    // answers the storeless requests well before it ends: 6 s against the
    // fraction of a second they take.
    pause(&redis, 6000);
    let paused = Instant::now();
    let (answered, first_hung_done, hung_for) = std::thread::scope(|s| {
        let calls: Vec<_> = (0..hung)
            .map(|_| {
                let (token, note) = (&token, &note);
                s.spawn(move || {
                    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "read_note_tab", "arguments": {"note_id": note, "tab_id": "markdown"}}});
                    let auth = format!("Bearer {token}");
                    let r =
                        try_request(host.addr, "POST", "/mcp", &[("authorization", &auth), ("content-type", "application/json")], body.to_string().as_bytes());
                    (Instant::now(), r.map(|r| r.status).unwrap_or(0))
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        // The router's metadata and the health check read no store.
        let meta = host.get("/.well-known/oauth-protected-resource");
        assert_eq!(meta.status, 200, "{}", meta.text());
        let health = host.get("/healthz");
        assert_eq!(health.status, 200, "{}", health.text());
        let answered = Instant::now();
        let done: Vec<(Instant, u16)> = calls.into_iter().map(|c| c.join().unwrap()).collect();
        for (_, status) in &done {
            // Each hung call ends as a result or as a clear 503, never anything else.
            assert!(matches!(status, 200 | 503), "a hung call answered {status}");
        }
        let first = done.iter().map(|(t, _)| *t).min().unwrap();
        (answered, first, first - paused)
    });
    assert!(hung_for >= Duration::from_millis(1000), "the store calls did not hang (first answered after {hung_for:?}): the test proves nothing");
    assert!(
        answered < first_hung_done,
        "requests that need no store waited for the hung store calls: answered {:?} after the pause began, the first hung call {:?}",
        answered - paused,
        first_hung_done - paused
    );
    // And the store serves again once it answers.
    let r = host.call(&token, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    assert_eq!(r["isError"], false, "{r}");
}
