//! A small pool of synchronous connections, with timeouts everywhere.
//!
//! - At most `size` connections are open at once; a caller that finds them
//!   all busy waits for one at most the I/O timeout, then gets
//!   [`Error::Unavailable`].
//! - A new connection gets the connect timeout (TCP connect and handshake),
//!   then the I/O timeout on every read and write.
//! - A connection goes back to the pool only after a full reply (a value or
//!   a server error reply). After anything else (timeout, reset, EOF, a
//!   reply it could not parse) it is dropped, since a late reply could still
//!   arrive on it, and the idle ones are dropped too: they most likely lead
//!   to the same dead server, and the next caller connects afresh.

use cairn_kv::Error;
use redis::{Client, Connection, ConnectionLike, ErrorKind, RedisError};
use std::collections::{HashMap, HashSet};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A connection and what it registered on its server.
pub(crate) struct Conn {
    pub redis: Connection,
    /// bucket → tags this connection has added to the registries. A
    /// connection talks to one server for its whole life, so what it
    /// registered is there (unless someone flushes the database).
    registered: HashMap<String, HashSet<String>>,
    registered_count: usize,
    /// Buckets this connection has added to the buckets set.
    buckets: HashSet<String>,
}

/// Forget the registrations of a connection past this many (memory bound).
const MAX_REGISTERED_PER_CONNECTION: usize = 100_000;

impl Conn {
    pub fn is_bucket_registered(&self, bucket: &str) -> bool {
        self.buckets.contains(bucket)
    }

    pub fn mark_bucket_registered(&mut self, bucket: &str) {
        self.buckets.insert(bucket.to_owned());
    }

    pub fn is_registered(&self, bucket: &str, tag: &str) -> bool {
        self.registered.get(bucket).is_some_and(|tags| tags.contains(tag))
    }

    pub fn mark_registered(&mut self, bucket: &str, tag: &str) {
        if self.registered_count >= MAX_REGISTERED_PER_CONNECTION {
            self.registered.clear();
            self.registered_count = 0;
            self.buckets.clear();
        }
        if self.registered.entry(bucket.to_owned()).or_default().insert(tag.to_owned()) {
            self.registered_count += 1;
        }
    }
}

/// Why [`Pool::try_with`] failed.
pub(crate) enum Failure {
    /// No connection could be had (the server refused or did not answer
    /// the connect, the pool stayed busy, the store is closed): nothing
    /// was sent.
    NotSent(Error),
    /// The server answered with an error, or the connection failed after
    /// the call was (or may have been) sent.
    Sent(RedisError),
}

struct State {
    idle: Vec<Conn>,
    /// Idle plus lent out.
    open: usize,
    closed: bool,
}

pub(crate) struct Pool {
    client: Client,
    /// `host:port[/db]`, for messages.
    pub shown: String,
    size: usize,
    connect_timeout: Duration,
    io_timeout: Duration,
    state: Mutex<State>,
    freed: Condvar,
}

/// Whether the connection is still in step with the server after `e`: only
/// when `e` is an error reply the server sent whole.
fn still_in_step(e: &RedisError) -> bool {
    matches!(e.kind(), ErrorKind::Server(_) | ErrorKind::Extension)
}

/// The server's error code: of the error, or of the first failed command of
/// a pipeline.
fn server_code(e: &RedisError) -> Option<String> {
    if let Some(code) = e.code() {
        return Some(code.to_string());
    }
    let errors = e.clone().into_server_errors()?;
    errors.first().map(|(_, err)| err.code().to_string())
}

/// A store error for a client error, naming the server.
pub(crate) fn classify(e: &RedisError, shown: &str) -> Error {
    if e.is_timeout() {
        return Error::Unavailable(format!("Redis at {shown} did not answer in time: {e}"));
    }
    if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
        return Error::Unavailable(format!("Redis at {shown} cannot be reached: {e}"));
    }
    match server_code(e).as_deref() {
        Some("OOM") => Error::Full(format!("Redis at {shown} is at its memory limit (maxmemory with noeviction); nothing was written: {e}")),
        Some("BUSY" | "LOADING" | "MASTERDOWN" | "TRYAGAIN" | "CLUSTERDOWN" | "READONLY") => {
            Error::Unavailable(format!("Redis at {shown} cannot serve this now: {e}"))
        }
        Some("CROSSSLOT") => Error::Backend(format!(
            "Redis at {shown} refused a batch whose keys are in different hash slots (a cluster keeps a \
             batch atomic only within one tenant or one top-level key segment): {e}"
        )),
        _ => Error::Backend(format!("Redis at {shown} failed: {e}")),
    }
}

