//! A real `redis-server` for tests and benchmarks: started on a free
//! loopback port in a scratch directory, killed when dropped. Needs
//! `redis-server` on `PATH` (Debian's package; Valkey's server linked as
//! `redis-server` works too) and panics, saying so, without it.

use crate::{Options, RedisStore};
use std::io::Read as _;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn scratch() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("cairn-redis-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst)));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("its address").port()
}

fn require_redis_server() {
    let found = std::env::var_os("PATH").map(|p| std::env::split_paths(&p).any(|d| d.join("redis-server").is_file())).unwrap_or(false);
    assert!(
        found,
        "redis-server is not on PATH: these tests run against a real server; install it \
         (Debian/Ubuntu: `apt-get install redis-server`; scripts/test.sh does) and run them again"
    );
}

/// A running `redis-server`; dropping it kills the server and removes its directory.
pub struct Server {
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: PathBuf,
    extra: Vec<String>,
    child: Option<Child>,
}

impl Server {
    /// A new server on a free port.
    pub fn start() -> Server {
        Self::start_with(&[])
    }

    /// A new server on a free port with an append-only file written on
    /// every write (`appendfsync always`): stopped and restarted, it comes
    /// back with everything it acknowledged.
    pub fn start_durable() -> Server {
        Self::start_with(&["--appendonly", "yes", "--appendfsync", "always"])
    }

    /// A new server on a free port, with more `redis-server` arguments.
    pub fn start_with(extra: &[&str]) -> Server {
        require_redis_server();
        for _ in 0..5 {
            let extra = extra.iter().map(|s| s.to_string()).collect();
            let mut s = Server { port: free_port(), dir: scratch(), extra, child: None };
            if s.try_spawn() {
                return s;
            }
        }
        panic!("redis-server did not start on any of 5 free ports");
    }

    fn try_spawn(&mut self) -> bool {
        let log = self.dir.join("redis.log");
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--daemonize", "no"])
            .args(["--enable-debug-command", "local"])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(&log)
            .args(&self.extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server could not be started");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                let mut text = String::new();
                let _ = std::fs::File::open(&log).and_then(|mut f| f.read_to_string(&mut text));
                self.child = None;
                if text.contains("Address already in use") {
                    return false;
                }
                panic!("redis-server exited with {status}:\n{text}");
            }
            if self.ping() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server on port {} did not answer PING within 10 s", self.port);
    }

    fn ping(&self) -> bool {
        if TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            return false;
        }
        let Ok(client) = redis::Client::open(self.url()) else { return false };
        let Ok(mut c) = client.get_connection_with_timeout(Duration::from_millis(200)) else { return false };
        redis::cmd("PING").query::<String>(&mut c).is_ok()
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// `redis://127.0.0.1:<port>/<db>`.
    pub fn url_db(&self, db: u32) -> String {
        format!("{}/{db}", self.url())
    }

