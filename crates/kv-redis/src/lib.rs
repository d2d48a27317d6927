//! `cairn-kv-redis`: Cairn's store on a Redis (7.0+) or Valkey (7.2+)
//! server or Redis Cluster, keeping the promise of [`cairn_kv::Store`] with
//! one server-side Lua script per operation.
//!
//! # Map
//!
//! - [`RedisStore::open`] checks the URL (`redis://[user:password@]host:port[/db]`;
//!   `rediss://` is refused: TLS would need a TLS stack this crate does not
//!   bring), connects, checks that the server is a standalone primary of a
//!   version with script flags, and loads the scripts.
//! - [`RedisStore::open_cluster`] does the same on a Redis Cluster: it reads
//!   the cluster's shape from the first node that answers, refuses a cluster
//!   with slots no primary serves, and loads the scripts on every primary.
//! - [`cluster`]: the shape (`CLUSTER NODES`) and the router that sends each
//!   call to the primary of its slot, following `MOVED`/`ASK` and waiting
//!   out a failover, never resending a call whose reply was lost.
//! - [`slot`]: the hash slot of a key (CRC16 of its hash tag).
//! - `pool`: a few synchronous connections of our own (the trait is
//!   synchronous; the host calls it from its worker threads), with a connect
//!   timeout and a read/write timeout, so a stopped or hung server fails fast
//!   with [`Error::Unavailable`] and nothing blocks forever.
//! - `scripts`: the Lua scripts; `layout`: the Redis key names ([`Layout`]).
//! - [`server`]: a real `redis-server` on a free port, for tests and benchmarks.
//! - [`Redis`] ([`config`]) opens a store for a runtime config table of
//!   `type = "redis"` ([`RedisConfig`]: `url`, or `urls` / `cluster = true`
//!   for a cluster, optional `namespace`, `wait_for_replicas`,
//!   `wait_timeout_ms`), and puts a label nobody configured on the same
//!   server or cluster, in a namespace of its own.
//! - [`RedisStore::nodes`] and [`RedisStore::cross_slot_refusals`]: the
//!   store's per-node counters, which it reports through
//!   [`cairn_kv::Store::nodes`] for the host's metrics.
//!
//! # Key layout
//!
//! Every Redis key starts with the namespace ([`Options::namespace`], so
//! several stores share a server) and then, for everything that belongs to
//! one Cairn key, a *hash tag*: `t/<tenant>/<rest>` gets `{t/<tenant>}`, any
//! other key (`sys/…`, `auth/…`, `ratelimit/…`, `kv-probe/…`) its first path
//! segment (`{sys}`). So a tenant's keys, and the sequence and floor that
//! stamp them, all hash to one slot. With `N` the namespace, `T` the tag and
//! `B` the bucket written as `<byte length>:<name>`:
//!
//! | Redis key | type | holds |
//! | --- | --- | --- |
//! | `N:{T}:r:B:<key>` | hash | `v`: the value (absent in a delete marker); `s`: stamp of the last write |
//! | `N:{T}:seq` | string | the tag's stamp sequence: last stamp handed out |
//! | `N:{T}:floor` | string | the tag's purge floor: highest stamp of a swept marker |
//! | `N:{T}:i:B` | sorted set | the live keys of bucket B under T (score 0: byte order) |
//! | `N:{T}:m:B` | sorted set | the delete markers of B under T, scored by delete time (ms) |
//! | `N:tags:B` | sorted set | the tags ever written in B (score 0) |
//! | `N:buckets` | set | the buckets ever written |
//!
//! (A tag containing `%`, `{` or `}` is %-escaped between the braces, and the
//! empty tag of a key starting with `/` is written `{%}`; see [`hash_tag`].)
//!
//! # The scripts and the promise
//!
//! Each operation is one script (`EVALSHA`, loaded again when the server
//! answers `NOSCRIPT`). A script runs atomically, reads all it decides on
//! before its first write, and is refused whole (never half run) with `OOM`
//! when the server is over `maxmemory`: Redis checks that before a flagged
//! script starts. Rule by rule (numbers as in [`cairn_kv::Store`]):
//!
//! - `read`: the value, its stamp and the tag's sequence in one step;
//!   absent (or a marker) observes `Absent(seq)`.
//! - Stamps (rule 1): every write (set, swap, increment, delete) takes
//!   `max(seq + 1, server time in µs)` from its tag's sequence, so stamps
//!   only grow and are never reused, and a delete followed by a recreate
//!   with the same bytes has a new stamp (no ABA). The clock term means a
//!   server that lost its data (a restart without persistence, a failover)
//!   does not hand out the stamps of lost writes again, unless its clock is
//!   behind by more than the outage lasted.
//! - `swap` (rules 1–3): the rule of [`cairn_kv::Stamped::swap_allowed`] on the
//!   record and the tag's floor; a swap that does not happen returns
//!   `{0, value, stamp, seq}` read in the same step, which becomes
//!   [`Swap::Failed`] with a fresh read. Only `{1}` is success.
//! - `delete_many` (rule 1, 5): turns each live key into a marker (stamp,
//!   and a place in the markers set with the server time); absent keys are
//!   left alone.
//! - `sweep` (rule 1 after purging): per bucket and tag, drops markers
//!   deleted at least `older_than_ms` ago (server clock) and raises the
//!   tag's purge floor to the highest dropped stamp in the same step, like
//!   the SQLite backend: a handle read before a dropped marker then fails.
//! - `increment` (rule 4): exact wrapping 64-bit addition on 8 little-endian
//!   bytes (in two 32-bit halves: Lua has only doubles); any other value is
//!   refused with [`Error::NotACounter`] and nothing is written.
//! - `set_many` / `delete_many` (rule 5): one script for the whole batch,
//!   after every key and value was checked against the limits here.
//! - `get_many`: one read-only script per tag in the batch (a read of
//!   several keys is not a transaction in the promise).
//! - `list_keys`: plain read commands, no script (see below).
//!
//! Reads (`read`, `get_many`) are flagged `no-writes` and keep working when
//! the server is out of memory; `delete_many` and `sweep` are flagged
//! `allow-oom`, so a full store can still be emptied.
//!
//! # `list_keys`: an index, not SCAN
//!
//! Cairn lists keys rarely, but the host's tenant discovery asks for *one*
//! key after `t/<tenant>0`, once per tenant; with SCAN each such call would
//! walk the whole namespace. So each write script also keeps the per-tag
//! index `N:{T}:i:B` (a sorted set, O(log n) per write, the key stored a
//! second time), and every tag ever written in a bucket is in `N:tags:B`.
//! Since a tag is a prefix of all its keys, a listing only reads the tags
//! that are prefixes of `after` (one `ZMSCORE`) and the tags after `after`
//! in order, stopping at the first tag beyond the `limit`-th key found:
//! about two round trips and O(limit · log n) per page, whatever the size
//! of the store. Tags are registered (`SADD`/`ZADD`, once per connection and
//! tag) *before* the first write under them and never removed, so a tag
//! whose keys were all deleted still costs one empty range read per listing
//! that passes it.
//!
//! # Batches across tags, and Redis Cluster
//!
//! Every script names its keys, and all keys of one Cairn key's tag, its
//! sequence and floor included, are in one slot; Cairn's batches stay within
//! one tenant (the notes core's view of the store prefixes every key with
//! the tenant) or one top-level key segment (the door's and the sweep's
//! pages of one prefix). On one server a `set_many`/`delete_many` whose keys
//! have different tags still runs as one script, atomically. On a cluster
//! the store refuses it before sending ([`Error::Backend`], nothing written,
//! counted in [`RedisStore::cross_slot_refusals`]): the cluster would refuse
//! it whole with `CROSSSLOT` anyway, and it is a caller's bug. `get_many`
//! reads one tag at a time, so it spans tags on a cluster too. The tag
//! registries (`N:tags:B`, `N:buckets`) are in slots of their own; that is
//! why they are written by separate calls before the data, and only ever
//! grow.
//!
//! # Durability, replication and failover
//!
//! Redis replicates asynchronously: a write the primary ran may not have
//! reached any replica when the primary dies, and a failover to that
//! replica loses it. [`Options::wait_for_replicas`] closes that window:
//! after each write the store sends `WAIT n timeout` on the connection that
//! wrote, and acknowledges the write only when `n` replicas have it; when
//! they do not confirm within [`Options::wait_timeout`], the write is
//! refused as [`Error::Unavailable`] (it is on the primary, its fate is
//! unknown; a keyed resend settles it). It is the default on a cluster (1
//! replica): a failover of one primary then loses no acknowledged write, as
//! the tests show on a real cluster. With 0, a write is acknowledged when
//! the primary ran it, and a failover loses what the replica had not copied
//! (the tests count it: everything acknowledged in the window the replica
//! lagged). On a single primary without replicas, `appendonly yes` with
//! `appendfsync always` makes an acknowledged write survive a crash. In
//! every mode, a lost write never turns into a false success later: stamps
//! follow the server clock, so a new primary does not reuse the stamps of
//! writes it never saw.
//!
//! # Errors
//!
//! Connection refused or reset, timeouts and other I/O errors, and the
//! server being busy, loading or read-only are [`Error::Unavailable`]; the
//! server's `OOM` refusal is [`Error::Full`]; anything else is
//! [`Error::Backend`]. A write whose reply is lost (connection dropped or
//! timed out after sending) is `Unavailable`, never success and never a
//! conflict, and is not resent: its outcome is unknown. Read-only calls are
//! retried once on a fresh connection when a pooled one turned out dead.

