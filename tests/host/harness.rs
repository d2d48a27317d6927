//! Start `cairn up` on a free port and talk HTTP/1.1 to it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh, empty directory under the system temp dir.
pub fn scratch(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("cairn-test-{}-{name}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst)));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Fail early, and clearly, when the components were not built.
pub fn require_built(wasm: &[&str]) {
    for w in wasm {
        let p = root().join("target/wasm32-wasip2/wasm").join(w);
        assert!(
            p.exists(),
            "{} is missing: build the components first (scripts/test.sh does, or `cargo run --release -- build` \
             and `cargo run --release -- build -f tests/fixtures/spin.toml`)",
            p.display()
        );
    }
}

/// A running `cairn up`.
pub struct Cairn {
    pub addr: SocketAddr,
    pub child: Child,
    pub log: Arc<Mutex<String>>,
    pub state_dir: PathBuf,
    /// The audience tokens must carry when set for the host (`SPIN_VARIABLE_AUDIENCE`).
    pub audience: Option<String>,
}

/// How to start one.
pub struct Start<'a> {
    pub manifest: PathBuf,
    pub state_dir: Option<PathBuf>,
    /// Compile cache; by default one shared by every test run.
    pub cache_dir: Option<PathBuf>,
    pub args: Vec<&'a str>,
    pub env: Vec<(&'a str, &'a str)>,
}

impl Default for Start<'_> {
    fn default() -> Self {
        Self { manifest: root().join("spin.toml"), state_dir: None, cache_dir: None, args: vec![], env: vec![] }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Cairn {
    /// Start and wait until it serves (or panic with its log).
    pub fn start(opts: Start) -> Cairn {
        Self::try_start(opts).unwrap_or_else(|log| panic!("cairn did not start:\n{log}"))
    }

    /// Start; `Err(log)` when it exits before serving.
    pub fn try_start(opts: Start) -> Result<Cairn, String> {
        let state_dir = opts.state_dir.unwrap_or_else(|| scratch("state"));
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cairn"));
        cmd.arg("up")
            .arg("-f")
            .arg(&opts.manifest)
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--state-dir")
            .arg(&state_dir)
            .arg("--cache-dir")
            .arg(opts.cache_dir.clone().unwrap_or_else(|| root().join("target/test-cache")))
            .args(&opts.args)
            .env("NO_COLOR", "1")
            .env_remove("RUST_BACKTRACE")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in &opts.env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("cannot start the cairn binary");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    let mut l = log.lock().unwrap();
                    l.push_str(&strip_ansi(&line));
                    l.push('\n');
                }
            });
        }
        let audience = opts.env.iter().find(|(k, _)| *k == "SPIN_VARIABLE_AUDIENCE").map(|(_, v)| v.to_string());
        // Generous: the first tests of a run start on a cold compile cache and
        // compile every component at once, on a machine that may be busy.
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            if log.lock().unwrap().contains("cairn is serving") {
                return Ok(Cairn { addr, child, log, state_dir, audience });
            }
            if let Ok(Some(_)) = child.try_wait() {
                std::thread::sleep(Duration::from_millis(100));
                return Err(log.lock().unwrap().clone());
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                return Err(format!("timed out; log so far:\n{}", log.lock().unwrap()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The log so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Send a request.
    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        request(self.addr, method, path, headers, body)
    }

    /// GET a path.
    pub fn get(&self, path: &str) -> Reply {
        self.request("GET", path, &[], b"")
    }

    /// Wait up to 5 s for the log to contain `needle`; returns the log.
    pub fn wait_for_log(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let log = self.log();
            if log.contains(needle) || Instant::now() > deadline {
                return log;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kill the process (SIGKILL: no shutdown, no flush) and wait for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether the process is still running.
    pub fn child_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Send SIGTERM and wait for the exit status.
    pub fn terminate(mut self) -> (std::process::ExitStatus, String) {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let status = self.child.wait().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let log = self.log();
        (status, log)
    }
}

impl Drop for Cairn {
    /// Stops the host; when the test failed, prints what it logged at
    /// `WARN` and `ERROR` (the cause of a 500 is there).
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = self.log();
            let bad: Vec<&str> = log.lines().filter(|l| l.contains(" WARN ") || l.contains(" ERROR ")).take(40).collect();
            eprintln!("host {} logged:\n{}", self.addr, bad.join("\n"));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// An HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// The body as JSON (panics with the body when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
    /// A header value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`).
pub fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    try_request(addr, method, path, headers, body).unwrap_or_else(|e| panic!("{method} {path} on {addr}: {e}"))
}

/// [`request`], with a connection that fails (a killed host) as an error.
pub fn try_request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> std::io::Result<Reply> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    // A large body waits for the server's go-ahead, as curl's does: a server
    // that refuses it on its declared size answers before it is sent.
    let expect = body.len() > EXPECT_CONTINUE_OVER;
    if expect {
        head.push_str("expect: 100-continue\r\n");
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    let mut raw = Vec::new();
    if expect {
        let interim = read_head(&mut s)?;
        if !interim.starts_with(b"HTTP/1.1 100") {
            raw = interim;
            let _ = s.read_to_end(&mut raw);
            return Ok(parse(&raw));
        }
    }
    s.write_all(body)?;
    s.read_to_end(&mut raw)?;
    if !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the connection closed before a response"));
    }
    Ok(parse(&raw))
}

/// Bodies larger than this are sent with `Expect: 100-continue`.
const EXPECT_CONTINUE_OVER: usize = 64 * 1024;

/// Reads one response head (through its blank line), byte by byte.
fn read_head(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut byte = [0u8; 1];
    while !out.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte)? == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the connection closed before a response"));
        }
        out.push(byte[0]);
    }
    Ok(out)
}

fn parse(raw: &[u8]) -> Reply {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("no end of headers in the response");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string())).collect();
    let rest = &raw[split + 4..];
    let chunked = headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(rest) } else { rest.to_vec() };
    Reply { status, headers, body }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = data.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&data[..eol]).split(';').next().unwrap().trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = eol + 2;
        out.extend_from_slice(&data[start..start + size]);
        data = &data[start + size + 2..];
    }
    out
}

/// Count the lines of `log` containing every one of `needles`.
pub fn count_lines(log: &str, needles: &[&str]) -> usize {
    log.lines().filter(|l| needles.iter().all(|n| l.contains(n))).count()
}

/// The fixture manifest.
pub fn fixtures() -> PathBuf {
    root().join("tests/fixtures/spin.toml")
}

/// Path helper for messages.
pub fn show(p: &Path) -> String {
    p.display().to_string()
}
