//! Instances reused as Spin reuses them, and never across tenants.
//!
//! A WASI 0.3 component's instance serves many requests: up to
//! [`Reuse::count`] in its life, up to [`Reuse::concurrent`] at once, and it
//! ends after [`Reuse::idle`] without one (Spin's knobs and defaults). A
//! WASI 0.2 component gets a fresh instance per request, as on Spin.
//!
//! **Invariant: an instance never serves two partitions.** Instances live
//! in pools keyed by (component, [`Partition`], connection thread); the host picks the pool
//! from the request alone, before any guest code runs (the application's
//! [`Partitioner`]: for Cairn, the tenant of a verified bearer token), and
//! every instance a pool makes serves only that pool's requests
//! (`wasmtime_wasi_http::handler::ProxyHandler` queues a pool's requests to
//! its own workers only). A request whose partition cannot be told before it
//! runs ([`Partition::Alone`]) gets an instance no other request ever sees.
//! So no request's memory, caches or leftovers reach another tenant's.
//!
//! Bounds: a pool with no instance and no caller is dropped when the map
//! passes its bound; the host's [`HandlerState`] bounds the instances alive
//! at once (`crate::instance`).

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use wasmtime::component::GuestTaskId;
use wasmtime::{Store, StoreContextMut};
use wasmtime_wasi_http::handler::{HandlerState, ProxyHandler, ShouldAccept, WorkerExpiration, WorkerState, WorkerStatus};

/// Who an instance may serve: requests of one partition only.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Partition {
    /// Requests that carry no credential (public pages, metadata, probes).
    Anonymous,
    /// Requests of one tenant, as a verified credential says.
    Tenant(String),
    /// A request whose partition cannot be told before it runs (a
    /// credential not verified yet, a session cookie, a secret in the
    /// body): an instance of its own, used once.
    Alone,
}

impl std::fmt::Display for Partition {
    /// `anonymous`, `tenant:<id>` or `alone`: as the request log shows it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Partition::Anonymous => f.write_str("anonymous"),
            Partition::Tenant(t) => write!(f, "tenant:{t}"),
            Partition::Alone => f.write_str("alone"),
        }
    }
}

/// Picks a request's partition from its head, before any guest code runs:
/// the application's one hook into instance reuse.
pub trait Partitioner: Send + Sync {
    /// The partition of a request to `component`, from its head and body.
    fn partition(&self, component: &str, head: &hyper::http::request::Parts, body: &[u8]) -> Partition;
}

/// Everything in one partition: the default of an application with no tenants.
pub struct OnePartition;

impl Partitioner for OnePartition {
    fn partition(&self, _: &str, _: &hyper::http::request::Parts, _: &[u8]) -> Partition {
        Partition::Anonymous
    }
}

/// Spin's instance reuse knobs (`spin up --max-instance-reuse-count`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reuse {
    /// Requests one instance serves in its life (1: no reuse).
    pub count: usize,
    /// Requests one instance serves at once.
    pub concurrent: usize,
    /// How long an instance waits for its next request before it ends.
    pub idle: Duration,
}

impl Default for Reuse {
    /// Spin's defaults for WASI 0.3 components.
    fn default() -> Self {
        Reuse { count: 128, concurrent: 16, idle: Duration::from_secs(1) }
    }
}

/// Which pool: the component, the partition, the connection thread.
type PoolKey = (String, Partition, usize);

/// The pools of every (component, partition), each a
/// [`ProxyHandler`] over the host's [`HandlerState`] `S`.
pub struct Pools<S: HandlerState> {
    map: Mutex<HashMap<PoolKey, Arc<ProxyHandler<S>>>>,
}

impl<S: HandlerState> Default for Pools<S> {
    fn default() -> Self {
        Pools { map: Mutex::default() }
    }
}

/// What a pool says of itself, so that pools with nothing in them go.
pub trait Counted {
    /// Instances of the pool alive now.
    fn live(&self) -> usize;
}

impl<S: HandlerState + Counted> Pools<S> {
    /// The pool of `component` for `partition` on connection thread `lane` (a thread whose
    /// runtime the pool's instances run on: a request there never hops to
    /// another thread for its instance), made by `make` on first use. Past
    /// `most` pools, those with no instance and no caller go.
    pub fn get(&self, component: &str, partition: &Partition, lane: usize, most: usize, make: impl FnOnce() -> S) -> Arc<ProxyHandler<S>> {
        let key = (component.to_string(), partition.clone(), lane);
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(h) = map.get(&key) {
            return h.clone();
        }
        if map.len() >= most {
            map.retain(|_, h| Arc::strong_count(h) > 1 || h.state().live() > 0);
        }
        let handler = Arc::new(ProxyHandler::new(make()));
        map.insert(key, handler.clone());
        handler
    }

