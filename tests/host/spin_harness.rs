//! Cairn on a real Spin: `scripts/spin-up.sh` runs `spin up` on this
//! repository's `spin.toml` on a free loopback port, with a runtime config
//! (SQLite files in a scratch state dir, or a test's own `redis-server`) and
//! the variables `cairn up` fills by itself, signed with the tests' key
//! (`app::key`), so the tests mint tokens Spin's components accept.
//!
//! The binary is `$CAIRN_SPIN` when set, else the one in `../shared/spin/`,
//! unpacked once into `target/spin/spin`. Without either, every Spin test
//! prints why it did not run and passes ([`spin_or_skip!`]).
//!
//! A started Spin is a [`Cairn`] (the harness's process and log), so every
//! client helper of `app.rs` works against it; it is killed when dropped.
//! Spin logs, at trace level, which component executed each request: the
//! routing tests read that ([`Spin::served_by`]).

use crate::app::{Who, key};
use crate::harness::*;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The operator token of the kv-probe on every Spin started here.
pub const PROBE_TOKEN: &str = "operator-secret";
/// The identity secret shared by every Spin started here (tools deployed apart).
pub const IDENTITY_SECRET: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// The `spin` binary, or why there is none.
pub fn binary() -> Result<PathBuf, String> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("CAIRN_SPIN") {
            return Ok(PathBuf::from(p));
        }
        let unpack = root().join("../shared/spin/unpack.sh");
        if !unpack.exists() {
            return Err(format!("no Spin here ({} is missing and CAIRN_SPIN is not set)", show(&unpack)));
        }
        let out = Command::new(&unpack).arg(root().join("target/spin/spin")).output().map_err(|e| format!("{}: {e}", show(&unpack)))?;
        if !out.status.success() {
            return Err(format!("{} failed: {}", show(&unpack), String::from_utf8_lossy(&out.stderr)));
        }
        Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    })
    .clone()
}

/// Returns from the test, saying why, when there is no Spin to run; else
/// waits for the test's turn ([`one_at_a_time`]), held to the end of the test.
#[macro_export]
macro_rules! spin_or_skip {
    () => {
        if let Err(why) = $crate::spin_harness::binary() {
            eprintln!("SKIPPED: this test runs Cairn on a real Spin: {why}");
            return;
        }
        let _turn = $crate::spin_harness::one_at_a_time();
    };
}

/// Where the stores live.
pub enum Stores<'a> {
    /// SQLite files in the state dir (Spin's `spin` type).
    Sqlite,
    /// One Redis server (Spin's `redis` type): `default` on db 0, `cache` on db 1.
    Redis(&'a crate::redis::Server),
    /// `default` on one Redis server, `cache` in a SQLite file of this Spin's own.
    RedisWithLocalCache(&'a crate::redis::Server),
}

/// How to start one.
pub struct SpinStart<'a> {
    pub stores: Stores<'a>,
    /// `spin up -c` ids (empty: every component).
    pub components: Vec<&'a str>,
    /// More `SPIN_VARIABLE_<NAME>` settings.
    pub env: Vec<(String, String)>,
    /// A state dir to reuse (a restart); by default a fresh one.
    pub state_dir: Option<PathBuf>,
}

impl Default for SpinStart<'_> {
    fn default() -> Self {
        SpinStart { stores: Stores::Sqlite, components: vec![], env: vec![], state_dir: None }
    }
}

/// A running `spin up`: the harness's [`Cairn`] (process, log, address)
/// and the origin it serves.
pub struct Spin {
    pub cairn: Cairn,
    /// `http://127.0.0.1:<port>`: the issuer of its own authorization server.
    pub origin: String,
}

/// Stops Spin: the whole process group, since `spin up` runs the HTTP
/// trigger as a child process of its own that outlives a killed parent. A
/// failed test also shows what Spin logged besides its trace lines.
impl Drop for Spin {
    fn drop(&mut self) {
        let group = format!("-{}", self.cairn.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        if std::thread::panicking() {
            let log = self.log();
            let kept: Vec<&str> = log.lines().filter(|l| !l.contains(" TRACE ")).collect();
            eprintln!("spin at {} logged:\n{}", self.origin, kept[kept.len().saturating_sub(60)..].join("\n"));
        }
    }
}

/// Spin tests run one at a time: each Spin is a process of its own on a
/// machine the rest of the suite shares, and a test that waits for a slot
/// costs less than several Spins starved at once.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static SLOT: Mutex<()> = Mutex::new(());
    SLOT.lock().unwrap_or_else(|e| e.into_inner())
}

