//! The attack suite (`cairn-bench attack`): every attack `docs/security.md`
//! names, against a real `cairn up` (a separate process on loopback, with
//! the defaults an operator gets), and what each one cost the host: store
//! bytes, resident memory, CPU seconds, metric series, and what an honest
//! agent's edits felt meanwhile. A short mode runs in the tests
//! (`bench/tests/bench.rs`, which also holds the bounds to the stated
//! figures); the full mode and the soak run by hand, and their figures go
//! into `docs/security.md`.
//!
//! | attack | what it sends | bound |
//! |---|---|---|
//! | refused | anonymous requests of every refused shape the header limits allow, after a warm-up round | store < 1 MB, RSS < 10 MB for 10,000, no new metric series |
//! | bodies | 100 parallel 30 MB anonymous bodies, declared and chunked | peak RSS growth < 100 MB |
//! | costly | a read-only token's merge and diff of unrelated 33,000-line texts, wide searches | < 1 s of CPU each, refused `too_complex` |
//! | honest | an agent appending at 4 edits/s alone, then beside 4 attackers sending the costly requests | p99 with attackers within 3× of without |
//! | slow uploads ([`slow`]) | stalled declared bodies, trickling bodies, trickling headers: 1,000 at once from one address, then from 50 (`127.0.0.2`…`127.0.0.51`), an honest agent pinging and editing beside them | every honest call answered; its edit p99 within 3× of alone |
//!
//! Nothing here leaves loopback, and every attack stops by itself.

use crate::hosts::{self, AUDIENCE, Host};
use anyhow::{Context, Result, bail};
use cairn_auth::mint::{LocalKey, TokenSpec};
use cairn_auth::{Actor, Role};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub mod slow;

/// How big a run is.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// Refused anonymous requests.
    pub refused: usize,
    /// Parallel large bodies.
    pub bodies: usize,
    /// Bytes in each.
    pub body_bytes: usize,
    /// Lines of the costly texts.
    pub lines: usize,
    /// Seconds of honest edits, alone and under attack.
    pub honest_seconds: u64,
    /// Attackers beside the honest agent.
    pub attackers: usize,
    /// Slow uploads held up at once in each of their rows.
    pub uploads: usize,
    /// Client addresses the spread-out slow uploads come from.
    pub upload_addresses: usize,
    /// Seconds of honest calls in each slow-upload row (and alone).
    pub upload_seconds: u64,
}

impl Sizes {
    /// The sizes the issue states.
    pub fn full() -> Self {
        Sizes {
            refused: 10_000,
            bodies: 100,
            body_bytes: 30 << 20,
            lines: 33_000,
            honest_seconds: 20,
            attackers: 4,
            uploads: 1_000,
            upload_addresses: 50,
            upload_seconds: 20,
        }
    }

    /// A quick run for the tests.
    pub fn short() -> Self {
        Sizes {
            refused: 2_000,
            bodies: 24,
            body_bytes: 30 << 20,
            lines: 33_000,
            honest_seconds: 4,
            attackers: 4,
            uploads: 150,
            upload_addresses: 50,
            upload_seconds: 6,
        }
    }
}

/// What one attack cost the host.
#[derive(Debug, Clone, Default)]
pub struct Row {
    /// Which attack.
    pub attack: String,
    /// Requests sent.
    pub requests: usize,
    /// Growth of the store's files, in bytes.
    pub store_bytes: i64,
    /// Growth of resident memory after the attack, in bytes.
    pub rss_bytes: i64,
    /// Highest resident memory growth seen during the attack, in bytes.
    pub peak_rss_bytes: i64,
    /// CPU the host spent, in seconds.
    pub cpu_seconds: f64,
    /// Lines of the metrics exposition added (a series is one line, a
    /// histogram's nineteen): series of the closed label sets filling in.
    pub series: i64,
    /// Label values in the metrics longer than 64 bytes: text an attacker
    /// chose making a series of its own (always 0 when labels come from
    /// closed sets).
    pub foreign_labels: usize,
    /// Statuses answered, and how often.
    pub answers: BTreeMap<u16, usize>,
    /// Refusal codes answered, and how often.
    pub codes: BTreeMap<String, usize>,
}

/// The whole run.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// One row per attack (the costly ones one row per request kind).
    pub rows: Vec<Row>,
    /// Honest edits alone: p50 and p99.
    pub honest_alone: (Duration, Duration, usize),
    /// Honest edits under attack: p50 and p99.
    pub honest_attacked: (Duration, Duration, usize),
    /// The honest agent of the slow-upload rows, alone.
    pub slow_alone: slow::Honest,
    /// One row per kind of slow upload, from one address and from many.
    pub slow: Vec<slow::Row>,
}

