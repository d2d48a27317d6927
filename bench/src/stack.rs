//! What every benchmark and experiment drives: the application running in
//! this process ([`Stack`], with bench tokens), a keep-alive HTTP client,
//! seeded notes, and the closed-loop client that calls the tools through the
//! whole stack or the same core natively ([`stack_calls`], [`native_calls`]).

use crate::measure::{Series, summarize};
use anyhow::{Context, Result, bail};
use cairn::clock::SystemEnv;
use cairn::instance::Limits;
use cairn::server::{self, Running};
use cairn::stores::{StoreKind, Stores};
use cairn_auth::{Actor, Role};
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

pub const TENANT: &str = "bench";

/// Distinguishes the idempotency keys of successive runs on the same notes.
static RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

pub fn first_key(client: usize) -> u64 {
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

    /// Send JSON (nothing for `Value::Null`), get status and JSON.
    pub async fn send(&mut self, method: &str, path: &str, token: &str, body: &Value) -> Result<(u16, Value)> {
        let req = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", self.addr.to_string())
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            // The Python SDK answers 406 without it; Cairn does not need it.
            .header("accept", "application/json, text/event-stream")
            .body(Full::new(if body.is_null() { Bytes::new() } else { Bytes::from(body.to_string()) }))?;
        // The previous exchange may still be finishing on this connection.
        self.tx.ready().await?;
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
    /// Its state dir (signing key, identity secret, store).
    pub state: PathBuf,
}

impl Stack {
    /// Start with the SQLite store in a fresh state dir.
    pub async fn start(manifest: PathBuf) -> Result<Self> {
        Self::start_with(manifest, &[]).await
    }

    /// [`Stack::start`] with these application variables too: the tool
    /// components' own HTTP doors, which [`ToolCaller`] calls, open only
    /// with `tool_transport = "http"`.
    pub async fn start_with(manifest: PathBuf, extra: &[(&str, &str)]) -> Result<Self> {
        // One directory per stack, so stacks of one process never share one.
        static STACKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STACKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let state = std::env::temp_dir().join(format!("cairn-bench-notes-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&state);
        // The benchmarks write far past a tenant's usual budget and quota: a
        // minute of three writers on a 200 KB note stores gigabytes of versions.
        let variables = [
            ("rate_limit_per_minute".to_string(), "1000000000".to_string()),
            ("quota_bytes".to_string(), "1000000000000".to_string()),
            ("quota_notes".to_string(), "100000000".to_string()),
        ]
        .into_iter()
        .chain(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
        let opts = server::Options {
            manifest,
            listen: "127.0.0.1:0".parse()?,
            cache_dir: crate::hosts::compile_cache(),
            state_dir: state.clone(),
            stores: Stores::default().with_default(Some(&StoreKind::Sqlite)),
            components: Vec::new(),
            fsync: false,
            limits: Limits::default(),
            sweep_interval: Duration::from_secs(60),
            merge_interval: Duration::from_millis(250),
            variables,
            sign_in_link: false,
        };
        let running = server::start(opts).await?;
        let mut stack = Self { agent: String::new(), person: String::new(), running, state };
        stack.agent = stack.mint(Actor::Agent, "bench-agent")?;
        stack.person = stack.mint(Actor::Human, "bench-person")?;
        Ok(stack)
    }

    /// A day's token (read and write) for `subject` of the bench tenant.
    pub fn mint(&self, actor: Actor, subject: &str) -> Result<String> {
        mint_with(&cairn::local::signing_key(&self.state)?, self.running.addr, actor, subject)
    }

    /// Create `n` approved notes straight in the server's store; their ids.
    pub fn seed_notes(&self, n: usize) -> Result<Vec<String>> {
        seed(self.running.app.store().as_ref(), n)
    }

    /// Stop and clean up.
    pub async fn stop(self) {
        self.running.shutdown().await;
        let _ = std::fs::remove_dir_all(&self.state);
    }
}

/// A day's token (read and write) for `subject` of the bench tenant, signed
/// with `key` for the host listening on `addr` (its own issuer and audience).
pub fn mint_with(key: &cairn_auth::mint::LocalKey, addr: SocketAddr, actor: Actor, subject: &str) -> Result<String> {
    crate::hosts::day_token(key, &cairn::local::audience(addr), TENANT, actor, subject)
}

pub fn person() -> Identity {
    Identity {
        tenant: TENANT.into(),
        subject: "bench-person".into(),
        display_name: "Bench person".into(),
        actor_type: ActorType::Human,
        role: cairn_notes::Role::Member,
    }
}

pub fn agent() -> Identity {
    Identity { actor_type: ActorType::Agent, subject: "bench-agent".into(), display_name: "Bench agent".into(), ..person() }
}

/// Create `n` approved notes; their ids.
/// The core's environment for the benchmarks' own writes: the system clock,
/// with quotas as far out as the stack's (`quota_notes`, `quota_bytes`
/// above): the benchmarks write far past a tenant's usual quota.
pub fn bench_env(salt: u64) -> SystemEnv {
    SystemEnv::new(salt).with_quotas(cairn_notes::env::Quotas { notes: 100_000_000, bytes: 1_000_000_000_000 })
}

pub fn seed(kv: &dyn Store, n: usize) -> Result<Vec<String>> {
    let mut env = crate::stack::bench_env(n as u64);
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
#[allow(async_fn_in_trait)]
pub trait Caller {
    /// `tools/call`; the CallToolResult.
    async fn call(&mut self, tool: &str, args: Value) -> Result<Value>;
}

pub struct McpCaller {
    /// The connection.
    pub client: Client,
    /// The bearer token.
    pub token: String,
}

impl Caller for McpCaller {
    async fn call(&mut self, tool: &str, args: Value) -> Result<Value> {
        self.client.call(&self.token, tool, args).await
    }
}

pub struct CoreCaller {
    /// The store.
    pub kv: Arc<dyn Store>,
    /// Clock and randomness.
    pub env: SystemEnv,
    /// Who calls.
    pub who: Identity,
}

impl Caller for CoreCaller {
    async fn call(&mut self, tool: &str, args: Value) -> Result<Value> {
        cairn_notes::call_tool_value(self.kv.as_ref(), &mut self.env, &self.who, tool, args).map_err(|e| anyhow::anyhow!("{tool}: {e:?}"))
    }
}

pub fn text_of(size: usize, i: u64) -> String {
    let mut t = format!("{i:012}");
    while t.len() < size {
        t.push_str(" lorem ipsum dolor sit amet");
    }
    t.truncate(size);
    t
}

/// The version of a whole read of the note's markdown tab: what a
/// whole-tab write may be based on. A read the cap cut hands out a part
/// token, which `replace_text` refuses, so a cut read is asked again whole
/// (the peers never cut a read, and refuse `max_chars`).
pub async fn read_version(c: &mut impl Caller, note: &str) -> Result<Value> {
    let mut read = c.call("read_note_tab", json!({"note_id": note, "tab_id": "markdown"})).await?;
    if read["structuredContent"]["extent"] == "part" {
        read = c.call("read_note_tab", json!({"note_id": note, "tab_id": "markdown", "max_chars": 1_000_000})).await?;
    }
    if read["isError"] != false {
        bail!("read refused: {read}");
    }
    Ok(read["structuredContent"]["version"].clone())
}

pub async fn edit(c: &mut impl Caller, note: &str, version: Value, size: usize, key: u64) -> Result<Value> {
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
pub async fn client_loop(mut c: impl Caller, note: String, op: Op, first: u64, deadline: Instant) -> Result<Vec<Duration>> {
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
    mcp_calls(stack.running.addr, &stack.agent, notes, clients, op, duration, "whole stack: HTTP, router, tool components, SQLite").await
}

/// `clients` MCP clients of the server at `addr`, each on its own
/// connection and note, with `token`; the series is called `name`.
pub async fn mcp_calls(addr: std::net::SocketAddr, token: &str, notes: &[String], clients: usize, op: Op, duration: Duration, name: &str) -> Result<Series> {
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (token, note) = (token.to_string(), notes[c % notes.len()].clone());
        tasks.push(tokio::spawn(async move {
            let caller = McpCaller { client: Client::connect(addr).await?, token };
            client_loop(caller, note, op, first_key(c), deadline).await
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    Ok(summarize(name, all, started.elapsed()))
}

/// The same clients calling the core natively, one thread each.
pub fn native_calls(kv: Arc<dyn Store>, notes: &[String], clients: usize, op: Op, duration: Duration) -> Result<Series> {
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let (kv, note) = (kv.clone(), notes[c % notes.len()].clone());
            std::thread::spawn(move || -> Result<Vec<Duration>> {
                let caller = CoreCaller { kv, env: crate::stack::bench_env(c as u64), who: agent() };
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
pub fn native_store(dir: &std::path::Path) -> Result<Arc<dyn Store>> {
    std::fs::create_dir_all(dir)?;
    Ok(Arc::new(cairn_kv_sqlite::SqliteStore::open(&dir.join("kv.db"), false)?))
}

/// A tool component called in-process, as the router reaches it, without
/// HTTP in front and without the router: what one tool costs on its own.
pub struct ToolCaller {
    /// The application.
    pub app: Arc<cairn::instance::App>,
    /// Who calls.
    pub principal: cairn_auth::Principal,
    /// The secret identities are signed with.
    pub secret: String,
}

impl ToolCaller {
    /// For the bench agent of `stack`.
    pub fn agent(stack: &Stack) -> Result<Self> {
        let secret = cairn::local::identity_secret(&stack.state)?;
        let principal = cairn_auth::Principal {
            tenant: TENANT.into(),
            subject: "bench-agent".into(),
            name: "Bench agent".into(),
            actor: Actor::Agent,
            role: Role::Member,
            scopes: vec!["notes:read".into(), "notes:write".into()],
            exp: u64::MAX,
        };
        Ok(Self { app: stack.running.app.clone(), principal, secret })
    }
}

impl Caller for ToolCaller {
    async fn call(&mut self, tool: &str, args: Value) -> Result<Value> {
        let spec = cairn_notes::tools::find(tool).with_context(|| format!("no tool {tool}"))?;
        let id = spec.component();
        let component = self.app.components.get(&id).with_context(|| format!("no component {id}"))?.clone();
        let body = args.to_string();
        let path = format!("/tools/{tool}");
        let call = cairn_auth::identity::Call { tool: spec.name, method: "POST", path: &path, body: body.as_bytes() };
        let identity = cairn_auth::identity::sign(&self.principal, &self.secret, &call, cairn::clock::now_us() / 1_000_000, &crate::nonce())?;
        let req = hyper::Request::post(format!("http://{id}.spin.internal{path}"))
            .header("host", format!("{id}.spin.internal"))
            .header(cairn_auth::identity::HEADER, identity)
            .body(Full::new(Bytes::from(body)))?;
        let partition = cairn::pool::Partition::Tenant(self.principal.tenant.clone());
        let resp = cairn::instance::run_buffered(&self.app, &component, req, &cairn::instance::RouteInfo::internal(), &partition).await?;
        if resp.status() != 200 {
            bail!("{tool}: the component answered {}: {}", resp.status(), String::from_utf8_lossy(resp.body()));
        }
        Ok(serde_json::from_slice(resp.body())?)
    }
}
