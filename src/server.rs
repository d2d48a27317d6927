//! `cairn up`: the HTTP listener in front of the components.
//!
//! Public requests are routed by the manifest's HTTP triggers (private routes
//! answer 404 here and are reachable only as `http://<id>.spin.internal`).
//! Each request is logged on one line with component, status and latency. On
//! Ctrl-C or SIGTERM the listener closes, in-flight requests finish, and the
//! store is closed cleanly.

use crate::engine;
use crate::instance::{self, App, Limits};
use crate::manifest::Manifest;
use crate::stores::Stores;
use anyhow::{Context, Result};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

/// Everything `cairn up` needs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Path of `spin.toml`.
    pub manifest: PathBuf,
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Directory for the store and local credentials.
    pub state_dir: PathBuf,
    /// Directory of the compiled-component cache.
    pub cache_dir: PathBuf,
    /// Which backend holds each store label.
    pub stores: Stores,
    /// Serve only these components (all when empty), as `spin up -c`.
    pub components: Vec<String>,
    /// `synchronous = FULL` for SQLite.
    pub fsync: bool,
    /// Instance limits.
    pub limits: Limits,
    /// How often lapsed claims and old delete markers are swept.
    pub sweep_interval: Duration,
    /// How often the search index merges what commits marked dirty.
    pub merge_interval: Duration,
    /// Application variables set by the caller, over the environment and
    /// the manifest's defaults.
    pub variables: BTreeMap<String, String>,
    /// Print a new one-time link for the first person even after someone
    /// signed in with one (an operator who lost their way in).
    pub sign_in_link: bool,
}

/// A running server.
pub struct Running {
    /// The address it listens on (useful with port 0).
    pub addr: SocketAddr,
    /// The shared application.
    pub app: Arc<App>,
    /// The MCP URL and a day-long agent token, when tokens are checked
    /// against the state dir's own key.
    pub starter_token: Option<(String, String)>,
    /// A one-time sign-in link for the first person (an admin of tenant
    /// `local`; the secret in the URL fragment, which browsers never send),
    /// while Cairn is its own authorization server and nobody has signed in
    /// with one yet, or when [`Options::sign_in_link`] asked for a new one.
    pub sign_in_link: Option<String>,
    stop: watch::Sender<bool>,
    done: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stop accepting, let in-flight requests finish, close the store.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.done.await;
    }
}

/// Body type of every response.
type Body = http_body_util::combinators::UnsyncBoxBody<Bytes, wasmtime_wasi_http::Error>;

fn json(status: StatusCode, text: String) -> Response<Body> {
    let body = Full::new(Bytes::from(text)).map_err(|never| match never {}).boxed_unsync();
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    r
}

/// Stops the start when a variable of Cairn's configuration
/// ([`cairn_config::VARIABLES`]) does not parse, naming each one and what it
/// expected.
fn check_variables(app_vars: &BTreeMap<String, String>) -> Result<()> {
    for (old, new) in cairn_config::RENAMED {
        let env = format!("SPIN_VARIABLE_{}", old.to_ascii_uppercase());
        if app_vars.contains_key(*old) || std::env::var_os(&env).is_some() {
            anyhow::bail!("the variable {old} was renamed {new}: set {new} (SPIN_VARIABLE_{}) instead", new.to_ascii_uppercase());
        }
    }
    let errors = cairn_config::Config::check_all(app_vars);
    if errors.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = errors.iter().map(|e| format!("  {e}")).collect();
    anyhow::bail!("{} application variable(s) cannot be used:\n{}", errors.len(), lines.join("\n"))
}

/// The variable that tells components whether to confirm their commits.
const COMMIT_CHECK: &str = "commit_check";

/// The application's variables as its components will read them: the
/// manifest's, the environment's and the command line's, with
/// `commit_check` off unless asked for (this host's stores all keep the
/// promise: they pass the conformance suite), every one of Cairn's checked.
fn app_variables(manifest: &Manifest, opts: &Options) -> Result<BTreeMap<String, String>> {
    let mut app_vars = crate::variables::resolve_app(manifest)?;
    if manifest.variables.contains_key(COMMIT_CHECK) && std::env::var_os("SPIN_VARIABLE_COMMIT_CHECK").is_none() && !opts.variables.contains_key(COMMIT_CHECK) {
        app_vars.insert(COMMIT_CHECK.into(), "off".into());
    }
    app_vars.extend(opts.variables.clone());
    // Cairn's configuration, checked before anything opens: every variable
    // that does not parse stops the start, named with what it expected.
    check_variables(&app_vars)?;
    Ok(app_vars)
}