impl Report {
    /// The row of an attack.
    pub fn row(&self, attack: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.attack == attack)
    }

    /// The slow-upload row of `kind` from `addresses` addresses.
    pub fn slow_row(&self, kind: slow::Kind, addresses: usize) -> Option<&slow::Row> {
        self.slow.iter().find(|r| r.attack == kind.label() && r.addresses == addresses)
    }

    /// The ratio of honest p99 under attack to alone.
    pub fn honest_ratio(&self) -> f64 {
        self.honest_attacked.1.as_secs_f64() / self.honest_alone.1.as_secs_f64().max(1e-6)
    }

    /// Prints the tables.
    pub fn print(&self) {
        println!("| attack | requests | store growth | RSS growth | peak RSS growth | host CPU | new metric lines | answers |");
        println!("|---|---:|---:|---:|---:|---:|---:|---|");
        for r in &self.rows {
            let answers: Vec<String> = r.answers.iter().map(|(s, n)| format!("{s}×{n}")).collect();
            let codes: Vec<String> = r.codes.iter().map(|(c, n)| format!("{c}×{n}")).collect();
            println!(
                "| {} | {} | {} | {} | {} | {:.2} s | {} | {} {} |",
                r.attack,
                r.requests,
                bytes(r.store_bytes),
                bytes(r.rss_bytes),
                bytes(r.peak_rss_bytes),
                r.cpu_seconds,
                r.series,
                answers.join(" "),
                codes.join(" ")
            );
        }
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!();
        println!("| honest agent | edits | p50 | p99 |");
        println!("|---|---:|---:|---:|");
        println!("| alone | {} | {:.2} ms | {:.2} ms |", self.honest_alone.2, ms(self.honest_alone.0), ms(self.honest_alone.1));
        println!("| beside attackers | {} | {:.2} ms | {:.2} ms |", self.honest_attacked.2, ms(self.honest_attacked.0), ms(self.honest_attacked.1));
        println!("\np99 under attack ÷ alone: {:.2}×", self.honest_ratio());
        if !self.slow.is_empty() {
            println!();
            slow::print(&self.slow_alone, &self.slow);
        }
    }
}

fn bytes(n: i64) -> String {
    if n.abs() >= 1 << 20 { format!("{:.1} MB", n as f64 / 1048576.0) } else { format!("{:.1} KB", n as f64 / 1024.0) }
}

/// Resident memory and CPU seconds of a process, from `/proc`.
pub fn usage(pid: u32) -> Result<(i64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let rss_kb: i64 = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse().ok()).context("no VmRSS")?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces), 1-based from pid: utime is 14, stime 15.
    let after = stat.rsplit_once(')').map(|(_, r)| r).context("malformed stat")?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>()? + fields[12].parse::<f64>()?;
    Ok((rss_kb * 1024, ticks / 100.0))
}

/// Bytes of the SQLite store's files in a state dir.
fn store_size(state: &Path) -> i64 {
    ["kv.db", "kv.db-wal", "kv.db-shm"].iter().filter_map(|f| std::fs::metadata(state.join(f)).ok()).map(|m| m.len() as i64).sum()
}

/// One raw HTTP/1.1 exchange on a fresh connection: the status and body,
/// `None` when the connection ended first. `body` is sent after the head;
/// `chunked` sends it without a declared size.
fn exchange(addr: SocketAddr, head: &str, body: &[u8], chunked: bool) -> Option<(u16, String)> {
    exchange_on(TcpStream::connect(addr).ok()?, head, body, chunked)
}

/// The operator's own address, apart from the attackers' (`127.0.0.1`, and
/// `127.0.0.2`… of the slow uploads): the refused flood throttles theirs,
/// and a throttled address is refused at every door, `/metrics` included.
const OPERATOR: [u8; 4] = [127, 0, 0, 250];

/// A blocking connection to `addr` from the loopback address `source`
/// (bound before it connects).
fn connect_from(source: [u8; 4], addr: SocketAddr) -> Option<TcpStream> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().ok()?;
    let s = rt
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(SocketAddr::from((source, 0)))?;
            socket.connect(addr).await?.into_std()
        })
        .ok()?;
    s.set_nonblocking(false).ok()?;
    Some(s)
}