mod address;
pub mod cluster;
pub mod config;
mod layout;
mod pool;
mod scripts;
pub mod server;
pub mod slot;

pub use address::{DEFAULT_PORT, redact};
pub use cluster::{NodeCounters, Shape};
pub use config::{Redis, RedisConfig};
pub use layout::{Layout, MAX_NAMESPACE_BYTES, check_namespace, hash_tag, tag_of};

pub use cairn_kv::NodeReport;
use cairn_kv::{Error, Observed, Read, Result, Store, Swap, check_key, check_value};
use cluster::{Cluster, Dial};
use pool::{Conn, Pool};
use redis::{Client, ErrorKind, RedisError, RedisResult, Value};
use scripts::Scripts;
use slot::slot_of;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// The namespace of a store that names none.
pub const DEFAULT_NAMESPACE: &str = "cairn";

/// How a [`RedisStore`] connects and where its keys go.
#[derive(Debug, Clone)]
pub struct Options {
    /// Prefix of every Redis key of this store: stores with different
    /// namespaces share a server without seeing each other. 1 to 64 bytes of
    /// `[A-Za-z0-9._:/-]`. Default [`DEFAULT_NAMESPACE`].
    pub namespace: String,
    /// Most connections open at once. Default 8.
    pub pool_size: usize,
    /// Limit on TCP connect plus handshake (`AUTH`, `SELECT`). Default 500 ms.
    pub connect_timeout: Duration,
    /// Limit on every read and write on a connection, and on waiting for a
    /// free connection; on a cluster, also on following redirections and
    /// waiting out a failover. Default 2 s.
    pub io_timeout: Duration,
    /// Replicas that must confirm a write (`WAIT`) before it is
    /// acknowledged; 0 acknowledges on the primary alone. Default 0 here;
    /// [`Redis`] makes it 1 on a cluster.
    pub wait_for_replicas: u32,
    /// How long a write waits for those confirmations before it is refused
    /// as [`Error::Unavailable`]. Default 1 s.
    pub wait_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            namespace: DEFAULT_NAMESPACE.into(),
            pool_size: 8,
            connect_timeout: Duration::from_millis(500),
            io_timeout: Duration::from_secs(2),
            wait_for_replicas: 0,
            wait_timeout: Duration::from_secs(1),
        }
    }
}