/// The thread that moves the engine's epoch every [`instance::EPOCH_TICK`]:
/// how a running instance is made to yield and how its deadline is kept.
fn start_epoch_ticks(engine: &wasmtime::Engine) -> Result<()> {
    let engine = engine.clone();
    std::thread::Builder::new().name("epoch".into()).spawn(move || {
        loop {
            std::thread::sleep(instance::EPOCH_TICK);
            engine.increment_epoch();
        }
    })?;
    Ok(())
}

/// Load everything and start serving; returns once the listener is bound.
/// Every store is opened (and every configuration error found) before the
/// listener is bound, so a host that cannot serve never half-starts.
pub async fn start(opts: Options) -> Result<Running> {
    let started = Instant::now();
    let mut manifest = Manifest::load(&opts.manifest)?;
    manifest.select(&opts.components)?;
    std::fs::create_dir_all(&opts.state_dir).with_context(|| format!("cannot create state dir {}", opts.state_dir.display()))?;
    let mut app_vars = app_variables(&manifest, &opts)?;
    let stores: BTreeMap<String, Arc<dyn cairn_kv::Store>> =
        opts.stores.open(&opts.state_dir, opts.fsync)?.into_iter().map(|(l, s)| (l.clone(), crate::metrics::Metered::wrap(&l, s))).collect();
    for (label, store) in &stores {
        if let Some(shape) = store.describe() {
            tracing::info!(store = %label, "{shape}");
        }
    }
    let listener = TcpListener::bind(opts.listen).await.with_context(|| format!("cannot listen on {} (is something else using it?)", opts.listen))?;
    let addr = listener.local_addr()?;
    let local_key = crate::local::fill_defaults(&mut app_vars, &opts.state_dir, addr)?;
    let explicit_auth_origin = std::env::var_os("SPIN_VARIABLE_AUTH_ORIGIN").is_some() || opts.variables.contains_key("auth_origin");
    crate::local::check_outbound(&mut app_vars, explicit_auth_origin)?;
    manifest.resolve_outbound(&app_vars)?;
    let engine = engine::engine(&opts.limits)?;
    start_epoch_ticks(&engine)?;
    let components = engine::load_all(&engine, &manifest, &app_vars, &opts.cache_dir)?;
    // The configuration with the values this host filled in (the local key,
    // the audience of its address), read as the components read it.
    let tools: Vec<&str> = cairn_notes::tools::TOOLS.iter().map(|t| t.name).collect();
    let config = cairn_config::Config::read(&|name| app_vars.get(name).filter(|v| !v.is_empty()).cloned(), &tools).map_err(|e| anyhow::anyhow!("{e}"))?;
    let app = Arc::new(App {
        engine,
        manifest,
        components,
        stores,
        limits: opts.limits.clone(),
        outbound: crate::outbound::hooks,
        metrics_token: config.operators.metrics_token.clone(),
        retention: cairn_notes::env::Retention::of(&config.notes),
        door: cairn_door::Settings::of(&config.door),
        bodies: cairn_door::BodyBudget::new(opts.limits.body_budget),
        costly: Arc::new(tokio::sync::Semaphore::new(instance::costly_permits())),
        costly_waiting: Arc::default(),
        instances: Arc::new(Semaphore::new(opts.limits.max_instances as usize)),
        reclaim: Arc::default(),
        pools: Default::default(),
        partitioner: Box::new(crate::tenancy::Tenants::of(&config)),
        answers: Box::new(crate::answers::CairnAnswers),
    });
    for c in &app.manifest.components {
        tracing::info!(component = %c.id, routes = ?c.routes, "component ready");
    }
    tracing::info!(
        %addr,
        components = app.components.len(),
        ready_ms = started.elapsed().as_millis() as u64,
        "cairn is serving http://{addr}"
    );
    let (stop, stop_rx) = watch::channel(false);
    let done = tokio::spawn(serve(app.clone(), listener, (opts.sweep_interval, opts.merge_interval), stop_rx));
    let issuer = app_vars.get("issuer").cloned().unwrap_or_default();
    let audience = app_vars.get("audience").cloned().unwrap_or_default();
    let starter_token = local_key
        .as_ref()
        .filter(|_| app.manifest.component("router").is_some())
        .map(|key| (audience.clone(), crate::local::starter_token(key, &issuer, &audience)));
    let sign_in_link = match (&local_key, app.manifest.component("authz"), app.stores.get("default")) {
        (Some(_), Some(_), Some(store)) => first_person_link(store.as_ref(), &issuer, opts.sign_in_link)?,
        _ => None,
    };
    Ok(Running { addr, app, starter_token, sign_in_link, stop, done })
}