/// [`exchange`] on a connection already open.
fn exchange_on(mut s: TcpStream, head: &str, body: &[u8], chunked: bool) -> Option<(u16, String)> {
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    s.set_write_timeout(Some(Duration::from_secs(30))).ok()?;
    s.write_all(head.as_bytes()).ok()?;
    if chunked {
        for piece in body.chunks(256 * 1024) {
            if s.write_all(format!("{:x}\r\n", piece.len()).as_bytes()).is_err() || s.write_all(piece).is_err() || s.write_all(b"\r\n").is_err() {
                break;
            }
        }
        let _ = s.write_all(b"0\r\n\r\n");
    } else if !body.is_empty() {
        let _ = s.write_all(body);
    }
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw);
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Some((status, body))
}

/// A keep-alive connection, as a client that means it keeps one.
struct Conn {
    addr: SocketAddr,
    stream: std::io::BufReader<TcpStream>,
}

impl Conn {
    fn open(addr: SocketAddr) -> Result<Self> {
        let s = TcpStream::connect(addr)?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        s.set_nodelay(true)?;
        Ok(Conn { addr, stream: std::io::BufReader::new(s) })
    }

    /// One request on the connection (reopened once if the server closed
    /// it): the status and body.
    fn send(&mut self, method: &str, path: &str, token: &str, body: &[u8]) -> Result<(u16, Vec<u8>)> {
        match self.try_send(method, path, token, body) {
            Ok(r) => Ok(r),
            Err(_) => {
                *self = Conn::open(self.addr)?;
                self.try_send(method, path, token, body)
            }
        }
    }

