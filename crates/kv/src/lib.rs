//! Cairn's key-value contract: the promise every store keeps, the in-memory
//! store, and the conformance suite that holds every backend to it.
//!
//! - [`Store`]: the trait; its documentation is the numbered promise (the
//!   same text as `wit/deps/keyvalue/atomics.wit`). Backends are sibling
//!   crates (`cairn-kv-sqlite`, `cairn-kv-redis`); components reach a host's
//!   store through `wasi:keyvalue` and see it as a [`Store`] too.
//! - [`Waits`]: which of a store's calls may wait on a disk, on other
//!   writers or on a server ([`Store::waits`]), so a host runs those off the
//!   threads that serve requests.
//! - [`backend`]: how a host opens a store from a runtime config table
//!   ([`Backend`]: the table's `type`, its config, `open`); each backend
//!   crate exports its maker, and a host only lists them.
//! - [`memory`]: an in-memory store (tests, benchmarks, `cairn up --store
//!   memory`), and its maker [`memory::Memory`] (`type = "memory"`).
//! - [`conformance`]: the named checks every backend must pass, as a
//!   catalogue (`kv-probe` runs the sequential ones from inside a component)
//!   and as [`conformance_tests!`] for a backend's test suite.
//! - [`faults`]: wrappers around a real store that break it on purpose, for
//!   tests: lose swaps, lie about them, fail like a stopped server.
//!
//! Pure Rust with no platform dependencies: it compiles for `wasm32-wasip2`.

pub mod backend;
pub mod conformance;
pub mod faults;
pub mod memory;

pub use backend::{Backend, OpenContext, OpenError};

use std::fmt;

/// Longest key a store accepts, in bytes (Spin's documented limit).
pub const MAX_KEY_BYTES: usize = 256;
/// Largest value a store accepts, in bytes (Spin's documented limit: 1 MiB).
pub const MAX_VALUE_BYTES: usize = 1024 * 1024;

/// A store failure. None of these is a CAS conflict (see [`Swap::Failed`]).
///
/// After an [`Error::Unavailable`] the outcome of a write is unknown (the
/// request may have reached the server before the connection broke): the
/// caller must not report it as done, and may resend it only if the write is
/// conditional or idempotent, as every Cairn write is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The key is longer than [`MAX_KEY_BYTES`].
    KeyTooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// The value is larger than [`MAX_VALUE_BYTES`].
    ValueTooLarge {
        /// Its length in bytes.
        len: usize,
    },
    /// `increment` on a key that holds something other than an 8-byte counter.
    NotACounter {
        /// The length of what the key holds.
        len: usize,
    },
    /// The store cannot be reached right now (connection refused or lost,
    /// timeout): try again later.
    Unavailable(String),
    /// The store is out of space (disk full, memory limit): nothing was written.
    Full(String),
    /// The backend failed otherwise (corruption, closed, a bug).
    Backend(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::KeyTooLong { len } => {
                write!(f, "key is {len} bytes; keys may be at most {MAX_KEY_BYTES} bytes")
            }
            Error::ValueTooLarge { len } => {
                write!(f, "value is {len} bytes; values may be at most {MAX_VALUE_BYTES} bytes")
            }
            Error::NotACounter { len } => write!(f, "key holds a {len}-byte value, not an 8-byte counter written by increment"),
            Error::Unavailable(msg) => write!(f, "store unavailable: {msg}"),
            Error::Full(msg) => write!(f, "store full: {msg}"),
            Error::Backend(msg) => write!(f, "store backend failed: {msg}"),
        }
    }
}

impl std::error::Error for Error {}

/// Result of store operations.
pub type Result<T> = std::result::Result<T, Error>;

/// What a read saw of a key: the basis of a later [`Store::swap`].
///
/// The number is the backend's own token: a stamp (SQLite, memory, Redis)
/// or, for a store reached through `wasi:keyvalue`, the host's CAS handle.
/// Callers only carry it from a read to a swap of the same key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Observed {
    /// The key was present; the backend's stamp of its last write.
    Present(u64),
    /// The key was absent; the backend's sequence stood at this value.
    Absent(u64),
}

