//! Redis Cluster: the cluster's shape, and routing each call to the primary
//! that serves its hash slot.
//!
//! # Shape
//!
//! [`Shape::parse`] reads `CLUSTER NODES` (the same text on Redis 7 and
//! Valkey): every node's address, role and slot ranges. The store opens only
//! on a cluster whose 16384 slots all have a primary, and prints that shape
//! ([`Shape::summary`]) through the store's `describe`, which the host logs at start.
//!
//! # Routing, and what is never sent twice
//!
//! Every call names the one slot all its keys are in (the store refuses to
//! send a script whose keys span slots: see [`crate::slot::one_slot`]) and
//! runs on a connection from the pool of the primary that the current shape
//! gives that slot. What the cluster answers decides what happens next:
//!
//! | answer | what it means | what the router does |
//! |---|---|---|
//! | `MOVED <slot> <addr>` | the slot lives elsewhere now; nothing ran | note the new owner, refresh the shape, send again there |
//! | `ASK <slot> <addr>` | the slot is being moved and this key is already gone; nothing ran | send once to `<addr>` behind `ASKING` |
//! | `TRYAGAIN` | a multi-key call during a move, keys split; nothing ran | wait 10 ms, send again |
//! | `CLUSTERDOWN`, `READONLY`, `MASTERDOWN`, `LOADING` | no primary serves the slot now (a failover); nothing ran | refresh the shape, wait 50 ms, send again |
//! | no connection could be made | nothing was sent | refresh the shape, wait 50 ms, send again |
//! | the connection broke or timed out after sending | the outcome is unknown | [`Error::Unavailable`], never sent again |
//!
//! Every one of those answers is a refusal before anything ran, so sending
//! again is safe for writes too; the only unknown outcome is a lost reply,
//! and that one is reported, not retried. All the retries of one call fit
//! in the store's I/O timeout, then the call is [`Error::Unavailable`].
//!
//! This is why the router is ours and not redis-rs's cluster client: that
//! client also resends a command after a dropped connection (its
//! `RetryMethod::Reconnect`), which for a compare-and-swap turns an unknown
//! outcome into a second attempt, and it sends `WAIT` to every primary
//! instead of on the connection that wrote. Connections, the protocol and
//! scripts are still redis-rs's.

use crate::address::Target;
use crate::pool::{Conn, Failure, Pool, classify};
use crate::slot::SLOTS;
use cairn_kv::Error;
use redis::{ConnectionAddr, RedisError, RedisResult};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

const NO_OWNER: u16 = u16::MAX;

/// One primary and what it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Primary {
    /// `host:port`.
    pub addr: String,
    /// The node id.
    pub id: String,
    /// Addresses of the replicas that follow it and are not failing.
    pub replicas: Vec<String>,
    /// How many slots it serves.
    pub slots: usize,
    /// Its slot ranges, as `CLUSTER NODES` lists them.
    pub ranges: Vec<(u16, u16)>,
}

/// A cluster's shape as one node sees it: the primaries and which serves
/// each slot.
#[derive(Debug, Clone)]
pub struct Shape {
    /// The primaries that serve at least one slot, in address order.
    pub primaries: Vec<Primary>,
    /// slot → index into `primaries`, or [`NO_OWNER`].
    owner: Vec<u16>,
}

fn bad_nodes(why: impl std::fmt::Display) -> String {
    format!("unexpected CLUSTER NODES reply: {why}")
}

impl Shape {
    /// Reads the text of `CLUSTER NODES` as the node at `host` answered it:
    /// a node that never met another does not know its own IP and lists
    /// itself as `:port`, which is `host:port`.
    pub fn parse_at(text: &str, host: &str) -> Result<Shape, String> {
        let mut shape = Self::parse(text)?;
        for p in &mut shape.primaries {
            if p.addr.starts_with(':') {
                p.addr = format!("{host}{}", p.addr);
            }
        }
        Ok(shape)
    }