impl Options {
    /// The defaults, with namespace `ns`.
    pub fn with_namespace(ns: impl Into<String>) -> Self {
        Self { namespace: ns.into(), ..Self::default() }
    }
}

/// A store on one Redis or Valkey server, or on a Redis Cluster. Cheap to
/// share between threads.
pub struct RedisStore {
    layout: Layout,
    nodes: Arc<Nodes>,
    scripts: Scripts,
    connect_timeout: Duration,
    io_timeout: Duration,
    /// `(replicas, timeout in ms)` a write waits for, if any.
    confirm: Option<(u32, u64)>,
    /// Scripts refused before sending because their keys span slots.
    cross_slot: Arc<AtomicU64>,
}

/// Where the calls go: one server, or the primaries of a cluster.
enum Nodes {
    One(Pool, Arc<NodeCounters>),
    Cluster(Cluster),
}

/// Tags read per registry page while listing.
const LIST_TAG_CHUNK: usize = 16;
/// Tags read per registry page while sweeping.
const SWEEP_TAG_CHUNK: usize = 256;
/// Markers dropped per sweep script call.
const SWEEP_BATCH: usize = 1000;

fn closed_error() -> Error {
    Error::Backend("store is closed".into())
}

/// A reply that does not have the shape a script returns: a bug, or someone
/// else's data in our namespace.
fn odd(what: &str, v: &Value) -> Error {
    Error::Backend(format!("unexpected reply from Redis for {what}: {v:?}"))
}

fn odd_reply(what: &'static str) -> RedisError {
    RedisError::from((ErrorKind::UnexpectedReturnType, what))
}

fn bytes(v: &Value) -> Option<Option<Vec<u8>>> {
    match v {
        Value::Nil => Some(None),
        Value::BulkString(b) => Some(Some(b.clone())),
        Value::SimpleString(s) => Some(Some(s.as_bytes().to_vec())),
        _ => None,
    }
}

fn number(v: &Value) -> Option<u64> {
    match v {
        Value::Int(n) => u64::try_from(*n).ok(),
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        Value::SimpleString(s) => s.parse().ok(),
        _ => None,
    }
}

/// A read from `[value|nil, stamp|nil, seq]`.
fn observed_from(what: &str, parts: &[Value], whole: &Value) -> Result<Read> {
    let [v, s, seq] = parts else { return Err(odd(what, whole)) };
    let value = bytes(v).ok_or_else(|| odd(what, whole))?;
    let seq = number(seq).ok_or_else(|| odd(what, whole))?;
    Ok(match value {
        Some(value) => {
            let stamp = number(s).ok_or_else(|| odd(what, whole))?;
            Read { value: Some(value), observed: Observed::Present(stamp) }
        }
        None => Read { value: None, observed: Observed::Absent(seq) },
    })
}

/// `key=value` lines of an `INFO` reply.
fn info_field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines().find_map(|l| l.trim().strip_prefix(name)?.strip_prefix(':'))
}

impl RedisStore {
    /// Connect to the server at `url` (`redis://[user:password@]host:port[/db]`).
    ///
    /// A malformed URL, or `rediss://`, is an [`Error::Backend`] naming what is
    /// wrong; a server that cannot be reached is [`Error::Unavailable`] naming
    /// the address; a server that is a replica, a cluster node, or older than
    /// Redis 7.0 is an [`Error::Backend`] saying so.
    pub fn open(url: &str, options: Options) -> Result<Self> {
        let layout = Self::check_options(&options)?;
        let target = address::parse(url)?;
        let shown = target.shown.clone();
        let client = Client::open(target.info).map_err(|e| Error::Backend(format!("Redis URL `{}`: {e}", redact(url))))?;
        let pool = Pool::new(client, target.shown, options.pool_size, options.connect_timeout, options.io_timeout);
        let store = Self::assemble(layout, Nodes::One(pool, Arc::default()), &options);
        store.check_server(&shown, false)?;
        if options.wait_for_replicas > 0 {
            let replicas = store.connected_replicas(&shown)?;
            if replicas < options.wait_for_replicas as usize {
                return Err(Self::too_few_replicas(&shown, replicas, options.wait_for_replicas));
            }
        }
        store.load_scripts(0)?;
        Ok(store)
    }

