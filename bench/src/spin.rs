//! `cairn-bench spin`: the same `.wasm` files on a real Spin beside Cairn's
//! embedded host, in one run, and where a request's time goes on each.
//!
//! Spin is started by `scripts/spin-up.sh` (SQLite `default` and `cache`,
//! the bench's own signing key, budgets and quotas opened as the embedded
//! stack opens them) once per column of [`VARIANTS`]: as it ships, then
//! with each cost found taken away in turn (Nagle's algorithm on accepted
//! sockets, its store's `fsync`s, instance reuse, Cairn's commit check), so
//! each column's ratio to the one before is what that cost is. The embedded
//! host runs in this process ([`Stack`]). Rows, each at 1 and 32 clients:
//!
//! - `GET /healthz`: the trivial component;
//! - `GET /.well-known/oauth-protected-resource/mcp`: the router alone;
//! - an MCP `ping` (the router and the token check);
//! - `read_note_tab` (router, the composed tool, the store);
//! - edit pairs (`read_note_tab` + `edit_note_tab`, every acknowledged
//!   edit checked at the end, as `notes` does).
//!
//! The layers at one client are the differences of those p50s: the
//! router's instance and page, the token check, the tool and the store.

use crate::measure::{Series, load, summarize};
use crate::stack::{Client, Op, Stack, mcp_calls};
use anyhow::{Context, Result, bail};
use cairn_auth::Actor;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One way of running Spin, a column of the report.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Variant {
    /// The column's heading.
    pub name: &'static str,
    /// `--max-instance-reuse-count 1`: a fresh instance per request (as
    /// Spin serves every WASI 0.2 component); otherwise Spin's defaults
    /// (128 requests, 16 at once).
    pub fresh: bool,
    /// Accepted sockets get `TCP_NODELAY` (`bench/nodelay/nodelay.c`
    /// preloaded): what the one-line fix of
    /// `docs/upstream/spin-http-nodelay.md` is worth.
    pub nodelay: bool,
    /// The state dir (and so Spin's SQLite files) on tmpfs: Spin's store
    /// without the `fsync`s of its every write (rollback journal,
    /// `synchronous = FULL`).
    pub tmpfs: bool,
    /// `commit_check = off`: what Cairn's confirmation of every commit on a
    /// store it cannot vouch for costs (measurement only: on Spin's stores
    /// the check is what keeps acknowledged writes).
    pub unchecked: bool,
}

/// The columns, in order.
pub const VARIANTS: [Variant; 5] = [
    Variant { name: "Spin as shipped", fresh: false, nodelay: false, tmpfs: false, unchecked: false },
    Variant { name: "Spin + TCP_NODELAY", fresh: false, nodelay: true, tmpfs: false, unchecked: false },
    Variant { name: "Spin + TCP_NODELAY, store on tmpfs", fresh: false, nodelay: true, tmpfs: true, unchecked: false },
    Variant { name: "the same, a fresh instance each", fresh: true, nodelay: true, tmpfs: true, unchecked: false },
    Variant { name: "the same reused, commit check off", fresh: false, nodelay: true, tmpfs: true, unchecked: true },
];