    /// Reads the text of `CLUSTER NODES`.
    pub fn parse(text: &str) -> Result<Shape, String> {
        struct Line<'a> {
            id: &'a str,
            addr: String,
            primary_of: Option<&'a str>,
            failing: bool,
            ranges: Vec<(u16, u16)>,
        }
        let mut lines = Vec::new();
        for raw in text.lines().filter(|l| !l.trim().is_empty()) {
            let f: Vec<&str> = raw.split_whitespace().collect();
            if f.len() < 8 {
                return Err(bad_nodes(format!("a line has {} fields: {raw:?}", f.len())));
            }
            // `ip:port@cport[,hostname]`.
            let addr = f[1].split(['@', ',']).next().unwrap_or_default().to_string();
            let flags: Vec<&str> = f[2].split(',').collect();
            let primary_of = if flags.contains(&"slave") || flags.contains(&"replica") { Some(f[3]) } else { None };
            let failing = flags.iter().any(|x| matches!(*x, "fail" | "fail?" | "noaddr" | "handshake"));
            let mut ranges = Vec::new();
            for s in &f[8..] {
                // `[slot->-id]` / `[slot-<-id]`: a move in progress, not ownership.
                if s.starts_with('[') {
                    continue;
                }
                let (a, b) = s.split_once('-').unwrap_or((s, s));
                let (Ok(a), Ok(b)) = (a.parse::<u16>(), b.parse::<u16>()) else {
                    return Err(bad_nodes(format!("slot range {s:?}")));
                };
                if a > b || b as usize >= SLOTS {
                    return Err(bad_nodes(format!("slot range {s:?}")));
                }
                ranges.push((a, b));
            }
            lines.push(Line { id: f[0], addr, primary_of, failing, ranges });
        }
        let mut primaries: Vec<Primary> = lines
            .iter()
            .filter(|l| l.primary_of.is_none() && !l.ranges.is_empty())
            .map(|l| Primary {
                addr: l.addr.clone(),
                id: l.id.to_string(),
                replicas: lines.iter().filter(|r| r.primary_of == Some(l.id) && !r.failing).map(|r| r.addr.clone()).collect(),
                slots: l.ranges.iter().map(|(a, b)| (b - a) as usize + 1).sum(),
                ranges: l.ranges.clone(),
            })
            .collect();
        primaries.sort_by(|a, b| a.addr.cmp(&b.addr));
        let mut owner = vec![NO_OWNER; SLOTS];
        for (i, p) in primaries.iter().enumerate() {
            for &(a, b) in &p.ranges {
                for s in a..=b {
                    owner[s as usize] = i as u16;
                }
            }
        }
        Ok(Shape { primaries, owner })
    }

    /// The primary that serves `slot`.
    pub fn owner(&self, slot: u16) -> Option<&Primary> {
        self.primaries.get(*self.owner.get(slot as usize)? as usize)
    }

    /// How many slots have a primary.
    pub fn covered(&self) -> usize {
        self.owner.iter().filter(|&&o| o != NO_OWNER).count()
    }

    /// The slot ranges no primary serves.
    pub fn uncovered(&self) -> Vec<(u16, u16)> {
        let mut out: Vec<(u16, u16)> = Vec::new();
        for (s, &o) in self.owner.iter().enumerate() {
            if o != NO_OWNER {
                continue;
            }
            match out.last_mut() {
                Some((_, b)) if *b as usize + 1 == s => *b = s as u16,
                _ => out.push((s as u16, s as u16)),
            }
        }
        out
    }

    /// How many replicas follow the primaries, all together.
    pub fn replicas(&self) -> usize {
        self.primaries.iter().map(|p| p.replicas.len()).sum()
    }

    /// One line: primaries, replicas, slots covered, and each primary.
    pub fn summary(&self) -> String {
        let each: Vec<String> = self
            .primaries
            .iter()
            .map(|p| {
                let replicas = if p.replicas.is_empty() { "no replica".to_string() } else { format!("replicas {}", p.replicas.join(" ")) };
                format!("{} ({} slots, {replicas})", p.addr, p.slots)
            })
            .collect();
        format!(
            "Redis Cluster: {} primaries, {} replicas, {} of {SLOTS} slots covered: {}",
            self.primaries.len(),
            self.replicas(),
            self.covered(),
            each.join("; ")
        )
    }
}

/// Ranges as `a-b, c`.
pub fn ranges(r: &[(u16, u16)]) -> String {
    r.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect::<Vec<_>>().join(", ")
}

/// What one primary's pool was asked and how it went, since the store opened.
#[derive(Debug, Default)]
pub struct NodeCounters {
    /// Calls answered.
    pub ok: AtomicU64,
    /// Calls that failed on this node (after its redirections).
    pub errors: AtomicU64,
    /// `MOVED` and `ASK` answers.
    pub redirects: AtomicU64,
    /// `TRYAGAIN`, `CLUSTERDOWN` and the like: refused before running.
    pub refusals: AtomicU64,
    /// Writes done on the primary that too few replicas confirmed in time.
    pub unconfirmed: AtomicU64,
}

