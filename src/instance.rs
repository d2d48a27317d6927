//! One request's instance: the application every request shares ([`App`]),
//! each instance's host state ([`Ctx`]) and limits, and running a request
//! through a fresh instance ([`run_buffered`]).
//!
//! Every request gets a fresh instance from the pooling allocator (no state
//! survives between requests, so tenants cannot see each other's memory). A
//! trap, a request past its timeout (epoch interruption) or past its memory
//! limit ends that request only, as an error the server answers with 500.

use crate::manifest::{Component as Spec, Manifest, Route};
use anyhow::Result;
use cairn_kv::Store;
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::Bytes;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OwnedSemaphorePermit;
use wasmtime::component::{Resource, ResourceTable};
use wasmtime::{Engine, Store as WasmStore, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::bindings::http::types::{ErrorCode, Scheme};
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;
use wasmtime_wasi_http::p2::types::{HostIncomingRequest, HostResponseOutparam};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView};

/// How long one epoch tick is (the granularity of request timeouts).
pub const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Ticks a guest runs before it yields its thread to the other requests of
/// its lane (a request that takes longer is served in slices).
const YIELD_TICKS: u64 = 1;
/// Time a request computes (epoch ticks seen while its wasm runs, not
/// time waiting for the store) after which it counts as costly and needs a
/// permit to go on (a cheap request computes a few milliseconds).
pub const COSTLY_AFTER: Duration = Duration::from_millis(200);
/// The pause a costly request takes after each tick it ran.
const COSTLY_PAUSE: Duration = Duration::from_millis(5);
/// Costly requests that may wait for each permit; one more is refused, so
/// the memory costly requests hold at once is bounded by
/// `(1 + this) × permits × max_memory`.
const COSTLY_WAITING_PER_PERMIT: usize = 8;

/// A costly request refused because as many wait for a permit as may: the
/// host answers 503 `busy`, retry shortly.
#[derive(Debug)]
pub struct Overloaded;

impl std::fmt::Display for Overloaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("this host is busy with as many costly requests as it takes at once")
    }
}

impl std::error::Error for Overloaded {}

/// The outbound HTTP policy of one instance of a component, made by
/// [`crate::outbound::hooks`] (set in [`App::outbound`]).
pub type OutboundHooks = Box<dyn WasiHttpHooks + Send + Sync>;

/// Limits applied to every instance.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Wall-clock time a request may run before it is interrupted.
    pub request_timeout: Duration,
    /// Linear memory one instance may use, in bytes.
    pub max_memory: usize,
    /// Instances alive at once (in-flight requests, counting chained calls).
    pub max_instances: u32,
    /// Time a client may take to send its request headers.
    pub header_timeout: Duration,
    /// Time a client may take to send its request body, once its headers are in.
    pub body_timeout: Duration,
    /// Largest request body the host reads, in bytes, whatever the
    /// application's own `max_body_bytes` (the smaller of the two applies).
    pub max_body_bytes: usize,
    /// Bytes of request bodies the host holds at once, all requests
    /// together ([`cairn_door::BodyBudget`]).
    pub body_budget: usize,
    /// Client connections open at once; one more is answered 503 and closed.
    pub max_connections: usize,
    /// Connections one client address may have open at once (an IPv6
    /// address counts by its /64); one more is answered 429 and closed.
    pub max_connections_per_address: usize,
    /// Request bodies the host waits for at once from one client address
    /// (a body that came with its head is not waited for); one more is
    /// answered 429 before a byte of it is read.
    pub max_bodies_per_address: usize,
    /// Bytes a second a body must keep arriving at, measured over each
    /// [`Limits::body_rate_window`] (the first one is its grace); slower is
    /// answered 408 `body_too_slow`. 0: no minimum.
    pub min_body_rate: usize,
    /// The window [`Limits::min_body_rate`] is measured over.
    pub body_rate_window: Duration,
    /// Threads serving connections ([`crate::lanes`]).
    pub lanes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(30),
            max_memory: 128 << 20,
            max_instances: 256,
            header_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(30),
            max_body_bytes: 32 << 20,
            body_budget: 64 << 20,
            max_connections: 1024,
            max_connections_per_address: 64,
            max_bodies_per_address: 8,
            min_body_rate: 1024,
            body_rate_window: Duration::from_secs(5),
            lanes: crate::lanes::default_count(),
        }
    }
}