impl Pool {
    pub fn new(client: Client, shown: String, size: usize, connect_timeout: Duration, io_timeout: Duration) -> Self {
        Self { client, shown, size, connect_timeout, io_timeout, state: Mutex::new(State { idle: Vec::new(), open: 0, closed: false }), freed: Condvar::new() }
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, Error> {
        self.state.lock().map_err(|_| Error::Backend("connection pool lock poisoned".into()))
    }

    /// A connection: an idle one (`true`), else a new one (`false`) while
    /// fewer than `size` are open, else wait for one up to the I/O timeout.
    fn acquire(&self) -> Result<(Conn, bool), Error> {
        let deadline = Instant::now() + self.io_timeout;
        let mut state = self.lock()?;
        loop {
            if state.closed {
                return Err(Error::Backend("store is closed".into()));
            }
            if let Some(conn) = state.idle.pop() {
                return Ok((conn, true));
            }
            if state.open < self.size {
                state.open += 1;
                drop(state);
                return match self.connect() {
                    Ok(conn) => Ok((conn, false)),
                    Err(e) => {
                        self.forget_one();
                        Err(classify(&e, &self.shown))
                    }
                };
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::Unavailable(format!("all {} connections to Redis at {} stayed busy for {:?}", self.size, self.shown, self.io_timeout)));
            }
            state = self.freed.wait_timeout(state, deadline - now).map_err(|_| Error::Backend("connection pool lock poisoned".into()))?.0;
        }
    }

    fn connect(&self) -> redis::RedisResult<Conn> {
        let redis = self.client.get_connection_with_timeout(self.connect_timeout)?;
        redis.set_read_timeout(Some(self.io_timeout))?;
        redis.set_write_timeout(Some(self.io_timeout))?;
        Ok(Conn { redis, registered: HashMap::new(), registered_count: 0, buckets: HashSet::new() })
    }

    /// One open connection fewer (dropped or never made).
    fn forget_one(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.open = state.open.saturating_sub(1);
        }
        self.freed.notify_one();
    }

    fn give_back(&self, conn: Conn) {
        let mut state = match self.state.lock() {
            Ok(s) => s,
            Err(_) => return,
        };
        if state.closed {
            state.open = state.open.saturating_sub(1);
        } else {
            state.idle.push(conn);
        }
        drop(state);
        self.freed.notify_one();
    }

    /// Drop every idle connection (after one of them failed, or on close).
    fn drop_idle(&self) {
        let dropped = match self.state.lock() {
            Ok(mut state) => {
                let idle = std::mem::take(&mut state.idle);
                state.open = state.open.saturating_sub(idle.len());
                idle
            }
            Err(_) => return,
        };
        drop(dropped);
        self.freed.notify_all();
    }

    /// Run `f` on a connection, classifying what went wrong for a caller
    /// that names the server ([`Failure`] says which).
    pub fn with<T>(&self, idempotent: bool, f: impl FnMut(&mut Conn) -> redis::RedisResult<T>) -> Result<T, Error> {
        self.try_with(idempotent, f).map_err(|e| match e {
            Failure::NotSent(e) => e,
            Failure::Sent(e) => classify(&e, &self.shown),
        })
    }

    /// Run `f` on a connection. `idempotent`: `f` only reads, so it is run
    /// once more on a fresh connection if an idle one turned out dead (a
    /// server restart leaves the pool full of those). Writes are never
    /// resent: after a lost reply their outcome is unknown, and the caller
    /// gets [`Error::Unavailable`].
    pub fn try_with<T>(&self, idempotent: bool, mut f: impl FnMut(&mut Conn) -> redis::RedisResult<T>) -> Result<T, Failure> {
        let (mut conn, reused) = self.acquire().map_err(Failure::NotSent)?;
        let first = match f(&mut conn) {
            Ok(v) => {
                self.give_back(conn);
                return Ok(v);
            }
            Err(e) => e,
        };
        if still_in_step(&first) && conn.redis.is_open() {
            self.give_back(conn);
            return Err(Failure::Sent(first));
        }
        drop(conn);
        self.forget_one();
        self.drop_idle();
        if !(idempotent && reused && !first.is_timeout() && first.is_connection_dropped()) {
            return Err(Failure::Sent(first));
        }
        let (mut conn, _) = self.acquire().map_err(Failure::NotSent)?;
        match f(&mut conn) {
            Ok(v) => {
                self.give_back(conn);
                Ok(v)
            }
            Err(e) => {
                if still_in_step(&e) && conn.redis.is_open() {
                    self.give_back(conn);
                } else {
                    drop(conn);
                    self.forget_one();
                    self.drop_idle();
                }
                Err(Failure::Sent(e))
            }
        }
    }

    /// Refuse new work and drop the idle connections; lent ones are dropped
    /// when they come back.
    pub fn close(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.closed = true;
        }
        self.drop_idle();
    }

    pub fn is_closed(&self) -> bool {
        self.state.lock().map(|s| s.closed).unwrap_or(true)
    }
}