    /// Connect to the Redis Cluster that `urls` lead to (any of its nodes;
    /// the first that answers gives the shape).
    ///
    /// Besides what [`RedisStore::open`] refuses: a URL with a database
    /// other than 0 (a cluster has only db 0), a node that is not in
    /// cluster mode, a cluster with slots no primary serves (naming them),
    /// and a primary with fewer replicas than [`Options::wait_for_replicas`].
    pub fn open_cluster(urls: &[&str], options: Options) -> Result<Self> {
        let layout = Self::check_options(&options)?;
        if urls.is_empty() {
            return Err(Error::Backend("a Redis Cluster store needs at least one node URL".into()));
        }
        let mut seeds = Vec::with_capacity(urls.len());
        for url in urls {
            let target = address::parse(url)?;
            if target.info.redis_settings().db() != 0 {
                return Err(Error::Backend(format!(
                    "Redis URL `{}` names database {}; a Redis Cluster has only database 0 (use a namespace to share it)",
                    redact(url),
                    target.info.redis_settings().db()
                )));
            }
            seeds.push(target);
        }
        let first = seeds[0].shown.clone();
        let dial = Dial { pool_size: options.pool_size, connect_timeout: options.connect_timeout, io_timeout: options.io_timeout };
        // The seed's own INFO first: a standalone server is named as such.
        let client = Client::open(seeds[0].info.clone()).map_err(|e| Error::Backend(format!("Redis URL `{}`: {e}", redact(urls[0]))))?;
        let probe = Self::assemble(
            layout.clone(),
            Nodes::One(Pool::new(client, first.clone(), 1, options.connect_timeout, options.io_timeout), Arc::default()),
            &options,
        );
        probe.check_server(&first, true)?;
        probe.close()?;
        let cluster = Cluster::open(seeds, dial)?;
        let shape = cluster.shape();
        let uncovered = shape.uncovered();
        if !uncovered.is_empty() {
            return Err(Error::Backend(format!(
                "the Redis Cluster at {first} serves only {} of {} slots (no primary for slots {}): \
                 fix the cluster (redis-cli --cluster fix) before starting",
                shape.covered(),
                slot::SLOTS,
                cluster::ranges(&uncovered)
            )));
        }
        if let Some(p) = shape.primaries.iter().find(|p| p.replicas.len() < options.wait_for_replicas as usize) {
            return Err(Self::too_few_replicas(&p.addr, p.replicas.len(), options.wait_for_replicas));
        }
        let store = Self::assemble(layout, Nodes::Cluster(cluster), &options);
        for p in &shape.primaries {
            let slot = p.ranges[0].0;
            store.load_scripts(slot)?;
        }
        Ok(store)
    }

    fn check_options(options: &Options) -> Result<Layout> {
        let layout = Layout::new(&options.namespace)?;
        if options.pool_size == 0 {
            return Err(Error::Backend("the Redis connection pool needs at least 1 connection".into()));
        }
        if options.connect_timeout.is_zero() || options.io_timeout.is_zero() {
            return Err(Error::Backend("Redis timeouts must be longer than zero".into()));
        }
        if options.wait_for_replicas > 0 && options.wait_timeout.is_zero() {
            return Err(Error::Backend("waiting for replicas needs a wait timeout longer than zero".into()));
        }
        Ok(layout)
    }

    fn assemble(layout: Layout, nodes: Nodes, options: &Options) -> Self {
        let confirm = (options.wait_for_replicas > 0).then(|| (options.wait_for_replicas, options.wait_timeout.as_millis().max(1) as u64));
        Self {
            layout,
            nodes: Arc::new(nodes),
            scripts: Scripts::new(),
            connect_timeout: options.connect_timeout,
            io_timeout: options.io_timeout,
            confirm,
            cross_slot: Arc::default(),
        }
    }

    fn too_few_replicas(primary: &str, has: usize, wants: u32) -> Error {
        Error::Backend(format!(
            "Redis primary {primary} has {has} connected replica(s), and writes wait for {wants}: every write \
             would be refused; add replicas, or set wait_for_replicas = 0 (acknowledged on the primary alone, \
             a failover can then lose the last writes)"
        ))
    }

