//! `cairn bench notes` and `cairn bench router`: the notes tools through the
//! whole stack (HTTP → router → tool component → store) against the same
//! core called natively in this process on the same kind of store, in one run.
//!
//! - notes: edits (read_note_tab + edit_note_tab replace_text of 200
//!   characters) at 1 and 32 clients; per-write cost as the tab grows from
//!   1 KB to ~1 MB; per-write cost as the store grows from 1,000 to 100,000
//!   notes.
//! - router: read_note_tab through the router, against the tool component
//!   called directly (in-process, no router), against the core natively.

use crate::bench::{Series, print_table, summarize};
use crate::native::{NativeEnv, NativeKv};
use crate::runtime::Limits;
use crate::server::{self, Running, StoreKind};
use anyhow::{Context, Result, bail};
use cairn_auth::mint::TokenSpec;
use cairn_auth::{Actor, Principal, Role};
use cairn_kv::Store;
use cairn_notes::{ActorType, Identity};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

const TENANT: &str = "bench";

/// Distinguishes the idempotency keys of successive runs on the same notes.
static RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn first_key(client: usize) -> u64 {
    (RUN.fetch_add(1, std::sync::atomic::Ordering::SeqCst) << 40) | ((client as u64) << 24)
}

/// A keep-alive HTTP/1.1 client.
pub struct Client {
    tx: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    addr: SocketAddr,
}

impl Client {
    /// Connect.
    pub async fn connect(addr: SocketAddr) -> Result<Self> {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(conn);
        Ok(Self { tx, addr })
    }

    /// Send JSON, get status and JSON.
    pub async fn send(&mut self, method: &str, path: &str, token: &str, body: &Value) -> Result<(u16, Value)> {
        let req = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", self.addr.to_string())
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))?;
        let resp = self.tx.send_request(req).await?;
        let status = resp.status().as_u16();
        let bytes = resp.into_body().collect().await?.to_bytes();
        Ok((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
    }

    /// `tools/call` through the router; the CallToolResult.
    pub async fn call(&mut self, token: &str, tool: &str, args: Value) -> Result<Value> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}});
        let (status, v) = self.send("POST", "/mcp", token, &body).await?;
        if status != 200 || v.get("error").is_some() {
            bail!("{tool}: HTTP {status}: {v}");
        }
        Ok(v["result"].clone())
    }
}

/// The application running in this process, with bench tokens.
pub struct Stack {
    /// The server.
    pub running: Running,
    /// An agent's token.
    pub agent: String,
    /// A person's token.
    pub person: String,
    state: PathBuf,
}

