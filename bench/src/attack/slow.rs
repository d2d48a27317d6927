//! Slow uploads, the attack suite's rows for clients that hold the host
//! open without sending: connections that declare a large body and never
//! send it (stalled), that send it at a trickle, or that trickle their
//! header section, all from one client address or spread over many
//! (loopback addresses `127.0.0.2` …, each client socket bound to its
//! source before it connects), while an honest agent pings and edits its
//! note beside them (from `127.0.0.1`).
//!
//! Each attacking connection is one upload, kept up for the whole row: when
//! the host answers or closes it, it opens another (after a second when
//! the answer came at once, so a refused attacker is an upload held open,
//! not a connection flood, which the `refused` row measures). What a row
//! must show: every honest call answered (a refused or failed one is
//! named), the honest edit p99 near its p99 alone (printed as a ratio,
//! never asserted), the attackers refused with the limit they hit, and the
//! host's memory and CPU meanwhile.

use super::{Conn, Target, usage};
use anyhow::Result;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The declared size of every attacking body: the largest the door accepts
/// by default (`max_body_bytes`).
const DECLARED: usize = 4 << 20;
/// Bytes a trickling body sends every 250 ms: 2 KiB a second, twice the
/// host's default minimum rate, so it is cut only by the body timeout (the
/// longest an upload can hold the host).
const TRICKLE: usize = 512;
/// The first source address of the attackers (`127.0.0.2`).
const FIRST_SOURCE: [u8; 4] = [127, 0, 0, 2];

/// How an attacking connection holds the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A body declared at 4 MiB, never sent.
    Stalled,
    /// A body declared at 4 MiB, sent at 2 KiB a second.
    TricklingBody,
    /// A header section sent a byte a second, never finished.
    TricklingHeaders,
}

impl Kind {
    /// Every kind, in the order the rows run.
    pub const ALL: [Kind; 3] = [Kind::Stalled, Kind::TricklingBody, Kind::TricklingHeaders];

    /// The row's name.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Stalled => "stalled declared bodies",
            Kind::TricklingBody => "trickling bodies",
            Kind::TricklingHeaders => "trickling headers",
        }
    }
}

/// What the honest agent saw: each edit's latency, and every call that was
/// not answered as asked.
#[derive(Debug, Clone, Default)]
pub struct Honest {
    /// Latency of each edit (the write of a read-then-edit pair), sorted.
    pub edits: Vec<Duration>,
    /// Calls made (pings, reads, edits).
    pub calls: usize,
    /// Each call refused or failed: what it was and what came back.
    pub failed: Vec<String>,
}

impl Honest {
    /// The edit latency at quantile `q`.
    pub fn quantile(&self, q: f64) -> Duration {
        let i = ((self.edits.len() as f64 * q) as usize).min(self.edits.len().saturating_sub(1));
        self.edits.get(i).copied().unwrap_or_default()
    }
}

/// What one row measured.
#[derive(Debug, Clone, Default)]
pub struct Row {
    /// Which attack ([`Kind::label`]).
    pub attack: String,
    /// Client addresses the uploads came from.
    pub addresses: usize,
    /// Uploads held up at once.
    pub uploads: usize,
    /// Connections the attackers opened over the row.
    pub connections: usize,
    /// Statuses the attackers were answered with (0: still open when the
    /// row ended, or closed without an answer), and how often.
    pub answers: BTreeMap<u16, usize>,
    /// Refusal codes the attackers were answered with, and how often.
    pub codes: BTreeMap<String, usize>,
    /// The honest agent beside them.
    pub honest: Honest,
    /// Highest resident memory growth of the host during the row, bytes.
    pub peak_rss_bytes: i64,
    /// Host CPU over the row, seconds.
    pub cpu_seconds: f64,
}

/// The honest agent alone, then every kind of slow upload from one address
/// and from `addresses`, `uploads` at once, for `seconds` each.
pub(super) fn rows(t: &Target, token: &str, note: &str, uploads: usize, addresses: usize, seconds: u64) -> Result<(Honest, Vec<Row>)> {
    let d = Duration::from_secs(seconds);
    let alone = honest(t, token, note, d, 3_000_000);
    let mut out = Vec::new();
    for (i, kind) in Kind::ALL.into_iter().enumerate() {
        for (j, spread) in [1, addresses].into_iter().enumerate() {
            let key_base = 3_100_000 + (i * 2 + j) * 10_000;
            out.push(row(t, token, note, kind, uploads, spread, d, key_base)?);
        }
    }
    Ok((alone, out))
}

