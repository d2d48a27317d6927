//! Exhaustion: clients that trickle their headers or their body are cut off
//! by read timeouts without ever holding an instance, more connections than
//! the cap are told 503 and closed, and an oversized batch is refused whole;
//! the host serves everyone else throughout.
use crate::app::*;
use crate::harness::*;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn host(args: Vec<&'static str>) -> Cairn {
    start_with(vec![], args)
}

/// What the server sent before it closed the connection (or `timeout` passed).
fn drain(s: &mut TcpStream, timeout: Duration) -> String {
    s.set_read_timeout(Some(timeout)).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn a_client_trickling_its_headers_is_cut_off_by_the_header_timeout() {
    let cairn = host(vec!["--header-timeout-ms", "800"]);
    let mut slow = TcpStream::connect(cairn.addr).unwrap();
    let started = Instant::now();
    let head = b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-slow: ";
    let mut cut = false;
    for b in head.iter().chain(b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".iter()) {
        if slow.write_all(&[*b]).is_err() {
            cut = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        if started.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    // The server closed its side: the read ends (EOF), it does not time out.
    slow.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut got = Vec::new();
    let closed = slow.read_to_end(&mut got).is_ok();
    let answer = String::from_utf8_lossy(&got).into_owned();
    assert!(cut || closed, "a client trickling its headers for 3 s was not cut off (timeout 0.8 s)");
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    assert_eq!(cairn.get("/healthz").status, 200, "the host serves others");
}

#[test]
fn bodies_trickled_a_byte_at_a_time_get_408_and_never_hold_an_instance() {
    // Two instances at most: without reading bodies first, two slow clients would stall everyone.
    let cairn = host(vec!["--body-timeout-ms", "4000", "--max-instances", "2"]);
    let t = cairn.token(&agent());
    let slow: Vec<std::thread::JoinHandle<String>> = (0..6)
        .map(|_| {
            let (addr, t) = (cairn.addr, t.clone());
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                let head =
                    format!("POST /mcp HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {t}\r\ncontent-type: application/json\r\ncontent-length: 200\r\n\r\n");
                s.write_all(head.as_bytes()).unwrap();
                for _ in 0..60 {
                    if s.write_all(b" ").is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                drain(&mut s, Duration::from_secs(8))
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let note = cairn.create_note(&person(), "Served meanwhile", true);
    let r = cairn.call(&t, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    assert_eq!(r["isError"], false, "{r}");
    // Behind the slow bodies, this would wait for their 4 s timeout.
    assert!(started.elapsed() < Duration::from_secs(2), "others waited {:?} behind the slow bodies", started.elapsed());
    for h in slow {
        let answer = h.join().unwrap();
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("body_timeout"), "{answer}");
    }
}

#[test]
fn one_connection_over_the_cap_gets_503_with_retry_after_and_the_rest_are_served() {
    let cairn = host(vec!["--max-connections", "3"]);
    // Three idle keep-alive connections fill the cap.
    let idle: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(cairn.addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut extra = TcpStream::connect(cairn.addr).unwrap();
    let _ = extra.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n");
    let answer = drain(&mut extra, Duration::from_secs(3));
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("retry-after: 1") && answer.contains("too_many_connections"), "{answer}");
    drop(idle);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(cairn.get("/healthz").status, 200, "a connection is accepted again once others close");
}

#[test]
fn ten_one_megabyte_edits_in_one_batch_are_refused_whole_and_nothing_is_written() {
    let cairn = host(vec![]);
    let t = cairn.token(&agent());
    let note = cairn.create_note(&person(), "Big batch", true);
    let big = "x".repeat(1_000_000);
    let batch: Vec<serde_json::Value> = (0..10)
        .map(|i| {
            json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "edit_note_tab", "arguments":
            {"note_id": note, "tab_id": "markdown", "expected_version": 1, "idempotency_key": format!("big-{i}"), "operation": "replace_text", "text": big}}})
        })
        .collect();
    let r = cairn.mcp(&t, &json!(batch));
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(r.json()["error"], "body_too_large", "{}", r.text());
    let tab = cairn.call(&t, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    assert_eq!((tab["structuredContent"]["version"].as_u64(), tab["structuredContent"]["text"].as_str()), (Some(1), Some("")), "nothing was written");
    assert_eq!(cairn.get("/healthz").status, 200);
}

/// A small instance pool under many concurrent reads: requests wait for an
/// instance, none fails because the pool's tables, memories or core
/// instances ran out before its instance slots did (they are sized for
/// every request the permits let in at once, each using all a component
/// may).
#[test]
fn a_small_pool_under_many_concurrent_reads_answers_every_one() {
    let cairn = start_with(vec![("SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE", "100000")], vec!["--max-instances", "4"]);
    let note = cairn.create_note(&person(), "pool", true);
    let token = cairn.token(&agent());
    let failures: Vec<String> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..12)
            .map(|_| {
                let (cairn, token, note) = (&cairn, &token, &note);
                s.spawn(move || {
                    let mut bad = Vec::new();
                    for _ in 0..40 {
                        let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "read_note_tab", "arguments": {"note_id": note, "tab_id": "markdown"}}});
                        let r = cairn.mcp(token, &body);
                        if r.status != 200 {
                            bad.push(format!("{} {}", r.status, r.text()));
                        }
                    }
                    bad
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    let log = cairn.log();
    let why: Vec<&str> = log.lines().filter(|l| l.contains("ERROR") || l.contains("WARN")).take(3).collect();
    assert!(failures.is_empty(), "{} of 480 reads failed, first: {:?}; the host said: {why:?}", failures.len(), failures.first());
    assert!(!cairn.log().contains("concurrent limit"), "{}", cairn.log());
}