    /// Checks the version and the role; `cluster` says which mode the
    /// configuration expects the server to be in.
    fn check_server(&self, shown: &str, cluster: bool) -> Result<()> {
        // The first answer is awaited only as long as a connect: a peer that
        // accepts but never answers fails open as fast as one that refuses.
        let info = self.run(0, false, |c| {
            c.redis.set_read_timeout(Some(self.connect_timeout))?;
            let info = redis::cmd("INFO").arg("server").arg("replication").arg("cluster").query::<String>(&mut c.redis);
            c.redis.set_read_timeout(Some(self.io_timeout))?;
            info
        });
        match info {
            Ok(info) => {
                let version = info_field(&info, "redis_version").unwrap_or("?");
                let major: u32 = version.split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0);
                if major < 7 {
                    return Err(Error::Backend(format!(
                        "Redis at {shown} is version {version}; cairn-kv-redis needs Redis 7.0 or later \
                         (or Valkey 7.2+) for script flags"
                    )));
                }
                let in_cluster = info_field(&info, "cluster_enabled") == Some("1");
                if in_cluster && !cluster {
                    return Err(Error::Backend(format!(
                        "Redis at {shown} is a cluster node: set `cluster = true` (or list several `urls`) \
                         in the store's runtime config"
                    )));
                }
                if cluster && !in_cluster {
                    return Err(Error::Backend(format!(
                        "Redis at {shown} is not in cluster mode (cluster_enabled:0): drop `cluster = true` \
                         and give its `url`"
                    )));
                }
                if !cluster && let Some(role) = info_field(&info, "role").filter(|r| *r != "master") {
                    return Err(Error::Backend(format!("Redis at {shown} is a read-only replica (role {role}); point the URL at the primary")));
                }
                Ok(())
            }
            // INFO renamed or not permitted: loading the scripts still
            // fails on a server without script flags.
            Err(Error::Backend(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Replicas connected to a standalone primary (`INFO replication`).
    fn connected_replicas(&self, shown: &str) -> Result<usize> {
        let info: String = self.run(0, true, |c| redis::cmd("INFO").arg("replication").query(&mut c.redis))?;
        info_field(&info, "connected_slaves")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| Error::Backend(format!("Redis at {shown} did not say how many replicas it has")))
    }

    /// Load the scripts on the primary of `slot` (they are loaded again on
    /// `NOSCRIPT` anyway; this finds a server that refuses scripts at open).
    fn load_scripts(&self, slot: u16) -> Result<()> {
        self.run(slot, false, |c| {
            for (_, script) in self.scripts.all() {
                script.load(&mut c.redis)?;
            }
            Ok(())
        })
        .map_err(|e| match e {
            Error::Backend(m) => Error::Backend(format!(
                "loading cairn-kv-redis' scripts failed ({m}); it needs Redis 7.0+ or Valkey 7.2+ \
                 with EVALSHA and SCRIPT allowed"
            )),
            e => e,
        })
    }

    /// The Redis key names this store uses.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The server's address (`host:port[/db]`, no credentials); on a
    /// cluster, the primaries' addresses.
    pub fn address(&self) -> String {
        match &*self.nodes {
            Nodes::One(pool, _) => pool.shown.clone(),
            Nodes::Cluster(c) => c.shape().primaries.iter().map(|p| p.addr.as_str()).collect::<Vec<_>>().join(","),
        }
    }

    /// The cluster's shape, when the store is on one.
    pub fn shape(&self) -> Option<Arc<Shape>> {
        match &*self.nodes {
            Nodes::One(..) => None,
            Nodes::Cluster(c) => Some(c.shape()),
        }
    }

    /// Each node's counters (a cluster's primaries, or the one server).
    pub fn nodes(&self) -> Vec<NodeReport> {
        reports(self.layout.namespace(), &self.nodes)
    }

    /// Scripts refused before sending because their keys were in different
    /// slots of a cluster (a caller's bug; Cairn makes none).
    pub fn cross_slot_refusals(&self) -> u64 {
        self.cross_slot.load(Relaxed)
    }

    fn check_open(&self) -> Result<()> {
        let closed = match &*self.nodes {
            Nodes::One(pool, _) => pool.is_closed(),
            Nodes::Cluster(c) => c.is_closed(),
        };
        if closed { Err(closed_error()) } else { Ok(()) }
    }

    /// Run `f` where `slot` lives: the one server, or its cluster primary.
    fn run<T>(&self, slot: u16, idempotent: bool, mut f: impl FnMut(&mut Conn) -> RedisResult<T>) -> Result<T> {
        match &*self.nodes {
            Nodes::One(pool, counters) => {
                let r = pool.with(idempotent, &mut f);
                let c = if r.is_ok() { &counters.ok } else { &counters.errors };
                c.fetch_add(1, Relaxed);
                r
            }
            Nodes::Cluster(c) => c.run(slot, idempotent, f),
        }
    }

    /// Run `f` once per slot of `slots` (`f` gets the index): on one server
    /// in one lease, on a cluster each where its slot lives.
    fn run_each<T>(&self, slots: &[u16], idempotent: bool, mut f: impl FnMut(usize, &mut Conn) -> RedisResult<T>) -> Result<Vec<T>> {
        match &*self.nodes {
            Nodes::One(..) => self.run(0, idempotent, |c| (0..slots.len()).map(|i| f(i, c)).collect()),
            Nodes::Cluster(_) => slots.iter().enumerate().map(|(i, &s)| self.run(s, idempotent, |c| f(i, c))).collect(),
        }
    }

    /// The slot all of a script's `keys` are in. On a cluster, keys in two
    /// slots are refused here, before anything is sent: a cluster would
    /// refuse the script whole (`CROSSSLOT`), and Cairn never sends one. On
    /// one server such a batch runs, atomically.
    fn script_slot(&self, keys: &[String]) -> Result<u16> {
        if matches!(*self.nodes, Nodes::One(..)) {
            return Ok(0);
        }
        match slot::one_slot(keys.iter().map(|k| k.as_bytes())) {
            Ok(s) => Ok(s.unwrap_or(0)),
            Err((a, b)) => {
                self.cross_slot.fetch_add(1, Relaxed);
                Err(Error::Backend(format!(
                    "refused before sending: this batch names keys in hash slots {a} and {b}, and a script on a \
                     Redis Cluster must stay in one slot (keep a batch within one tenant or one top-level key \
                     segment); nothing was written"
                )))
            }
        }
    }

    /// Run a write on the primary of `slot` and, when writes wait for
    /// replicas, `WAIT` on the same connection: a write the replicas did not
    /// confirm in time is [`Error::Unavailable`], never acknowledged.
    fn write<T>(&self, slot: u16, mut f: impl FnMut(&mut Conn) -> RedisResult<T>) -> Result<T> {
        self.write_if(slot, |c| Ok((f(c)?, true)))
    }

    /// [`RedisStore::write`] for `f` that may have nothing to write: it
    /// says whether it sent a write, and only then is it confirmed.
    fn write_if<T>(&self, slot: u16, mut f: impl FnMut(&mut Conn) -> RedisResult<(T, bool)>) -> Result<T> {
        let Some((replicas, timeout_ms)) = self.confirm else { return self.run(slot, false, |c| Ok(f(c)?.0)) };
        let (value, acks) = self.run(slot, false, |c| {
            let (v, wrote) = f(c)?;
            if !wrote {
                return Ok((v, i64::from(replicas)));
            }
            let acks = match redis::cmd("WAIT").arg(replicas).arg(timeout_ms).query::<i64>(&mut c.redis) {
                Ok(n) => n,
                // An error reply: the write ran, its copy is not confirmed.
                Err(e) if matches!(e.kind(), ErrorKind::Server(_) | ErrorKind::Extension) => -1,
                Err(e) => return Err(e),
            };
            Ok((v, acks))
        })?;
        if acks < i64::from(replicas) {
            self.count_unconfirmed(slot);
            return Err(Error::Unavailable(format!(
                "the write reached the Redis primary but {} of {replicas} replica(s) confirmed it within {timeout_ms} ms, \
                 so it is not acknowledged: a failover now could lose it; resend it (with the same idempotency key) \
                 once the replicas are back",
                acks.max(0)
            )));
        }
        Ok(value)
    }

    fn count_unconfirmed(&self, slot: u16) {
        match &*self.nodes {
            Nodes::One(_, counters) => {
                counters.unconfirmed.fetch_add(1, Relaxed);
            }
            Nodes::Cluster(c) => {
                if let Some(n) = c.shape().owner(slot).and_then(|p| c.counters_of(&p.addr)) {
                    n.unconfirmed.fetch_add(1, Relaxed);
                }
            }
        }
    }

    /// Run a write script after registering the tags it writes under (see
    /// [`RedisStore::register`]).
    fn write_script(&self, bucket: &str, tags: &[&str], keys: &[String], call: &redis::ScriptInvocation<'_>) -> Result<Value> {
        let slot = self.script_slot(keys)?;
        self.register(bucket, tags)?;
        self.write(slot, |c| call.invoke(&mut c.redis))
    }

    /// Add the tags of a write to the registries, unless the connection
    /// that serves each registry already did: before the write, so a
    /// listing never misses a key. The two registries are in slots of their
    /// own, so on a cluster they are two calls, each confirmed like a write.
    fn register(&self, bucket: &str, tags: &[&str]) -> Result<()> {
        let registry = self.layout.tags(bucket);
        self.write_if(slot_of(registry.as_bytes()), |c| {
            let mut missing: Vec<&str> = tags.iter().copied().filter(|t| !c.is_registered(bucket, t)).collect();
            if missing.is_empty() {
                return Ok(((), false));
            }
            missing.sort_unstable();
            missing.dedup();
            let mut cmd = redis::cmd("ZADD");
            cmd.arg(&registry);
            for t in &missing {
                cmd.arg(0).arg(*t);
            }
            cmd.query::<()>(&mut c.redis)?;
            for t in missing {
                c.mark_registered(bucket, t);
            }
            Ok(((), true))
        })?;
        let buckets = self.layout.buckets();
        self.write_if(slot_of(buckets.as_bytes()), |c| {
            if c.is_bucket_registered(bucket) {
                return Ok(((), false));
            }
            redis::cmd("SADD").arg(&buckets).arg(bucket).query::<()>(&mut c.redis)?;
            c.mark_bucket_registered(bucket);
            Ok(((), true))
        })
    }

    fn distinct_tags<'k>(keys: impl Iterator<Item = &'k str>) -> Vec<&'k str> {
        let mut tags: Vec<&str> = keys.map(tag_of).collect();
        tags.sort_unstable();
        tags.dedup();
        tags
    }
}