/// A loaded component, ready to instantiate.
pub struct Loaded {
    /// Its manifest entry.
    pub spec: Arc<Spec>,
    /// Pre-linked instance template.
    pub pre: ProxyPre<Ctx>,
    /// Its variables, resolved at startup.
    pub variables: Arc<BTreeMap<String, String>>,
}

/// Everything requests share.
pub struct App {
    /// The engine (pooling allocator, epoch interruption).
    pub engine: Engine,
    /// The manifest.
    pub manifest: Manifest,
    /// Components by id.
    pub components: BTreeMap<String, Arc<Loaded>>,
    /// Every store by label: `default` (durable) and `cache` (in memory, for
    /// what may be lost on restart: rate-limit counters, verified tokens).
    pub stores: BTreeMap<String, Arc<dyn Store>>,
    /// Instance limits.
    pub limits: Limits,
    /// Makes each instance's outbound HTTP policy.
    pub outbound: fn(&Arc<App>, Arc<Spec>) -> OutboundHooks,
    /// The bearer token of `GET /metrics` (the `metrics_token` variable);
    /// `None` keeps the route hidden.
    pub metrics_token: Option<String>,
    /// The history retention (`history_keep_versions`, `history_keep_days`),
    /// which the host's own sweep honours as the components do.
    pub retention: cairn_notes::env::Retention,
    /// The front door's settings, from the application variables: the host
    /// applies its size limits before a component is instantiated.
    pub door: cairn_door::Settings,
    /// The bytes of request bodies in flight, host-wide.
    pub bodies: cairn_door::BodyBudget,
    /// Permits for costly work: a request still computing after
    /// [`COSTLY_AFTER`] needs one to go on; half the cores (at least one),
    /// so cheap requests always have the other half.
    pub costly: Arc<tokio::sync::Semaphore>,
    /// Costly requests waiting for a permit now.
    pub costly_waiting: Arc<std::sync::atomic::AtomicUsize>,
}

/// Permits for costly work on this machine (see [`App::costly`]). Read
/// once: `available_parallelism` reads the cgroup files at every call
/// (a dozen system calls, ~30 µs), and every instance asks.
pub fn costly_permits() -> usize {
    static PERMITS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PERMITS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1)))
}

impl App {
    /// The durable store (the `default` label).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.stores["default"]
    }
}

/// The instances of one instance's composed dependencies, by slot (filled
/// by [`crate::compose`] on first call; they live and die with this store).
#[derive(Default)]
pub struct DependencyInstances(pub(crate) Vec<Option<wasmtime::component::Instance>>);

/// One instance's host state.
pub struct Ctx {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    pub(crate) table: ResourceTable,
    limits: StoreLimits,
    hooks: OutboundHooks,
    pub(crate) app: Arc<App>,
    pub(crate) component: Arc<Spec>,
    pub(crate) variables: Arc<BTreeMap<String, String>>,
    /// The instances of the component's composed dependencies.
    pub(crate) deps: DependencyInstances,
}

/// A component's configuration, set aside while a dependency that does not
/// inherit it runs ([`Ctx::enter`], [`Ctx::leave`]).
pub struct Saved(Arc<Spec>, Arc<BTreeMap<String, String>>, OutboundHooks);

impl Ctx {
    /// Run with `spec`'s configuration (stores, outbound hosts) and no
    /// variables until [`Ctx::leave`].
    pub fn enter(&mut self, spec: Arc<Spec>) -> Saved {
        let hooks = (self.app.outbound)(&self.app, spec.clone());
        Saved(
            std::mem::replace(&mut self.component, spec),
            std::mem::take(&mut self.variables),
            std::mem::replace(&mut self.hooks, hooks),
        )
    }

    /// Put back what [`Ctx::enter`] set aside.
    pub fn leave(&mut self, saved: Saved) {
        self.component = saved.0;
        self.variables = saved.1;
        self.hooks = saved.2;
    }
}

impl WasiView for Ctx {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for Ctx {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { hooks: &mut *self.hooks, table: &mut self.table, ctx: &mut self.http }
    }
}