/// One row: `uploads` of `kind` from `addresses` addresses, the honest
/// agent beside them for `d` once they are up.
#[allow(clippy::too_many_arguments)]
fn row(t: &Target, token: &str, note: &str, kind: Kind, uploads: usize, addresses: usize, d: Duration, key_base: usize) -> Result<Row> {
    let (rss0, cpu0) = t.usage()?;
    let pid = t.host.pid();
    let ramp = Duration::from_secs(1);
    let until = Instant::now() + ramp + d;
    let tally = Arc::new(Mutex::new(Row { attack: kind.label().into(), addresses, uploads, ..Row::default() }));
    let done = AtomicBool::new(false);
    let (honest, peak) = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut peak = 0i64;
            while !done.load(Ordering::Relaxed) {
                peak = peak.max(usage(pid).map(|u| u.0).unwrap_or(0));
                std::thread::sleep(Duration::from_millis(20));
            }
            peak
        });
        let attackers = {
            let tally = tally.clone();
            let addr = t.host.addr;
            s.spawn(move || attack(kind, addr, uploads, addresses, until, tally))
        };
        std::thread::sleep(ramp);
        let honest = honest(t, token, note, d, key_base);
        let attacked = attackers.join().map_err(|_| anyhow::anyhow!("the attackers panicked")).and_then(|r| r);
        done.store(true, Ordering::Relaxed);
        attacked.map(|()| (honest, watcher.join().unwrap_or(0)))
    })?;
    let (_, cpu1) = t.usage()?;
    let mut row = std::mem::take(&mut *tally.lock().unwrap_or_else(|p| p.into_inner()));
    row.honest = honest;
    row.peak_rss_bytes = peak - rss0;
    row.cpu_seconds = cpu1 - cpu0;
    Ok(row)
}

/// The honest agent for `d`, on one keep-alive connection as agents keep
/// one: every 250 ms a read of its tab and an edit appending a line to it,
/// and every fourth time a ping first (9 calls a second, within its
/// subject's budget of 600 a minute).
pub(super) fn honest(t: &Target, token: &str, note: &str, d: Duration, key_base: usize) -> Honest {
    let mut out = Honest::default();
    let mut conn = match Conn::open(t.host.addr) {
        Ok(c) => c,
        Err(e) => {
            out.failed.push(format!("connect: {e}"));
            return out;
        }
    };
    let mut call = |name: &str, body: Value, out: &mut Honest| -> Option<Value> {
        out.calls += 1;
        match conn.send("POST", "/mcp", token, body.to_string().as_bytes()) {
            Ok((200, bytes)) => {
                let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                if v.get("error").is_none() && v["result"]["isError"] != true {
                    return Some(v);
                }
                out.failed.push(format!("{name}: {}", String::from_utf8_lossy(&bytes).chars().take(200).collect::<String>()));
            }
            Ok((status, bytes)) => out.failed.push(format!("{name}: {status} {}", String::from_utf8_lossy(&bytes).chars().take(200).collect::<String>())),
            Err(e) => out.failed.push(format!("{name}: no answer: {e}")),
        }
        None
    };
    let end = Instant::now() + d;
    let mut i = key_base;
    while Instant::now() < end {
        let tick = Instant::now();
        if i.is_multiple_of(4) {
            call("ping", json!({"jsonrpc": "2.0", "id": 0, "method": "ping"}), &mut out);
        }
        let read = call(
            "read",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_note_tab", "arguments": {"note_id": note, "tab_id": "markdown"}}}),
            &mut out,
        );
        if let Some(read) = read {
            let version = read["result"]["structuredContent"]["version"].clone();
            let edit = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "edit_note_tab", "arguments": {"note_id": note, "tab_id": "markdown",
                "expected_version": version, "idempotency_key": format!("slow-honest-{i}"), "operation": "append_text", "text": format!("line {i}")}}});
            let started = Instant::now();
            if call("edit", edit, &mut out).is_some() {
                out.edits.push(started.elapsed());
            }
        }
        i += 1;
        std::thread::sleep(Duration::from_millis(250).saturating_sub(tick.elapsed()));
    }
    out.edits.sort();
    out
}

/// The soak's slow uploads: `uploads` at once from 50 addresses, each kind
/// in turn for 20 s, until `stop`; `sent` is told the connections each turn opened.
pub(super) fn soak(addr: SocketAddr, uploads: usize, stop: &AtomicBool, sent: &dyn Fn(usize)) {
    for kind in Kind::ALL.into_iter().cycle() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let tally = Arc::new(Mutex::new(Row::default()));
        let _ = attack(kind, addr, uploads, 50, Instant::now() + Duration::from_secs(20), tally.clone());
        sent(tally.lock().unwrap_or_else(|p| p.into_inner()).connections);
    }
}

/// The source address of upload `i` of `addresses`.
fn source(i: usize, addresses: usize) -> IpAddr {
    let n = u32::from(Ipv4Addr::from(FIRST_SOURCE)) + (i % addresses.max(1)) as u32;
    IpAddr::V4(Ipv4Addr::from(n))
}

