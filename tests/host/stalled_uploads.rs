//! Stalled and trickling uploads cannot stop the service: a declared body
//! takes the host's body budget only as its bytes arrive, each client
//! address has caps on the connections it holds and on the bodies the host
//! waits for, a body must keep a minimum rate, and a header section must
//! arrive within its deadline however slowly it trickles. Each refusal is a
//! JSON answer naming its limit; everyone else is served throughout.
use crate::app::*;
use crate::harness::*;
use crate::sources::*;
use serde_json::json;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

/// A request declaring a body of `declared` bytes, from `source`, whose body never comes.
fn stall(source: &str, cairn: &Cairn, declared: usize) -> TcpStream {
    let mut s = connect_from(source, cairn.addr);
    let head = format!("POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {declared}\r\n\r\n", cairn.addr);
    s.write_all(head.as_bytes()).unwrap();
    s
}

fn ping(cairn: &Cairn, token: &str) -> Reply {
    cairn.mcp(token, &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
}

/// The refusal's code and message, checking it is the door's JSON refusal.
fn refused(r: &Reply) -> (String, String) {
    let v = r.json();
    assert_eq!(r.header(cairn_door::refusal::REFUSED_HEADER), v["error"].as_str(), "{}", r.text());
    (v["error"].as_str().unwrap_or_default().to_string(), v["message"].as_str().unwrap_or_default().to_string())
}

#[test]
fn twenty_four_stalled_declared_bodies_hold_no_budget_and_a_ping_is_answered() {
    let cairn = start();
    let token = cairn.token(&agent());
    // 24 × 4 MiB declared is more than the 64 MiB budget; none is sent. One
    // address each, so no address reaches its own caps.
    let stalled: Vec<TcpStream> = (2..26).map(|i| stall(&format!("127.0.0.{i}"), &cairn, 4 << 20)).collect();
    std::thread::sleep(Duration::from_millis(300));
    let r = ping(&cairn, &token);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["result"], json!({}), "{}", r.text());
    drop(stalled);
}

#[test]
fn an_address_past_its_connection_cap_is_refused_429_naming_the_limit_and_others_are_served() {
    let cairn = start_with(vec![], vec!["--max-connections-per-address", "4"]);
    let idle: Vec<TcpStream> = (0..4).map(|_| connect_from("127.0.0.2", cairn.addr)).collect();
    std::thread::sleep(Duration::from_millis(200));
    let r = request_from("127.0.0.2", cairn.addr, "GET", "/healthz", &[], b"");
    assert_eq!(r.status, 429, "{}", r.text());
    let (code, message) = refused(&r);
    assert_eq!(code, "too_many_connections_from_address");
    assert!(message.contains("max_connections_per_address") && message.contains('4'), "{message}");
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(request_from("127.0.0.3", cairn.addr, "GET", "/healthz", &[], b"").status, 200, "another address is served");
    assert_eq!(cairn.get("/healthz").status, 200);
    drop(idle);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(request_from("127.0.0.2", cairn.addr, "GET", "/healthz", &[], b"").status, 200, "its connections given back, the address is served again");
}

#[test]
fn an_address_past_its_body_cap_is_refused_429_before_its_body_is_read_and_a_body_sent_whole_still_passes() {
    let cairn = start_with(vec![], vec!["--max-bodies-per-address", "2"]);
    let token = cairn.token(&agent());
    let waiting: Vec<TcpStream> = (0..2).map(|_| stall("127.0.0.2", &cairn, 1000)).collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut third = stall("127.0.0.2", &cairn, 1000);
    let r = read_reply(&mut third);
    assert_eq!(r.status, 429, "{}", r.text());
    let (code, message) = refused(&r);
    assert_eq!(code, "too_many_bodies_from_address");
    assert!(message.contains("max_bodies_per_address") && message.contains('2'), "{message}");
    // A body that came with its request is never waited for: the same address is served.
    let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let auth = format!("Bearer {token}");
    let headers = [("authorization", auth.as_str()), ("content-type", "application/json"), ("accept", "application/json, text/event-stream")];
    let whole = request_from("127.0.0.2", cairn.addr, "POST", "/mcp", &headers, ping);
    assert_eq!(whole.status, 200, "{}", whole.text());
    // Another address has slots of its own.
    let mut other = stall("127.0.0.3", &cairn, ping.len());
    std::thread::sleep(Duration::from_millis(200));
    other.write_all(b"x").unwrap();
    let r = read_reply(&mut other);
    assert_ne!(r.status, 429, "{}", r.text());
    drop(waiting);
}

/// Sends `body` after `head`, `piece` bytes every 100 ms, then reads the answer.
fn trickle(source: &str, cairn: &Cairn, head: &str, body: &[u8], piece: usize) -> Reply {
    let mut s = connect_from(source, cairn.addr);
    s.write_all(head.as_bytes()).unwrap();
    for part in body.chunks(piece) {
        if s.write_all(part).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    read_reply(&mut s)
}

#[test]
fn a_stalled_or_trickling_body_is_cut_off_at_the_minimum_rate_and_a_steady_one_is_read() {
    // The body timeout stays at its 30 s: the rate cuts first.
    let cairn = start_with(vec![], vec!["--min-body-rate", "1000", "--body-rate-window-ms", "1000"]);
    let token = cairn.token(&agent());
    let mut stalled = stall("127.0.0.2", &cairn, 4000);
    let r = read_reply(&mut stalled);
    assert_eq!(r.status, 408, "{}", r.text());
    let (code, message) = refused(&r);
    assert_eq!(code, "body_too_slow");
    assert!(message.contains("min_body_rate") && message.contains("1000"), "{message}");

    // 100 bytes a second, a tenth of the minimum.
    let addr = cairn.addr;
    let head = |n: usize| {
        format!(
            "POST /mcp HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {n}\r\nconnection: close\r\n\r\n"
        )
    };
    let r = trickle("127.0.0.3", &cairn, &head(4000), &[b' '; 4000], 10);
    assert_eq!((r.status, refused(&r).0.as_str()), (408, "body_too_slow"), "{}", r.text());

    // 3,000 bytes a second over two windows: read whole, and answered.
    let mut body = br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#.to_vec();
    body.resize(6000, b' ');
    let r = trickle("127.0.0.4", &cairn, &head(body.len()), &body, 300);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["id"], 7, "{}", r.text());
}

#[test]
fn a_header_section_trickled_past_its_deadline_is_answered_408_naming_the_limit() {
    let cairn = start_with(vec![], vec!["--header-timeout-ms", "800"]);
    let mut slow = connect_from("127.0.0.2", cairn.addr);
    let head = b"POST /mcp HTTP/1.1\r\nhost: x\r\nx-slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    for b in head {
        if slow.write_all(&[*b]).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = read_reply(&mut slow);
    assert_eq!(r.status, 408, "{}", r.text());
    let (code, message) = refused(&r);
    assert_eq!(code, "header_timeout");
    assert!(message.contains("header_timeout_ms") && message.contains("800"), "{message}");
    // A connection that sent nothing is closed without a word, as an idle keep-alive one is.
    let mut idle = connect_from("127.0.0.3", cairn.addr);
    idle.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut got = Vec::new();
    let _ = std::io::Read::read_to_end(&mut idle, &mut got);
    assert!(got.is_empty(), "{:?}", String::from_utf8_lossy(&got));
    assert_eq!(cairn.get("/healthz").status, 200);
}