/// The route facts Spin passes to a component as `spin-*` headers.
#[derive(Debug, Clone)]
pub struct RouteInfo {
    /// The matched route as written (`/api/...`).
    pub matched: String,
    /// The route's prefix (what `spin-path-info` is relative to).
    pub base: String,
    /// The client address.
    pub client: String,
}

impl RouteInfo {
    /// For a request from another component.
    pub fn internal() -> Self {
        Self { matched: String::new(), base: String::new(), client: "127.0.0.1:0".into() }
    }
}

/// Result of running one request through one component.
pub type Response = hyper::Response<HyperOutgoingBody>;

/// A fresh store for one request to `component`, the request and the
/// response outparam pushed into it, and the receiver of the response.
fn prepare<B>(
    app: &Arc<App>,
    component: &Loaded,
    mut req: hyper::Request<B>,
    route: &RouteInfo,
) -> Result<(WasmStore<Ctx>, Resource<HostIncomingRequest>, Resource<HostResponseOutparam>, ResponseReceiver)>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<wasmtime_wasi_http::Error>,
{
    add_spin_headers(&mut req, &component.spec, route);
    let mut store = new_store(app, component);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let wasi_req = store.data_mut().http().new_incoming_request(Scheme::Http, req)?;
    let out = store.data_mut().http().new_response_outparam(tx)?;
    Ok((store, wasi_req, out, rx))
}

/// A fresh store for one instance of `component`, with its limits and
/// deadline (what every request gets).
fn new_store(app: &Arc<App>, component: &Loaded) -> WasmStore<Ctx> {
    let ctx = Ctx {
        wasi: WasiCtx::builder().inherit_stderr().build(),
        http: WasiHttpCtx::new(),
        table: ResourceTable::new(),
        limits: StoreLimitsBuilder::new().memory_size(app.limits.max_memory).trap_on_grow_failure(true).build(),
        hooks: (app.outbound)(app, component.spec.clone()),
        component: component.spec.clone(),
        variables: component.variables.clone(),
        deps: Default::default(),
        app: app.clone(),
    };
    let mut store = WasmStore::new(&app.engine, ctx);
    store.limiter(|c| &mut c.limits);
    // A guest that computes for long is a costly request: it yields its
    // thread every few ticks, so the other connections of its lane are
    // served in between, and runs on only while it holds one of the host's
    // few permits for costly work (see `App::costly`), so cheap requests
    // always keep the rest of the machine; it is interrupted once its
    // request timeout has passed, waiting included.
    let started = std::time::Instant::now();
    let timeout = app.limits.request_timeout;
    let costly = app.costly.clone();
    let waiting = app.costly_waiting.clone();
    let costly_waiting_max = COSTLY_WAITING_PER_PERMIT * costly_permits();
    let held: Arc<std::sync::Mutex<Option<tokio::sync::OwnedSemaphorePermit>>> = Arc::default();
    // Ticks the guest was seen computing: the callback runs only while wasm
    // runs, so time spent waiting for the store or a tool is not counted.
    let mut computed = Duration::ZERO;
    store.set_epoch_deadline(YIELD_TICKS);
    store.epoch_deadline_callback(move |_| {
        if started.elapsed() >= timeout {
            return Ok(wasmtime::UpdateDeadline::Interrupt);
        }
        computed += EPOCH_TICK * YIELD_TICKS as u32;
        if computed < COSTLY_AFTER {
            return Ok(wasmtime::UpdateDeadline::Yield(YIELD_TICKS));
        }
        if held.lock().unwrap_or_else(|p| p.into_inner()).is_some() {
            // Costly work runs at most two thirds of the time of its core,
            // so a cheap request that wakes on that core waits little.
            return Ok(wasmtime::UpdateDeadline::YieldCustom(YIELD_TICKS, Box::pin(tokio::time::sleep(COSTLY_PAUSE))));
        }
        // As many costly requests wait as may: this one ends now, its
        // memory with it, and is answered 503 (retry shortly).
        if waiting.fetch_add(1, std::sync::atomic::Ordering::AcqRel) >= costly_waiting_max {
            waiting.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
            return Err(Overloaded.into());
        }
        let (costly, held, waiting) = (costly.clone(), held.clone(), waiting.clone());
        Ok(wasmtime::UpdateDeadline::YieldCustom(
            YIELD_TICKS,
            Box::pin(async move {
                if let Ok(permit) = costly.acquire_owned().await {
                    *held.lock().unwrap_or_else(|p| p.into_inner()) = Some(permit);
                }
                waiting.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
            }),
        ))
    });
    store
}