async fn serve(app: Arc<App>, listener: TcpListener, (sweep_interval, merge_interval): (Duration, Duration), mut stop: watch::Receiver<bool>) {
    let graceful = GracefulShutdown::new();
    let connections = Arc::new(Semaphore::new(app.limits.max_connections));
    // What each client address holds open (connections, bodies waited for).
    let peers = cairn_door::peers::Peers::new(cairn_door::peers::Caps {
        connections: app.limits.max_connections_per_address,
        bodies: app.limits.max_bodies_per_address,
    });
    let sweeper = tokio::spawn(sweep(app.clone(), sweep_interval));
    let merger = tokio::spawn(merge_search(app.clone(), merge_interval));
    let threads = match crate::connection_threads::ConnectionThreads::start(app.limits.connection_threads) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the connection threads; not serving");
            return;
        }
    };
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, peer)) = accepted else { continue };
                let Some((stream, held)) = admit(&app, &peers, &connections, stream, peer) else { continue };
                let job = connection_job(app.clone(), graceful.watcher(), stream, peer, held);
                if threads.spawn(job).is_err() {
                    tracing::error!("no connection thread is running: connection dropped");
                }
            }
            _ = stop.changed() => break,
        }
    }
    drop(listener);
    tracing::info!("shutting down: waiting for in-flight requests");
    if tokio::time::timeout(app.limits.request_timeout + Duration::from_secs(1), graceful.shutdown()).await.is_err() {
        tracing::warn!("some connections did not finish in time");
    }
    let _ = tokio::task::spawn_blocking(move || threads.close()).await;
    sweeper.abort();
    merger.abort();
    for (label, store) in &app.stores {
        match store.close() {
            Ok(()) => tracing::info!(store = %label, "store closed cleanly"),
            Err(e) => tracing::error!(store = %label, error = %e, "store did not close cleanly"),
        }
    }
}

/// What an open connection holds, given back when it closes: a slot of
/// its client address's and one of the host's.
struct Held {
    address: Arc<cairn_door::peers::Connection>,
    _host: tokio::sync::OwnedSemaphorePermit,
}

/// A new connection within its address's cap and the host's, or `None`
/// when it is over one: it is then told so (429 or 503) and closed, and
/// the others go on.
fn admit(
    app: &App,
    peers: &cairn_door::peers::Peers,
    connections: &Arc<Semaphore>,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
) -> Option<(std::net::TcpStream, Held)> {
    let _ = stream.set_nodelay(true);
    let address = match peers.connect(peer.ip()) {
        Ok(address) => Arc::new(address),
        Err(r) => {
            tokio::spawn(refuse_connection(stream, r));
            return None;
        }
    };
    let Ok(host) = connections.clone().try_acquire_owned() else {
        tracing::warn!("connection refused: max_connections reached");
        tokio::spawn(refuse_connection(stream, host_full(app.limits.max_connections)));
        return None;
    };
    Some((stream.into_std().ok()?, Held { address, _host: host }))
}

