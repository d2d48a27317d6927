//! Faults of a scaled-out deployment: a host killed under load, and the
//! shared Redis stopped and restarted under load. Clients resend a call that
//! got no answer with the same idempotency key; nothing acknowledged is lost
//! and nothing lands twice, and no failure is ever reported as a success.
use crate::app::*;
use crate::harness::*;
use crate::redis;
use crate::scale_out::hosts_on;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What one client saw.
#[derive(Default, Debug)]
pub struct Seen {
    pub acked: Vec<String>,
    /// Answers that were neither a result nor a clear 503 (or a dead connection).
    pub errors: Vec<String>,
    pub unavailable: usize,
    pub dead_connections: usize,
    /// When each answered call was sent, and how long it took.
    pub timings: Vec<(Instant, Duration)>,
}

/// One tools/call; `Err` for a dead connection or a 503, the result otherwise.
fn call(addr: SocketAddr, token: &str, tool: &str, args: &Value, seen: &mut Seen) -> Option<Value> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}).to_string();
    let auth = format!("Bearer {token}");
    let sent = Instant::now();
    let reply = try_request(addr, "POST", "/mcp", &[("authorization", &auth), ("content-type", "application/json")], body.as_bytes());
    if let Ok(r) = &reply
        && r.status == 200
    {
        seen.timings.push((sent, sent.elapsed()));
    }
    match reply {
        Err(_) => {
            seen.dead_connections += 1;
            None
        }
        Ok(r) if r.status == 503 => {
            if r.header("retry-after").is_none() {
                seen.errors.push(format!("503 without Retry-After: {}", r.text()));
            }
            seen.unavailable += 1;
            None
        }
        // A host killed while it wrote its answer: the head came, the body
        // was cut. The outcome is unknown, as for a connection that died.
        Ok(r) if r.status == 200 && serde_json::from_slice::<Value>(&r.body).is_err() => {
            seen.dead_connections += 1;
            None
        }
        Ok(r) if r.status == 200 => {
            let v = r.json();
            if v.get("error").is_some() {
                seen.errors.push(format!("{tool}: JSON-RPC error {v}"));
                return None;
            }
            Some(v["result"].clone())
        }
        Ok(r) => {
            seen.errors.push(format!("{tool}: HTTP {} {}", r.status, r.text()));
            None
        }
    }
}