    fn try_send(&mut self, method: &str, path: &str, token: &str, body: &[u8]) -> Result<(u16, Vec<u8>)> {
        use std::io::BufRead;
        let head = format!(
            "{method} {path} HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        let s = self.stream.get_mut();
        s.write_all(head.as_bytes())?;
        s.write_all(body)?;
        let mut line = String::new();
        self.stream.read_line(&mut line)?;
        let status: u16 = line.split(' ').nth(1).context("no status line")?.parse()?;
        let mut length = 0usize;
        loop {
            line.clear();
            if self.stream.read_line(&mut line)? == 0 {
                bail!("the connection closed");
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse()?;
            }
        }
        let mut out = vec![0u8; length];
        self.stream.read_exact(&mut out)?;
        Ok((status, out))
    }
}

fn count(row: &mut Row, answer: Option<(u16, String)>) {
    row.requests += 1;
    match answer {
        Some((status, body)) => {
            *row.answers.entry(status).or_default() += 1;
            if let Some(code) = serde_json::from_str::<Value>(body.trim()).ok().and_then(|v| v["error"].as_str().map(str::to_string)) {
                *row.codes.entry(code).or_default() += 1;
            }
        }
        None => *row.answers.entry(0).or_default() += 1,
    }
}

/// A host for the suite: the application's defaults (budgets included), the
/// metrics open to the suite's token.
struct Target {
    host: Host,
    state: PathBuf,
    key: LocalKey,
}

const METRICS_TOKEN: &str = "attack-suite-metrics";

impl Target {
    fn start(manifest: &Path) -> Result<Self> {
        let state = std::env::temp_dir().join(format!("cairn-attack-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&state);
        std::fs::create_dir_all(&state)?;
        let env = vec![
            // The suite's agents act at a person's pace, within the defaults.
            ("SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE".to_string(), cairn_door::defaults::SUBJECT_PER_MINUTE.to_string()),
            ("SPIN_VARIABLE_METRICS_TOKEN".to_string(), METRICS_TOKEN.to_string()),
        ];
        let args = vec!["--cache-dir".to_string(), hosts::compile_cache().display().to_string()];
        let host = hosts::start(manifest, &state, &args, &env)?;
        let key = cairn::local::signing_key(&state)?;
        Ok(Target { host, state, key })
    }

    fn token(&self, sub: &str, actor: Actor, scope: &str) -> String {
        self.key.sign(
            &TokenSpec {
                issuer: cairn::local::issuer_of(AUDIENCE),
                audience: AUDIENCE.into(),
                tenant: "attack".into(),
                subject: sub.into(),
                name: None,
                actor,
                role: Role::Member,
                scope: scope.into(),
                now: cairn::local::now(),
                ttl: 3600,
            }
            .claims(),
        )
    }

    fn usage(&self) -> Result<(i64, f64)> {
        usage(self.host.pid())
    }

    fn metrics(&self) -> Result<String> {
        let head = format!("GET /metrics HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {METRICS_TOKEN}\r\nconnection: close\r\n\r\n", self.host.addr);
        let conn = connect_from(OPERATOR, self.host.addr).context("cannot connect to /metrics")?;
        let (status, body) = exchange_on(conn, &head, b"", false).context("no answer from /metrics")?;
        if status != 200 {
            bail!("/metrics answered {status}");
        }
        Ok(body)
    }

    /// Waits out the instances' idle timeout, then until the host has no
    /// instance in use (at most 10 s more).
    fn settle(&self) -> Result<()> {
        std::thread::sleep(cairn::pool::Reuse::default().idle + Duration::from_millis(500));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            let in_use = self.metrics()?.lines().find_map(|l| l.strip_prefix("cairn_instances_in_use ")).and_then(|v| v.trim().parse::<f64>().ok());
            if in_use == Some(0.0) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    fn series(&self) -> Result<i64> {
        Ok(self.metrics()?.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).count() as i64)
    }

    /// Label values longer than 64 bytes in the exposition.
    fn foreign_labels(&self) -> Result<usize> {
        Ok(self.metrics()?.split('"').skip(1).step_by(2).filter(|v| v.len() > 64).count())
    }

    /// A JSON request with a token; status and body.
    fn call(&self, method: &str, path: &str, token: &str, body: &Value) -> Result<(u16, Value)> {
        let text = body.to_string();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            self.host.addr,
            text.len()
        );
        let (status, body) = exchange(self.host.addr, &head, text.as_bytes(), false).with_context(|| format!("{method} {path}: no answer"))?;
        Ok((status, serde_json::from_str(body.trim()).unwrap_or(Value::Null)))
    }
}

/// A text of `n` distinct lines.
fn lines(n: usize, salt: &str) -> String {
    (0..n).map(|i| format!("{salt} line {i} {}\n", (i * 7919) % 104_729)).collect()
}

/// Runs every attack against one fresh host.
pub fn run(manifest: &Path, sizes: Sizes) -> Result<Report> {
    let t = Target::start(manifest)?;
    // The suite's own callers share the attackers' loopback address, which
    // the refused flood throttles: their tokens are verified first, and a
    // token verified before passes a throttled address (as a real client's
    // behind the same address would).
    let callers = Callers {
        person: t.token("ada", Actor::Human, "notes:read notes:write"),
        reader: t.token("reader", Actor::Human, "notes:read"),
        honest: t.token("honest", Actor::Agent, "notes:read notes:write"),
        attackers: (0..sizes.attackers).map(|a| t.token(&format!("attacker-{a}"), Actor::Human, "notes:read notes:write")).collect(),
    };
    // The slow uploads' honest agent is a subject of its own.
    let slow_agent = t.token("honest-slow", Actor::Agent, "notes:read notes:write");
    for token in [&callers.person, &callers.reader, &callers.honest, &slow_agent].into_iter().chain(&callers.attackers) {
        let (status, answer) = t.call("GET", "/api/v1/notes", token, &json!({}))?;
        if status != 200 {
            bail!("a caller's first call: {status} {answer}");
        }
    }
    let mut report = Report::default();
    report.rows.push(refused(&t, sizes)?);
    report.rows.push(bodies(&t, sizes)?);
    let person = &callers.person;
    let (status, made) = t.call("POST", "/api/v1/notes", person, &json!({"title": "Long", "approved_for_agents": true}))?;
    if status != 201 {
        bail!("creating the costly note: {status} {made}");
    }
    let note = made["note_id"].as_str().context("no note id")?.to_string();
    for (i, salt) in ["first", "second"].iter().enumerate() {
        let (s, r) =
            t.call("PUT", &format!("/api/v1/notes/{note}/tabs/markdown"), person, &json!({"expected_version": i + 1, "text": lines(sizes.lines, salt)}))?;
        if s != 200 {
            bail!("writing the costly text: {s} {r}");
        }
    }
    report.rows.extend(costly(&t, &callers, &note, sizes)?);
    honest(&t, &callers, &note, sizes, &mut report)?;
    let (_, made) = t.call("POST", "/api/v1/notes", person, &json!({"title": "Honest beside slow uploads", "approved_for_agents": true}))?;
    let slow_note = made["note_id"].as_str().context("no note id")?.to_string();
    let (alone, rows) = slow::rows(&t, &slow_agent, &slow_note, sizes.uploads, sizes.upload_addresses, sizes.upload_seconds)?;
    report.slow_alone = alone;
    report.slow = rows;
    Ok(report)
}

/// The suite's own callers, each token made once (and verified once).
struct Callers {
    person: String,
    reader: String,
    honest: String,
    attackers: Vec<String>,
}

/// Anonymous requests of every refused shape, from 8 connections at once:
/// a first round warms what any first request warms (instances, the closed
/// set of metric series), then the round measured. Memory is read once the
/// instances that served a round have ended (their idle timeout passed, and
/// the host's gauge of instances in use says so: on a loaded machine an
/// expiry runs late): what the flood leaves behind, not the instances
/// still waiting for a next request.
fn refused(t: &Target, sizes: Sizes) -> Result<Row> {
    flood(t, (sizes.refused / 5).max(8))?;
    t.settle()?;
    let (rss0, cpu0) = t.usage()?;
    let (store0, series0) = (store_size(&t.state), t.series()?);
    let mut row = flood(t, sizes.refused)?;
    t.settle()?;
    let (rss1, cpu1) = t.usage()?;
    row.store_bytes = store_size(&t.state) - store0;
    row.rss_bytes = rss1 - rss0;
    row.peak_rss_bytes = row.rss_bytes.max(0);
    row.cpu_seconds = cpu1 - cpu0;
    row.series = t.series()? - series0;
    row.foreign_labels = t.foreign_labels()?;
    Ok(row)
}

/// `n` refused anonymous requests, rotating through their shapes.
fn flood(t: &Target, n: usize) -> Result<Row> {
    let stranger = LocalKey::from_seed([42; 32])
        .sign(&json!({"iss": cairn::local::issuer_of(AUDIENCE), "aud": AUDIENCE, "sub": "x", "tenant": "attack", "exp": cairn::local::now() + 600}));
    let addr = t.host.addr;
    let per = n.div_ceil(8);
    let rows: Vec<Row> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|w| {
                let stranger = stranger.clone();
                s.spawn(move || {
                    let mut row = Row::default();
                    for i in 0..per {
                        let n = w * per + i;
                        let junk: String = (0..7000).map(|k| char::from(b'a' + ((n * 31 + k) % 26) as u8)).collect();
                        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
                        let post = |extra: &str| format!("POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n", ping.len());
                        let answer = match n % 7 {
                            0 => exchange(addr, &post(&format!("origin: https://{junk}.example\r\n")), ping, false),
                            1 => exchange(addr, &post(&format!("authorization: Bearer {junk}\r\n")), ping, false),
                            2 => exchange(addr, &post(&format!("authorization: Bearer {stranger}\r\n")), ping, false),
                            3 => exchange(addr, &format!("GET /tools/{junk} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"), b"", false),
                            4 => exchange(addr, &format!("POST /tools/edit_note_tab HTTP/1.1\r\nhost: {addr}\r\ncairn-identity: {junk}\r\ncontent-length: 2\r\nconnection: close\r\n\r\n"), b"{}", false),
                            5 => exchange(addr, &format!("GET /api/v1/{junk} HTTP/1.1\r\nhost: {addr}\r\nx-pad: {junk}{junk}\r\nconnection: close\r\n\r\n"), b"", false),
                            _ => exchange(addr, &format!("POST /api/v1/notes HTTP/1.1\r\nhost: {addr}\r\ncontent-length: 2\r\nconnection: close\r\n\r\n"), b"{}", false),
                        };
                        count(&mut row, answer);
                    }
                    row
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    let mut row = Row { attack: "refused".into(), ..Row::default() };
    for r in rows {
        row.requests += r.requests;
        for (k, v) in r.answers {
            *row.answers.entry(k).or_default() += v;
        }
        for (k, v) in r.codes {
            *row.codes.entry(k).or_default() += v;
        }
    }
    Ok(row)
}

/// Large anonymous bodies in parallel: half with a declared size, half chunked.
fn bodies(t: &Target, sizes: Sizes) -> Result<Row> {
    let (rss0, cpu0) = t.usage()?;
    let addr = t.host.addr;
    let body = vec![b'x'; sizes.body_bytes];
    let pid = t.host.pid();
    let done = std::sync::atomic::AtomicBool::new(false);
    let (rows, peak) = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut peak = 0i64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok((rss, _)) = usage(pid) {
                    peak = peak.max(rss);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            peak
        });
        let handles: Vec<_> = (0..sizes.bodies)
            .map(|i| {
                let body = &body;
                s.spawn(move || {
                    let chunked = i % 2 == 1;
                    let size = if chunked { "transfer-encoding: chunked".to_string() } else { format!("content-length: {}", body.len()) };
                    let head = format!("POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n{size}\r\nconnection: close\r\n\r\n");
                    exchange(addr, &head, body, chunked)
                })
            })
            .collect();
        let answers: Vec<_> = handles.into_iter().map(|h| h.join().ok().flatten()).collect();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (answers, watcher.join().unwrap_or(0))
    });
    let mut row = Row { attack: "bodies".into(), ..Row::default() };
    for a in rows {
        count(&mut row, a);
    }
    let (rss1, cpu1) = t.usage()?;
    row.rss_bytes = rss1 - rss0;
    row.peak_rss_bytes = peak - rss0;
    row.cpu_seconds = cpu1 - cpu0;
    Ok(row)
}

/// The costliest requests a read-only token can send, one at a time, each
/// with the CPU it took.
fn costly(t: &Target, callers: &Callers, note: &str, sizes: Sizes) -> Result<Vec<Row>> {
    let reader = &callers.reader;
    let draft = lines(sizes.lines, "draft");
    let cases: Vec<(&str, &str, String, Value)> = vec![
        ("costly: merge", "POST", format!("/api/v1/notes/{note}/tabs/markdown/merge"), json!({"base_version": 2, "text": draft})),
        ("costly: diff", "GET", format!("/api/v1/notes/{note}/tabs/markdown/diff?from=2&to=3"), Value::Null),
        ("costly: search", "GET", "/api/v1/search?q=li*%20line%20first".to_string(), Value::Null),
    ];
    let mut out = Vec::new();
    for (name, method, path, body) in cases {
        let (_, cpu0) = t.usage()?;
        let (status, answer) = if body.is_null() { t.call(method, &path, reader, &json!({}))? } else { t.call(method, &path, reader, &body)? };
        std::thread::sleep(Duration::from_millis(100));
        let (_, cpu1) = t.usage()?;
        let mut row = Row { attack: name.into(), requests: 1, cpu_seconds: cpu1 - cpu0, ..Row::default() };
        *row.answers.entry(status).or_default() += 1;
        if let Some(code) = answer["error"].as_str() {
            *row.codes.entry(code.to_string()).or_default() += 1;
        }
        out.push(row);
    }
    Ok(out)
}

/// An agent appending to its own note at 4 edits a second (read, then
/// write), alone and then beside attackers sending costly requests.
fn honest(t: &Target, callers: &Callers, costly_note: &str, sizes: Sizes, report: &mut Report) -> Result<()> {
    let (_, made) = t.call("POST", "/api/v1/notes", &callers.person, &json!({"title": "Honest", "approved_for_agents": true}))?;
    let note = made["note_id"].as_str().context("no note")?.to_string();
    let agent = &callers.honest;
    report.honest_alone = honest_edits(t, agent, &note, Duration::from_secs(sizes.honest_seconds), 0)?;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let attacked = std::thread::scope(|s| {
        for (a, token) in callers.attackers.iter().enumerate() {
            let (stop, addr) = (&stop, t.host.addr);
            // Each request's bytes made once: the attacker's own CPU goes to sending.
            let merge = json!({"base_version": 2, "text": lines(sizes.lines, &format!("attack {a}"))}).to_string().into_bytes();
            let merge_path = format!("/api/v1/notes/{costly_note}/tabs/markdown/merge");
            let diff_path = format!("/api/v1/notes/{costly_note}/tabs/markdown/diff?from=2&to=3");
            s.spawn(move || {
                let Ok(mut conn) = Conn::open(addr) else { return };
                let mut i = 0usize;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = match i % 3 {
                        0 => conn.send("POST", &merge_path, token, &merge),
                        1 => conn.send("GET", &diff_path, token, b""),
                        _ => conn.send("GET", "/api/v1/search?q=li*%20line", token, b""),
                    };
                    i += 1;
                }
            });
        }
        let r = honest_edits(t, agent, &note, Duration::from_secs(sizes.honest_seconds), 100_000);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        r
    })?;
    report.honest_attacked = attacked;
    Ok(())
}

/// Paced edits for `d`, on one keep-alive connection: p50, p99 and how many.
fn honest_edits(t: &Target, token: &str, note: &str, d: Duration, key_base: usize) -> Result<(Duration, Duration, usize)> {
    let mut lat = honest_samples(t, token, note, d, key_base)?;
    lat.sort();
    let pick = |q: f64| lat.get(((lat.len() as f64 * q) as usize).min(lat.len().saturating_sub(1))).copied().unwrap_or_default();
    Ok((pick(0.5), pick(0.99), lat.len()))
}

/// Each paced edit's latency for `d`: read the tab, append a line to what
/// was read, at 4 edits a second.
fn honest_samples(t: &Target, token: &str, note: &str, d: Duration, key_base: usize) -> Result<Vec<Duration>> {
    let mut conn = Conn::open(t.host.addr)?;
    let mut call = |body: Value| -> Result<(u16, Value)> {
        let (status, bytes) = conn.send("POST", "/mcp", token, body.to_string().as_bytes())?;
        Ok((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
    };
    let end = Instant::now() + d;
    let mut lat = Vec::new();
    let mut i = key_base;
    while Instant::now() < end {
        let tick = Instant::now();
        let (_, read) = call(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_note_tab", "arguments": {"note_id": note, "tab_id": "markdown"}}}),
        )?;
        let version = read["result"]["structuredContent"]["version"].clone();
        let started = Instant::now();
        let (status, edit) = call(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "edit_note_tab", "arguments": {"note_id": note, "tab_id": "markdown",
            "expected_version": version, "idempotency_key": format!("honest-{i}"), "operation": "append_text", "text": format!("line {i}")}}}),
        )?;
        if status != 200 || edit["result"]["isError"] != false {
            bail!("an honest edit failed: {status} {edit}");
        }
        lat.push(started.elapsed());
        i += 1;
        std::thread::sleep(Duration::from_millis(250).saturating_sub(tick.elapsed()));
    }
    Ok(lat)
}