fn report(namespace: &str, addr: &str, slots: usize, replicas: usize, n: &NodeCounters) -> NodeReport {
    NodeReport {
        namespace: namespace.to_string(),
        addr: addr.to_string(),
        slots,
        replicas,
        ok: n.ok.load(Relaxed),
        errors: n.errors.load(Relaxed),
        redirects: n.redirects.load(Relaxed),
        refusals: n.refusals.load(Relaxed),
        unconfirmed: n.unconfirmed.load(Relaxed),
    }
}

fn reports(namespace: &str, nodes: &Nodes) -> Vec<NodeReport> {
    match nodes {
        Nodes::One(pool, n) => vec![report(namespace, &pool.shown, slot::SLOTS, 0, n)],
        Nodes::Cluster(c) => {
            let shape = c.shape();
            let mut out: Vec<NodeReport> = c
                .counters()
                .iter()
                .map(|(addr, n)| {
                    let p = shape.primaries.iter().find(|p| &p.addr == addr);
                    report(namespace, addr, p.map_or(0, |p| p.slots), p.map_or(0, |p| p.replicas.len()), n)
                })
                .collect();
            for p in &shape.primaries {
                if !out.iter().any(|r| r.addr == p.addr) {
                    out.push(report(namespace, &p.addr, p.slots, p.replicas.len(), &NodeCounters::default()));
                }
            }
            out.sort_by(|a, b| a.addr.cmp(&b.addr));
            out
        }
    }
}

/// Tags, as the registry holds them.
type Tags = Vec<Vec<u8>>;

/// The listing's round trips (see [`Store::list_keys`] on [`RedisStore`]).
impl RedisStore {
    /// The first round trip of a listing: which prefixes of `after` are
    /// registered tags (their keys can sort after `after`), and the first
    /// tags after it.
    fn first_tags(&self, registry: &str, registry_slot: u16, after: Option<&str>, lower: &[u8]) -> Result<(Tags, Tags)> {
        self.run(registry_slot, true, |c| {
            let mut p = redis::pipe();
            if let Some(a) = after {
                p.cmd("ZMSCORE").arg(registry);
                for i in 0..=a.len() {
                    p.arg(&a.as_bytes()[..i]);
                }
            }
            p.cmd("ZRANGEBYLEX").arg(registry).arg(lower).arg("+").arg("LIMIT").arg(0).arg(LIST_TAG_CHUNK);
            let mut replies: Vec<Value> = p.query(&mut c.redis)?;
            let chunk_reply = replies.pop().ok_or_else(|| odd_reply("ZRANGEBYLEX"))?;
            let mut queue: Vec<Vec<u8>> = Vec::new();
            if let (Some(a), Some(Value::Array(scores))) = (after, replies.pop()) {
                for (i, score) in scores.iter().enumerate() {
                    if *score != Value::Nil {
                        queue.push(a.as_bytes()[..i].to_vec());
                    }
                }
            }
            let tags: Vec<Vec<u8>> = redis::from_redis_value(chunk_reply)?;
            Ok((queue, tags))
        })
    }

    /// Each queued tag's keys from `lower` on, at most `per_tag` each, read
    /// from every tag's index at once.
    fn tag_pages(&self, bucket: &str, queue: &[Vec<u8>], lower: &[u8], per_tag: usize) -> Result<Vec<Vec<u8>>> {
        let indexes: Vec<String> = queue.iter().map(|t| self.layout.index_of_tag(bucket, &String::from_utf8_lossy(t))).collect();
        let slots: Vec<u16> = indexes.iter().map(|k| slot_of(k.as_bytes())).collect();
        let pages: Vec<Vec<Vec<u8>>> = self.run_each(&slots, true, |i, c| {
            redis::cmd("ZRANGEBYLEX").arg(&indexes[i]).arg(lower).arg("+").arg("LIMIT").arg(0).arg(per_tag).query(&mut c.redis)
        })?;
        Ok(pages.into_iter().flatten().collect())
    }
}