/// Build the preload that sets `TCP_NODELAY` on accepted sockets; its path.
fn nodelay_preload(root: &Path) -> Result<PathBuf> {
    let out = std::env::temp_dir().join(format!("cairn-bench-nodelay-{}.so", std::process::id()));
    let status = Command::new("cc")
        .args(["-O2", "-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(root.join("bench/nodelay/nodelay.c"))
        .arg("-ldl")
        .status()
        .context("the Spin benchmark builds bench/nodelay/nodelay.c with `cc`")?;
    if !status.success() {
        bail!("cc could not build bench/nodelay/nodelay.c ({status})");
    }
    Ok(out)
}

/// `scripts/spin-up.sh` running in a process group of its own, with the
/// bench's tokens.
pub struct SpinUp {
    child: Child,
    log: Arc<Mutex<String>>,
    /// Where it listens.
    pub addr: SocketAddr,
    /// An agent's token (read and write).
    pub agent: String,
    /// A person's token.
    pub person: String,
    state: PathBuf,
}

impl SpinUp {
    /// Start Spin on Cairn's `spin.toml` in `root` and wait until it serves.
    pub fn start(root: &Path, variant: Variant, preload: &Path) -> Result<Self> {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        let base = if variant.tmpfs { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
        if !base.is_dir() {
            bail!("{} is not there: the column \"{}\" needs a tmpfs at /dev/shm", base.display(), variant.name);
        }
        let state = base.join(format!("cairn-bench-spin-{}-{}", std::process::id(), addr.port()));
        let _ = std::fs::remove_dir_all(&state);
        // The script keeps a key it finds; the tokens are minted with it.
        let key = cairn::local::signing_key(&state)?;
        let mut cmd = Command::new("bash");
        cmd.arg(root.join("scripts/spin-up.sh"))
            .args(["--listen", &addr.to_string(), "--state-dir"])
            .arg(&state)
            .env("SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE", "1000000000")
            .env("SPIN_VARIABLE_QUOTA_BYTES", "1000000000000")
            .env("SPIN_VARIABLE_QUOTA_NOTES", "100000000")
            .env("NO_COLOR", "1")
            .arg("--")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if variant.fresh {
            cmd.args(["--max-instance-reuse-count", "1"]);
        }
        if variant.nodelay {
            cmd.env("LD_PRELOAD", preload);
        }
        if variant.unchecked {
            cmd.env("SPIN_VARIABLE_COMMIT_CHECK", "off");
        }
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn().context("bash runs scripts/spin-up.sh")?;
        let log = Arc::new(Mutex::new(String::new()));
        for out in [Box::new(child.stdout.take().context("stdout")?) as Box<dyn std::io::Read + Send>, Box::new(child.stderr.take().context("stderr")?)] {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    let mut l = log.lock().expect("log lock");
                    l.push_str(&line);
                    l.push('\n');
                }
            });
        }
        let mut spin = Self { child, log, addr, agent: String::new(), person: String::new(), state };
        spin.wait_until_serving()?;
        spin.agent = crate::stack::mint_with(&key, addr, Actor::Agent, "bench-agent")?;
        spin.person = crate::stack::mint_with(&key, addr, Actor::Human, "bench-person")?;
        Ok(spin)
    }

    fn wait_until_serving(&mut self) -> Result<()> {
        let line = format!("Serving http://{}", self.addr);
        let deadline = Instant::now() + Duration::from_secs(600);
        while !self.log.lock().expect("log lock").contains(&line) {
            if let Some(status) = self.child.try_wait()? {
                bail!("spin-up.sh exited ({status}):\n{}", self.log.lock().expect("log lock"));
            }
            if Instant::now() > deadline {
                bail!("Spin did not serve within 600 s:\n{}", self.log.lock().expect("log lock"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    /// Create `n` notes approved for agents through REST, as a person; their ids.
    pub async fn create_notes(&self, n: usize) -> Result<Vec<String>> {
        let mut client = Client::connect(self.addr).await?;
        let mut ids = Vec::with_capacity(n);
        for i in 0..n {
            let (status, body) =
                client.send("POST", "/api/v1/notes", &self.person, &json!({"title": format!("note {i}"), "approved_for_agents": true})).await?;
            if status != 201 {
                bail!("POST /api/v1/notes on Spin answered {status}: {body}");
            }
            ids.push(body["note_id"].as_str().context("note_id")?.to_string());
        }
        Ok(ids)
    }
}

impl Drop for SpinUp {
    fn drop(&mut self) {
        // The script and the Spin it started (and Spin's trigger process).
        let _ = Command::new("kill").args(["-TERM", "--", &format!("-{}", self.child.id())]).status();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.state);
    }
}

/// An MCP `ping` from `clients` keep-alive connections for `duration`.
async fn pings(addr: SocketAddr, token: &str, clients: usize, duration: Duration) -> Result<Series> {
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let token = token.to_string();
        tasks.push(tokio::spawn(async move {
            let mut client = Client::connect(addr).await?;
            let mut lat = Vec::new();
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
            while Instant::now() < deadline {
                let t = Instant::now();
                let (status, v) = client.send("POST", "/mcp", &token, &body).await?;
                if status != 200 || v.get("result").is_none() {
                    bail!("ping answered {status}: {v}");
                }
                lat.push(t.elapsed());
            }
            anyhow::Ok(lat)
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    Ok(summarize("ping", all, started.elapsed()))
}

/// One host as the bench reaches it.
struct Target<'a> {
    addr: SocketAddr,
    agent: &'a str,
    notes: &'a [String],
}

/// The rows of the table, in order.
const ROWS: [&str; 5] = ["GET /healthz", "GET protected-resource metadata", "MCP ping", "read_note_tab", "edit pairs"];
const METADATA: &str = "/.well-known/oauth-protected-resource/mcp";

/// Row `row` on `t` at `clients`, after a short warm-up.
async fn measure(t: &Target<'_>, row: usize, clients: usize, duration: Duration) -> Result<Series> {
    let warm = Duration::from_millis(300);
    let run = |d| async move {
        match row {
            0 => load(t.addr, "/healthz", clients, d).await,
            1 => load(t.addr, METADATA, clients, d).await,
            2 => pings(t.addr, t.agent, clients, d).await,
            3 => mcp_calls(t.addr, t.agent, t.notes, clients, Op::Read, d, ROWS[3]).await,
            _ => mcp_calls(t.addr, t.agent, t.notes, clients, Op::ReadEdit(200), d, ROWS[4]).await,
        }
    };
    run(warm).await?;
    run(duration).await
}

/// Every row on the embedded host and on each variant of Spin, measured.
pub struct Report {
    /// The client counts, in order.
    pub clients: Vec<usize>,
    /// The Spin columns, in order.
    pub variants: Vec<Variant>,
    /// `series[column][clients index][row]`; column 0 is the embedded host.
    pub series: Vec<Vec<Vec<Series>>>,
}

/// Measure every row of `ROWS` at each of `clients` on the embedded host
/// (in this process, `manifest`) and on Spin run each way of `variants`
/// (the `spin.toml` of the project at `root`), `duration` a row.
pub async fn run(root: &Path, manifest: PathBuf, duration: Duration, clients: Vec<usize>, variants: &[Variant]) -> Result<Report> {
    let preload = nodelay_preload(root)?;
    let max_clients = clients.iter().copied().max().unwrap_or(1);
    let embedded = Stack::start(manifest).await?;
    let embedded_notes = embedded.seed_notes(max_clients)?;
    let mut series = vec![vec![Vec::new(); clients.len()]; variants.len() + 1];
    let host = Target { addr: embedded.running.addr, agent: &embedded.agent, notes: &embedded_notes };
    for (i, &c) in clients.iter().enumerate() {
        for row in 0..ROWS.len() {
            series[0][i].push(measure(&host, row, c, duration).await?);
        }
    }
    embedded.stop().await;
    for (v, variant) in variants.iter().enumerate() {
        let spin = tokio::task::block_in_place(|| SpinUp::start(root, *variant, &preload))?;
        let notes = spin.create_notes(max_clients).await?;
        let on_spin = Target { addr: spin.addr, agent: &spin.agent, notes: &notes };
        for (i, &c) in clients.iter().enumerate() {
            for row in 0..ROWS.len() {
                series[v + 1][i].push(measure(&on_spin, row, c, duration).await?);
            }
        }
    }
    let _ = std::fs::remove_file(preload);
    Ok(Report { clients, variants: variants.to_vec(), series })
}

/// `cairn-bench spin`.
pub async fn spin(manifest: PathBuf, seconds: u64, clients: Vec<usize>) -> Result<()> {
    let report = run(&std::env::current_dir()?, manifest, Duration::from_secs(seconds), clients, &VARIANTS).await?;
    report.print(seconds);
    Ok(())
}

impl Report {
    /// The table of every row, and where one request's time goes at one client.
    pub fn print(&self, seconds: u64) {
        let (clients, results) = (&self.clients, &self.series);
        println!("\n# The same .wasm files: Cairn's embedded host and a real Spin ({seconds} s a row; requests/s, p50 ms, embedded ÷ Spin)\n");
        let heads: Vec<&str> = self.variants.iter().map(|v| v.name).collect();
        println!("| workload | clients | embedded host | {} |", heads.join(" | "));
        println!("|---|---:|---:|{}", "---:|".repeat(heads.len()));
        let cell = |s: &Series| format!("{:.0} ({:.2})", s.rps, s.p50.as_secs_f64() * 1e3);
        for (i, &c) in clients.iter().enumerate() {
            for (row, name) in ROWS.iter().enumerate() {
                let host = &results[0][i][row];
                let spins: Vec<String> = results[1..].iter().map(|col| format!("{} {:.1}×", cell(&col[i][row]), host.rps / col[i][row].rps)).collect();
                println!("| {name} | {c} | {} | {} |", cell(host), spins.join(" | "));
            }
        }
        // Layers at one client: what each row adds to the one before it.
        let Some(i) = clients.iter().position(|&c| c == 1) else { return };
        println!("\n# Where one request's time goes at one client (p50 µs; each layer is its row less the row before)\n");
        println!("| layer | embedded host | {} |", heads.join(" | "));
        println!("|---|---:|{}", "---:|".repeat(heads.len()));
        let layers = ["HTTP and the trivial component", "the router's instance and a page", "the token check and MCP", "the composed tool and the store"];
        let us = |s: &Series| s.p50.as_secs_f64() * 1e6;
        for (l, name) in layers.iter().enumerate() {
            let d = |set: &Vec<Series>| if l == 0 { us(&set[0]) } else { us(&set[l]) - us(&set[l - 1]) };
            let cols: Vec<String> = results.iter().map(|col| format!("{:.0}", d(&col[i]))).collect();
            println!("| {name} | {} |", cols.join(" | "));
        }
    }
}
