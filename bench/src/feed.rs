//! `cairn-bench feed`: how soon a change reaches an agent listening on
//! `subscriptions/listen`, and what idle streams cost.
//!
//! - **Latency**: agents listen (one stream each, on the hosts round-robin)
//!   to every note's markdown tab; a person edits the notes in turn through
//!   the hosts round-robin, each note at most once a look apart, so every
//!   edit is told on its own. A notification's latency is from the edit's
//!   request to the notification read by the agent (an upper bound: the
//!   commit lands before the edit is answered). One host on SQLite, and
//!   three hosts sharing one Redis. Every edit must reach every agent.
//! - **Idle**: 1,000 subscriptions (streams of 16 resources, two per
//!   subject) held open on one host while nothing changes: the host's
//!   resident memory against the same host before they opened, and its
//!   CPU time over the same seconds against the same host idle without
//!   them.

use crate::hosts::{self, Host};
use crate::measure::Series;
use crate::stack::Client;
use anyhow::{Context, Result, bail};
use cairn_kv_redis::server::Server;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Resources one stream watches (the feed's bound).
const PER_STREAM: usize = 16;

/// One stream being read: each notification's URI with the instant it was read.
struct Stream {
    told: mpsc::UnboundedReceiver<(Instant, String)>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Stream {
    /// Hangs up: the host sees it at its next write and ends the stream,
    /// so a host stopped after its streams shuts down at once.
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Opens a `subscriptions/listen` on `addr` as the holder of `token` for
/// `uris` (and the listing when `list`), and reads it on a task of its own.
async fn listen(addr: SocketAddr, token: &str, uris: &[String]) -> Result<Stream> {
    let stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {"notifications": {"resourceSubscriptions": uris}}});
    let req = hyper::Request::post("/mcp")
        .header("host", addr.to_string())
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Full::new(Bytes::from(body.to_string())))?;
    let resp = tx.send_request(req).await?;
    if resp.status() != 200 {
        let status = resp.status();
        let text = resp.into_body().collect().await?.to_bytes();
        bail!("subscriptions/listen answered {status}: {}", String::from_utf8_lossy(&text));
    }
    let (sent, told) = mpsc::unbounded_channel();
    let mut body = resp.into_body();
    let (ack_tx, ack) = tokio::sync::oneshot::channel();
    let reader = tokio::spawn(async move {
        let _keep = tx;
        let (mut text, mut ack_tx) = (String::new(), Some(ack_tx));
        while let Some(Ok(frame)) = body.frame().await {
            let Ok(data) = frame.into_data() else { continue };
            text.push_str(&String::from_utf8_lossy(&data));
            while let Some(end) = text.find("\n\n") {
                let event: String = text.drain(..end + 2).collect();
                for m in event.lines().filter_map(|l| l.strip_prefix("data: ")).filter_map(|d| serde_json::from_str::<Value>(d).ok()) {
                    if m["method"] == "notifications/subscriptions/acknowledged" {
                        ack_tx.take().map(|a| a.send(()));
                    } else if let Some(uri) = m["params"]["uri"].as_str() {
                        let _ = sent.send((Instant::now(), uri.to_string()));
                    }
                }
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(10), ack).await.context("no acknowledgement within 10 s")??;
    Ok(Stream { told, reader })
}

/// Notes made and approved by a person through `addr`; their markdown tabs' URIs.
async fn notes(addr: SocketAddr, person: &str, n: usize) -> Result<Vec<(String, String)>> {
    let mut c = Client::connect(addr).await?;
    let mut out = Vec::new();
    for i in 0..n {
        let (status, v) = c.send("POST", "/api/v1/notes", person, &json!({"title": format!("feed {i}"), "approved_for_agents": true})).await?;
        if status != 201 {
            bail!("creating a note: HTTP {status}: {v}");
        }
        let id = v["note_id"].as_str().context("note_id")?.to_string();
        out.push((id.clone(), format!("cairn://notes/{id}/tabs/markdown")));
    }
    Ok(out)
}

/// One latency run: `agents` listeners on `addrs`, `edits` edits spread
/// over `notes` notes a look or more apart per note.
async fn latency(addrs: &[SocketAddr], state: &Path, label: &str, agents: usize, edits: usize) -> Result<(Series, usize)> {
    let person = hosts::person_token(state, "feed-person")?;
    let notes = notes(addrs[0], &person, 8).await?;
    let uris: Vec<String> = notes.iter().map(|(_, u)| u.clone()).collect();
    let mut streams = Vec::new();
    for a in 0..agents {
        streams.push(listen(addrs[a % addrs.len()], &hosts::token(state, &format!("feed-agent-{a}"))?, &uris).await?);
    }
    let mut writers = Vec::new();
    for a in addrs {
        writers.push(Client::connect(*a).await?);
    }
    let mut sent: Vec<(Instant, String)> = Vec::new();
    let started = Instant::now();
    for e in 0..edits {
        let (note, uri) = &notes[e % notes.len()];
        let w = &mut writers[e % addrs.len()];
        let read = w.call(&person, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"})).await?;
        let version = read["structuredContent"]["version"].clone();
        let at = Instant::now();
        let args = json!({"note_id": note, "tab_id": "markdown", "expected_version": version, "idempotency_key": format!("feed-{e}"),
                          "operation": "replace_text", "text": format!("edit {e}")});
        let r = w.call(&person, "edit_note_tab", args).await?;
        if r["isError"] == true {
            bail!("edit {e}: {r}");
        }
        sent.push((at, uri.clone()));
        // Eight notes in turn, 100 ms apart: each note 800 ms apart, past a look.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let elapsed = started.elapsed();
    let (mut lat, mut missed) = (Vec::new(), 0);
    for s in &mut streams {
        let mut told = Vec::new();
        while let Ok(t) = s.told.try_recv() {
            told.push(t);
        }
        for (at, uri) in &sent {
            // The first notification of this URI read after the edit went out.
            match told.iter().filter(|(t, u)| u == uri && t >= at).map(|(t, _)| *t).min() {
                Some(t) => lat.push(t - *at),
                None => missed += 1,
            }
        }
    }
    lat.sort();
    let pick = |q: f64| lat.get(((lat.len() as f64 * q) as usize).min(lat.len().saturating_sub(1))).copied().unwrap_or_default();
    let series = Series { name: label.to_string(), rps: lat.len() as f64 / elapsed.as_secs_f64(), p50: pick(0.5), p99: pick(0.99), requests: lat.len() };
    Ok((series, missed))
}

/// What idle streams cost one host.
struct Idle {
    rss_before: i64,
    rss_with: i64,
    /// CPU seconds over the idle seconds: without streams, with the
    /// subscriptions, and with as many streams watching nothing (what a
    /// stream costs by waking to look, whatever it reads).
    cpu: (f64, f64, f64),
}

/// Opens streams of up to [`PER_STREAM`] of `uris` until `subscriptions`
/// are held (or, with no URIs, as many streams watching nothing).
async fn open_streams(host: &Host, state: &Path, subscriptions: usize, uris: &[String]) -> Result<Vec<Stream>> {
    let mut streams = Vec::new();
    for i in 0..subscriptions.div_ceil(PER_STREAM) {
        let take = (subscriptions - i * PER_STREAM).min(PER_STREAM).min(uris.len());
        streams.push(listen(host.addr, &hosts::token(state, &format!("idle-agent-{}", i / 2))?, &uris[..take]).await?);
    }
    Ok(streams)
}

/// CPU seconds `host` spends over `seconds`.
async fn cpu_over(host: &Host, seconds: u64) -> Result<f64> {
    let (_, before) = crate::attack::usage(host.pid())?;
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    Ok(crate::attack::usage(host.pid())?.1 - before)
}

/// What `subscriptions` idle subscriptions of `uris` cost one host that
/// has served nothing else.
async fn idle(host: &Host, state: &Path, uris: &[String], subscriptions: usize, seconds: u64) -> Result<Idle> {
    let without = cpu_over(host, seconds).await?;
    let rss_before = crate::attack::usage(host.pid())?.0;
    let streams = open_streams(host, state, subscriptions, uris).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let with = cpu_over(host, seconds).await?;
    let rss_with = crate::attack::usage(host.pid())?.0;
    drop(streams);
    // Leases lapse as the dropped streams end; the same subjects listen again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let empty = open_streams(host, state, subscriptions, &[]).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let looking = cpu_over(host, seconds).await?;
    drop(empty);
    Ok(Idle { rss_before, rss_with, cpu: (without, with, looking) })
}

/// A runtime config putting both stores on `redis`.
fn redis_config(dir: &Path, redis: &Server) -> Result<PathBuf> {
    let path = dir.join("runtime-config-feed.toml");
    let store = |label: &str| format!("[key_value_store.{label}]\ntype = \"redis\"\nurl = \"{}\"\nnamespace = \"feed\"\n", redis.url());
    std::fs::write(&path, format!("{}\n{}", store("default"), store("cache")))?;
    Ok(path)
}

/// What one run measured.
pub struct Report {
    /// Agents listening and edits made in the latency rows.
    pub agents: usize,
    /// Edits made.
    pub edits: usize,
    /// One row per host setup: the notifications' latencies, and how many
    /// (agent, edit) pairs were never told.
    pub latency: Vec<(Series, usize)>,
    /// Idle subscriptions held.
    pub subscriptions: usize,
    /// Seconds of idleness measured.
    pub seconds: u64,
    /// Resident bytes before the subscriptions, and with them.
    pub rss: (i64, i64),
    /// CPU seconds over the idle seconds without the subscriptions, with
    /// them, and with as many streams watching nothing.
    pub cpu: (f64, f64, f64),
}

/// Runs the benchmark (see the module docs).
pub async fn run(manifest: &Path, agents: usize, edits: usize, subscriptions: usize, seconds: u64) -> Result<Report> {
    let dir = std::env::temp_dir().join(format!("cairn-bench-feed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let state = dir.join("state");
    // Streams outlive the run; the request timeout is above their lifetime.
    let env = vec![("SPIN_VARIABLE_FEED_STREAM_SECONDS".to_string(), "600".to_string())];
    let args = |extra: &[String]| {
        let mut a = vec!["--request-timeout-ms".to_string(), "700000".into(), "--max-instances".into(), "2048".into()];
        a.extend_from_slice(extra);
        a
    };
    // The notes to watch, made by a host of their own; then a fresh host on
    // the same store for the idle figures, so nothing else it served (the
    // notes' writes, the latency runs) sits in its memory.
    let maker = hosts::start(manifest, &state, &args(&[]), &env)?;
    let made = notes(maker.addr, &hosts::person_token(&state, "idle-person")?, PER_STREAM).await?;
    drop(maker);
    let uris: Vec<String> = made.into_iter().map(|(_, u)| u).collect();
    let quiet = hosts::start(manifest, &state, &args(&[]), &env)?;
    let idle = idle(&quiet, &state, &uris, subscriptions, seconds).await?;
    drop(quiet);
    let mut latencies = Vec::new();
    let one = hosts::start(manifest, &state, &args(&[]), &env)?;
    latencies.push(latency(&[one.addr], &state, "one host, SQLite", agents, edits).await?);
    drop(one);
    let redis = Server::start();
    let rc = redis_config(&dir, &redis)?;
    let group: Vec<Host> =
        (0..3).map(|_| hosts::start(manifest, &state, &args(&["--runtime-config-file".into(), rc.display().to_string()]), &env)).collect::<Result<_>>()?;
    let addrs: Vec<SocketAddr> = group.iter().map(|h| h.addr).collect();
    latencies.push(latency(&addrs, &state, "three hosts, one Redis", agents, edits).await?);
    drop(group);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Report { agents, edits, latency: latencies, subscriptions, seconds, rss: (idle.rss_before, idle.rss_with), cpu: idle.cpu })
}

impl Report {
    /// The tables.
    pub fn render(&self) -> Result<String> {
        let mut out = String::new();
        let (agents, edits, subscriptions, seconds) = (self.agents, self.edits, self.subscriptions, self.seconds);
        writeln!(out, "## The change feed: a change to an agent listening\n")?;
        writeln!(out, "{agents} agents listening to 8 notes, {edits} edits by a person (every edit must reach every agent)\n")?;
        writeln!(out, "| hosts | notifications | p50 | p99 | missed |\n|---|---:|---:|---:|---:|")?;
        for (s, missed) in &self.latency {
            writeln!(out, "| {} | {} | {:.0} ms | {:.0} ms | {missed} |", s.name, s.requests, ms(s.p50), ms(s.p99))?;
        }
        writeln!(out, "\n## {subscriptions} idle subscriptions on one host ({} streams of up to {PER_STREAM})\n", subscriptions.div_ceil(PER_STREAM))?;
        writeln!(out, "| | without | with | difference |\n|---|---:|---:|---:|")?;
        let ((rss0, rss1), (cpu0, cpu1, looking)) = (self.rss, self.cpu);
        let mb = |b: i64| b as f64 / 1_048_576.0;
        let each = (rss1 - rss0) as f64 / 1024.0 / subscriptions.max(1) as f64;
        writeln!(out, "| resident memory | {:.1} MB | {:.1} MB | {:+.1} MB ({each:.1} KB a subscription) |", mb(rss0), mb(rss1), mb(rss1 - rss0))?;
        let core = |c: f64| c * 100.0 / seconds.max(1) as f64;
        writeln!(
            out,
            "| CPU over {seconds} s idle | {cpu0:.2} s ({:.1}% of a core) | {cpu1:.2} s ({:.1}% of a core) | {:.1}× |",
            core(cpu0),
            core(cpu1),
            cpu1 / cpu0.max(0.01)
        )?;
        writeln!(
            out,
            "| CPU over {seconds} s, the same streams watching nothing | {cpu0:.2} s | {looking:.2} s ({:.1}% of a core) | {:.0}% of the subscriptions' cost |",
            core(looking),
            (looking - cpu0) * 100.0 / (cpu1 - cpu0).max(0.01)
        )?;
        Ok(out)
    }
}

/// `cairn-bench feed`: the report; an error when a notification never arrived.
pub async fn feed(manifest: PathBuf, agents: usize, edits: usize, subscriptions: usize, seconds: u64) -> Result<String> {
    let report = run(&manifest, agents, edits, subscriptions, seconds).await?;
    let out = report.render()?;
    let missed: usize = report.latency.iter().map(|(_, m)| m).sum();
    if missed > 0 {
        bail!("{missed} notifications never arrived:\n{out}");
    }
    Ok(out)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