impl std::ops::Deref for Spin {
    type Target = Cairn;
    fn deref(&self) -> &Cairn {
        &self.cairn
    }
}

fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

impl Spin {
    /// Starts Spin and waits until it serves (or panics with its log).
    pub fn start(opts: SpinStart) -> Spin {
        crate::app::require_app();
        require_built(&["health.wasm", "kv_probe.wasm", "authz.wasm", "ui.wasm"]);
        let spin = binary().expect("spin_or_skip! first");
        let state_dir = opts.state_dir.unwrap_or_else(|| scratch("spin"));
        let addr = free_addr();
        let mut cmd = Command::new("bash");
        cmd.arg(root().join("scripts/spin-up.sh"))
            .args(["--listen", &addr.to_string(), "--state-dir"])
            .arg(&state_dir)
            .env("CAIRN_SPIN", &spin)
            .env("SPIN_VARIABLE_SIGNING_KEY", key().to_hex())
            .env("SPIN_VARIABLE_IDENTITY_SECRET", IDENTITY_SECRET)
            .env("SPIN_VARIABLE_KV_PROBE_TOKEN", PROBE_TOKEN)
            // A call on Spin takes tens of ms and the rate counts a slow
            // call more than once: racing agents would be throttled.
            .env("SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE", "1000000")
            // Which component executed each request (`served_by`).
            .env("RUST_LOG", "spin_trigger_http=trace,warn")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        match &opts.stores {
            Stores::Sqlite => {}
            Stores::Redis(redis) => {
                cmd.args(["--redis", &redis.url()]);
            }
            Stores::RedisWithLocalCache(redis) => {
                cmd.args(["--redis", &redis.url(), "--cache", "sqlite"]);
            }
        }
        for (k, v) in &opts.env {
            cmd.env(format!("SPIN_VARIABLE_{}", k.to_ascii_uppercase()), v);
        }
        cmd.arg("--");
        for c in &opts.components {
            cmd.args(["-c", c]);
        }
        // A process group of its own, so that stopping it stops Spin's trigger process too.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn().expect("bash runs scripts/spin-up.sh");
        let log = Arc::new(Mutex::new(String::new()));
        for out in [Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>, Box::new(child.stderr.take().unwrap())] {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    let mut l = log.lock().unwrap();
                    l.push_str(&line);
                    l.push('\n');
                }
            });
        }
        let origin = format!("http://{addr}");
        let cairn = Cairn { addr, child, log, state_dir, audience: Some(format!("{origin}/mcp")) };
        let spin = Spin { cairn, origin };
        wait_until_serving(&spin.cairn, &spin.origin);
        spin
    }

    /// A token of the tests' key for `who`, as this Spin's own
    /// authorization server would issue it (its issuer and audience).
    pub fn token(&self, who: &Who) -> String {
        key().sign(&who.spec(&self.origin, &self.audience()).claims())
    }

    /// Creates a note through REST as `who`; its id.
    pub fn create_note(&self, who: &Who, title: &str) -> String {
        let r = self.rest(&self.token(who), "POST", "/api/v1/notes", Some(&serde_json::json!({"title": title, "approved_for_agents": true})));
        assert_eq!(r.status, 201, "create {title}: {}", r.text());
        r.json()["note_id"].as_str().unwrap().to_string()
    }

    /// The components Spin's trace log says executed requests for `path`
    /// (the query left out), in order.
    pub fn served_by(&self, path: &str) -> Vec<String> {
        let needle = format!("url.path=\"{path}\"");
        self.log()
            .lines()
            .filter(|l| l.contains(&needle) && l.contains("Executing request using"))
            .filter_map(|l| l.rsplit("for component ").next().map(|c| c.trim().to_string()))
            .collect()
    }

    /// Whether Spin's log shows a panic in the host (a store that broke).
    pub fn host_panicked(&self) -> bool {
        self.log().contains("panicked at")
    }
}

/// Waits for Spin's "Serving" line, up to 7 minutes (a cold Spin compiles
/// every component first); panics with the log if it exits or times out.
fn wait_until_serving(cairn: &Cairn, origin: &str) {
    let deadline = Instant::now() + Duration::from_secs(420);
    let line = format!("Serving {origin}");
    loop {
        if cairn.log().contains(&line) {
            return;
        }
        // `Cairn` is borrowed here; its child is polled through the log only.
        if Instant::now() > deadline {
            panic!("spin did not serve {origin} within 420 s; log:\n{}", cairn.log());
        }
        if cairn.log().contains("Error: ") {
            std::thread::sleep(Duration::from_millis(200));
            panic!("spin did not start:\n{}", cairn.log());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