/// How the pools of a cluster connect.
#[derive(Clone)]
pub(crate) struct Dial {
    pub pool_size: usize,
    pub connect_timeout: Duration,
    pub io_timeout: Duration,
}

/// One node's pool and counters.
struct Node {
    pool: Pool,
    counters: Arc<NodeCounters>,
}

/// The router of one store on a cluster.
pub(crate) struct Cluster {
    seeds: Vec<Target>,
    dial: Dial,
    shape: RwLock<Arc<Shape>>,
    /// Bumped by every refresh; a caller refreshes only if nobody did since it read the shape.
    generation: AtomicU64,
    /// Every node a call went to: its pool and its counters, by `host:port`.
    nodes: Mutex<BTreeMap<String, Arc<Node>>>,
    refreshing: Mutex<Instant>,
    closed: AtomicBool,
}

/// How long a call keeps following redirections and waiting out a failover.
const MAX_HOPS: usize = 64;

enum Next {
    Now,
    After(Duration),
    Ask(String),
}

impl Cluster {
    /// Reads the shape from the first seed that answers.
    pub fn open(seeds: Vec<Target>, dial: Dial) -> Result<Cluster, Error> {
        let cluster = Cluster {
            seeds,
            dial,
            shape: RwLock::new(Arc::new(Shape { primaries: Vec::new(), owner: vec![NO_OWNER; SLOTS] })),
            generation: AtomicU64::new(0),
            nodes: Mutex::new(BTreeMap::new()),
            refreshing: Mutex::new(Instant::now() - Duration::from_secs(1)),
            closed: AtomicBool::new(false),
        };
        let shape = cluster.read_shape()?;
        *cluster.shape.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(shape);
        Ok(cluster)
    }

    /// The shape now.
    pub fn shape(&self) -> Arc<Shape> {
        self.shape.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The counters of every node a call went to.
    pub fn counters(&self) -> Vec<(String, Arc<NodeCounters>)> {
        self.nodes.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|(k, n)| (k.clone(), n.counters.clone())).collect()
    }

    /// The counters of the node at `addr`, if a call went there.
    pub fn counters_of(&self, addr: &str) -> Option<Arc<NodeCounters>> {
        self.nodes.lock().unwrap_or_else(|p| p.into_inner()).get(addr).map(|n| n.counters.clone())
    }

