//! The native server: the same core, store, MCP layer and front door that
//! Cairn's components run, served natively over the same HTTP with no
//! components. Used only by the benchmark, as the baseline that prices the
//! component architecture: whole stack ÷ native server, per workload and
//! concurrency, in one run.
//!
//! One request, in the router's order: the front door's screen (limits,
//! origin, the address's budget), the bearer token through the same
//! verified-token cache the components keep in their `cache` store, the
//! body read as MCP (`cairn_mcp`), the subject's budget per message, every
//! scope, then each message run on the notes core against SQLite, and the
//! work charged to the subject. What it leaves out is exactly what the
//! components add: instances, WASI, the composed call into the tool, the
//! signed identity, the key-value interface.

use crate::stack::TENANT;
use anyhow::Result;
use cairn_auth::jwt::Verifier;
use cairn_auth::mint::{LocalKey, TokenSpec};
use cairn_auth::{Actor, Principal, Role};
use cairn_door::budget::CACHE;
use cairn_door::{Arrival, Door, Refusal, Settings};
use cairn_kv::Store;
use cairn_mcp::{Answer, ToolError, Tools};
use cairn_notes::tools::Tool;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

const AUDIENCE: &str = "http://native.bench/mcp";

/// A running native server; dropping it stops accepting (connections
/// already open end with their clients).
pub struct NativeServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// An agent's bearer token for it (read and write, a day).
    pub token: String,
    /// Its store.
    pub store: Arc<dyn Store>,
    accepting: tokio::task::JoinHandle<()>,
}

impl Drop for NativeServer {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

/// What every request shares.
struct Shared {
    store: Arc<dyn Store>,
    cache: Arc<dyn Store>,
    settings: Settings,
    verifier: Verifier,
    salt: String,
    seq: AtomicU64,
}

/// The notes core as the tools' transport: what a tool component does with the
/// arguments, in this process.
struct Core<'a> {
    shared: &'a Shared,
}

impl Tools for Core<'_> {
    async fn call(&self, tool: &'static Tool, arguments: &str, who: &Principal) -> Result<String, ToolError> {
        let args: serde_json::Value = serde_json::from_str(arguments).map_err(|e| ToolError::Params(e.to_string()))?;
        let me = cairn_notes::Identity {
            tenant: who.tenant.clone(),
            subject: who.subject.clone(),
            display_name: who.name.clone(),
            actor_type: who.actor,
            role: who.role,
        };
        let mut env = crate::stack::bench_env(self.shared.seq.fetch_add(1, Ordering::Relaxed));
        match cairn_notes::call(self.shared.store.as_ref(), &mut env, &me, tool, args) {
            Ok(result) => Ok(result),
            Err(e) if e.http_status() == 503 => Err(ToolError::Unavailable(e.to_string())),
            Err(e) => Err(ToolError::Internal(e.to_string())),
        }
    }
}

/// Starts a native server on a free loopback port over `store`, with the
/// front door's rate limits lifted as the benchmark stack lifts them.
pub async fn start(store: Arc<dyn Store>) -> Result<NativeServer> {
    let key = LocalKey::from_seed(rand_seed());
    let issuer = "http://native.bench";
    let verifier = Verifier::from_jwks(&key.jwks(), issuer, AUDIENCE).map_err(anyhow::Error::msg)?;
    let settings = Settings { subject_per_minute: 1_000_000_000, ..Settings::default() };
    let shared = Arc::new(Shared {
        store: store.clone(),
        cache: Arc::new(cairn_kv::memory::MemoryStore::new()),
        settings,
        salt: format!("{:016x}", rand_seed()[0]),
        verifier,
        seq: AtomicU64::new(1),
    });
    let token = key.sign(
        &TokenSpec {
            issuer: issuer.into(),
            audience: AUDIENCE.into(),
            tenant: TENANT.into(),
            subject: "bench-agent".into(),
            name: None,
            actor: Actor::Agent,
            role: Role::Member,
            scope: "notes:read notes:write".into(),
            now: cairn::local::now(),
            ttl: 86_400,
        }
        .claims(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let accepting = tokio::spawn(async move {
        while let Ok((stream, peer)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            let shared = shared.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    let shared = shared.clone();
                    async move {
                        let (parts, body) = req.into_parts();
                        let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                        // The core may wait on SQLite: off the serving threads, as the host runs its stores.
                        let answer = tokio::task::spawn_blocking(move || serve(&shared, &parts, &body, peer)).await;
                        Ok::<_, std::convert::Infallible>(answer.unwrap_or_else(|_| reply(500, "{\"error\":\"panicked\"}".into(), &[])))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
            });
        }
    });
    Ok(NativeServer { addr, token, store, accepting })
}

fn rand_seed() -> [u8; 32] {
    let mut s = [0u8; 32];
    for c in s.chunks_mut(8) {
        c.copy_from_slice(&cairn::local::random_u64().to_le_bytes());
    }
    s
}

fn reply(status: u16, body: String, headers: &[(String, String)]) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert("content-type", hyper::header::HeaderValue::from_static("application/json"));
    for (n, v) in headers {
        if let (Ok(n), Ok(v)) = (hyper::header::HeaderName::from_bytes(n.as_bytes()), hyper::header::HeaderValue::from_str(v)) {
            r.headers_mut().insert(n, v);
        }
    }
    r
}