impl Store for RedisStore {
    fn nodes(&self) -> Vec<NodeReport> {
        RedisStore::nodes(self)
    }

    fn cross_slot_refusals(&self) -> Option<(String, u64)> {
        Some((self.layout.namespace().to_string(), RedisStore::cross_slot_refusals(self)))
    }

    fn read(&self, bucket: &str, key: &str) -> Result<Read> {
        check_key(key)?;
        self.check_open()?;
        let (rec, seq) = (self.layout.record(bucket, key), self.layout.sequence(key));
        let mut call = self.scripts.read.key(&rec);
        call.key(&seq);
        let reply: Value = self.run(slot_of(rec.as_bytes()), true, |c| call.invoke(&mut c.redis))?;
        match &reply {
            Value::Array(parts) => observed_from("read", parts, &reply),
            _ => Err(odd("read", &reply)),
        }
    }

    fn swap(&self, bucket: &str, key: &str, observed: Observed, value: &[u8]) -> Result<Swap> {
        check_key(key)?;
        check_value(value)?;
        self.check_open()?;
        let (mode, n) = match observed {
            Observed::Present(s) => ("P", s),
            Observed::Absent(s) => ("A", s),
        };
        let l = &self.layout;
        let keys = [l.record(bucket, key), l.sequence(key), l.purge_floor(key), l.index(bucket, key), l.markers(bucket, key)];
        let mut call = self.scripts.swap.prepare_invoke();
        for k in &keys {
            call.key(k);
        }
        call.arg(mode).arg(n.to_string()).arg(value).arg(key);
        let reply: Value = self.write_script(bucket, &[tag_of(key)], &keys, &call)?;
        match &reply {
            Value::Array(parts) => match parts.first() {
                Some(Value::Int(1)) => Ok(Swap::Done),
                Some(Value::Int(0)) => Ok(Swap::Failed(observed_from("swap", &parts[1..], &reply)?)),
                _ => Err(odd("swap", &reply)),
            },
            _ => Err(odd("swap", &reply)),
        }
    }

    fn set_many(&self, bucket: &str, pairs: &[(&str, &[u8])]) -> Result<()> {
        for (k, v) in pairs {
            check_key(k)?;
            check_value(v)?;
        }
        self.check_open()?;
        if pairs.is_empty() {
            return Ok(());
        }
        let l = &self.layout;
        let mut keys = Vec::with_capacity(pairs.len() * 4);
        let mut call = self.scripts.set_many.prepare_invoke();
        for (k, v) in pairs {
            let four = [l.record(bucket, k), l.sequence(k), l.index(bucket, k), l.markers(bucket, k)];
            for name in &four {
                call.key(name);
            }
            call.arg(*k).arg(*v);
            keys.extend(four);
        }
        let tags = Self::distinct_tags(pairs.iter().map(|(k, _)| *k));
        let _: Value = self.write_script(bucket, &tags, &keys, &call)?;
        Ok(())
    }