type ResponseReceiver = tokio::sync::oneshot::Receiver<Result<hyper::Response<HyperOutgoingBody>, ErrorCode>>;

/// Instantiate and call the handler. The store comes back with the
/// outcome, so the caller decides when to drop it (with every body and
/// outparam the guest left open, and the instance's memory): see
/// [`run_buffered_holding`].
async fn call(mut store: WasmStore<Ctx>, pre: ProxyPre<Ctx>, req: Resource<HostIncomingRequest>, out: Resource<HostResponseOutparam>) -> (wasmtime::Result<()>, WasmStore<Ctx>) {
    let outcome = match pre.instantiate_async(&mut store).await {
        Ok(proxy) => proxy.wasi_http_incoming_handler().call_handle(&mut store, req, out).await,
        Err(e) => Err(e),
    };
    (outcome, store)
}

/// Drop a finished request's store after its answer is on its way: the
/// lane's next poll frees the instance (its memory reset, ~30 µs), not the
/// caller waiting for the answer. `held` (the request's instance permit)
/// is released with it, so freed slots never outnumber permits.
fn drop_later(store: WasmStore<Ctx>, held: (crate::metrics::InUse, OwnedSemaphorePermit)) {
    let later = async move {
        drop(store);
        drop(held);
    };
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => drop(rt.spawn(later)),
        Err(_) => drop(later),
    }
}

/// What went wrong when no response came: the guest's trap or error if it
/// had one, else that it returned without answering.
fn no_response(id: &str, guest: Option<wasmtime::Result<()>>, code: Option<ErrorCode>) -> anyhow::Error {
    match (code, guest) {
        (Some(code), _) => anyhow::anyhow!("component {id:?} answered with an error: {code:?}"),
        (None, Some(Err(e))) => describe_trap(e, id),
        (None, _) => anyhow::anyhow!("component {id:?} returned without sending a response"),
    }
}

/// Run `req` through a fresh instance of `component` in the calling task and
/// return the response with its whole body: what one component calling
/// another needs, without a task hop per call.
pub async fn run_buffered<B>(app: Arc<App>, component: Arc<Loaded>, req: hyper::Request<B>, route: RouteInfo) -> Result<hyper::Response<Bytes>>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<wasmtime_wasi_http::Error>,
{
    run(app, component, req, route, None).await
}

/// [`run_buffered`] for a request that holds one of the host's instance
/// permits: its instance is freed after the answer is returned
/// ([`drop_later`]), and `permit` with it, so the instances waiting to be
/// freed are bounded by the permits. (Without a permit, as in
/// [`run_buffered`], the instance is freed before the answer returns.)
pub async fn run_buffered_holding<B>(app: Arc<App>, component: Arc<Loaded>, req: hyper::Request<B>, route: RouteInfo, permit: Option<OwnedSemaphorePermit>) -> Result<hyper::Response<Bytes>>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<wasmtime_wasi_http::Error>,
{
    run(app, component, req, route, permit).await
}