impl Stack {
    /// Start with the SQLite store in a fresh state dir.
    pub async fn start(manifest: PathBuf) -> Result<Self> {
        let state = std::env::temp_dir().join(format!("cairn-bench-notes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&state);
        let variables = [("rate_limit_per_minute".to_string(), "1000000000".to_string())].into();
        let opts = server::Options {
            manifest,
            listen: "127.0.0.1:0".parse()?,
            cache_dir: state.join("cache"),
            state_dir: state.clone(),
            store: StoreKind::Sqlite,
            fsync: false,
            limits: Limits::default(),
        sweep_interval: Duration::from_secs(60),
            variables,
        };
        let running = server::start(opts).await?;
        let key = crate::local::signing_key(&state)?;
        let audience = crate::local::audience(running.addr);
        let token = |actor, sub: &str| {
            key.sign(
                &TokenSpec {
                    issuer: crate::local::LOCAL_ISSUER.into(),
                    audience: audience.clone(),
                    tenant: TENANT.into(),
                    subject: sub.into(),
                    name: None,
                    actor,
                    role: Role::Member,
                    scope: "notes:read notes:write".into(),
                    now: crate::local::now(),
                    ttl: 86_400,
                }
                .claims(),
            )
        };
        Ok(Self { agent: token(Actor::Agent, "bench-agent"), person: token(Actor::Human, "bench-person"), running, state })
    }

    /// Create `n` approved notes straight in the server's store; their ids.
    pub fn seed_notes(&self, n: usize) -> Result<Vec<String>> {
        seed(&NativeKv(self.running.app.store().clone()), n)
    }

    /// Stop and clean up.
    pub async fn stop(self) {
        self.running.shutdown().await;
        let _ = std::fs::remove_dir_all(&self.state);
    }
}

fn person() -> Identity {
    Identity { tenant: TENANT.into(), subject: "bench-person".into(), display_name: "Bench person".into(), actor_type: ActorType::Human, role: cairn_notes::Role::Member }
}

fn agent() -> Identity {
    Identity { actor_type: ActorType::Agent, subject: "bench-agent".into(), display_name: "Bench agent".into(), ..person() }
}

/// Create `n` approved notes; their ids.
pub fn seed(kv: &NativeKv, n: usize) -> Result<Vec<String>> {
    let mut env = NativeEnv::new(n as u64);
    (0..n)
        .map(|i| {
            let r = cairn_notes::rest::create_note(kv, &mut env, &person(), json!({"title": format!("note {i}"), "approved_for_agents": true}))
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
            if r.status != 201 {
                bail!("create_note: {}", r.body);
            }
            Ok(r.body["note_id"].as_str().context("note_id")?.to_string())
        })
        .collect()
}

/// What one timed step of a client does.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    /// `read_note_tab` of the markdown tab.
    Read,
    /// `edit_note_tab` replace_text of `size` characters with the version the
    /// client's previous edit returned (each client owns its note).
    Edit(usize),
    /// An agent's edit: `read_note_tab`, then `edit_note_tab` with the version read.
    ReadEdit(usize),
}

/// How a client reaches the tools: over HTTP MCP, or the core in-process.
trait Caller {
    /// `tools/call`; the CallToolResult.
    async fn call(&mut self, tool: &str, args: Value) -> Result<Value>;
}

struct McpCaller {
    client: Client,
    token: String,
}

impl Caller for McpCaller {
    async fn call(&mut self, tool: &str, args: Value) -> Result<Value> {
        self.client.call(&self.token, tool, args).await
    }
}

struct CoreCaller {
    kv: Arc<NativeKv>,
    env: NativeEnv,
    who: Identity,
}

impl Caller for CoreCaller {
    async fn call(&mut self, tool: &str, args: Value) -> Result<Value> {
        cairn_notes::call_tool(&*self.kv, &mut self.env, &self.who, tool, args).map_err(|e| anyhow::anyhow!("{tool}: {e:?}"))
    }
}

fn text_of(size: usize, i: u64) -> String {
    let mut t = format!("{i:012}");
    while t.len() < size {
        t.push_str(" lorem ipsum dolor sit amet");
    }
    t.truncate(size);
    t
}

async fn read_version(c: &mut impl Caller, note: &str) -> Result<Value> {
    let read = c.call("read_note_tab", json!({"note_id": note, "tab_id": "markdown"})).await?;
    if read["isError"] != false {
        bail!("read refused: {read}");
    }
    Ok(read["structuredContent"]["version"].clone())
}

async fn edit(c: &mut impl Caller, note: &str, version: Value, size: usize, key: u64) -> Result<Value> {
    let args = json!({"note_id": note, "tab_id": "markdown", "expected_version": version,
        "idempotency_key": format!("bench-{key}"), "operation": "replace_text", "text": text_of(size, key)});
    let w = c.call("edit_note_tab", args).await?;
    if w["isError"] != false || w["structuredContent"]["replayed"] != false {
        bail!("edit refused or replayed: {w}");
    }
    Ok(w["structuredContent"]["version"].clone())
}

/// One client until `deadline`: the latency of every step. A client that
/// edits checks at the end that its note advanced by exactly the edits it
/// was told succeeded: nothing acknowledged was lost, nothing was doubled.
async fn client_loop(mut c: impl Caller, note: String, op: Op, first: u64, deadline: Instant) -> Result<Vec<Duration>> {
    let mut lat = Vec::new();
    let start = read_version(&mut c, &note).await?;
    let mut version = start.clone();
    let mut key = first;
    while Instant::now() < deadline {
        let t = Instant::now();
        match op {
            Op::Read => version = read_version(&mut c, &note).await?,
            Op::Edit(size) => {
                key += 1;
                version = edit(&mut c, &note, version, size, key).await?;
            }
            Op::ReadEdit(size) => {
                let read = read_version(&mut c, &note).await?;
                key += 1;
                version = edit(&mut c, &note, read, size, key).await?;
            }
        }
        lat.push(t.elapsed());
    }
    let end = read_version(&mut c, &note).await?;
    let expected = if matches!(op, Op::Read) { 0 } else { lat.len() as u64 };
    let moved = end.as_u64().unwrap_or(0).saturating_sub(start.as_u64().unwrap_or(0));
    if end != version || moved != expected {
        bail!("note {note}: version went {start} → {end} after {expected} acknowledged edits");
    }
    Ok(lat)
}

/// `clients` MCP clients, each on its own connection and note, through the
/// whole stack (HTTP, router, tool components, SQLite).
pub async fn stack_calls(stack: &Stack, notes: &[String], clients: usize, op: Op, duration: Duration) -> Result<Series> {
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (addr, token, note) = (stack.running.addr, stack.agent.clone(), notes[c % notes.len()].clone());
        tasks.push(tokio::spawn(async move {
            let caller = McpCaller { client: Client::connect(addr).await?, token };
            client_loop(caller, note, op, first_key(c), deadline).await
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    Ok(summarize("whole stack: HTTP, router, tool components, SQLite", all, started.elapsed()))
}

/// The same clients calling the core natively, one thread each.
pub fn native_calls(kv: Arc<NativeKv>, notes: &[String], clients: usize, op: Op, duration: Duration) -> Result<Series> {
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let (kv, note) = (kv.clone(), notes[c % notes.len()].clone());
            std::thread::spawn(move || -> Result<Vec<Duration>> {
                let caller = CoreCaller { kv, env: NativeEnv::new(c as u64), who: agent() };
                let rt = tokio::runtime::Builder::new_current_thread().build()?;
                rt.block_on(client_loop(caller, note, op, first_key(c), deadline))
            })
        })
        .collect();
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.join().map_err(|_| anyhow::anyhow!("bench thread panicked"))??);
    }
    Ok(summarize("same core natively in-process, SQLite", all, started.elapsed()))
}