    fn get_many(&self, bucket: &str, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>> {
        for k in keys {
            check_key(k)?;
        }
        self.check_open()?;
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        // One read-only script per tag: in one lease on one server, each
        // where its slot lives on a cluster.
        let mut groups: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, k) in keys.iter().enumerate() {
            groups.entry(tag_of(k)).or_default().push(i);
        }
        let mut slots = Vec::with_capacity(groups.len());
        let calls: Vec<(Vec<usize>, redis::ScriptInvocation<'_>)> = groups
            .into_values()
            .map(|idx| {
                let mut call = self.scripts.get_many.prepare_invoke();
                let first = self.layout.record(bucket, keys[idx[0]]);
                slots.push(slot_of(first.as_bytes()));
                for &i in &idx {
                    call.key(self.layout.record(bucket, keys[i]));
                }
                (idx, call)
            })
            .collect();
        let replies: Vec<Value> = self.run_each(&slots, true, |i, c| calls[i].1.invoke::<Value>(&mut c.redis))?;
        let mut out = vec![None; keys.len()];
        for ((idx, _), reply) in calls.iter().zip(&replies) {
            let Value::Array(values) = reply else { return Err(odd("get_many", reply)) };
            if values.len() != idx.len() {
                return Err(odd("get_many", reply));
            }
            for (&i, v) in idx.iter().zip(values) {
                out[i] = bytes(v).ok_or_else(|| odd("get_many", reply))?;
            }
        }
        Ok(out)
    }

    fn delete_many(&self, bucket: &str, keys: &[&str]) -> Result<()> {
        for k in keys {
            check_key(k)?;
        }
        self.check_open()?;
        let mut distinct: Vec<&str> = Vec::with_capacity(keys.len());
        for k in keys {
            if !distinct.contains(k) {
                distinct.push(k);
            }
        }
        if distinct.is_empty() {
            return Ok(());
        }
        let l = &self.layout;
        let mut names = Vec::with_capacity(distinct.len() * 4);
        let mut call = self.scripts.delete_many.prepare_invoke();
        for k in &distinct {
            let four = [l.record(bucket, k), l.sequence(k), l.index(bucket, k), l.markers(bucket, k)];
            for name in &four {
                call.key(name);
            }
            call.arg(*k);
            names.extend(four);
        }
        let slot = self.script_slot(&names)?;
        let _: Value = self.write(slot, |c| call.invoke(&mut c.redis))?;
        Ok(())
    }

    fn increment(&self, bucket: &str, key: &str, delta: i64) -> Result<i64> {
        check_key(key)?;
        self.check_open()?;
        let bits = delta as u64;
        let l = &self.layout;
        let keys = [l.record(bucket, key), l.sequence(key), l.index(bucket, key), l.markers(bucket, key)];
        let mut call = self.scripts.increment.prepare_invoke();
        for k in &keys {
            call.key(k);
        }
        call.arg(key).arg((bits & 0xffff_ffff).to_string()).arg((bits >> 32).to_string());
        let reply: Value = self.write_script(bucket, &[tag_of(key)], &keys, &call)?;
        match &reply {
            Value::Array(parts) => match parts.as_slice() {
                [Value::Int(1), Value::BulkString(b)] => {
                    let arr: [u8; 8] = b.as_slice().try_into().map_err(|_| odd("increment", &reply))?;
                    Ok(i64::from_le_bytes(arr))
                }
                [Value::Int(0), Value::Int(len)] => Err(Error::NotACounter { len: *len as usize }),
                _ => Err(odd("increment", &reply)),
            },
            _ => Err(odd("increment", &reply)),
        }
    }

    fn list_keys(&self, bucket: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        self.check_open()?;
        if limit == 0 {
            return Ok(Vec::new());
        }
        let registry = self.layout.tags(bucket);
        let registry_slot = slot_of(registry.as_bytes());
        // Lexicographic bounds: strictly after `after`, or from the start.
        let lower: Vec<u8> = match after {
            Some(a) => [b"(".as_slice(), a.as_bytes()].concat(),
            None => b"-".to_vec(),
        };
        let per_tag = limit.min(i64::MAX as usize);
        let mut found: Vec<Vec<u8>> = Vec::new();
        let (mut queue, mut tags) = self.first_tags(&registry, registry_slot, after, &lower)?;
        loop {
            let full_chunk = tags.len() == LIST_TAG_CHUNK;
            let last = tags.last().cloned();
            let mut stop = false;
            for t in tags {
                // Keys of a tag sort at or after the tag: once `limit`
                // keys were found before it, it and later tags are out.
                if found.len() >= limit && found[limit - 1] < t {
                    stop = true;
                    break;
                }
                queue.push(t);
            }
            if !queue.is_empty() {
                found.extend(self.tag_pages(bucket, &queue, &lower, per_tag)?);
                found.sort_unstable();
                found.dedup();
                found.truncate(limit);
                queue.clear();
            }
            let Some(last) = last else { break };
            if stop || !full_chunk || (found.len() >= limit && found[limit - 1] <= last) {
                break;
            }
            let next = [b"(".as_slice(), &last].concat();
            tags = self.run(registry_slot, true, |c| {
                redis::cmd("ZRANGEBYLEX").arg(&registry).arg(&next).arg("+").arg("LIMIT").arg(0).arg(LIST_TAG_CHUNK).query(&mut c.redis)
            })?;
        }
        found.into_iter().map(|k| String::from_utf8(k).map_err(|_| Error::Backend("a listed key is not UTF-8".into()))).collect()
    }

    fn sweep(&self, older_than_ms: u64) -> Result<usize> {
        self.check_open()?;
        let older = older_than_ms.to_string();
        let buckets_key = self.layout.buckets();
        let buckets: Vec<String> = self.run(slot_of(buckets_key.as_bytes()), true, |c| redis::cmd("SMEMBERS").arg(&buckets_key).query(&mut c.redis))?;
        let mut dropped = 0usize;
        for bucket in &buckets {
            let registry = self.layout.tags(bucket);
            let mut lower = b"-".to_vec();
            loop {
                let tags: Vec<String> = self.run(slot_of(registry.as_bytes()), true, |c| {
                    redis::cmd("ZRANGEBYLEX").arg(&registry).arg(&lower).arg("+").arg("LIMIT").arg(0).arg(SWEEP_TAG_CHUNK).query(&mut c.redis)
                })?;
                for tag in &tags {
                    let markers = self.layout.markers_of_tag(bucket, tag);
                    let mut call = self.scripts.sweep.key(&markers);
                    call.key(self.layout.purge_floor_of_tag(tag)).arg(&older).arg(self.layout.record_prefix(bucket, tag)).arg(SWEEP_BATCH);
                    loop {
                        let (n, looked): (usize, usize) = self.write(slot_of(markers.as_bytes()), |c| call.invoke(&mut c.redis))?;
                        dropped += n;
                        if looked < SWEEP_BATCH {
                            break;
                        }
                    }
                }
                match tags.last() {
                    Some(last) if tags.len() == SWEEP_TAG_CHUNK => lower = format!("({last}").into_bytes(),
                    _ => break,
                }
            }
        }
        Ok(dropped)
    }

    /// The scripts keep every rule (the conformance suite runs against a
    /// real server): a reported swap is a swap.
    fn vouched(&self) -> bool {
        true
    }

    /// Every call is a round trip to the server.
    fn waits(&self) -> cairn_kv::Waits {
        cairn_kv::Waits::Always
    }

    fn describe(&self) -> Option<String> {
        let confirm = match self.confirm {
            Some((n, ms)) => format!("writes acknowledged after {n} replica(s) confirm them (WAIT, {ms} ms)"),
            None => "writes acknowledged on the primary alone".to_string(),
        };
        Some(match &*self.nodes {
            Nodes::One(pool, _) => format!("Redis at {}, namespace {}; {confirm}", pool.shown, self.layout.namespace()),
            Nodes::Cluster(c) => format!("{}; namespace {}; {confirm}", c.shape().summary(), self.layout.namespace()),
        })
    }

    fn close(&self) -> Result<()> {
        // Nothing is buffered on this side: every acknowledged write is on
        // the server already.
        match &*self.nodes {
            Nodes::One(pool, _) => pool.close(),
            Nodes::Cluster(c) => c.close(),
        }
        Ok(())
    }
}
