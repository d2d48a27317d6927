//! The application every request shares ([`App`]), each instance's host
//! state ([`Ctx`]) and limits, a new instance's store (`new_store`), and
//! serving one request ([`serve`], [`run_buffered`]) on an instance of its
//! partition ([`crate::pool`]).
//!
//! A WASI 0.3 component's instance is reused for many requests of one
//! partition (one tenant, or anonymous traffic), never of two; a WASI 0.2
//! component's instance serves one request. A trap, a request past its
//! timeout or past its memory limit ends that instance only (its requests
//! in flight are answered 500), and the next request gets a new one.

use crate::manifest::{Component as Spec, Manifest, Route};
pub use crate::pool::Overloaded;
use crate::pool::Partition;
use anyhow::Result;
use cairn_kv::Store;
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::Bytes;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime::{Engine, Store as WasmStore, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::handler::ProxyPre;
use wasmtime_wasi_http::{WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView};

/// How long one epoch tick is (the granularity of request timeouts).
pub const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Ticks a guest runs before it yields its thread to the other requests of
/// its connection thread (a request that takes longer is served in slices).
const YIELD_TICKS: u64 = 1;
/// Time an instance computes without a pause (epoch ticks seen while its
/// wasm runs back to back, not time waiting for the store) after which its
/// work counts as costly and needs a permit to go on (a cheap request
/// computes a few milliseconds).
pub const COSTLY_AFTER: Duration = Duration::from_millis(200);
/// The pause a costly request takes after each tick it ran.
const COSTLY_PAUSE: Duration = Duration::from_millis(5);
/// Costly requests that may wait for each permit; one more is refused, so
/// the memory costly requests hold at once is bounded by
/// `(1 + this) × permits × max_memory`.
const COSTLY_WAITING_PER_PERMIT: usize = 8;

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
    /// Threads serving connections ([`crate::connection threads`]).
    pub connection_threads: usize,
    /// How WASI 0.3 instances are reused (Spin's knobs).
    pub reuse: crate::pool::Reuse,
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
            connection_threads: crate::connection_threads::default_count(),
            reuse: crate::pool::Reuse::default(),
        }
    }
}

/// A loaded component, ready to instantiate.
pub struct Loaded {
    /// Its manifest entry.
    pub spec: Arc<Spec>,
    /// Pre-linked instance template: a WASI 0.3 service or a WASI 0.2 proxy.
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
    pub outbound: fn(&Arc<App>, Arc<Spec>, Partition) -> OutboundHooks,
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
    /// Permits for instances alive at once ([`Limits::max_instances`]).
    pub instances: Arc<tokio::sync::Semaphore>,
    /// Told when a new instance finds no permit free: every idle instance
    /// ends then ([`crate::pool::Expiry`]), giving back the permits it
    /// kept for requests that may never come.
    pub reclaim: Arc<tokio::sync::Notify>,
    /// The pools of reused instances, by component and partition.
    pub pools: crate::pool::Pools<Pool>,
    /// Picks each request's partition (the application's hook).
    pub partitioner: Box<dyn crate::pool::Partitioner>,
    /// Reads what the components answer (the application's hook).
    pub answers: Box<dyn crate::answers::Answers>,
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
/// by [`crate::compose`] on first call; they live and die with this store),
/// and the instance slots they hold: the first one's was taken with the
/// instance's own (`spare`), each further one's when it is made (given back
/// when the store is dropped).
#[derive(Default)]
pub struct DependencyInstances {
    pub(crate) slots: Vec<Option<wasmtime::component::Instance>>,
    pub(crate) spare: bool,
    pub(crate) permits: Vec<tokio::sync::OwnedSemaphorePermit>,
}

/// One instance's host state.
pub struct Ctx {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    pub(crate) table: ResourceTable,
    limits: StoreLimits,
    hooks: Waits,
    pub(crate) app: Arc<App>,
    pub(crate) component: Arc<Spec>,
    pub(crate) variables: Arc<BTreeMap<String, String>>,
    /// The instances of the component's composed dependencies.
    pub(crate) deps: DependencyInstances,
    /// The partition this instance serves: its calls to other components
    /// (`*.spin.internal`) run in that partition too.
    pub(crate) partition: Partition,
    /// Its requests in flight ([`crate::pool::InFlight`]).
    pub(crate) in_flight: Arc<crate::pool::Load>,
}

/// A component's configuration, set aside while a dependency that does not
/// inherit it runs ([`Ctx::enter`], [`Ctx::leave`]).
pub struct Saved(Arc<Spec>, Arc<BTreeMap<String, String>>, OutboundHooks);

impl Ctx {
    /// Run with `spec`'s configuration (stores, outbound hosts) and no
    /// variables until [`Ctx::leave`].
    pub fn enter(&mut self, spec: Arc<Spec>) -> Saved {
        let hooks = (self.app.outbound)(&self.app, spec.clone(), self.partition.clone());
        Saved(std::mem::replace(&mut self.component, spec), std::mem::take(&mut self.variables), std::mem::replace(&mut self.hooks.policy, hooks))
    }

