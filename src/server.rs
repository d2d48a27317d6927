//! `cairn up`: the HTTP listener in front of the components.
//!
//! Public requests are routed by the manifest's HTTP triggers (private routes
//! answer 404 here and are reachable only as `http://<id>.spin.internal`).
//! Each request is logged on one line with component, status and latency. On
//! Ctrl-C or SIGTERM the listener closes, in-flight requests finish, and the
//! store is closed cleanly.

use crate::manifest::Manifest;
use crate::instance::{self, App, Limits};
use crate::engine;
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

/// The variable that tells components whether to confirm their commits.
const COMMIT_CHECK: &str = "commit_check";

/// Load everything and start serving; returns once the listener is bound.
/// Every store is opened (and every configuration error found) before the
/// listener is bound, so a host that cannot serve never half-starts.
pub async fn start(opts: Options) -> Result<Running> {
    let started = Instant::now();
    let mut manifest = Manifest::load(&opts.manifest)?;
    manifest.select(&opts.components)?;
    std::fs::create_dir_all(&opts.state_dir)
        .with_context(|| format!("cannot create state dir {}", opts.state_dir.display()))?;
    let mut app_vars = crate::variables::resolve_app(&manifest)?;
    // This host's stores all keep the promise (they pass the conformance
    // suite), so components need not confirm their commits, unless the
    // operator forces the check.
    if manifest.variables.contains_key(COMMIT_CHECK)
        && std::env::var_os("SPIN_VARIABLE_COMMIT_CHECK").is_none()
        && !opts.variables.contains_key(COMMIT_CHECK)
    {
        app_vars.insert(COMMIT_CHECK.into(), "off".into());
    }
    app_vars.extend(opts.variables.clone());
    let stores: BTreeMap<String, Arc<dyn cairn_kv::Store>> =
        opts.stores.open(&opts.state_dir, opts.fsync)?.into_iter().map(|(l, s)| (l.clone(), crate::metrics::Metered::wrap(&l, s))).collect();
    for (label, store) in &stores {
        if let Some(shape) = store.describe() {
            tracing::info!(store = %label, "{shape}");
        }
    }
    let listener = TcpListener::bind(opts.listen)
        .await
        .with_context(|| format!("cannot listen on {} (is something else using it?)", opts.listen))?;
    let addr = listener.local_addr()?;
    let local_key = crate::local::fill_defaults(&mut app_vars, &opts.state_dir, addr)?;
    let explicit_auth_origin = std::env::var_os("SPIN_VARIABLE_AUTH_ORIGIN").is_some() || opts.variables.contains_key("auth_origin");
    crate::local::check_outbound(&mut app_vars, explicit_auth_origin)?;
    manifest.resolve_outbound(&app_vars)?;
    let engine = engine::engine(&opts.limits)?;
    {
        let engine = engine.clone();
        std::thread::Builder::new().name("epoch".into()).spawn(move || loop {
            std::thread::sleep(instance::EPOCH_TICK);
            engine.increment_epoch();
        })?;
    }
    let components = engine::load_all(&engine, &manifest, &app_vars, &opts.cache_dir)?;
    // The front door's settings, checked now: a variable it cannot use stops
    // the start, naming it, rather than failing every request.
    let door = cairn_door::Settings::from_variables(|name| app_vars.get(name).filter(|v| !v.is_empty()).cloned())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let app = Arc::new(App {
        engine,
        manifest,
        components,
        stores,
        limits: opts.limits.clone(),
        outbound: crate::outbound::hooks,
        metrics_token: app_vars.get("metrics_token").filter(|t| !t.is_empty()).cloned(),
        retention: cairn_notes::env::Retention::from_variables(|name| app_vars.get(name).cloned()),
        door,
        bodies: cairn_door::BodyBudget::new(opts.limits.body_budget),
        costly: Arc::new(tokio::sync::Semaphore::new(instance::costly_permits())),
        costly_waiting: Arc::default(),
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
    let permits = Arc::new(Semaphore::new((app.limits.max_instances / 2).max(1) as usize));
    let connections = Arc::new(Semaphore::new(app.limits.max_connections));
    let sweeper = tokio::spawn(sweep(app.clone(), sweep_interval));
    let merger = tokio::spawn(merge_search(app.clone(), merge_interval));
    let lanes = match crate::lanes::Lanes::start(app.limits.lanes) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the connection lanes; not serving");
            return;
        }
    };
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, peer)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                // One connection over the cap is told so and closed; the others go on.
                let Ok(open) = connections.clone().try_acquire_owned() else {
                    tokio::spawn(refuse_connection(stream));
                    continue;
                };
                let header_timeout = app.limits.header_timeout;
                let (app, permits, watcher) = (app.clone(), permits.clone(), graceful.watcher());
                let Ok(stream) = stream.into_std() else { continue };
                // Built inside the lane, so the socket and the timer belong to
                // the runtime that serves this connection to its end.
                let job: crate::lanes::Job = Box::new(move || {
                    Box::pin(async move {
                        let Ok(stream) = tokio::net::TcpStream::from_std(stream) else { return };
                        let service = service_fn(move |req| handle(app.clone(), permits.clone(), req, peer));
                        // The header section is bounded before any component
                        // sees it (431 past it); the door checks each value again.
                        let conn = hyper::server::conn::http1::Builder::new()
                            .timer(hyper_util::rt::TokioTimer::new())
                            .header_read_timeout(header_timeout)
                            .max_headers(HEADERS_MAX)
                            .max_buf_size(HEADER_BYTES_MAX)
                            .serve_connection(TokioIo::new(stream), service);
                        if let Err(e) = watcher.watch(conn).await {
                            tracing::debug!(error = %e, "connection ended with an error");
                        }
                        drop(open);
                    })
                });
                if lanes.spawn(job).is_err() {
                    tracing::error!("no lane is running: connection dropped");
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
    let _ = tokio::task::spawn_blocking(move || lanes.close()).await;
    sweeper.abort();
    merger.abort();
    for (label, store) in &app.stores {
        match store.close() {
            Ok(()) => tracing::info!(store = %label, "store closed cleanly"),
            Err(e) => tracing::error!(store = %label, error = %e, "store did not close cleanly"),
        }
    }
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

/// The answer to a connection over `max_connections`: 503 with
/// `Retry-After`, then the connection is closed.
async fn refuse_connection(mut stream: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    tracing::warn!("connection refused: max_connections reached");
    let body = r#"{"error":"too_many_connections","message":"this host has as many connections open as it allows; retry shortly"}"#;
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(answer.as_bytes())).await;
    let _ = stream.shutdown().await;
}