    /// The target for `addr` (`host:port`): the first seed's credentials, that address.
    fn target(&self, addr: &str) -> Result<Target, Error> {
        let (host, port) = addr
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.trim_start_matches('[').trim_end_matches(']').to_string(), p.parse::<u16>().ok()?)))
            .ok_or_else(|| Error::Backend(format!("Redis Cluster named a node address that is not host:port: {addr:?}")))?;
        let seed = &self.seeds[0];
        Ok(Target { info: seed.info.clone().set_addr(ConnectionAddr::Tcp(host, port)), shown: addr.to_string() })
    }

    /// The node at `addr`, made (pool and counters) the first time a call goes there.
    fn node(&self, addr: &str) -> Result<Arc<Node>, Error> {
        if self.is_closed() {
            return Err(Error::Backend("store is closed".into()));
        }
        let mut nodes = self.nodes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = nodes.get(addr) {
            return Ok(n.clone());
        }
        let target = self.target(addr)?;
        let client = redis::Client::open(target.info).map_err(|e| Error::Backend(format!("Redis node {addr}: {e}")))?;
        let d = &self.dial;
        let pool = Pool::new(client, target.shown, d.pool_size, d.connect_timeout, d.io_timeout);
        let node = Arc::new(Node { pool, counters: Arc::default() });
        nodes.insert(addr.to_string(), node.clone());
        Ok(node)
    }

    /// Ask the known nodes (the primaries, their replicas, then the seeds)
    /// for the shape, and take the first full answer.
    fn read_shape(&self) -> Result<Shape, Error> {
        let known = self.shape();
        let mut addrs: Vec<String> = Vec::new();
        for p in &known.primaries {
            addrs.push(p.addr.clone());
            addrs.extend(p.replicas.iter().cloned());
        }
        addrs.extend(self.seeds.iter().map(|s| s.shown.clone()));
        // Each node once, in that order.
        let mut seen = std::collections::HashSet::new();
        addrs.retain(|a| seen.insert(a.clone()));
        let mut last = None;
        let mut partial = None;
        for addr in &addrs {
            let node = match self.node(addr) {
                Ok(n) => n,
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            };
            let text = node.pool.with(true, |c| {
                c.redis.set_read_timeout(Some(self.dial.connect_timeout))?;
                let r = redis::cmd("CLUSTER").arg("NODES").query::<String>(&mut c.redis);
                c.redis.set_read_timeout(Some(self.dial.io_timeout))?;
                r
            });
            match text {
                Ok(text) => match Shape::parse_at(&text, addr.rsplit_once(':').map_or("", |(h, _)| h)) {
                    Ok(shape) if shape.covered() == SLOTS => return Ok(shape),
                    Ok(shape) => partial = Some(shape),
                    Err(e) => last = Some(Error::Backend(format!("Redis at {addr}: {e}"))),
                },
                Err(e) => last = Some(e),
            }
        }
        if let Some(shape) = partial {
            return Ok(shape);
        }
        Err(last.unwrap_or_else(|| Error::Unavailable("no Redis Cluster node to ask for the shape".into())))
    }

    /// Read the shape again, unless someone did since `seen` (or less than
    /// 20 ms ago: a failover makes every caller ask at once).
    fn refresh(&self, seen: u64) {
        let mut last = self.refreshing.lock().unwrap_or_else(|p| p.into_inner());
        if self.generation.load(Relaxed) != seen || last.elapsed() < Duration::from_millis(20) {
            return;
        }
        *last = Instant::now();
        if let Ok(shape) = self.read_shape() {
            *self.shape.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(shape);
            self.generation.fetch_add(1, Relaxed);
        }
    }

    /// Run `f` on the primary of `slot`, following the cluster's answers
    /// (see the module docs). `idempotent`: `f` only reads, so a pooled
    /// connection found dead is tried once more on a fresh one.
    pub fn run<T>(&self, slot: u16, idempotent: bool, mut f: impl FnMut(&mut Conn) -> RedisResult<T>) -> Result<T, Error> {
        let deadline = Instant::now() + self.dial.io_timeout;
        let mut ask: Option<String> = None;
        let mut last: Option<Error> = None;
        for _ in 0..MAX_HOPS {
            let seen = self.generation.load(Relaxed);
            let asking = ask.is_some();
            let addr = match ask.take() {
                Some(a) => a,
                None => match self.shape().owner(slot) {
                    Some(p) => p.addr.clone(),
                    None => {
                        last = Some(Error::Unavailable(format!("no Redis Cluster primary serves slot {slot} now")));
                        self.refresh(seen);
                        if !wait(deadline, Duration::from_millis(50)) {
                            break;
                        }
                        continue;
                    }
                },
            };
            let node = self.node(&addr)?;
            let counter = &node.counters;
            let result = node.pool.try_with(idempotent, |c| {
                if asking {
                    redis::cmd("ASKING").query::<()>(&mut c.redis)?;
                }
                f(c)
            });
            let failure = match result {
                Ok(v) => {
                    counter.ok.fetch_add(1, Relaxed);
                    return Ok(v);
                }
                Err(e) => e,
            };
            let next = match &failure {
                Failure::NotSent(e) => {
                    last = Some(e.clone());
                    self.refresh(seen);
                    Next::After(Duration::from_millis(50))
                }
                Failure::Sent(e) => {
                    let next = self.follow(e, &addr, counter, seen)?;
                    last = Some(classify(e, &addr));
                    next
                }
            };
            match next {
                Next::Now => {}
                Next::Ask(to) => ask = Some(to),
                Next::After(d) => {
                    if !wait(deadline, d) {
                        break;
                    }
                }
            }
            if Instant::now() >= deadline {
                break;
            }
        }
        Err(self.gave_up(slot, last))
    }

    /// The refusal of a call that found no owner of `slot` to serve it
    /// within the I/O timeout, counted as an error of the slot's owner now.
    fn gave_up(&self, slot: u16, last: Option<Error>) -> Error {
        let why = last.map(|e| e.to_string()).unwrap_or_default();
        if let Some(p) = self.shape().owner(slot)
            && let Ok(n) = self.node(&p.addr)
        {
            n.counters.errors.fetch_add(1, Relaxed);
        }
        Error::Unavailable(format!(
            "Redis Cluster did not serve slot {slot} within {:?} (nothing was written by the attempts refused): {why}",
            self.dial.io_timeout
        ))
    }

    /// What to do after `addr` answered `e`: follow a redirect (learning a
    /// `MOVED` owner at once), wait out a refusal the cluster will lift (a
    /// failover, a slot in migration), counted on the node's counters; `Err`
    /// for an answer that is final.
    fn follow(&self, e: &RedisError, addr: &str, counter: &NodeCounters, seen: u64) -> Result<Next, Error> {
        let Some(next) = next_after(e) else {
            counter.errors.fetch_add(1, Relaxed);
            return Err(classify(e, addr));
        };
        match &next {
            Next::Ask(_) => {
                counter.redirects.fetch_add(1, Relaxed);
            }
            Next::Now => {
                counter.redirects.fetch_add(1, Relaxed);
                if let Some((to, s)) = e.redirect_node() {
                    self.learn(s, to);
                }
                self.refresh(seen);
            }
            Next::After(_) => {
                counter.refusals.fetch_add(1, Relaxed);
                self.refresh(seen);
            }
        }
        Ok(next)
    }

    /// A `MOVED` named the new owner of `slot`: route there at once (the
    /// refresh that follows fills in the rest).
    fn learn(&self, slot: u16, addr: &str) {
        let mut guard = self.shape.write().unwrap_or_else(|p| p.into_inner());
        let mut shape = (**guard).clone();
        let index = match shape.primaries.iter().position(|p| p.addr == addr) {
            Some(i) => i,
            None => {
                shape.primaries.push(Primary { addr: addr.to_string(), id: String::new(), replicas: Vec::new(), slots: 0, ranges: Vec::new() });
                shape.primaries.len() - 1
            }
        };
        shape.owner[slot as usize] = index as u16;
        *guard = Arc::new(shape);
    }

    /// Drop every idle connection and refuse new work.
    pub fn close(&self) {
        self.closed.store(true, Relaxed);
        for n in self.nodes.lock().unwrap_or_else(|p| p.into_inner()).values() {
            n.pool.close();
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Relaxed)
    }
}