    /// Put back what [`Ctx::enter`] set aside.
    pub fn leave(&mut self, saved: Saved) {
        self.component = saved.0;
        self.variables = saved.1;
        self.hooks.policy = saved.2;
    }
}

/// An instance's outbound HTTP: its policy ([`App::outbound`]), and what a
/// call that waits does first, whatever the policy: give back the
/// instance's permit for costly work, as a store call that may wait does
/// (`kv_host`). An instance waiting on another computes nothing, and the
/// one it waits on (a component of the same host) may need that permit.
struct Waits {
    policy: OutboundHooks,
    load: Arc<crate::pool::Load>,
}

impl WasiHttpHooks for Waits {
    fn is_forbidden_header(&mut self, name: &hyper::header::HeaderName) -> bool {
        self.policy.is_forbidden_header(name)
    }

    fn forbidden_header_filter(&mut self) -> wasmtime_wasi_http::ForbiddenHeaderFilter {
        self.policy.forbidden_header_filter()
    }

    fn is_supported_scheme(&mut self, scheme: &hyper::http::uri::Scheme) -> bool {
        self.policy.is_supported_scheme(scheme)
    }

    fn set_host_header(&mut self) -> bool {
        self.policy.set_host_header()
    }

    fn default_scheme(&mut self) -> Option<hyper::http::uri::Scheme> {
        self.policy.default_scheme()
    }

