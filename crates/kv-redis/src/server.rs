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