/// Sleep `d` if that ends before `deadline`.
fn wait(deadline: Instant, d: Duration) -> bool {
    if Instant::now() + d >= deadline {
        return false;
    }
    std::thread::sleep(d);
    true
}

/// What to do after an error the server sent whole: `None` when it is an
/// answer to report (the call ran, or was refused for good).
fn next_after(e: &RedisError) -> Option<Next> {
    match e.code()? {
        "MOVED" => Some(Next::Now),
        "ASK" => e.redirect_node().map(|(to, _)| Next::Ask(to.to_string())),
        "TRYAGAIN" => Some(Next::After(Duration::from_millis(10))),
        "CLUSTERDOWN" | "READONLY" | "MASTERDOWN" | "LOADING" => Some(Next::After(Duration::from_millis(50))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &str = "\
a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460
a2 127.0.0.1:7002@17002 master - 0 0 2 connected 5461-10922 [10923->-a3]
a3 127.0.0.1:7003@17003 master - 0 0 3 connected 10923-16383
r1 127.0.0.1:7004@17004 slave a1 0 0 1 connected
r2 127.0.0.1:7005@17005 slave,fail a2 0 0 2 disconnected
r3 127.0.0.1:7006@17006 slave a3 0 0 3 connected
";

    #[test]
    fn the_shape_names_owners_replicas_and_coverage() {
        let s = Shape::parse(NODES).unwrap();
        assert_eq!(s.primaries.len(), 3);
        assert_eq!(s.covered(), SLOTS);
        assert!(s.uncovered().is_empty());
        assert_eq!(s.owner(0).unwrap().addr, "127.0.0.1:7001");
        assert_eq!(s.owner(10923).unwrap().addr, "127.0.0.1:7003", "a migrating slot stays with its owner");
        assert_eq!(s.owner(16383).unwrap().replicas, vec!["127.0.0.1:7006"]);
        assert!(s.owner(6000).unwrap().replicas.is_empty(), "a failing replica does not count");
        assert_eq!(s.replicas(), 2);
        assert!(s.summary().contains("3 primaries, 2 replicas, 16384 of 16384 slots covered"), "{}", s.summary());
    }

    #[test]
    fn uncovered_slots_are_named_as_ranges() {
        let text = "a1 127.0.0.1:7001@17001 master - 0 0 1 connected 0-99 200\n";
        let s = Shape::parse(text).unwrap();
        assert_eq!(s.covered(), 101);
        assert_eq!(ranges(&s.uncovered()), "100-199, 201-16383");
    }

    #[test]
    fn a_malformed_reply_is_an_error_naming_it() {
        assert!(Shape::parse("a1 127.0.0.1:7001@17001 master\n").unwrap_err().contains("fields"));
        assert!(Shape::parse("a1 h:1@2 master - 0 0 1 connected 9-x\n").unwrap_err().contains("9-x"));
        assert!(Shape::parse("a1 h:1@2 master - 0 0 1 connected 20000\n").unwrap_err().contains("20000"));
    }
}