fn refused(r: &Refusal) -> Response<Full<Bytes>> {
    let headers: Vec<(String, String)> = r.headers().into_iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
    reply(r.status(), r.body(), &headers)
}

/// One request, in the router's order.
fn serve(shared: &Shared, parts: &hyper::http::request::Parts, body: &[u8], peer: SocketAddr) -> Response<Full<Bytes>> {
    if parts.method != hyper::Method::POST || parts.uri.path() != "/mcp" {
        return reply(404, "{\"error\":\"not_found\"}".into(), &[]);
    }
    let client = peer.to_string();
    let mut headers: Vec<(&str, &[u8])> = parts.headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes())).collect();
    headers.push(("spin-client-addr", client.as_bytes()));
    let arrival = Arrival::new(parts.uri.path_and_query().map_or("/mcp", |p| p.as_str()), headers.into_iter());
    let now_ms = cairn::local::now() * 1000;
    let door = Door::new(&shared.settings, Some(shared.cache.as_ref()), now_ms);
    if let Err(r) = door.screen(&arrival) {
        return refused(&door.refused(&arrival, r));
    }
    // The bearer token, through the verified-token cache.
    let Some(token) = arrival.header("authorization").and_then(|a| a.strip_prefix("Bearer ")) else {
        return reply(401, "{\"error\":\"unauthorized\"}".into(), &[]);
    };
    let digest = cairn_notes::hex(&Sha256::digest(token.as_bytes())[..16]);
    let cached = cairn_door::cache::verified_token(&shared.salt, &digest);
    let principal = match shared.cache.get(CACHE, &cached).ok().flatten().and_then(|b| serde_json::from_slice::<Principal>(&b).ok()) {
        Some(p) => p,
        None => match shared.verifier.verify(token) {
            Ok(p) => {
                let _ = shared.cache.set(CACHE, &cached, &serde_json::to_vec(&p).unwrap_or_default());
                p
            }
            Err(e) => return reply(401, serde_json::json!({"error": "unauthorized", "message": e.to_string()}).to_string(), &[]),
        },
    };
    if let Err(r) = shared.settings.limits.check_body(body.len()) {
        return refused(&r);
    }
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let request = match cairn_mcp::Request::read(body, header) {
        Ok(r) => r,
        Err(e) => return reply(400, e.to_string(), &[]),
    };
    if let Err(over) = door.charge(&principal.tenant, &principal.subject, request.messages().len() as u64) {
        return refused(&over.refusal);
    }
    for scope in request.scopes() {
        if let Err(r) = door.require(&principal.scopes, scope, "Bearer") {
            return refused(&r);
        }
    }
    let started = std::time::Instant::now();
    let answer = block_on(request.run(&Core { shared }, &principal));
    door.charge_work(&principal.tenant, &principal.subject, started.elapsed());
    match answer {
        Answer::Reply(body) => reply(200, body, &[]),
        Answer::Accepted => reply(202, String::new(), &[]),
        Answer::Unavailable(why) => reply(503, serde_json::json!({"error": "unavailable", "message": why}).to_string(), &[("retry-after".into(), "1".into())]),
    }
}

/// Runs a future that never waits on anything but the core's own calls
/// (which block): polled on this thread until it is done.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}