    /// Pools in the map now.
    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One live instance of a pool, counted while it lives.
pub struct Live(Arc<AtomicUsize>);

impl Live {
    /// Counts one more instance in `count` until this is dropped.
    pub fn start(count: &Arc<AtomicUsize>) -> Live {
        count.fetch_add(1, Ordering::AcqRel);
        Live(count.clone())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// When an instance ends: idle too long, idle when the host needs its
/// permits for another partition (`reclaim` told), or its oldest request
/// too long. Told each time the instance's event loop waits, it is also
/// where an instance that fell idle gives back its permit for costly work.
pub struct Expiry {
    idle: Duration,
    request: Duration,
    sleep: Pin<Box<tokio::time::Sleep>>,
    load: Arc<Load>,
    reclaim: Arc<tokio::sync::Notify>,
    reclaimed: Pin<Box<tokio::sync::futures::OwnedNotified>>,
}

impl Expiry {
    /// Ends an instance idle for `idle`, or idle when `reclaim` is told, or
    /// busy with a request for `request`; `load` is the instance's.
    pub fn new(idle: Duration, request: Duration, load: Arc<Load>, reclaim: Arc<tokio::sync::Notify>) -> Expiry {
        let reclaimed = Box::pin(reclaim.clone().notified_owned());
        Expiry { idle, request, sleep: Box::pin(tokio::time::sleep(Duration::MAX)), load, reclaim, reclaimed }
    }

    /// Whether the host asked idle instances to end since this one last
    /// looked; asked while busy, it looks again for the next request.
    fn reclaimed(&mut self, idle: bool, cx: &mut Context<'_>) -> bool {
        if self.reclaimed.as_mut().poll(cx).is_pending() {
            return false;
        }
        if idle {
            return true;
        }
        self.reclaimed = Box::pin(self.reclaim.clone().notified_owned());
        let _ = self.reclaimed.as_mut().poll(cx);
        false
    }
}

impl WorkerExpiration for Expiry {
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>, status: WorkerStatus, start: Instant) -> Poll<()> {
        let idle = status == WorkerStatus::Idle;
        if idle {
            self.load.release_costly();
        }
        if self.reclaimed(idle, cx) {
            return Poll::Ready(());
        }
        let timeout = match status {
            WorkerStatus::Idle => self.idle,
            WorkerStatus::Requests | WorkerStatus::PostReturn => self.request,
        };
        let Some(deadline) = start.checked_add(timeout) else { return Poll::Pending };
        let deadline = tokio::time::Instant::from_std(deadline);
        if self.sleep.deadline() != deadline {
            self.sleep.as_mut().reset(deadline);
        }
        self.sleep.as_mut().poll(cx)
    }
}

/// A request the host refused for load, answered 503 `busy` (retry
/// shortly): what it lacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overloaded {
    /// A costly request, while as many wait for a permit as may.
    CostlyWork,
    /// An instance slot: every one serves a request (none idle to end).
    Instances,
}

impl std::fmt::Display for Overloaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Overloaded::CostlyWork => "this host is busy with as many costly requests as it takes at once",
            Overloaded::Instances => "this host has no instance free for this request: every one is serving; retry shortly",
        })
    }
}

impl std::error::Error for Overloaded {}

/// Which instance served a request: set when the instance takes it, and
/// counted among the instance's requests in flight until every clone of
/// this is dropped (when the host has the response's head).
#[derive(Clone, Default)]
pub struct Served(Arc<std::sync::OnceLock<(u64, InFlight)>>);

impl Served {
    /// The serial of the instance, once one took the request.
    pub fn serial(&self) -> Option<u64> {
        self.0.get().map(|(serial, _)| *serial)
    }

    /// Why the instance that took the request refused it for load, if it did
    /// ([`Load::refuse`]).
    pub fn refused(&self) -> Option<Overloaded> {
        self.0.get().and_then(|(_, InFlight(load))| load.refused.get().copied())
    }
}