    fn send_request(
        &mut self,
        request: hyper::Request<WasiBody>,
        options: Option<wasmtime_wasi_http::RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<(hyper::Response<WasiBody>, Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>), wasmtime_wasi_http::Error>,
            > + Send,
    > {
        self.load.release_costly();
        // Counted until the response head is in (or the call failed):
        // between this release and the guest's wait for the answer its wasm
        // may run a tick more, and must not take the permit back then.
        let calling = Calling::start(&self.load);
        let sent = Box::into_pin(self.policy.send_request(request, options, fut));
        Box::new(async move {
            let answer = sent.await;
            drop(calling);
            answer
        })
    }
}

/// One outbound call of an instance waiting for its response, counted in
/// its [`crate::pool::Load`] until dropped.
struct Calling(Arc<crate::pool::Load>);

impl Calling {
    fn start(load: &Arc<crate::pool::Load>) -> Calling {
        load.calling.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Calling(load.clone())
    }
}

impl Drop for Calling {
    fn drop(&mut self) {
        self.0.calling.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl WasiView for Ctx {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for Ctx {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { hooks: &mut self.hooks, table: &mut self.table, ctx: &mut self.http }
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

/// A new store for one instance of `component` in `partition`, with its
/// limits and the host's rules for costly work.
pub(crate) fn new_store(app: &Arc<App>, component: &Loaded, partition: Partition) -> WasmStore<Ctx> {
    let in_flight: Arc<crate::pool::Load> = Arc::default();
    let ctx = Ctx {
        wasi: WasiCtx::builder().inherit_stderr().build(),
        http: WasiHttpCtx::new(),
        table: ResourceTable::new(),
        limits: StoreLimitsBuilder::new().memory_size(app.limits.max_memory).trap_on_grow_failure(true).build(),
        hooks: Waits { policy: (app.outbound)(app, component.spec.clone(), partition.clone()), load: in_flight.clone() },
        component: component.spec.clone(),
        variables: component.variables.clone(),
        deps: Default::default(),
        partition,
        in_flight,
        app: app.clone(),
    };
    let mut store = WasmStore::new(&app.engine, ctx);
    store.limiter(|c| &mut c.limits);
    store.set_epoch_deadline(YIELD_TICKS);
    store.epoch_deadline_callback(costly_work(app));
    store
}

/// The epoch callback of an instance: wasm that computes for long is costly
/// work. It yields its thread every tick, so the other connections of its
/// connection thread are served in between, and runs on only while it holds one of the
/// host's few permits for costly work (see `App::costly`), so cheap requests
/// always keep the rest of the machine; a burst past the request timeout
/// ends the instance. A burst is ticks seen back to back: a gap (the
/// instance waited for the store, or for its next request) ends it, and the
/// permit with it, and so does a request starting on the instance (a reused
/// instance's requests back to back are not one burst). An instance serving
/// several requests at once shares its time among them: a tick counts for
/// each request its share, so cheap requests interleaved on it are not one costly burst,
/// and an instance with other requests in flight is never ended for want
/// of a permit (it waits for one: ending it would fail them all).
fn costly_work(app: &Arc<App>) -> impl FnMut(wasmtime::StoreContextMut<'_, Ctx>) -> wasmtime::Result<wasmtime::UpdateDeadline> + Send + Sync + 'static {
    let timeout = app.limits.request_timeout;
    let costly = app.costly.clone();
    let waiting = app.costly_waiting.clone();
    let costly_waiting_max = COSTLY_WAITING_PER_PERMIT * costly_permits();
    let (mut burst, mut last, mut last_started) = (Duration::ZERO, Instant::now(), 0);
    move |ctx| {
        let load = &ctx.data().in_flight;
        let sharing = load.in_flight.load(std::sync::atomic::Ordering::Acquire).max(1);
        let started = load.started.load(std::sync::atomic::Ordering::Acquire);
        let now = Instant::now();
        if now.duration_since(last) > EPOCH_TICK * 3 || started != last_started {
            last_started = started;
            burst = Duration::ZERO;
            load.release_costly();
        }
        last = now;
        burst += EPOCH_TICK * YIELD_TICKS as u32 / sharing as u32;
        if burst >= timeout {
            return Ok(wasmtime::UpdateDeadline::Interrupt);
        }
        if burst < COSTLY_AFTER {
            return Ok(wasmtime::UpdateDeadline::Yield(YIELD_TICKS));
        }
        // While an outbound call of this instance waits for its answer, the
        // permit may be what the callee needs: pause as a holder would,
        // never ask for it (the request timeout still bounds the work).
        if load.holds_costly() || load.calling.load(std::sync::atomic::Ordering::Acquire) > 0 {
            // Costly work runs at most two thirds of the time of its core,
            // so a cheap request that wakes on that core waits little.
            return Ok(wasmtime::UpdateDeadline::YieldCustom(YIELD_TICKS, Box::pin(tokio::time::sleep(COSTLY_PAUSE))));
        }
        // As many costly requests wait as may: this instance ends now, its
        // memory with it, and its request is answered 503 (retry shortly).
        // One with others in flight pauses instead.
        if waiting.fetch_add(1, std::sync::atomic::Ordering::AcqRel) >= costly_waiting_max {
            waiting.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
            if sharing > 1 {
                return Ok(wasmtime::UpdateDeadline::YieldCustom(YIELD_TICKS, Box::pin(tokio::time::sleep(COSTLY_PAUSE))));
            }
            return Err(load.refuse(Overloaded::CostlyWork).into());
        }
        let (costly, load, waiting) = (costly.clone(), load.clone(), Waiting(waiting.clone()));
        Ok(wasmtime::UpdateDeadline::YieldCustom(
            YIELD_TICKS,
            Box::pin(async move {
                if let Ok(permit) = costly.acquire_owned().await {
                    *load.costly.lock().unwrap_or_else(|p| p.into_inner()) = Some(permit);
                }
                drop(waiting);
            }),
        ))
    }
}

/// One costly request waiting for a permit, counted until it has one or
/// its instance ends (a wait dropped unfinished is uncounted all the same).
struct Waiting(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// Serves `req` with `component` on an instance of `partition`: the
/// response with its body as the guest streams it, told to the
/// application's [`crate::answers::Answers::served`] here, once.
pub async fn serve<B>(
    app: &Arc<App>,
    component: &Arc<Loaded>,
    mut req: hyper::Request<B>,
    route: &RouteInfo,
    partition: &Partition,
) -> Result<hyper::Response<WasiBody>>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<wasmtime_wasi_http::Error>,
{
    let path = req.uri().path().to_string();
    add_spin_headers(&mut req, &component.spec, route);
    let resp = handle(app, component, partition, req.map(boxed)).await?;
    app.answers.served(&path, resp.status().as_u16(), resp.headers());
    Ok(resp)
}

/// The instances of one component in one partition ([`crate::pool`]): how
/// the host makes them, with their store, limits and permits.
pub struct Pool {
    app: std::sync::Weak<App>,
    component: Arc<Loaded>,
    partition: Partition,
    /// Instances alive now.
    live: Arc<std::sync::atomic::AtomicUsize>,
}

impl crate::pool::Counted for Pool {
    fn live(&self) -> usize {
        self.live.load(std::sync::atomic::Ordering::Acquire)
    }
}

impl Pool {
    /// The reuse this pool's instances get: none for WASI 0.2 components,
    /// whose handler keeps no instance, and for [`Partition::Alone`].
    fn reuse(&self, app: &App) -> crate::pool::Reuse {
        let p2 = matches!(self.component.pre, ProxyPre::P2(_));
        let alone = self.partition == Partition::Alone;
        if p2 || alone { crate::pool::Reuse { count: 1, concurrent: 1, ..app.limits.reuse } } else { app.limits.reuse }
    }
}

impl wasmtime_wasi_http::handler::HandlerState for Pool {
    type StoreData = Ctx;
    type WorkerExpiration = crate::pool::Expiry;
    type WorkerState = crate::pool::Worker<Ctx>;

    /// A new instance, once a slot for it (and one for its first composed
    /// dependency, if it has any) is free, waiting at most the request
    /// timeout for them.
    async fn instantiate(&self) -> wasmtime::Result<wasmtime_wasi_http::handler::Instance<Ctx, Self::WorkerExpiration, Self::WorkerState>> {
        let app = self.app.upgrade().ok_or_else(|| wasmtime::format_err!("the host is shutting down"))?;
        // The instance takes one slot of the pooling allocator, and one kept
        // for the first dependency it calls: a request calls one tool, so an
        // instance that has its slots never waits for another to serve one
        // (`crate::compose` takes a slot for each further tool).
        let spare = !self.component.spec.dependencies.is_empty() && app.limits.max_instances > 1;
        let permit = instance_permits(&app, 1 + u32::from(spare), app.limits.request_timeout).await?;
        let mut store = new_store(&app, &self.component, self.partition.clone());
        store.data_mut().deps.spare = spare;
        let proxy = self.component.pre.instantiate_async(&mut store).await?;
        let reuse = self.reuse(&app);
        let held = (permit, crate::metrics::InUse::start(&self.component.spec.id), crate::pool::Live::start(&self.live));
        let worker = crate::pool::Worker {
            reuse,
            request_timeout: app.limits.request_timeout,
            held: Box::new(held),
            id: self.component.spec.id.clone(),
            serial: crate::pool::next_serial(),
            in_flight: store.data().in_flight.clone(),
            _data: std::marker::PhantomData,
        };
        let expiration = crate::pool::Expiry::new(reuse.idle, app.limits.request_timeout, store.data().in_flight.clone(), app.reclaim.clone());
        Ok(wasmtime_wasi_http::handler::Instance { store, proxy, view: |c: &mut Ctx| c.http(), expiration, state: worker })
    }
}

/// How long a composed dependency past an instance's first waits for an
/// instance slot: its dependent holds slots while it waits, so instances
/// that each wait for another tool's slot would wait on each other; the
/// wait is short, and past it the instance ends and its requests are
/// answered 503 `busy`.
pub const DEPENDENCY_WAIT: Duration = Duration::from_secs(2);

/// `n` slots of the pooling allocator (instances alive), waiting at most
/// `wait` for them. A host without them free first tells every idle
/// instance to end ([`crate::pool::Expiry`]): instances kept for their
/// partitions' next requests give back what a request now needs.
pub async fn instance_permits(app: &App, n: u32, wait: Duration) -> Result<tokio::sync::OwnedSemaphorePermit, Overloaded> {
    if let Ok(p) = app.instances.clone().try_acquire_many_owned(n) {
        return Ok(p);
    }
    app.reclaim.notify_waiters();
    match tokio::time::timeout(wait, app.instances.clone().acquire_many_owned(n)).await {
        Ok(Ok(p)) => Ok(p),
        _ => Err(Overloaded::Instances),
    }
}

/// Serves `req` on an instance of `component` in `partition`.
async fn handle(
    app: &Arc<App>,
    component: &Arc<Loaded>,
    partition: &Partition,
    req: wasmtime_wasi_http::handler::Request,
) -> Result<wasmtime_wasi_http::handler::Response> {
    let make = || Pool { app: Arc::downgrade(app), component: component.clone(), partition: partition.clone(), live: Arc::default() };
    let pool = app.pools.get(&component.spec.id, partition, crate::connection_threads::current(), app.limits.max_instances as usize, make);
    let served = crate::pool::Served::default();
    let mut resp = pool.handle(served.clone(), req).await.map_err(|e| {
        // Refused for load by the instantiation, or by the instance, which
        // then ended with every request it served (its worker reports that
        // as a trap, so the reason is read from the instance's account);
        // an `Overloaded` error itself is `describe_trap`'s to read.
        let instantiation = e.downcast_ref::<wasmtime_wasi_http::handler::InstantiationError<crate::pool::Served>>();
        match instantiation.and_then(|i| i.error.downcast_ref::<Overloaded>().copied()).or_else(|| served.refused()) {
            Some(o) => anyhow::Error::new(o),
            None => describe_trap(e, &component.spec.id),
        }
    })?;
    if let Some(serial) = served.serial() {
        resp.extensions_mut().insert(ServedBy { instance: serial, partition: partition.clone() });
    }
    Ok(resp)
}

/// Which instance answered a response, and for which partition: the
/// request log's `instance` and `partition`.
#[derive(Debug, Clone)]
pub struct ServedBy {
    /// The instance's serial ([`crate::pool::next_serial`]).
    pub instance: u64,
    /// The partition it serves.
    pub partition: Partition,
}

/// [`serve`] with the whole response body: what one component calling
/// another needs.
pub async fn run_buffered<B>(
    app: &Arc<App>,
    component: &Arc<Loaded>,
    req: hyper::Request<B>,
    route: &RouteInfo,
    partition: &Partition,
) -> Result<hyper::Response<Bytes>>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<wasmtime_wasi_http::Error>,
{
    let (parts, body) = serve(app, component, req, route, partition).await?.into_parts();
    let body = body.collect().await.map_err(|e| anyhow::anyhow!("component {:?} failed while writing its body: {e}", component.spec.id))?;
    Ok(hyper::Response::from_parts(parts, body.to_bytes()))
}

/// What ended an instance, for the log and the 500 it answers.
pub(crate) fn describe_trap(e: wasmtime::Error, id: &str) -> anyhow::Error {
    if let Some(o) = e.downcast_ref::<Overloaded>() {
        return anyhow::Error::new(*o);
    }
    // What `ProxyHandler` says of an instance whose request expired.
    if e.downcast_ref::<wasmtime_wasi_http::handler::ExpirationError>().is_some() || e.to_string() == "guest timed out" {
        return anyhow::anyhow!("component {id:?} ran past the request timeout");
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
    // A WASI 0.3 request carries its scheme and authority in its URI.
    if req.uri().authority().is_none()
        && let Ok(uri) = full.parse()
    {
        *req.uri_mut() = uri;
    }
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