/// Serving one admitted connection, from its first request to its last,
/// built inside the connection thread that runs it (so the socket and the timer belong
/// to that connection thread's runtime).
fn connection_job(
    app: Arc<App>,
    watcher: hyper_util::server::graceful::Watcher,
    stream: std::net::TcpStream,
    peer: SocketAddr,
    held: Held,
) -> crate::connection_threads::Job {
    Box::new(move || {
        Box::pin(async move {
            let Ok(stream) = tokio::net::TcpStream::from_std(stream) else { return };
            let header_timeout = app.limits.header_timeout;
            let address = held.address.clone();
            let service = service_fn(move |req| handle(app.clone(), req, peer, address.clone()));
            // The header section is bounded before any component sees it
            // (431 past it); the door checks each value again.
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .max_headers(HEADERS_MAX)
                .max_buf_size(HEADER_BYTES_MAX)
                .serve_connection(TokioIo::new(Socket::new(stream, header_timeout)), service);
            if let Err(e) = watcher.watch(conn).await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(held);
        })
    })
}

async fn sweep(app: Arc<App>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tick.tick().await;
        let app = app.clone();
        match tokio::task::spawn_blocking(move || crate::sweep::sweep_once(app.store(), &app.stores["cache"], app.retention, &app.door)).await {
            Ok(Ok(s)) => {
                crate::metrics::stored(s.history.bytes, s.tenants);
                if s.did_work() {
                    tracing::info!(
                        delete_markers = s.markers,
                        expired_claims = s.claims,
                        history_notes = s.history.notes,
                        history_entries = s.history.entries,
                        history_blobs = s.history.blobs,
                        idempotency_records = s.history.idempotency,
                        audit_records = s.history.audit,
                        cache_counters = s.cache.counters,
                        cache_tokens = s.cache.tokens,
                        oauth_records = s.oauth.total(),
                        legacy_refusals = s.legacy,
                        "swept"
                    );
                }
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "sweep failed"),
            _ => {}
        }
    }
}

/// The search merge, every `every`: one round at a time (a round that takes
/// longer than `every` delays the next).
async fn merge_search(app: Arc<App>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let store = app.store().clone();
        match tokio::task::spawn_blocking(move || crate::sweep::merge_search(&store)).await {
            Ok(Ok(r)) => crate::metrics::search_merge(&r),
            Ok(Err(e)) => tracing::warn!(error = %e, "search merge failed"),
            Err(_) => {}
        }
    }
}

/// A connection's socket as hyper reads and writes it, which answers a
/// header section hyper gave up on. Hyper closes a connection whose header
/// section did not arrive within the header timeout without a word; this
/// socket, dropped while bytes of a request are in and unanswered and the
/// header timeout has passed since it last answered (or was opened), first
/// writes 408 `header_timeout` naming the limit. An idle keep-alive
/// connection closed by the same timeout is closed silently, as a client
/// expects.
struct Socket {
    stream: tokio::net::TcpStream,
    header_timeout: Duration,
    /// Bytes arrived since the last answer.
    unanswered: bool,
    /// When the socket last wrote (or was opened).
    answered_at: Instant,
}

impl Socket {
    fn new(stream: tokio::net::TcpStream, header_timeout: Duration) -> Self {
        Socket { stream, header_timeout, unanswered: false, answered_at: Instant::now() }
    }

    fn wrote(&mut self, n: usize) {
        if n > 0 {
            self.unanswered = false;
            self.answered_at = Instant::now();
        }
    }
}

impl tokio::io::AsyncRead for Socket {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.unanswered = true;
        }
        polled
    }
}

impl tokio::io::AsyncWrite for Socket {
    fn poll_write(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &[u8]) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.stream).poll_write(cx, buf);
        if let std::task::Poll::Ready(Ok(n)) = polled {
            self.wrote(n);
        }
        polled
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        if let std::task::Poll::Ready(Ok(n)) = polled {
            self.wrote(n);
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        if !self.unanswered || self.answered_at.elapsed() < self.header_timeout {
            return;
        }
        let r = cairn_door::Refusal::new(
            cairn_door::Code::HeaderTimeout,
            format!("the request's header section did not arrive within {} ms (header_timeout_ms); send it whole, at once", self.header_timeout.as_millis()),
        );
        let body = r.body();
        let answer = format!(
            "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n{}: {}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            cairn_door::refusal::REFUSED_HEADER,
            r.code.as_str(),
            body.len()
        );
        // Best effort and never waiting: the socket buffer of a connection
        // that sent only part of a head has room for a few hundred bytes.
        if self.stream.try_write(answer.as_bytes()).is_ok() {
            crate::metrics::refused(r.code.as_str());
        }
    }
}