/// What a soak measured: honest agents beside every attack at once.
#[derive(Debug, Clone, Default)]
pub struct Soak {
    /// Seconds the attacks ran.
    pub seconds: u64,
    /// Honest edits alone before the attacks: p50, p99, count.
    pub alone: (Duration, Duration, usize),
    /// Honest edits during the attacks, every agent together: p50, p99, count.
    pub attacked: (Duration, Duration, usize),
    /// Requests the attackers sent, by kind.
    pub sent: BTreeMap<&'static str, usize>,
    /// Store growth over the soak, bytes.
    pub store_bytes: i64,
    /// Resident memory: growth at the end and the highest seen, bytes.
    pub rss_bytes: (i64, i64),
    /// Host CPU over the soak, seconds.
    pub cpu_seconds: f64,
}

impl Soak {
    /// Prints the table.
    pub fn print(&self) {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!("| soak | seconds | store growth | RSS growth (end / peak) | host CPU |");
        println!("|---|---:|---:|---:|---:|");
        println!(
            "| every attack at once | {} | {} | {} / {} | {:.0} s |",
            self.seconds,
            bytes(self.store_bytes),
            bytes(self.rss_bytes.0),
            bytes(self.rss_bytes.1),
            self.cpu_seconds
        );
        let sent: Vec<String> = self.sent.iter().map(|(k, n)| format!("{k} {n}")).collect();
        println!("\nattackers sent: {}", sent.join(", "));
        println!("\n| honest agents | edits | p50 | p99 |");
        println!("|---|---:|---:|---:|");
        println!("| alone | {} | {:.2} ms | {:.2} ms |", self.alone.2, ms(self.alone.0), ms(self.alone.1));
        println!("| during the soak | {} | {:.2} ms | {:.2} ms |", self.attacked.2, ms(self.attacked.0), ms(self.attacked.1));
        println!("\np99 during the soak ÷ alone: {:.2}×", self.attacked.1.as_secs_f64() / self.alone.1.as_secs_f64().max(1e-6));
    }
}