/// A value read together with what the read observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// The value, `None` when the key was absent.
    pub value: Option<Vec<u8>>,
    /// What the read saw, for a later swap.
    pub observed: Observed,
}

/// Outcome of [`Store::swap`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Swap {
    /// The value was written.
    Done,
    /// The key was written since the read; nothing was written now. Carries a
    /// fresh read of the key.
    Failed(Read),
}

/// Which calls of a [`Store`] may wait ([`Store::waits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waits {
    /// None: every call is answered from memory.
    Never,
    /// Writes wait for their commit (and for the writers ahead of them);
    /// reads are answered at once.
    Writes,
    /// Every call waits for an answer from elsewhere (a server).
    Always,
}

impl Waits {
    /// Whether a call that writes (`write`) or only reads may wait.
    pub fn call(self, write: bool) -> bool {
        match self {
            Waits::Never => false,
            Waits::Writes => write,
            Waits::Always => true,
        }
    }
}

/// A key-value store that keeps the compare-and-swap promise.
///
/// 1. [`swap`](Store::swap) succeeds only if the key has not been written
///    (set, deleted, incremented or swapped) since the read that produced its
///    [`Observed`]. Stamps come from one sequence that is never reused, so a
///    delete and recreate with the same bytes still fails an older swap (no
///    ABA).
/// 2. On a key observed absent, `swap` succeeds only if the key is still
///    absent and was not written in between: of two creators, exactly one wins.
/// 3. A swap that does not happen returns [`Swap::Failed`] with a fresh read;
///    it never reports success.
/// 4. [`increment`](Store::increment) is atomic (8 little-endian bytes, as in Spin).
/// 5. [`set_many`](Store::set_many) and [`delete_many`](Store::delete_many)
///    are all or nothing.
///
/// Every method refuses keys over [`MAX_KEY_BYTES`] and values over
/// [`MAX_VALUE_BYTES`] before touching the store. Buckets are independent
/// namespaces (a Spin store label maps to one bucket). The
/// [`conformance`] suite checks each rule by name.
pub trait Store: Send + Sync {
    /// Read a key with what was observed, for a later swap.
    fn read(&self, bucket: &str, key: &str) -> Result<Read>;
    /// Write `value` if nothing wrote the key since `observed` was read.
    fn swap(&self, bucket: &str, key: &str, observed: Observed, value: &[u8]) -> Result<Swap>;
    /// Reads several keys, each with what was observed (for a later swap),
    /// in order: the same as [`read`](Store::read) of each, in one call
    /// where the backend can.
    fn read_many(&self, bucket: &str, keys: &[&str]) -> Result<Vec<Read>> {
        keys.iter().map(|k| self.read(bucket, k)).collect()
    }
    /// Several compare-and-swaps, each kept to rules 1–3 on its own (not all
    /// or nothing: some may be written and others fail), in order: the same
    /// as [`swap`](Store::swap) of each, in one call where the backend can.
    fn swap_each(&self, bucket: &str, swaps: &[(&str, Observed, &[u8])]) -> Result<Vec<Swap>> {
        swaps.iter().map(|(k, o, v)| self.swap(bucket, k, *o, v)).collect()
    }
    /// Write unconditionally.
    fn set(&self, bucket: &str, key: &str, value: &[u8]) -> Result<()> {
        self.set_many(bucket, &[(key, value)])
    }
    /// Write several keys in one transaction (all or nothing).
    fn set_many(&self, bucket: &str, pairs: &[(&str, &[u8])]) -> Result<()>;
    /// The values of several keys, in order (`None`: absent).
    fn get_many(&self, bucket: &str, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().map(|k| self.get(bucket, k)).collect()
    }
    /// Delete several keys in one transaction. Deleting an absent key succeeds.
    fn delete_many(&self, bucket: &str, keys: &[&str]) -> Result<()>;
    /// Delete one key. Deleting an absent key succeeds.
    fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        self.delete_many(bucket, &[key])
    }
    /// Add `delta` to the 8-byte little-endian counter under `key` (absent = 0).
    fn increment(&self, bucket: &str, key: &str, delta: i64) -> Result<i64>;
    /// Keys of a bucket in byte order, at most `limit`, strictly after `after`.
    fn list_keys(&self, bucket: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>>;
    /// Keys of a bucket longer than `prefix` that start with it, in byte
    /// order, at most `limit`, strictly after `after` (a whole key; `None`:
    /// from the start of the prefix). Backends whose listing walks the whole
    /// bucket (a host's store behind `wasi:keyvalue`) stop at the prefix's end.
    fn list_prefix(&self, bucket: &str, prefix: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        list_prefix_by_listing(self, bucket, prefix, after, limit)
    }
    /// Drop delete markers older than `older_than_ms` milliseconds; returns how
    /// many. Handles read before the oldest dropped marker then fail their swap
    /// (safe: a conflict, never a false success).
    fn sweep(&self, older_than_ms: u64) -> Result<usize>;
    /// Flush and close; later calls fail with [`Error::Backend`].
    fn close(&self) -> Result<()>;

    /// Whether this store keeps every rule above (it passes the conformance
    /// suite): writers may take a reported swap at its word. A store Cairn
    /// cannot vouch for answers `false` (the default), and Cairn's writers
    /// then confirm each commit by reading it back.
    fn vouched(&self) -> bool {
        false
    }

    /// Which calls may wait on something other than this thread's CPU (a
    /// commit shared with other writers, a disk, a round trip to a server).
    /// A host that serves many requests on a few threads runs those calls
    /// on threads made for waiting, so a waiting call holds up no other
    /// request, and concurrent writers can share one commit. Wrappers
    /// answer what the store they wrap answers.
    fn waits(&self) -> Waits {
        Waits::Never
    }

    /// One line an operator reads at start: where the store is and what it
    /// promises beyond the trait (a cluster's shape, when a write is
    /// acknowledged). `None` (the default) for a store with nothing to say.
    /// Wrappers answer what the store they wrap answers.
    fn describe(&self) -> Option<String> {
        None
    }

    /// The nodes the store talks to, each with its counters, for metrics:
    /// none (the default) for a store inside this process. Wrappers answer
    /// what the store they wrap answers.
    fn nodes(&self) -> Vec<NodeReport> {
        Vec::new()
    }

    /// Batches refused before sending because their keys spanned a
    /// cluster's slots (a caller's bug), with the store's namespace; `None`
    /// (the default) for a store that never refuses so. Wrappers answer what
    /// the store they wrap answers.
    fn cross_slot_refusals(&self) -> Option<(String, u64)> {
        None
    }

    /// The value under `key`, `None` when absent.
    fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.read(bucket, key)?.value)
    }
    /// Whether `key` is present.
    fn exists(&self, bucket: &str, key: &str) -> Result<bool> {
        Ok(self.get(bucket, key)?.is_some())
    }
}