/// A client appending lines to its own note until `stop`, through `hosts`
/// (it moves to the next host when its own stops answering). Every call that
/// got no answer is resent, same arguments, same key, until it is answered.
fn client(hosts: Arc<Mutex<Vec<SocketAddr>>>, start: usize, token: String, note: String, tag: String, stop: Arc<AtomicBool>) -> Seen {
    let mut seen = Seen::default();
    let mut at = start;
    let mut i = 0;
    let pick = |at: usize| {
        let h = hosts.lock().unwrap();
        h[at % h.len()]
    };
    while !stop.load(Ordering::SeqCst) {
        let read = loop {
            match call(pick(at), &token, "read_note_tab", &json!({"note_id": note, "tab_id": "markdown"}), &mut seen) {
                Some(r) => break r["structuredContent"].clone(),
                None => {
                    at += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        };
        let text = read["text"].as_str().unwrap_or_default();
        let line = format!("{tag}-{i}");
        let next = if text.is_empty() { line.clone() } else { format!("{text}\n{line}") };
        let args = json!({"note_id": note, "tab_id": "markdown", "expected_version": read["version"],
            "idempotency_key": format!("{tag}-{i}"), "operation": "replace_text", "text": next});
        loop {
            match call(pick(at), &token, "edit_note_tab", &args, &mut seen) {
                Some(r) if r["isError"] == false => {
                    seen.acked.push(line.clone());
                    break;
                }
                Some(r) => {
                    seen.errors.push(format!("edit refused: {r}"));
                    break;
                }
                None => {
                    at += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
        i += 1;
    }
    seen
}

/// One client thread per note, spread over `hosts`; set the flag to stop them.
fn clients(hosts: &[Cairn], token: &str, notes: &[(String, String)]) -> (Arc<AtomicBool>, Vec<std::thread::JoinHandle<Seen>>) {
    clients_on(Arc::new(Mutex::new(hosts.iter().map(|h| h.addr).collect())), token, notes)
}

/// [`clients`] on addresses the caller may change while they run (a host restarted on another port).
pub fn clients_on(addrs: Arc<Mutex<Vec<SocketAddr>>>, token: &str, notes: &[(String, String)]) -> (Arc<AtomicBool>, Vec<std::thread::JoinHandle<Seen>>) {
    let work: Vec<(String, String, String)> = notes.iter().map(|(n, t)| (token.to_string(), n.clone(), t.clone())).collect();
    clients_each(addrs, &work)
}

/// One client per `(token, note, tag)`: each with its own token (so of its own tenant).
pub fn clients_each(addrs: Arc<Mutex<Vec<SocketAddr>>>, work: &[(String, String, String)]) -> (Arc<AtomicBool>, Vec<std::thread::JoinHandle<Seen>>) {
    let stop = Arc::new(AtomicBool::new(false));
    let workers = work
        .iter()
        .enumerate()
        .map(|(c, (token, note, tag))| {
            let (addrs, token, note, tag, stop) = (addrs.clone(), token.clone(), note.clone(), tag.clone(), stop.clone());
            std::thread::spawn(move || client(addrs, c, token, note, tag, stop))
        })
        .collect();
    (stop, workers)
}

/// Each client's note against what it saw: (acknowledged lines, acknowledged
/// lines missing, lines present more than once).
pub fn count_lines(host: &Cairn, work: &[(String, String, String)], seen: &[Seen]) -> (usize, usize, usize) {
    let (mut acked, mut lost, mut twice) = (0, 0, 0);
    for ((token, note, _), s) in work.iter().zip(seen) {
        let r = host.call(token, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
        let text = r["structuredContent"]["text"].as_str().unwrap().to_string();
        let mut lines: Vec<&str> = text.lines().collect();
        for line in &s.acked {
            lost += !lines.contains(&line.as_str()) as usize;
        }
        let n = lines.len();
        lines.sort();
        lines.dedup();
        twice += n - lines.len();
        acked += s.acked.len();
    }
    (acked, lost, twice)
}

/// Checks every client's note: each acknowledged line once, nothing else twice.
pub fn check_notes(host: &Cairn, token: &str, notes: &[(String, String)], seen: &[Seen]) -> usize {
    let mut acked = 0;
    for ((note, tag), s) in notes.iter().zip(seen) {
        let r = host.call(token, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
        let text = r["structuredContent"]["text"].as_str().unwrap().to_string();
        for line in &s.acked {
            assert_eq!(text.lines().filter(|l| l == line).count(), 1, "{line} of {tag} not exactly once");
        }
        let mut lines: Vec<&str> = text.lines().collect();
        let n = lines.len();
        lines.sort();
        lines.dedup();
        assert_eq!(lines.len(), n, "a line of {tag} landed twice");
        acked += s.acked.len();
    }
    acked
}

#[test]
fn killing_one_of_two_hosts_under_32_clients_loses_no_acknowledged_write() {
    let redis = redis::start();
    let mut hosts = hosts_on(&redis, 2, &[], &[]);
    let token = hosts[0].token(&agent());
    let notes: Vec<(String, String)> = (0..32).map(|c| (hosts[1].create_note(&person(), &format!("load {c}"), true), format!("c{c}"))).collect();
    let (stop, workers) = clients(&hosts, &token, &notes);
    std::thread::sleep(Duration::from_millis(1500));
    hosts[0].kill();
    let killed_at = Instant::now();
    std::thread::sleep(Duration::from_millis(2500));
    stop.store(true, Ordering::SeqCst);
    let seen: Vec<Seen> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    assert!(killed_at.elapsed() > Duration::from_secs(2));
    for (c, s) in seen.iter().enumerate() {
        assert!(s.errors.is_empty(), "client {c}: {:?}", s.errors);
        if c % 2 == 1 {
            assert_eq!(s.dead_connections, 0, "client {c} of the surviving host saw its connection fail");
        }
    }
    assert!(seen.iter().step_by(2).any(|s| s.dead_connections > 0), "no client of the killed host noticed: the kill came too late");
    let acked = check_notes(&hosts[1], &token, &notes, &seen);
    assert!(acked > 64, "only {acked} edits acknowledged under load");
}

#[test]
fn a_redis_outage_under_load_is_503_with_retry_after_and_loses_nothing() {
    let mut redis = redis::start();
    let hosts = hosts_on(&redis, 2, &[], &[]);
    let token = hosts[0].token(&agent());
    let notes: Vec<(String, String)> = (0..8).map(|c| (hosts[0].create_note(&person(), &format!("outage {c}"), true), format!("o{c}"))).collect();
    let (stop, workers) = clients(&hosts, &token, &notes);
    std::thread::sleep(Duration::from_millis(1000));
    redis.kill();
    std::thread::sleep(Duration::from_millis(1500));
    redis.restart();
    std::thread::sleep(Duration::from_millis(2000));
    stop.store(true, Ordering::SeqCst);
    let seen: Vec<Seen> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    for (c, s) in seen.iter().enumerate() {
        assert!(s.errors.is_empty(), "client {c}: {:?}", s.errors);
        assert_eq!(s.dead_connections, 0, "client {c}: a host dropped a connection");
    }
    let unavailable: usize = seen.iter().map(|s| s.unavailable).sum();
    assert!(unavailable > 0, "nobody saw the outage: it was too short");
    let acked = check_notes(&hosts[1], &token, &notes, &seen);
    assert!(acked > 16, "only {acked} edits acknowledged");
    for h in &hosts {
        let log = h.log();
        assert!(!log.contains("panicked"), "{log}");
    }
}