/// Slow uploads held up at once during a soak.
const SOAK_UPLOADS: usize = 300;

/// Two honest agents editing at 4 a second beside every attack at once for
/// `seconds`: refused floods, waves of large bodies, slow uploads (stalled,
/// trickling bodies, trickling headers in turn, from 50 addresses), and
/// four attackers sending the costliest requests.
pub fn soak(manifest: &Path, seconds: u64) -> Result<Soak> {
    let sizes = Sizes::full();
    let t = Target::start(manifest)?;
    let callers = Callers {
        person: t.token("ada", Actor::Human, "notes:read notes:write"),
        reader: t.token("reader", Actor::Human, "notes:read"),
        honest: t.token("honest", Actor::Agent, "notes:read notes:write"),
        attackers: (0..sizes.attackers).map(|a| t.token(&format!("attacker-{a}"), Actor::Human, "notes:read notes:write")).collect(),
    };
    let second_honest = t.token("honest-2", Actor::Agent, "notes:read notes:write");
    for token in [&callers.person, &callers.reader, &callers.honest, &second_honest].into_iter().chain(&callers.attackers) {
        t.call("GET", "/api/v1/notes", token, &json!({}))?;
    }
    let (_, made) = t.call("POST", "/api/v1/notes", &callers.person, &json!({"title": "Long", "approved_for_agents": true}))?;
    let costly_note = made["note_id"].as_str().context("no note")?.to_string();
    for (i, salt) in ["first", "second"].iter().enumerate() {
        t.call(
            "PUT",
            &format!("/api/v1/notes/{costly_note}/tabs/markdown"),
            &callers.person,
            &json!({"expected_version": i + 1, "text": lines(sizes.lines, salt)}),
        )?;
    }
    let mut notes = Vec::new();
    for n in 0..2 {
        let (_, made) = t.call("POST", "/api/v1/notes", &callers.person, &json!({"title": format!("Honest {n}"), "approved_for_agents": true}))?;
        notes.push(made["note_id"].as_str().context("no note")?.to_string());
    }
    let mut out = Soak { seconds, alone: honest_edits(&t, &callers.honest, &notes[0], Duration::from_secs(30), 0)?, ..Soak::default() };
    let (rss0, cpu0) = t.usage()?;
    let store0 = store_size(&t.state);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let sent = std::sync::Mutex::new(BTreeMap::<&'static str, usize>::new());
    let bump = |k: &'static str, n: usize| *sent.lock().unwrap_or_else(|p| p.into_inner()).entry(k).or_default() += n;
    let pid = t.host.pid();
    let results = std::thread::scope(|s| {
        let (stop, t, bump) = (&stop, &t, &bump);
        let peak = s.spawn(move || {
            let mut peak = 0i64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(usage(pid).map(|u| u.0).unwrap_or(0));
                std::thread::sleep(Duration::from_millis(100));
            }
            peak
        });
        s.spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = flood(t, 800);
                bump("refused", 800);
            }
        });
        s.spawn(move || {
            let body = vec![b'x'; sizes.body_bytes];
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let (addr, body) = (t.host.addr, &body);
                std::thread::scope(|w| {
                    for i in 0..10 {
                        w.spawn(move || {
                            let size = if i % 2 == 1 { "transfer-encoding: chunked".to_string() } else { format!("content-length: {}", body.len()) };
                            exchange(addr, &format!("POST /mcp HTTP/1.1\r\nhost: {addr}\r\n{size}\r\nconnection: close\r\n\r\n"), body, i % 2 == 1)
                        });
                    }
                });
                bump("large bodies", 10);
                std::thread::sleep(Duration::from_secs(5));
            }
        });
        s.spawn(move || slow::soak(t.host.addr, SOAK_UPLOADS, stop, &|n| bump("slow uploads", n)));
        for (a, token) in callers.attackers.iter().enumerate() {
            let merge = json!({"base_version": 2, "text": lines(sizes.lines, &format!("attack {a}"))}).to_string().into_bytes();
            let (merge_path, diff_path) =
                (format!("/api/v1/notes/{costly_note}/tabs/markdown/merge"), format!("/api/v1/notes/{costly_note}/tabs/markdown/diff?from=2&to=3"));
            s.spawn(move || {
                let Ok(mut conn) = Conn::open(t.host.addr) else { return };
                let mut i = 0usize;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = match i % 3 {
                        0 => conn.send("POST", &merge_path, token, &merge),
                        1 => conn.send("GET", &diff_path, token, b""),
                        _ => conn.send("GET", "/api/v1/search?q=li*%20line", token, b""),
                    };
                    i += 1;
                }
                bump("costly", i);
            });
        }
        let honest: Vec<_> = [(&callers.honest, &notes[0], 1_000_000), (&second_honest, &notes[1], 2_000_000)]
            .into_iter()
            .map(|(token, note, base)| s.spawn(move || honest_samples(t, token, note, Duration::from_secs(seconds), base)))
            .collect();
        let samples: Vec<Result<Vec<Duration>>> =
            honest.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("an honest agent panicked")))).collect();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (samples, peak.join().unwrap_or(0))
    });
    let (samples, peak) = results;
    let mut all = Vec::new();
    for s in samples {
        all.extend(s?);
    }
    all.sort();
    let pick = |q: f64| all.get(((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1))).copied().unwrap_or_default();
    out.attacked = (pick(0.5), pick(0.99), all.len());
    let (rss1, cpu1) = t.usage()?;
    out.store_bytes = store_size(&t.state) - store0;
    out.rss_bytes = (rss1 - rss0, peak - rss0);
    out.cpu_seconds = cpu1 - cpu0;
    out.sent = sent.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(out)
}