async fn run<B>(app: Arc<App>, component: Arc<Loaded>, req: hyper::Request<B>, route: RouteInfo, permit: Option<OwnedSemaphorePermit>) -> Result<hyper::Response<Bytes>>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<wasmtime_wasi_http::Error>,
{
    let _in_use = crate::metrics::InUse::start();
    // A tool's answer over HTTP (from this host's router or another's) is counted here, once.
    let tool = req.uri().path().strip_prefix("/tools/").and_then(cairn_notes::tools::find).map(|t| t.name);
    let (store, wasi_req, out, rx) = prepare(&app, &component, req, &route)?;
    let answer = async {
        match rx.await {
            Ok(Ok(resp)) => {
                let (parts, body) = resp.into_parts();
                match body.collect().await {
                    Ok(b) => Ok(hyper::Response::from_parts(parts, b.to_bytes())),
                    Err(e) => Err(Some(anyhow::anyhow!("component {:?} failed while writing its body: {e}", component.spec.id))),
                }
            }
            Ok(Err(code)) => Err(Some(no_response(&component.spec.id, None, Some(code)))),
            Err(_) => Err(None),
        }
    };
    // The guest and the answer run side by side (a body bigger than its
    // pipe needs both). Whatever the guest left open (an outparam never
    // set, a body never finished) ends only with its store, so when the
    // guest ends before the whole answer is here, its store is freed at
    // once; otherwise it is freed after the answer leaves.
    let guest = call(store, component.pre.clone(), wasi_req, out);
    tokio::pin!(guest, answer);
    let mut ended = None;
    let mut kept = None;
    let answer = loop {
        tokio::select! {
            biased;
            r = &mut answer => break r,
            (outcome, store) = &mut guest, if ended.is_none() => {
                ended = Some(outcome);
                match std::future::poll_fn(|cx| std::task::Poll::Ready(answer.as_mut().poll(cx))).await {
                    std::task::Poll::Ready(r) => {
                        kept = Some(store);
                        break r;
                    }
                    std::task::Poll::Pending => drop(store),
                }
            }
        }
    };
    let guest = match ended {
        Some(outcome) => outcome,
        None => {
            let (outcome, store) = guest.await;
            kept = Some(store);
            outcome
        }
    };
    match (kept, permit) {
        (Some(store), Some(permit)) => drop_later(store, (_in_use, permit)),
        (store, _) => drop(store),
    }
    match answer {
        Ok(resp) => {
            if let Some(tool) = tool {
                let refusal = resp.headers().get("cairn-tool-refusal").and_then(|v| v.to_str().ok());
                crate::metrics::tool_call(tool, "http", resp.status().as_u16(), refusal);
            }
            Ok(resp)
        }
        Err(Some(e)) => Err(match guest {
            Err(trap) => describe_trap(trap, &component.spec.id),
            Ok(()) => e,
        }),
        Err(None) => Err(no_response(&component.spec.id, Some(guest), None)),
    }
}

fn describe_trap(e: wasmtime::Error, id: &str) -> anyhow::Error {
    if e.downcast_ref::<Overloaded>().is_some() {
        return anyhow::Error::new(Overloaded);
    }
    match e.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::Interrupt) => anyhow::anyhow!("component {id:?} ran past the request timeout"),
        Some(trap) => anyhow::anyhow!("component {id:?} trapped: {trap}"),
        None => anyhow::anyhow!("component {id:?} failed: {e:#}"),
    }
}

fn add_spin_headers<B>(req: &mut hyper::Request<B>, spec: &Spec, route: &RouteInfo) {
    let path = req.uri().path().to_string();
    let full = format!(
        "http://{}{}",
        req.headers().get(hyper::header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost"),
        req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/")
    );
    let path_info = path.strip_prefix(&route.base).unwrap_or(&path).to_string();
    let h = req.headers_mut();
    let mut put = |name: &'static str, value: &str| {
        if let Ok(v) = hyper::header::HeaderValue::from_str(value) {
            h.insert(name, v);
        }
    };
    put("spin-full-url", &full);
    put("spin-path-info", &path_info);
    put("spin-matched-route", &route.matched);
    put("spin-raw-component-route", &route.matched);
    put("spin-component-route", &route.base);
    put("spin-base-path", "/");
    put("spin-client-addr", &route.client);
    put("spin-component-id", &spec.id);
}

/// The public component for a path, with its route facts.
pub fn route<'a>(app: &'a App, path: &str) -> Option<(&'a Arc<Loaded>, RouteInfo)> {
    let (spec, route) = app.manifest.route(path)?;
    let loaded = app.components.get(&spec.id)?;
    let (matched, base) = match route {
        Route::Exact(p) => (p.clone(), p.clone()),
        Route::Wildcard(p) => (format!("{p}/..."), p.clone()),
        Route::Private => return None,
    };
    Some((loaded, RouteInfo { matched, base, client: String::new() }))
}

/// Box a hyper body into what outbound responses carry.
pub fn boxed<B>(body: B) -> UnsyncBoxBody<Bytes, wasmtime_wasi_http::Error>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<wasmtime_wasi_http::Error>,
{
    body.map_err(Into::into).boxed_unsync()
}