/// The requests an instance is serving: in flight now, and started in its
/// life (shared with its store, whose rules for costly work read both).
#[derive(Default)]
pub struct Load {
    /// Requests in flight now.
    pub in_flight: AtomicUsize,
    /// Requests started since the instance began.
    pub started: std::sync::atomic::AtomicU64,
    /// The host's permit for costly work, while this instance's wasm needs
    /// it (see `instance::costly_work`); given back when a request starts
    /// and when the instance falls idle ([`Expiry`]), so an idle instance
    /// never holds it. (Not when its last response head is out: a guest may
    /// compute its body after.)
    pub costly: std::sync::Mutex<Option<tokio::sync::OwnedSemaphorePermit>>,
    /// Outbound calls of this instance waiting for their response: while
    /// one does, the instance never asks for the permit (it may be what the
    /// component called needs), it only pauses (`instance::costly_work`).
    pub calling: AtomicUsize,
    /// Set when the instance ends for want of something the host has few of
    /// (an instance slot, a permit for costly work): its requests are then
    /// answered 503 `busy`, not 500.
    pub refused: std::sync::OnceLock<Overloaded>,
}

impl Load {
    /// Gives back the permit for costly work, if this instance holds it.
    pub fn release_costly(&self) {
        drop(self.costly.lock().unwrap_or_else(|p| p.into_inner()).take());
    }

    /// Records that the instance ends refused for load (`why`), and returns it.
    pub fn refuse(&self, why: Overloaded) -> Overloaded {
        let _ = self.refused.set(why);
        why
    }

    /// Whether this instance holds the permit for costly work.
    pub fn holds_costly(&self) -> bool {
        self.costly.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }
}

/// One request in flight on an instance, counted until dropped.
pub struct InFlight(Arc<Load>);

impl InFlight {
    /// Counts one more request in `load` until this is dropped.
    pub fn start(load: &Arc<Load>) -> InFlight {
        load.in_flight.fetch_add(1, Ordering::AcqRel);
        load.started.fetch_add(1, Ordering::AcqRel);
        InFlight(load.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A new instance's serial: distinct for every instance this process makes.
pub fn next_serial() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// One instance's life: how many requests it takes, and what it holds
/// until it ends (its permits, its place in the counts).
pub struct Worker<T: Send + 'static> {
    /// The reuse it gets.
    pub reuse: Reuse,
    /// How long one of its requests may take.
    pub request_timeout: Duration,
    /// Held until the instance ends.
    pub held: Box<dyn Send + Sync>,
    /// Its component, for the log.
    pub id: String,
    /// Its number among the instances this host made (the request log's
    /// `instance`), told to each request it serves.
    pub serial: u64,
    /// Its requests in flight (shared with its store, whose rules for
    /// costly work share one instance's time among them).
    pub in_flight: Arc<Load>,
    /// The store data type.
    pub _data: std::marker::PhantomData<fn() -> T>,
}

impl<T: Send + 'static> WorkerState for Worker<T> {
    type StoreData = T;
    type RequestData = Served;

    fn should_accept_request(&self, concurrent: usize, total: usize) -> ShouldAccept {
        if total >= self.reuse.count {
            ShouldAccept::Never
        } else if concurrent >= self.reuse.concurrent {
            ShouldAccept::No
        } else {
            ShouldAccept::Yes
        }
    }

    fn on_request_start(&self, _: StoreContextMut<'_, T>, served: Served, _: GuestTaskId) -> Pin<Box<dyn Future<Output = ()> + Send + Sync>> {
        let _ = served.0.set((self.serial, InFlight::start(&self.in_flight)));
        Box::pin(tokio::time::sleep(self.request_timeout))
    }

    fn drop(&self, store: Store<T>, result: Result<(), wasmtime::Error>) {
        if let Err(e) = result {
            // What `ProxyHandler` says of an instance whose request expired.
            // Ended by `ProxyHandler` past its request's deadline, or
            // interrupted by the epoch past the request timeout.
            let timed_out = e.to_string() == "guest timed out"
                || e.downcast_ref::<wasmtime_wasi_http::handler::ExpirationError>().is_some()
                || e.downcast_ref::<wasmtime::Trap>() == Some(&wasmtime::Trap::Interrupt);
            let why = if timed_out { "ran past the request timeout".to_string() } else { format!("trapped or failed: {e:#}") };
            tracing::warn!(component = %self.id, instance = self.serial, reason = ?why, "instance ended");
        }
        drop(store);
    }
}