/// The refusal of a connection over the host's `max_connections`.
fn host_full(max: usize) -> cairn_door::Refusal {
    cairn_door::Refusal::new(
        cairn_door::Code::TooManyConnections,
        format!("this host has {max} connections open, as many as max_connections allows; retry shortly"),
    )
    .retry_after(1)
}

/// The answer to a connection refused before it is served (over its
/// address's connections or the host's): the refusal with its status and
/// `Retry-After`, then the connection is closed.
async fn refuse_connection(mut stream: tokio::net::TcpStream, r: cairn_door::Refusal) {
    use tokio::io::AsyncWriteExt;
    crate::metrics::refused(r.code.as_str());
    let body = r.body();
    let status = StatusCode::from_u16(r.status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let mut answer = format!("HTTP/1.1 {status}\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n", body.len());
    for (name, value) in r.headers() {
        answer.push_str(&format!("{name}: {value}\r\n"));
    }
    answer.push_str("\r\n");
    answer.push_str(&body);
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(answer.as_bytes())).await;
    let _ = stream.shutdown().await;
}

/// Headers one request may carry (hyper answers 431 past it).
const HEADERS_MAX: usize = 100;
/// Bytes of a connection's read buffer, which bounds the header section.
const HEADER_BYTES_MAX: usize = 64 * 1024;

/// The answer of a door refusal, as the components answer it.
fn refusal(r: &cairn_door::Refusal) -> Response<Body> {
    let mut resp = json(StatusCode::from_u16(r.status()).unwrap_or(StatusCode::BAD_REQUEST), r.body());
    for (name, value) in r.headers() {
        if let Ok(v) = hyper::header::HeaderValue::from_str(&value) {
            resp.headers_mut().insert(name, v);
        }
    }
    resp
}

/// The minimum rate a body must keep: at least `need` bytes in every
/// window since it began (the first window is its grace), so a body that
/// stalls or trickles is cut off within a window or two, however large it
/// declared itself.
struct Pace {
    window: Duration,
    need: usize,
    /// When the current window ends.
    ends: tokio::time::Instant,
    /// Bytes that arrived in it.
    got: usize,
}

impl Pace {
    fn new(limits: &Limits, started: tokio::time::Instant, deadline: tokio::time::Instant) -> Pace {
        let window = limits.body_rate_window;
        let need = (limits.min_body_rate as u128 * window.as_millis() / 1000) as usize;
        // No minimum: no window ends before the body's deadline.
        let ends = if need == 0 { deadline } else { started + window };
        Pace { window, need, ends, got: 0 }
    }

    /// Closes every window that ended by `now`; `Err` names the one that
    /// brought less than its share.
    fn roll(&mut self, now: tokio::time::Instant, limits: &Limits) -> Result<(), cairn_door::Refusal> {
        while now >= self.ends && self.need > 0 {
            if self.got < self.need {
                return Err(cairn_door::Refusal::new(
                    cairn_door::Code::BodyTooSlow,
                    format!(
                        "the request body brought {} bytes in {} ms, below the minimum of {} bytes a second (min_body_rate); send the body with the request, at a steady pace",
                        self.got,
                        self.window.as_millis(),
                        limits.min_body_rate
                    ),
                ));
            }
            self.got = 0;
            self.ends += self.window;
        }
        Ok(())
    }
}

/// The next frame of a body if it is there now (`None`: it has to be waited for).
async fn frame_now(body: &mut Incoming) -> Option<Option<Result<hyper::body::Frame<Bytes>, hyper::Error>>> {
    use hyper::body::Body as _;
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match std::pin::Pin::new(&mut *body).poll_frame(cx) {
            std::task::Poll::Ready(f) => Some(f),
            std::task::Poll::Pending => None,
        })
    })
    .await
}