/// `uploads` attacking connections of `kind` until `until`, each kept up
/// (reopened when the host ends it), tallied into `tally`.
fn attack(kind: Kind, addr: SocketAddr, uploads: usize, addresses: usize, until: Instant, tally: Arc<Mutex<Row>>) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async move {
        let until = tokio::time::Instant::from_std(until);
        let tasks: Vec<_> = (0..uploads)
            .map(|i| {
                let tally = tally.clone();
                tokio::spawn(async move {
                    while tokio::time::Instant::now() < until {
                        let started = tokio::time::Instant::now();
                        let outcome = upload(kind, source(i, addresses), addr, until).await;
                        let quick = started.elapsed() < Duration::from_secs(1) && tokio::time::Instant::now() < until;
                        record(&tally, outcome);
                        if quick {
                            tokio::time::sleep_until((tokio::time::Instant::now() + Duration::from_secs(1)).min(until)).await;
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    });
    Ok(())
}

/// How one attacking connection ended: the status and refusal code it was
/// answered with, or `None` when it was still open at the end of the row
/// or closed without an answer.
type Outcome = Option<(u16, Option<String>)>;

fn record(tally: &Mutex<Row>, outcome: Outcome) {
    let mut row = tally.lock().unwrap_or_else(|p| p.into_inner());
    row.connections += 1;
    let (status, code) = outcome.unwrap_or((0, None));
    *row.answers.entry(status).or_default() += 1;
    if let Some(code) = code {
        *row.codes.entry(code).or_default() += 1;
    }
}

/// One attacking connection from `source`, until the host answers or closes
/// it, or `until`.
async fn upload(kind: Kind, source: IpAddr, addr: SocketAddr, until: tokio::time::Instant) -> Outcome {
    let socket = tokio::net::TcpSocket::new_v4().ok()?;
    socket.bind(SocketAddr::new(source, 0)).ok()?;
    let stream = tokio::time::timeout(Duration::from_secs(5), socket.connect(addr)).await.ok()?.ok()?;
    let (mut rd, mut wr) = stream.into_split();
    let head = match kind {
        Kind::Stalled | Kind::TricklingBody => {
            format!("POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {DECLARED}\r\n\r\n")
        }
        Kind::TricklingHeaders => format!("POST /mcp HTTP/1.1\r\nhost: {addr}\r\nx-slow: "),
    };
    let send = async move {
        if wr.write_all(head.as_bytes()).await.is_ok() {
            loop {
                let (wait, piece): (u64, &[u8]) = match kind {
                    Kind::Stalled => (3_600_000, b""),
                    Kind::TricklingBody => (250, &[b' '; TRICKLE]),
                    Kind::TricklingHeaders => (1000, b"a"),
                };
                tokio::time::sleep(Duration::from_millis(wait)).await;
                if wr.write_all(piece).await.is_err() {
                    break;
                }
            }
        }
        // Written out (or refused): wait for the answer.
        std::future::pending::<()>().await
    };
    tokio::select! {
        answer = answer(&mut rd) => answer,
        () = send => None,
        () = tokio::time::sleep_until(until) => None,
    }
}

/// The status and refusal code of the answer on `rd`, once its head and
/// its declared body are in (`None`: closed without one).
async fn answer(rd: &mut tokio::net::tcp::OwnedReadHalf) -> Outcome {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = rd.read(&mut buf).await.ok()?;
        raw.extend_from_slice(&buf[..n]);
        if let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
            let length: usize = head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
            if raw.len() >= split + 4 + length || n == 0 {
                let status = head.split(' ').nth(1)?.parse().ok()?;
                let body: Value = serde_json::from_slice(&raw[split + 4..]).unwrap_or(Value::Null);
                return Some((status, body["error"].as_str().map(str::to_string)));
            }
        }
        if n == 0 {
            return None;
        }
    }
}

/// Prints the rows against the honest agent alone.
pub fn print(alone: &Honest, rows: &[Row]) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let p99_alone = alone.quantile(0.99);
    println!(
        "| slow uploads | from | at once | connections | answers | honest calls | refused or failed | edit p50 | edit p99 | p99 ÷ alone | peak RSS growth | host CPU |"
    );
    println!("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| none (the honest agent alone) | — | — | — | — | {} | {} | {:.2} ms | {:.2} ms | 1.00× | — | — |",
        alone.calls,
        alone.failed.len(),
        ms(alone.quantile(0.5)),
        ms(p99_alone)
    );
    for r in rows {
        let mut answers: Vec<String> = r.answers.iter().map(|(s, n)| if *s == 0 { format!("open×{n}") } else { format!("{s}×{n}") }).collect();
        answers.extend(r.codes.iter().map(|(c, n)| format!("`{c}`×{n}")));
        println!(
            "| {} | {} address{} | {} | {} | {} | {} | {} | {:.2} ms | {:.2} ms | {:.2}× | {} | {:.1} s |",
            r.attack,
            r.addresses,
            if r.addresses == 1 { "" } else { "es" },
            r.uploads,
            r.connections,
            answers.join(" "),
            r.honest.calls,
            r.honest.failed.len(),
            ms(r.honest.quantile(0.5)),
            ms(r.honest.quantile(0.99)),
            r.honest.quantile(0.99).as_secs_f64() / p99_alone.as_secs_f64().max(1e-6),
            super::bytes(r.peak_rss_bytes),
            r.cpu_seconds
        );
    }
    for r in rows.iter().filter(|r| !r.honest.failed.is_empty()) {
        println!("\n{} from {} addresses: honest calls refused or failed: {:?}", r.attack, r.addresses, &r.honest.failed[..r.honest.failed.len().min(5)]);
    }
}