/// A SQLite store of its own in `dir`, for the native side.
pub fn native_store(dir: &std::path::Path) -> Result<Arc<NativeKv>> {
    std::fs::create_dir_all(dir)?;
    let store: Arc<dyn Store> = Arc::new(cairn_kv_sqlite::SqliteStore::open(&dir.join("kv.db"), false)?);
    Ok(Arc::new(NativeKv(store)))
}

/// `cairn bench notes`.
pub async fn notes(manifest: PathBuf, seconds: u64, clients: Vec<usize>, max_notes: usize) -> Result<()> {
    let duration = Duration::from_secs(seconds);
    let stack = Stack::start(manifest).await?;
    let scratch = std::env::temp_dir().join(format!("cairn-bench-native-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let native = native_store(&scratch.join("a"))?;
    let max_clients = clients.iter().copied().max().unwrap_or(1);
    let stack_notes = stack.seed_notes(max_clients)?;
    let native_notes = seed(&native, max_clients)?;

    println!("# edit_note_tab: read_note_tab + replace_text of 200 characters, each client on its own note");
    for &c in &clients {
        stack_calls(&stack, &stack_notes, c, Op::ReadEdit(200), Duration::from_millis(300)).await?;
        let s = stack_calls(&stack, &stack_notes, c, Op::ReadEdit(200), duration).await?;
        let n = native_calls(native.clone(), &native_notes, c, Op::ReadEdit(200), duration)?;
        print_table(&format!("{c} concurrent clients, {seconds} s each (edits/s)"), &[n.clone(), s.clone()]);
        println!("\nratio native/stack: {:.2}x; per edit through the stack {:.0} µs vs {:.0} µs natively (p50)", n.rps / s.rps, s.p50.as_secs_f64() * 1e6, n.p50.as_secs_f64() * 1e6);
    }

    println!("\n# per-write cost as the tab grows (1 client)\n");
    println!("| tab size | stack µs/edit (p50) | native µs/edit (p50) | ratio |");
    println!("|---:|---:|---:|---:|");
    for size in [1_000usize, 10_000, 100_000, 900_000] {
        let d = Duration::from_millis((seconds * 1000 / 2).max(500));
        let s = stack_calls(&stack, &stack_notes, 1, Op::ReadEdit(size), d).await?;
        let n = native_calls(native.clone(), &native_notes, 1, Op::ReadEdit(size), d)?;
        println!("| {} | {:.0} | {:.0} | {:.2} |", human(size), s.p50.as_secs_f64() * 1e6, n.p50.as_secs_f64() * 1e6, s.p50.as_secs_f64() / n.p50.as_secs_f64());
    }

    println!("\n# per-write cost as the store grows (1 client, 200 characters)\n");
    println!("| notes in the store | stack µs/edit (p50) | native µs/edit (p50) |");
    println!("|---:|---:|---:|");
    let mut have = max_clients;
    let mut sizes = vec![1_000usize, 10_000, 100_000];
    sizes.retain(|&n| n <= max_notes);
    for target in sizes {
        let more = target.saturating_sub(have);
        let added = stack.seed_notes(more)?;
        let native_added = seed(&native, more)?;
        have = target;
        let pick = |ids: &[String], fallback: &[String]| ids.last().cloned().unwrap_or_else(|| fallback[0].clone());
        let d = Duration::from_millis((seconds * 1000 / 2).max(500));
        let s = stack_calls(&stack, &[pick(&added, &stack_notes)], 1, Op::ReadEdit(200), d).await?;
        let n = native_calls(native.clone(), &[pick(&native_added, &native_notes)], 1, Op::ReadEdit(200), d)?;
        println!("| {target} | {:.0} | {:.0} |", s.p50.as_secs_f64() * 1e6, n.p50.as_secs_f64() * 1e6);
    }
    stack.stop().await;
    let _ = std::fs::remove_dir_all(scratch);
    Ok(())
}

fn human(n: usize) -> String {
    if n >= 1_000_000 { format!("{} MB", n / 1_000_000) } else if n >= 1000 { format!("{} KB", n / 1000) } else { format!("{n} B") }
}

/// `cairn bench router`.
pub async fn router(manifest: PathBuf, seconds: u64, clients: Vec<usize>) -> Result<()> {
    let duration = Duration::from_secs(seconds);
    let stack = Stack::start(manifest).await?;
    let note = stack.seed_notes(1)?.remove(0);
    let app = stack.running.app.clone();
    let tool = app.components.get("read-note-tab").context("no read-note-tab component")?.clone();
    let secret = crate::local::identity_secret(&stack.state)?;
    let principal = Principal {
        tenant: TENANT.into(),
        subject: "bench-agent".into(),
        name: "Bench agent".into(),
        actor: Actor::Agent,
        role: Role::Member,
        scopes: vec!["notes:read".into()],
        exp: u64::MAX,
    };
    let identity = cairn_auth::identity::sign(&principal, &secret);
    let args = json!({"note_id": note, "tab_id": "markdown"});
    let native = Arc::new(NativeKv(app.store().clone()));
    println!("# read_note_tab");
    for &c in &clients {
        let deadline = |d| Instant::now() + d;
        // Through the router.
        let (addr, token) = (stack.running.addr, stack.agent.clone());
        let run_stack = |d: Duration| {
            let (token, args) = (token.clone(), args.clone());
            async move {
                let end = deadline(d);
                let started = Instant::now();
                let mut tasks = Vec::new();
                for _ in 0..c {
                    let (token, args) = (token.clone(), args.clone());
                    tasks.push(tokio::spawn(async move {
                        let mut client = Client::connect(addr).await?;
                        let mut lat = Vec::new();
                        while Instant::now() < end {
                            let t = Instant::now();
                            client.call(&token, "read_note_tab", args.clone()).await?;
                            lat.push(t.elapsed());
                        }
                        anyhow::Ok(lat)
                    }));
                }
                let mut all = Vec::new();
                for t in tasks {
                    all.extend(t.await??);
                }
                anyhow::Ok(summarize("MCP through the router (HTTP, router + tool instance)", all, started.elapsed()))
            }
        };
        run_stack(Duration::from_millis(300)).await?;
        let s = run_stack(duration).await?;
        // The tool component alone, in-process.
        let end = deadline(duration);
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..c {
            let (app, tool, identity, body) = (app.clone(), tool.clone(), identity.clone(), args.to_string());
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                while Instant::now() < end {
                    let t = Instant::now();
                    let req = hyper::Request::post("http://read-note-tab.spin.internal/")
                        .header("host", "read-note-tab.spin.internal")
                        .header(cairn_auth::identity::HEADER, identity.clone())
                        .body(Full::new(Bytes::from(body.clone())))?;
                    let resp = crate::runtime::run_buffered(app.clone(), tool.clone(), req, crate::runtime::RouteInfo::internal()).await?;
                    let status = resp.status();
                    if status != 200 {
                        bail!("tool answered {status}");
                    }
                    lat.push(t.elapsed());
                }
                anyhow::Ok(lat)
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await??);
        }
        let d = summarize("tool component called directly (in-process, no HTTP, no router)", all, started.elapsed());
        // The core natively.
        let end = deadline(duration);
        let started = Instant::now();
        let handles: Vec<_> = (0..c)
            .map(|i| {
                let (kv, args) = (native.clone(), args.clone());
                std::thread::spawn(move || -> Result<Vec<Duration>> {
                    let mut env = NativeEnv::new(i as u64);
                    let mut lat = Vec::new();
                    while Instant::now() < end {
                        let t = Instant::now();
                        cairn_notes::call_tool(&*kv, &mut env, &agent(), "read_note_tab", args.clone()).map_err(|e| anyhow::anyhow!("{e:?}"))?;
                        lat.push(t.elapsed());
                    }
                    Ok(lat)
                })
            })
            .collect();
        let mut all = Vec::new();
        for h in handles {
            all.extend(h.join().map_err(|_| anyhow::anyhow!("thread panicked"))??);
        }
        let n = summarize("core natively in-process", all, started.elapsed());
        print_table(&format!("{c} concurrent clients, {seconds} s each"), &[n.clone(), d.clone(), s.clone()]);
        let (per_s, per_d, per_n) = (1.0 / s.rps * c as f64, 1.0 / d.rps * c as f64, 1.0 / n.rps * c as f64);
        println!(
            "\ncost per call: router path {:.0} µs, tool alone {:.0} µs, core {:.0} µs; the router's share of the router path: {:.0}%",
            per_s * 1e6,
            per_d * 1e6,
            per_n * 1e6,
            100.0 * (per_s - per_d).max(0.0) / per_s
        );
    }
    stack.stop().await;
    Ok(())
}