/// Check a key against the limits.
pub fn check_key(key: &str) -> Result<()> {
    if key.len() > MAX_KEY_BYTES {
        return Err(Error::KeyTooLong { len: key.len() });
    }
    Ok(())
}

/// Where a listing of `prefix` strictly after `after` starts: `after` when
/// it lies past the prefix, else the prefix itself.
pub fn prefix_start<'a>(prefix: &'a str, after: Option<&'a str>) -> &'a str {
    after.filter(|a| *a > prefix).unwrap_or(prefix)
}

/// [`Store::list_prefix`] by [`Store::list_keys`] from the prefix's start,
/// stopping at its end: the default, and a backend's way for a prefix it
/// cannot bound.
pub fn list_prefix_by_listing<S: Store + ?Sized>(s: &S, bucket: &str, prefix: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
    let keys = s.list_keys(bucket, Some(prefix_start(prefix, after)), limit)?;
    Ok(keys.into_iter().take_while(|k| k.starts_with(prefix)).collect())
}

/// A swap's outcome as a writer may take it. On a store Cairn cannot vouch
/// for (`vouched` false, [`Store::vouched`]), a swap reported failed whose
/// fresh read holds exactly the bytes it wrote is taken as written: the
/// record is what this writer made it (Spin's Redis store reports every swap
/// failed, landed or not). A writer whose bytes another writer could also
/// have written must not rely on this; one that puts something of its own in
/// them (an instant, a version) may.
pub fn landed(out: Swap, value: &[u8], vouched: bool) -> Swap {
    match out {
        Swap::Failed(fresh) if !vouched && fresh.value.as_deref() == Some(value) => Swap::Done,
        other => other,
    }
}

