//! Hosts as separate `cairn up` processes (the built binary next to this
//! one), for benchmarks that need several: each on its own free port, all
//! sharing one state dir (signing key, identity secret, compile cache) and
//! one audience, as hosts behind one load balancer would.

use anyhow::{Context, Result, bail};
use cairn_auth::mint::{LocalKey, TokenSpec};
use cairn_auth::{Actor, Role};
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The audience every host of a group serves.
pub const AUDIENCE: &str = "http://cairn.bench/mcp";

/// One running host process.
pub struct Host {
    /// Where it listens.
    pub addr: SocketAddr,
    child: Child,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Host {
    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// The `cairn` binary built next to `cairn-bench` (or, from a test binary
/// in `deps/`, one directory up).
fn cairn_binary() -> Result<PathBuf> {
    let me = std::env::current_exe()?;
    let beside = me.with_file_name("cairn");
    let above = me.parent().and_then(|d| d.parent()).map(|d| d.join("cairn"));
    let Some(bin) = [Some(beside.clone()), above].into_iter().flatten().find(|b| b.exists()) else {
        bail!("{} is missing: build it first (cargo build --release)", beside.display());
    };
    // Once per process: a benchmark starts many hosts from the same binary.
    static FRESH: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    FRESH.get_or_init(|| check_fresh(&bin).map_err(|e| e.to_string())).clone().map_err(anyhow::Error::msg)?;
    Ok(bin)
}

/// Refuses a `cairn` built before the latest change to a host source
/// (`src/`, and `crates/<x>/src/` of each `cairn-<x>` the host depends
/// on): `cargo build -p cairn-bench` does not rebuild it, and a stale host
/// measures old code without a sign. Crates only components link (the MCP
/// layer) do not count: a change there leaves the binary as it is.
fn check_fresh(bin: &Path) -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().context("bench/ sits in the workspace")?;
    let built = bin.metadata()?.modified()?;
    let manifest = std::fs::read_to_string(root.join("Cargo.toml"))?;
    let package = manifest.split("\n[dependencies]").nth(1).and_then(|rest| rest.split("\n[").next()).unwrap_or_default();
    let mut dirs = vec![root.join("src")];
    for line in package.lines() {
        if let Some(name) = line.strip_prefix("cairn-").and_then(|l| l.split(['.', ' ', '=']).next()) {
            dirs.push(root.join("crates").join(name).join("src"));
        }
    }
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let (path, meta) = (entry.path(), entry.metadata()?);
            if meta.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && meta.modified()? > built {
                bail!("{} is older than {}: rebuild it first (cargo build --release --bin cairn)", bin.display(), path.display());
            }
        }
    }
    Ok(())
}

/// The compile cache every benchmark shares, across runs: beside the
/// `cairn-bench` binary (`target/release/cairn-bench-cache`). Artifacts are
/// named by the component's digest and the engine's compatibility hash, so
/// a rebuilt component or host compiles afresh and nothing stale loads; a
/// run no longer spends its first half minute compiling what the last run
/// compiled.
pub fn compile_cache() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|me| me.parent().map(|dir| dir.join("cairn-bench-cache")))
        .unwrap_or_else(|| std::env::temp_dir().join("cairn-bench-cache"))
}

/// Start a host with these `cairn up` arguments and environment; returns
/// once it serves.
pub fn start(manifest: &Path, state: &Path, args: &[String], env: &[(String, String)]) -> Result<Host> {
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse()?;
    let mut cmd = Command::new(cairn_binary()?);
    cmd.arg("up").arg("-f").arg(manifest).arg("--listen").arg(addr.to_string()).arg("--state-dir").arg(state).args(args);
    cmd.env("SPIN_VARIABLE_AUDIENCE", AUDIENCE)
        .env("SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE", "1000000000")
        .env("CAIRN_LOG", "warn")
        .env_remove("RUST_BACKTRACE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().context("cannot start cairn up")?;
    let stderr = child.stderr.take().context("no stderr")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut log = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            log.push_str(&line);
            log.push('\n');
            let _ = tx.send(log.clone());
        }
    });
    // The listener is bound before the components are compiled (a cold
    // compile cache takes a minute on two cores), so a connection that is
    // accepted proves nothing: the host serves once it answers HTTP.
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if answers_http(addr) {
            return Ok(Host { addr, child });
        }
        if let Ok(Some(status)) = child.try_wait() {
            let log = rx.try_iter().last().unwrap_or_default();
            bail!("cairn up exited ({status}):\n{log}");
        }
        if Instant::now() > deadline {
            let log = rx.try_iter().last().unwrap_or_default();
            bail!("cairn up did not serve within 300 s:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether an HTTP server answers at `addr` (any status): a request for
/// `/healthz`, answered within 5 s. (A probe given up while the host still
/// compiles stays in its listen queue and is answered later: waiting 5 s,
/// not 1, leaves a fifth as many behind, at most 60 over 300 s.)
fn answers_http(addr: SocketAddr) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else { return false };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!("GET /healthz HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    let mut head = [0u8; 8];
    s.write_all(request.as_bytes()).is_ok() && s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.")
}

/// A token for an agent of tenant `bench`, signed with the state dir's key.
pub fn token(state: &Path, sub: &str) -> Result<String> {
    token_of(state, sub, Actor::Agent)
}

/// A token for a person of tenant `bench` (people create notes and approve them for agents).
pub fn person_token(state: &Path, sub: &str) -> Result<String> {
    token_of(state, sub, Actor::Human)
}

fn token_of(state: &Path, sub: &str, actor: Actor) -> Result<String> {
    tenant_token(state, "bench", sub, actor)
}

/// A token for `sub` of `tenant`, signed with the shared state dir's key.
pub fn tenant_token(state: &Path, tenant: &str, sub: &str, actor: Actor) -> Result<String> {
    day_token(&cairn::local::signing_key(state)?, AUDIENCE, tenant, actor, sub)
}

/// A day's token (read and write) for `subject` of `tenant`, signed with
/// `key` for `audience` (the issuer is its origin, as `cairn up` sets it).
pub fn day_token(key: &LocalKey, audience: &str, tenant: &str, actor: Actor, subject: &str) -> Result<String> {
    Ok(key.sign(
        &TokenSpec {
            issuer: cairn::local::issuer_of(audience),
            audience: audience.into(),
            tenant: tenant.into(),
            subject: subject.into(),
            name: None,
            actor,
            role: Role::Member,
            scope: "notes:read notes:write".into(),
            now: cairn::local::now(),
            ttl: 86_400,
        }
        .claims(),
    ))
}