/// How long the answer to a caller over its budget waits.
const OVER_BUDGET_DELAY: Duration = Duration::from_millis(250);

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

/// Reads a request's whole body, before the request may take an instance
/// (a client trickling its body holds a connection, never an instance):
/// the declared size is checked before a byte is read, and every byte
/// read is first taken from the host's budget of body bytes in flight
/// ([`cairn_door::BodyBudget`]), so a body is refused the moment it would
/// pass its limit or the budget. The bytes stay taken until the request is
/// answered (the returned [`cairn_door::limits::Taken`]). `Err`: the answer that refuses it.
async fn read_body(app: &App, req: Request<Incoming>) -> Result<(Request<Full<Bytes>>, cairn_door::limits::Taken), Response<Body>> {
    use hyper::body::Body as _;
    let limits = cairn_door::Limits { body_bytes: app.limits.max_body_bytes.min(app.door.limits.body_bytes), ..app.door.limits };
    let declared = limits.check_declared(req.headers().get(hyper::header::CONTENT_LENGTH).map(|v| v.as_bytes())).map_err(|r| refusal(&r))?;
    let mut taken = app.bodies.take(declared.unwrap_or(0)).map_err(|r| refusal(&r))?;
    let (parts, mut body) = req.into_parts();
    // Chunks as they came (usually one): joined only when there are several.
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut total = 0usize;
    let read = async {
        while let Some(frame) = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await {
            let Ok(data) = frame.map(|f| f.into_data()) else {
                return Err(json(StatusCode::BAD_REQUEST, r#"{"error":"bad_body","message":"the request body could not be read"}"#.into()));
            };
            let Ok(data) = data else { continue };
            total += data.len();
            limits.check_body(total).map_err(|r| refusal(&r))?;
            if total > taken.bytes() {
                taken.grow(total - taken.bytes()).map_err(|r| refusal(&r))?;
            }
            chunks.push(data);
        }
        Ok(())
    };
    match tokio::time::timeout(app.limits.body_timeout, read).await {
        Ok(Ok(())) => {
            let body = match chunks.len() {
                0 => Bytes::new(),
                1 => chunks.pop().unwrap_or_default(),
                _ => Bytes::from(chunks.concat()),
            };
            Ok((Request::from_parts(parts, Full::new(body)), taken))
        }
        Ok(Err(answer)) => Err(answer),
        Err(_) => Err(json(
            StatusCode::REQUEST_TIMEOUT,
            format!(r#"{{"error":"body_timeout","message":"the request body did not arrive within {} ms"}}"#, app.limits.body_timeout.as_millis()),
        )),
    }
}

async fn handle(
    app: Arc<App>,
    permits: Arc<Semaphore>,
    req: Request<Incoming>,
    peer: SocketAddr,
) -> Result<Response<Body>, std::convert::Infallible> {
    let started = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    if path == "/metrics" {
        return Ok(metrics_answer(&app, &req));
    }
    let (id, route, response) = match instance::route(&app, &path) {
        None => ("-".to_string(), "-".to_string(), json(StatusCode::NOT_FOUND, r#"{"error":"not_found","message":"no route matches this path"}"#.into())),
        Some((loaded, mut info)) => {
            info.client = peer.to_string();
            let id = loaded.spec.id.clone();
            let route = info.matched.clone();
            let response = match read_body(&app, req).await {
                Err(refused) => refused,
                Ok((req, _body_bytes)) => {
                    // (The semaphore is never closed, so a permit always comes.)
                    let permit = permits.clone().acquire_owned().await.ok();
                    // The instance runs in this connection's task, to the end, with its
                    // response body collected as it is written: no task hop and no
                    // cross-thread wake-up per request. The permit is held until the
                    // instance is freed, just after the answer leaves.
                    match instance::run_buffered_holding(app.clone(), loaded.clone(), req, info, permit).await {
                        Ok(r) => r.map(|body| Full::new(body).map_err(|never| match never {}).boxed_unsync()),
                        Err(e) if e.downcast_ref::<instance::Overloaded>().is_some() => {
                            refusal(&cairn_door::Refusal::new(cairn_door::Code::Busy, e.to_string()).retry_after(1))
                        }
                        Err(e) => {
                            tracing::error!(component = %id, error = %e, "request failed");
                            json(
                                StatusCode::INTERNAL_SERVER_ERROR,
                                r#"{"error":"component_failed","message":"the component failed while handling this request; see the host log"}"#.into(),
                            )
                        }
                    }
                }
            };
            (id, route, response)
        }
    };
    crate::metrics::request(&id, &route, response.status(), started.elapsed());
    if let Some(code) = response.headers().get(cairn_door::refusal::REFUSED_HEADER).and_then(|v| v.to_str().ok()).and_then(cairn_door::Code::parse) {
        crate::metrics::refused(code.as_str());
        // A caller already over its budget is answered slowly: its
        // connection carries no more than a few calls a second, holding
        // neither an instance nor a permit meanwhile.
        if matches!(code, cairn_door::Code::RateLimited | cairn_door::Code::TooManyRefusals) {
            tokio::time::sleep(OVER_BUDGET_DELAY).await;
        }
    }
    tracing::info!(
        component = %id,
        method = %method,
        path = %path,
        status = response.status().as_u16(),
        latency_us = started.elapsed().as_micros() as u64,
        "request"
    );
    Ok(response)
}

/// `GET /metrics`: the Prometheus text exposition, for the bearer of the
/// `metrics_token` variable; 404 while it is unset.
fn metrics_answer(app: &App, req: &Request<Incoming>) -> Response<Body> {
    let Some(expected) = &app.metrics_token else {
        return json(StatusCode::NOT_FOUND, r#"{"error":"not_found","message":"no route matches this path"}"#.into());
    };
    let given = req.headers().get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    if !given.is_some_and(|g| cairn_auth::constant_time_eq(g.as_bytes(), expected.as_bytes())) {
        return json(StatusCode::UNAUTHORIZED, r#"{"error":"unauthorized","message":"the metrics need the operator's metrics_token as a bearer token"}"#.into());
    }
    let mut r = Response::new(Full::new(Bytes::from(crate::metrics::render())).map_err(|never| match never {}).boxed_unsync());
    r.headers_mut().insert("content-type", hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"));
    r
}

/// A one-time link for the first person, while nobody has used one (or
/// always, when `force`d).
fn first_person_link(store: &dyn cairn_kv::Store, issuer: &str, force: bool) -> Result<Option<String>> {
    use cairn_oauth::people;
    let now = crate::local::now();
    let made = if force { Some(people::admin_link(store, now, &crate::local::random_u64)?) } else { people::first_link(store, now, &crate::local::random_u64)? };
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