/// Check a value against the limits.
pub fn check_value(value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(Error::ValueTooLarge { len: value.len() });
    }
    Ok(())
}

/// A stored row as the stamp-keeping backends keep it: live value or delete marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamped {
    /// `None` for a delete marker.
    pub value: Option<Vec<u8>>,
    /// Stamp of the last write (set, swap, increment or delete).
    pub stamp: u64,
}

impl Stamped {
    /// What a read of this row (or of no row) observes.
    pub fn observe(row: Option<&Stamped>, seq: u64) -> Read {
        match row {
            Some(Stamped { value: Some(v), stamp }) => Read { value: Some(v.clone()), observed: Observed::Present(*stamp) },
            _ => Read { value: None, observed: Observed::Absent(seq) },
        }
    }

    /// The swap rule, shared by every stamp-keeping backend. `purge_floor` is
    /// the highest stamp of any delete marker swept so far.
    pub fn swap_allowed(row: Option<&Stamped>, observed: Observed, purge_floor: u64) -> bool {
        match (row, observed) {
            (Some(Stamped { value: Some(_), stamp }), Observed::Present(seen)) => *stamp == seen,
            (Some(Stamped { value: Some(_), .. }), Observed::Absent(_)) => false,
            (_, Observed::Present(_)) => false,
            (Some(Stamped { value: None, stamp }), Observed::Absent(seq)) => *stamp <= seq,
            (None, Observed::Absent(seq)) => seq >= purge_floor,
        }
    }
}

/// Decode an increment counter.
pub fn decode_counter(value: Option<&[u8]>) -> Result<i64> {
    match value {
        None => Ok(0),
        Some(bytes) => {
            let arr: [u8; 8] = bytes.try_into().map_err(|_| Error::NotACounter { len: bytes.len() })?;
            Ok(i64::from_le_bytes(arr))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_tells_writes_from_reads() {
        assert!(!Waits::Never.call(true) && !Waits::Never.call(false));
        assert!(Waits::Writes.call(true) && !Waits::Writes.call(false));
        assert!(Waits::Always.call(true) && Waits::Always.call(false));
    }

    #[test]
    fn the_memory_store_never_waits() {
        assert_eq!(memory::MemoryStore::new().waits(), Waits::Never);
    }
}

/// One node of a store served by several (a server or a cluster's
/// primaries): its calls by outcome, for metrics ([`Store::nodes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeReport {
    /// The store's namespace.
    pub namespace: String,
    /// `host:port`.
    pub addr: String,
    /// Slots it serves now (16384 for one server; 0 for a node that no
    /// longer serves any).
    pub slots: usize,
    /// Replicas that follow it (a cluster's view; 0 for one server, where
    /// the store does not track them).
    pub replicas: usize,
    /// Calls answered, failed, redirected, refused before running, and
    /// writes not confirmed by enough replicas.
    pub ok: u64,
    pub errors: u64,
    pub redirects: u64,
    pub refusals: u64,
    pub unconfirmed: u64,
}