/// Reads a request's whole body, before the request may take an instance
/// (a client trickling its body holds a connection, never an instance):
/// the declared size is checked before a byte is read, and every byte
/// read is first taken from the host's budget of body bytes in flight
/// ([`cairn_door::BodyBudget`]) as it arrives, so a body is refused the
/// moment it would pass its limit or the budget, and a body declared but
/// not sent holds none of it. A body that has to be waited for takes one
/// of its address's body slots ([`cairn_door::peers`]) until it is in, and
/// must keep arriving at the minimum rate ([`Pace`]) and be in within the
/// body timeout. The bytes stay taken until the request is answered (the
/// returned [`cairn_door::limits::Taken`]). `Err`: the answer that refuses it.
async fn read_body(
    app: &App,
    held: &cairn_door::peers::Connection,
    req: Request<Incoming>,
) -> Result<(Request<Bytes>, cairn_door::limits::Taken), Response<Body>> {
    let limits = cairn_door::Limits { body_bytes: app.limits.max_body_bytes.min(app.door.limits.body_bytes), ..app.door.limits };
    limits.check_declared(req.headers().get(hyper::header::CONTENT_LENGTH).map(|v| v.as_bytes())).map_err(|r| refusal(&r))?;
    let mut taken = app.bodies.take(0).map_err(|r| refusal(&r))?;
    let (parts, mut body) = req.into_parts();
    let started = tokio::time::Instant::now();
    let deadline = started + app.limits.body_timeout;
    let mut pace = Pace::new(&app.limits, started, deadline);
    let mut slot = None;
    let mut gathered = Gathered::default();
    loop {
        let frame = match frame_now(&mut body).await {
            Some(frame) => frame,
            None => {
                if slot.is_none() {
                    slot = Some(held.body().map_err(|r| refusal(&r))?);
                }
                match tokio::time::timeout_at(pace.ends.min(deadline), body.frame()).await {
                    Ok(frame) => frame,
                    Err(_) if tokio::time::Instant::now() >= deadline => return Err(refusal(&body_timeout(app))),
                    Err(_) => {
                        pace.roll(tokio::time::Instant::now(), &app.limits).map_err(|r| refusal(&r))?;
                        continue;
                    }
                }
            }
        };
        let Some(frame) = frame else { break };
        let Ok(data) = frame.map(|f| f.into_data()) else {
            return Err(json(StatusCode::BAD_REQUEST, r#"{"error":"bad_body","message":"the request body could not be read"}"#.into()));
        };
        let Ok(data) = data else { continue };
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Err(refusal(&body_timeout(app)));
        }
        pace.roll(now, &app.limits).map_err(|r| refusal(&r))?;
        pace.got += data.len();
        limits.check_body(gathered.len + data.len()).map_err(|r| refusal(&r))?;
        gathered.push(data);
        taken.grow(gathered.held().saturating_sub(taken.bytes())).map_err(|r| refusal(&r))?;
    }
    Ok((Request::from_parts(parts, gathered.into_bytes()), taken))
}

/// A body's bytes as they arrive. One chunk (the usual case) is kept as it
/// came. From a second on they are copied into segments (4 KiB, then as
/// large as the body so far, at most 64 KiB each), so a body that trickles
/// in small pieces holds about what it sent: not a connection read buffer
/// per piece (a piece of `Bytes` pins the whole buffer it was read into),
/// nor the copies a growing buffer leaves behind. [`Gathered::held`] is the
/// memory it holds, which the body budget counts.
#[derive(Default)]
struct Gathered {
    one: Option<Bytes>,
    segments: Vec<Vec<u8>>,
    len: usize,
}

impl Gathered {
    const SEGMENT_MIN: usize = 4 << 10;
    const SEGMENT_MAX: usize = 64 << 10;

    fn push(&mut self, data: Bytes) {
        if self.one.is_none() && self.segments.is_empty() {
            self.len = data.len();
            self.one = Some(data);
            return;
        }
        if let Some(first) = self.one.take() {
            self.len = 0;
            self.copy(&first);
        }
        self.copy(&data);
    }

    fn copy(&mut self, mut data: &[u8]) {
        self.len += data.len();
        while !data.is_empty() {
            if self.segments.last().is_none_or(|s| s.len() == s.capacity()) {
                let size = (self.len - data.len()).clamp(Self::SEGMENT_MIN, Self::SEGMENT_MAX);
                self.segments.push(Vec::with_capacity(size));
            }
            let Some(segment) = self.segments.last_mut() else { return };
            let n = data.len().min(segment.capacity() - segment.len());
            segment.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
    }

    fn held(&self) -> usize {
        self.one.as_ref().map_or_else(|| self.segments.iter().map(Vec::capacity).sum(), Bytes::len)
    }

    fn into_bytes(self) -> Bytes {
        match self.one {
            Some(one) => one,
            None => Bytes::from(self.segments.concat()),
        }
    }
}

/// The refusal of a body not in within the body timeout.
fn body_timeout(app: &App) -> cairn_door::Refusal {
    cairn_door::Refusal::new(
        cairn_door::Code::BodyTimeout,
        format!("the request body did not arrive within {} ms (body_timeout_ms); send it with the request", app.limits.body_timeout.as_millis()),
    )
}

async fn handle(
    app: Arc<App>,
    req: Request<Incoming>,
    peer: SocketAddr,
    held: Arc<cairn_door::peers::Connection>,
) -> Result<Response<Body>, std::convert::Infallible> {
    let started = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    if path == "/metrics" {
        let response = metrics_answer(&app, &req, peer);
        return Ok(slow_if_refused(&app, response).await);
    }
    let (id, route, response) = match instance::route(&app, &path) {
        None => ("-".to_string(), "-".to_string(), json(StatusCode::NOT_FOUND, r#"{"error":"not_found","message":"no route matches this path"}"#.into())),
        Some((loaded, mut info)) => {
            info.client = peer.to_string();
            let (id, route) = (loaded.spec.id.clone(), info.matched.clone());
            let response = match read_body(&app, &held, req).await {
                Err(refused) => refused,
                Ok((req, _body_bytes)) => serve_request(&app, loaded, req, &info).await,
            };
            (id, route, response)
        }
    };
    crate::metrics::request(&id, &route, response.status(), started.elapsed());
    let served = response.extensions().get::<instance::ServedBy>().cloned();
    let response = slow_if_refused(&app, response).await;
    tracing::info!(
        component = %id,
        method = %method,
        path = %path,
        status = response.status().as_u16(),
        instance = served.as_ref().map_or(0, |s| s.instance),
        partition = %served.as_ref().map_or(String::from("-"), |s| s.partition.to_string()),
        latency_us = started.elapsed().as_micros() as u64,
        "request"
    );
    Ok(response)
}

/// One request on an instance of its partition (the application's
/// partitioner picks it from the request's head, before any guest code
/// runs); the answer as the guest streams it, or the host's refusal.
async fn serve_request(app: &Arc<App>, loaded: &Arc<instance::Loaded>, req: Request<Bytes>, info: &instance::RouteInfo) -> Response<Body> {
    let (head, body) = req.into_parts();
    let partition = app.partitioner.partition(&loaded.spec.id, &head, &body);
    match instance::serve(app, loaded, Request::from_parts(head, Full::new(body)), info, &partition).await {
        Ok(r) => r,
        Err(e) if e.downcast_ref::<instance::Overloaded>().is_some() => {
            refusal(&cairn_door::Refusal::new(cairn_door::Code::Busy, e.to_string()).retry_after(1))
        }
        Err(e) => {
            tracing::error!(component = %loaded.spec.id, error = %e, "request failed");
            json(
                StatusCode::INTERNAL_SERVER_ERROR,
                r#"{"error":"component_failed","message":"the component failed while handling this request; see the host log"}"#.into(),
            )
        }
    }
}

/// Hands a client's answer to the application ([`crate::answers`]) and
/// holds it back as long as it says (a caller over its budget).
async fn slow_if_refused(app: &App, response: Response<Body>) -> Response<Body> {
    if let Some(hold) = app.answers.answering(response.headers()).hold {
        tokio::time::sleep(hold).await;
    }
    response
}

/// `GET /metrics`: the Prometheus text exposition, for the bearer of the
/// `metrics_token` variable; 404 while it is unset. A wrong token is a
/// refusal counted against the client address's budget, as at every door:
/// an address past it is refused (429) whatever token it sends, so a token
/// cannot be guessed faster than the budget allows.
fn metrics_answer(app: &App, req: &Request<Incoming>, peer: SocketAddr) -> Response<Body> {
    let Some(expected) = &app.metrics_token else {
        return json(StatusCode::NOT_FOUND, r#"{"error":"not_found","message":"no route matches this path"}"#.into());
    };
    let client = peer.to_string();
    let arrival = cairn_door::Arrival { path_and_query: "/metrics", headers: vec![("spin-client-addr", client.as_bytes())] };
    let door = cairn_door::Door::new(&app.door, app.stores.get("cache").map(|s| s.as_ref()), crate::clock::now_us() / 1000);
    if door.address_throttled(&arrival) {
        return refusal(&door.refused(&arrival, door.throttled()));
    }
    let given = req.headers().get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    if !given.is_some_and(|g| cairn_auth::constant_time_eq(g.as_bytes(), expected.as_bytes())) {
        let r = cairn_door::Refusal::new(cairn_door::Code::Unauthorized, "the metrics need the operator's metrics_token as a bearer token").challenge("Bearer");
        return refusal(&door.refused(&arrival, r));
    }
    let mut r = Response::new(Full::new(Bytes::from(crate::metrics::render(app.stores.values()))).map_err(|never| match never {}).boxed_unsync());
    r.headers_mut().insert("content-type", hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"));
    r
}

/// A one-time link for the first person, while nobody has used one (or
/// always, when `force`d).
fn first_person_link(store: &dyn cairn_kv::Store, issuer: &str, force: bool) -> Result<Option<String>> {
    use cairn_oauth::people;
    let now = crate::local::now();
    let made =
        if force { Some(people::admin_link(store, now, &crate::local::random_u64)?) } else { people::first_link(store, now, &crate::local::random_u64)? };
    Ok(made.map(|l| format!("{issuer}/#/sign-in/{}", l.secret)))
}

/// Run until Ctrl-C or SIGTERM, then shut down gracefully.
pub async fn run_until_signal(opts: Options) -> Result<()> {
    let running = start(opts).await?;
    if let Some((url, token)) = &running.starter_token {
        eprintln!(
            "\nMCP endpoint: {url}\nBearer token (agent of tenant \"local\", notes:read notes:write, 24 h):\n{token}\n\
             More tokens: cairn token --tenant <t> --sub <s> (see --help)\n"
        );
    }
    if running.app.manifest.component("ui").is_some() {
        eprintln!("Open http://{}/ in a browser for the people's editor.", running.addr);
    }
    if let Some(link) = &running.sign_in_link {
        eprintln!("People's editor: one-time sign-in link for the first person (an admin of tenant \"local\"; works once, within an hour):\n{link}\n");
    } else if running.app.manifest.component("authz").is_some() && running.starter_token.is_some() {
        eprintln!("People sign in with a one-time link from an admin (`cairn up --sign-in-link` prints a new one for the first person).");
    }
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("received Ctrl-C"),
        _ = term.recv() => tracing::info!("received SIGTERM"),
    }
    running.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_in_small_pieces_holds_about_what_it_sent_and_reads_back_whole() {
        let mut g = Gathered::default();
        let mut sent = Vec::new();
        for i in 0..1000u32 {
            // Each piece a slice of a 64 KiB read buffer, as hyper hands them over.
            let buffer = Bytes::from(vec![(i % 251) as u8; 64 << 10]);
            let piece = buffer.slice(..512);
            sent.extend_from_slice(&piece);
            g.push(piece);
            assert!(g.held() <= 2 * g.len + Gathered::SEGMENT_MIN, "{} held for {} sent", g.held(), g.len);
        }
        assert_eq!(g.len, sent.len());
        assert_eq!(g.into_bytes(), Bytes::from(sent));
        let mut one = Gathered::default();
        one.push(Bytes::from_static(b"whole"));
        assert_eq!((one.held(), one.into_bytes()), (5, Bytes::from_static(b"whole")), "one piece is kept as it came");
    }
}