    /// A plain connection for test set-up (`CONFIG SET`, `CLUSTER KEYSLOT`, …).
    pub fn admin(&self) -> redis::Connection {
        let c = redis::Client::open(self.url()).unwrap().get_connection_with_timeout(Duration::from_secs(2)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c
    }

    /// A store on this server with its own namespace.
    pub fn store(&self, namespace: &str) -> RedisStore {
        RedisStore::open(&self.url(), Options::with_namespace(namespace)).expect("a store on the test server")
    }

    /// Kill the server (SIGKILL: a crash, nothing saved).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether the server process is running (not killed).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Whether the server leaves a `PING` unanswered for 500 ms (held in
    /// `DEBUG SLEEP`, or otherwise stalled).
    pub fn is_asleep(&self) -> bool {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("a connection to a running server");
        s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        s.write_all(b"PING\r\n").unwrap();
        let mut answer = [0u8; 7];
        s.read_exact(&mut answer).is_err()
    }

    /// Start the server again on the same port and directory (with what its
    /// append-only file holds, if it writes one).
    pub fn restart(&mut self) {
        self.kill();
        assert!(self.try_spawn(), "port {} was taken while the server was down", self.port);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A real Redis Cluster on loopback: `primaries` primaries with `replicas`
/// replicas each, every node a [`Server`] started with `--cluster-enabled
/// yes`, joined by `redis-cli --cluster create`. Dropping it kills every
/// node. Needs `redis-cli` beside `redis-server`.
pub struct Cluster {
    /// The nodes, primaries first (as `redis-cli --cluster create` assigns
    /// them: the first `primaries` nodes are the primaries).
    pub nodes: Vec<Server>,
    primaries: usize,
}

/// Run `redis-cli` with `args`; panics with its output if it fails.
pub fn redis_cli(args: &[&str]) -> String {
    let out = Command::new("redis-cli").args(args).stdin(Stdio::null()).output().expect("redis-cli could not be started (install redis-tools)");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "redis-cli {args:?} failed:\n{text}");
    text
}

impl Cluster {
    /// A cluster of `primaries` primaries and `replicas` replicas per
    /// primary, every slot covered, every replica in sync. A short node
    /// timeout (1 s) makes a failover take a few seconds.
    pub fn start(primaries: usize, replicas: usize) -> Cluster {
        Self::start_with(primaries, replicas, &[])
    }

    /// [`Cluster::start`] with more `redis-server` arguments for every node.
    pub fn start_with(primaries: usize, replicas: usize, extra: &[&str]) -> Cluster {
        assert!(primaries >= 1);
        let mut args = vec!["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000"];
        args.extend_from_slice(extra);
        let nodes: Vec<Server> = (0..primaries * (1 + replicas)).map(|_| Server::start_with(&args)).collect();
        let addrs: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let mut create: Vec<&str> = vec!["--cluster", "create"];
        create.extend(addrs.iter().map(String::as_str));
        let r = replicas.to_string();
        create.extend(["--cluster-replicas", &r, "--cluster-yes"]);
        if primaries < 3 {
            // redis-cli wants three primaries; fewer are made by hand below.
            return Self::assemble_small(nodes, primaries, replicas);
        }
        redis_cli(&create);
        let c = Cluster { nodes, primaries };
        c.wait_until_settled();
        c
    }

    /// One or two primaries (which `redis-cli --cluster create` refuses):
    /// slots assigned with `CLUSTER ADDSLOTSRANGE`, nodes joined with
    /// `CLUSTER MEET`, replicas attached with `CLUSTER REPLICATE`.
    fn assemble_small(nodes: Vec<Server>, primaries: usize, replicas: usize) -> Cluster {
        let per = crate::slot::SLOTS / primaries;
        for (i, n) in nodes.iter().take(primaries).enumerate() {
            let start = i * per;
            let end = if i + 1 == primaries { crate::slot::SLOTS - 1 } else { start + per - 1 };
            let _: () = redis::cmd("CLUSTER").arg("ADDSLOTSRANGE").arg(start).arg(end).query(&mut n.admin()).unwrap();
        }
        let first = nodes[0].port;
        for n in &nodes[1..] {
            let _: () = redis::cmd("CLUSTER").arg("MEET").arg("127.0.0.1").arg(first).query(&mut n.admin()).unwrap();
        }
        let c = Cluster { nodes, primaries };
        c.wait_for(|c| c.all_nodes_know(c.nodes.len()), "every node to know every other");
        for p in 0..primaries {
            let id = c.id(p);
            for r in 0..replicas {
                let n = &c.nodes[primaries + p * replicas + r];
                let _: () = redis::cmd("CLUSTER").arg("REPLICATE").arg(&id).query(&mut n.admin()).unwrap();
            }
        }
        c.wait_until_settled();
        c
    }

    fn wait_for(&self, mut ok: impl FnMut(&Self) -> bool, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ok(self) {
            assert!(Instant::now() < deadline, "the cluster did not settle within 30 s: waiting for {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn all_nodes_know(&self, n: usize) -> bool {
        self.nodes.iter().filter(|s| s.is_running()).all(|s| {
            redis::cmd("CLUSTER")
                .arg("NODES")
                .query::<String>(&mut s.admin())
                .map(|t| t.lines().filter(|l| !l.contains("handshake")).count() >= n)
                .unwrap_or(false)
        })
    }

    /// Wait until every running node reports `cluster_state:ok` and sees
    /// every slot served, and every running replica's link to its primary is up.
    pub fn wait_until_settled(&self) {
        self.wait_for(
            |c| {
                c.nodes.iter().filter(|s| s.is_running()).all(|s| {
                    let mut a = s.admin();
                    let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut a).unwrap_or_default();
                    let repl: String = redis::cmd("INFO").arg("replication").query(&mut a).unwrap_or_default();
                    let shape = redis::cmd("CLUSTER").arg("NODES").query::<String>(&mut a).ok().and_then(|t| crate::Shape::parse(&t).ok());
                    info.contains("cluster_state:ok")
                        && shape.is_some_and(|s| s.covered() == crate::slot::SLOTS)
                        && (repl.contains("role:master") || repl.contains("master_link_status:up"))
                })
            },
            "cluster_state:ok on every node and every replica in sync",
        );
    }

    /// The node id of node `i`.
    pub fn id(&self, i: usize) -> String {
        redis::cmd("CLUSTER").arg("MYID").query(&mut self.nodes[i].admin()).unwrap()
    }

    /// How many primaries the cluster was made with.
    pub fn primaries(&self) -> usize {
        self.primaries
    }

    /// `redis://127.0.0.1:<port>` of every node.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(Server::url).collect()
    }

    /// The shape as node `i` sees it.
    pub fn shape(&self, i: usize) -> crate::Shape {
        let text: String = redis::cmd("CLUSTER").arg("NODES").query(&mut self.nodes[i].admin()).unwrap();
        crate::Shape::parse(&text).unwrap()
    }

    /// The slots node `node` serves as a primary (as node 0 sees the
    /// cluster), lowest first; none when it is not a primary.
    pub fn slots_of(&self, node: usize) -> Vec<u16> {
        let port = format!(":{}", self.nodes[node].port);
        let shape = self.shape(0);
        let mut slots: Vec<u16> = shape.primaries.iter().filter(|p| p.addr.ends_with(&port)).flat_map(|p| p.ranges.iter().flat_map(|&(a, b)| a..=b)).collect();
        slots.sort_unstable();
        slots
    }

    /// A store on this cluster with its own namespace, writes confirmed by
    /// `wait_for_replicas` replicas.
    pub fn store(&self, namespace: &str, wait_for_replicas: u32) -> RedisStore {
        let urls = self.urls();
        let seeds: Vec<&str> = urls.iter().map(String::as_str).collect();
        let options = Options { wait_for_replicas, ..Options::with_namespace(namespace) };
        RedisStore::open_cluster(&seeds, options).expect("a store on the test cluster")
    }

    /// Move `slots` slots from the primaries at nodes `from` to the one at
    /// node `to` with `redis-cli --cluster reshard` (live: keys move with
    /// `MIGRATE` while clients keep working). Returns how long it took.
    pub fn reshard(&self, from: &[usize], to: usize, slots: usize) -> Duration {
        let started = Instant::now();
        let at = format!("127.0.0.1:{}", self.nodes[to].port);
        let f = from.iter().map(|&i| self.id(i)).collect::<Vec<_>>().join(",");
        let (t, n) = (self.id(to), slots.to_string());
        redis_cli(&["--cluster", "reshard", &at, "--cluster-from", &f, "--cluster-to", &t, "--cluster-slots", &n, "--cluster-yes"]);
        started.elapsed()
    }

    /// Make the replica of node `primary` lag for certain, for `seconds`:
    /// it is held in `DEBUG SLEEP` (seen asleep: it leaves a `PING` unanswered), and
    /// then the primary drops its replication link (`CLIENT KILL TYPE
    /// replica`), so what the primary runs from now reaches no replica
    /// until the sleep ends (what it sent before waits in the sleeping
    /// replica's socket). Returns the replica's index and the sleeper, which
    /// ends with the sleep; [`Cluster::wait_for_unreplicated_writes`] then
    /// waits until the primary has run writes the replica never got.
    pub fn stall_replication(&self, primary: usize, seconds: f64) -> (usize, std::thread::JoinHandle<()>) {
        let replica = self.replica_of(primary).expect("a replica of that primary");
        let mut lagging = self.nodes[replica].admin();
        let sleeper = std::thread::spawn(move || {
            let _ = redis::cmd("DEBUG").arg("SLEEP").arg(seconds).query::<()>(&mut lagging);
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.nodes[replica].is_asleep() {
            assert!(Instant::now() < deadline, "node {replica} did not fall asleep within 5 s");
        }
        let _: i64 = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("replica").query(&mut self.nodes[primary].admin()).unwrap();
        (replica, sleeper)
    }

    /// Wait (at most 10 s) until node `primary`'s replication offset passed
    /// what it was when this was called by `bytes`: writes it ran since.
    pub fn wait_for_unreplicated_writes(&self, primary: usize, bytes: u64) {
        let offset = || -> u64 {
            let info: String = redis::cmd("INFO").arg("replication").query(&mut self.nodes[primary].admin()).unwrap();
            info.lines().find_map(|l| l.trim().strip_prefix("master_repl_offset:")?.parse().ok()).expect("INFO replication names master_repl_offset")
        };
        let (from, deadline) = (offset(), Instant::now() + Duration::from_secs(10));
        while offset() < from + bytes {
            assert!(Instant::now() < deadline, "node {primary} ran fewer than {bytes} bytes of writes in 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait until node `node` is a primary (after a failover).
    pub fn wait_until_primary(&self, node: usize) -> Duration {
        let started = Instant::now();
        let port = self.nodes[node].port;
        while !self.shape(node).primaries.iter().any(|p| p.addr.ends_with(&format!(":{port}"))) {
            assert!(started.elapsed() < Duration::from_secs(30), "node {node} was not promoted within 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        started.elapsed()
    }

    /// Take slots `first..=last` away from node `node` (`CLUSTER
    /// DELSLOTSRANGE`): no primary serves them afterwards.
    pub fn drop_slots(&self, node: usize, first: u16, last: u16) {
        let _: () = redis::cmd("CLUSTER").arg("DELSLOTSRANGE").arg(first).arg(last).query(&mut self.nodes[node].admin()).unwrap();
    }

    /// The index of the node that is a replica of node `primary` now.
    pub fn replica_of(&self, primary: usize) -> Option<usize> {
        let id = self.id(primary);
        (0..self.nodes.len()).find(|&i| {
            i != primary
                && self.nodes[i].is_running()
                && redis::cmd("CLUSTER")
                    .arg("NODES")
                    .query::<String>(&mut self.nodes[i].admin())
                    .is_ok_and(|t| t.lines().any(|l| l.contains("myself") && l.split_whitespace().nth(3) == Some(id.as_str())))
        })
    }
}
