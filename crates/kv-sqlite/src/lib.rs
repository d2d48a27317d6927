//! `cairn-kv-sqlite`: the durable embedded store, one SQLite database in WAL
//! mode, keeping the promise of [`cairn_kv::Store`].
//!
//! SQLite because it is what Spin's own default key-value store uses, it is
//! embedded (no service to run), crash-safe in WAL mode, and one file is easy
//! to back up. With `synchronous = NORMAL` a committed transaction survives
//! the process being killed (the WAL is in the OS page cache); `cairn up
//! --fsync` switches to `FULL` so it also survives power loss, at a cost per
//! commit.
//!
//! - Writes go through `group`: concurrent writers share one transaction
//!   on the single writer connection (group commit), and each is answered
//!   only after that transaction committed.
//! - Reads run on the writer connection between its transactions, else on
//!   a bounded pool of reader connections (`readers`) beside the writer:
//!   WAL gives each read transaction the state of the last commit before it
//!   started. No connection maps the file (`mmap_size` stays 0): as the file
//!   grows every mapping connection would remap it, and each unmap flushes
//!   every core's TLB.
//!   A read of an absent key observes the last *committed* stamp, loaded
//!   before its snapshot starts, so a later swap fails if anything wrote the
//!   key after that snapshot (see `SqliteStore::reading`).
//! - Recently used committed values are also kept in memory (`cache`,
//!   8 MB): a read of a hot key (a note's head, its content) is answered
//!   without SQLite, whose reader connections drop their page cache at every
//!   commit. The cache is updated at each commit before any writer of it is
//!   answered, and a fill from a read never puts back an older version, so a
//!   hit is never stale (the module proves it).
//! - Keys and values live apart: `entries` (a `WITHOUT ROWID` table of
//!   bucket, key, stamp, delete time and the id of the value) and `vals`
//!   (each value under an integer id). SQLite's seek in a `WITHOUT ROWID`
//!   tree reads the whole record of every overflowing cell it compares
//!   with, so values kept beside their keys (the first layout, moved over
//!   by `migrate` on open) made a lookup among large values read whole
//!   neighbouring values: some 17 MB of reads for one 1 MB edit. Now a
//!   lookup compares keys only and reads just its own value.
//! - Checkpoints run on a thread of their own (`checkpoint`), never inside
//!   a commit: a writer never waits while the WAL is copied into the
//!   database.
//! - The host is the only process on the file: an advisory lock on the
//!   database file gives a second process a clear error instead of a silent
//!   split-brain.
//! - [`Sqlite`] ([`config`]) opens a store for a runtime config table of
//!   `type = "spin"` ([`SqliteConfig`]: its `path`, relative to the config
//!   file; by default a file in the host's state directory).

mod cache;
mod checkpoint;
pub mod config;
mod group;
mod readers;

use cache::{Seen, Written};
use cairn_kv::{Error, Observed, Read, Result, Stamped, Store, Swap, check_key, check_value, decode_counter};
use checkpoint::Checkpointer;
pub use config::{Sqlite, SqliteConfig};
use group::{Done, Group, Op, Writer};
use readers::Readers;
use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A store in one SQLite file.
pub struct SqliteStore {
    group: Arc<Group>,
    /// The WAL file beside the database.
    wal: PathBuf,
    /// Stopped on close.
    checkpointer: Checkpointer,
    /// The reader connections.
    readers: Readers,
    closed: AtomicBool,
    /// `synchronous = FULL`: every commit waits for the disk.
    fsync: bool,
}

/// SQLite's errors as store errors: a full disk is [`Error::Full`] (the
/// transaction rolled back, nothing was written), a locked file
/// [`Error::Unavailable`], anything else [`Error::Backend`].
fn backend(e: rusqlite::Error) -> Error {
    match &e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DiskFull => Error::Full(e.to_string()),
        rusqlite::Error::SqliteFailure(f, _) if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            Error::Unavailable(e.to_string())
        }
        _ => Error::Backend(e.to_string()),
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn closed() -> Error {
    Error::Backend("store is closed".into())
}

impl SqliteStore {
    /// Open (or create) the database at `path`. `fsync` selects
    /// `synchronous = FULL` instead of `NORMAL`. Refused when another
    /// process (or another open store in this one) has the file.
    pub fn open(path: &Path, fsync: bool) -> Result<Self> {
        Self::open_with_cache(path, fsync, cache::BUDGET)
    }

    /// [`open`](Self::open), keeping at most `cache_bytes` of committed
    /// rows in memory (see `cache`; 0 keeps none).
    pub fn open_with_cache(path: &Path, fsync: bool, cache_bytes: usize) -> Result<Self> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::Backend(format!("cannot open {}: {e}", path.display())))?;
        if let Err(e) = file.try_lock() {
            return Err(Error::Backend(match e {
                std::fs::TryLockError::WouldBlock => {
                    format!("{} is in use by another process (is another cairn running on this state dir?)", path.display())
                }
                std::fs::TryLockError::Error(e) => format!("cannot lock {}: {e}", path.display()),
            }));
        }
        let conn = Connection::open(path).map_err(backend)?;
        let sync = if fsync { "FULL" } else { "NORMAL" };
        let backstop = checkpoint::WRITER_CHECKPOINT_FRAMES;
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = {sync};
             PRAGMA busy_timeout = 5000;
             PRAGMA wal_autocheckpoint = {backstop};
             CREATE TABLE IF NOT EXISTS entries (
                 bucket TEXT NOT NULL,
                 key TEXT NOT NULL,
                 stamp INTEGER NOT NULL,
                 deleted_at INTEGER,
                 value_id INTEGER,
                 PRIMARY KEY (bucket, key)
             ) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS vals (id INTEGER PRIMARY KEY, value BLOB NOT NULL);
             CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
             INSERT OR IGNORE INTO meta VALUES ('purge_floor', 0);"
        ))
        .map_err(backend)?;
        migrate(&conn).map_err(|e| Error::Backend(format!("{}: cannot move the store to its current layout (nothing was changed): {e}", path.display())))?;
        let purge_floor: i64 = conn.query_row("SELECT value FROM meta WHERE name = 'purge_floor'", [], |r| r.get(0)).map_err(backend)?;
        let max_stamp: Option<i64> = conn.query_row("SELECT MAX(stamp) FROM entries", [], |r| r.get(0)).map_err(backend)?;
        let seq = (max_stamp.unwrap_or(0).max(purge_floor)) as u64;
        let file = Arc::new(file);
        let writer = Writer { conn: Some(conn), seq, purge_floor: purge_floor as u64, lock: Some(file.clone()) };
        let group = Arc::new(Group::new(writer, cache_bytes));
        let wal = PathBuf::from(format!("{}-wal", path.display()));
        let checkpointer = Checkpointer::start(path, &wal, file, group.clone())?;
        Ok(Self { group, wal, checkpointer, readers: Readers::new(path), closed: AtomicBool::new(false), fsync })
    }

    /// Runs `f` on a reader connection with the committed stamp, loaded
    /// before `f` starts its read transaction. Why that stamp is safe for an
    /// absent key: a write stamped at or below it committed before it was
    /// published, so before this read's snapshot, which therefore shows it;
    /// a write the snapshot does not show is stamped above it, and fails a
    /// later swap that carries it (`Stamped::swap_allowed`).
    fn reading<T>(&self, f: impl FnOnce(&Connection, u64) -> rusqlite::Result<T>) -> Result<T> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        let seq = self.group.committed();
        // Between transactions, the writer's connection has the warmest
        // cache, and what it sees is exactly what has committed.
        if let Some(writer) = self.group.idle() {
            return f(&writer, seq).map_err(backend);
        }
        let conn = self.readers.take()?;
        f(&conn, seq).map_err(backend)
    }

    /// Like [`reading`](Self::reading), in one read transaction (one
    /// snapshot for every key), ended however `f` ends.
    fn reading_all<T>(&self, f: impl FnOnce(&Connection, u64) -> rusqlite::Result<T>) -> Result<T> {
        self.reading(|c, seq| {
            c.execute_batch("BEGIN")?;
            let out = f(c, seq);
            let end = c.execute_batch("COMMIT");
            if end.is_err() {
                let _ = c.execute_batch("ROLLBACK");
            }
            let out = out?;
            end.map(|()| out)
        })
    }

    fn write(&self, op: Op) -> Result<Done> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        // What the write adds to the WAL: its values, and a page or so of
        // keys and tree for each write.
        let bytes = op.weight() + 4096;
        let done = self.group.submit(op)?;
        self.checkpointer.wrote(bytes);
        Ok(done)
    }

    /// The key's value and stamp if the cache has it (see [`cache`]).
    fn cached(&self, bucket: &str, key: &str) -> Result<Option<(u64, Vec<u8>)>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        Ok(self.group.cache.get(bucket, key))
    }

    /// Every key's value and stamp if the cache has them all.
    fn cached_all(&self, bucket: &str, keys: &[&str]) -> Result<Option<Vec<cache::Hit>>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        Ok(self.group.cache.get_all(bucket, keys))
    }

    /// The rows of `keys` in one snapshot, offered to the cache, with the
    /// committed stamp loaded before the snapshot.
    fn read_rows(&self, bucket: &str, keys: &[&str]) -> Result<(Vec<Option<Stamped>>, u64)> {
        let (rows, seq) = self.reading_all(|c, seq| Ok((keys.iter().map(|k| row(c, bucket, k)).collect::<rusqlite::Result<Vec<_>>>()?, seq)))?;
        for (k, r) in keys.iter().zip(&rows) {
            self.group.cache.fill(bucket, k, seen(r.as_ref()), seq, self.group.committed_stamp());
        }
        Ok((rows, seq))
    }
}

impl SqliteStore {
    /// Transactions committed since the store opened, and the writes they
    /// carried (more writes than transactions: group commit at work).
    pub fn commits(&self) -> (u64, u64) {
        self.group.commits()
    }

    /// Reader connections open now, and the most ever open at once.
    #[doc(hidden)]
    pub fn reader_connections(&self) -> (usize, usize) {
        self.readers.counts()
    }

    /// Bytes of values the cache of committed rows holds, and reads it
    /// answered and did not (see [`cache`]).
    #[doc(hidden)]
    pub fn cache_counts(&self) -> (usize, u64, u64) {
        self.group.cache.counts()
    }

    /// Checkpoints the checkpoint thread ran, and how many of them let the
    /// WAL start over.
    #[doc(hidden)]
    pub fn checkpoints(&self) -> (u64, u64) {
        self.checkpointer.counts()
    }

    /// Bytes of the WAL file now.
    #[doc(hidden)]
    pub fn wal_bytes(&self) -> u64 {
        std::fs::metadata(&self.wal).map(|m| m.len()).unwrap_or(0)
    }

    /// Caps the database at `pages` pages (`PRAGMA max_page_count`), so a
    /// test can fill it as a full disk would.
    #[doc(hidden)]
    pub fn limit_pages_for_tests(&self, pages: u32) -> Result<()> {
        self.group.exclusive(|w| {
            let c = w.conn.as_ref().ok_or_else(closed)?;
            c.query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(())).map_err(backend)
        })
    }
}

/// The key's row: its stamp and value (`None` for a delete marker), and
/// the id of that value, so a write that read the row need not seek it again.
fn entry(conn: &Connection, bucket: &str, key: &str) -> rusqlite::Result<Option<(Stamped, Option<i64>)>> {
    conn.prepare_cached(
        "SELECT v.value, e.stamp, e.value_id FROM entries e LEFT JOIN vals v ON v.id = e.value_id
         WHERE e.bucket = ?1 AND e.key = ?2",
    )?
    .query_row(params![bucket, key], |r| Ok((Stamped { value: r.get(0)?, stamp: r.get::<_, i64>(1)? as u64 }, r.get(2)?)))
    .optional()
}

/// The key's stamp and value (`None` for a delete marker).
fn row(conn: &Connection, bucket: &str, key: &str) -> rusqlite::Result<Option<Stamped>> {
    Ok(entry(conn, bucket, key)?.map(|(row, _)| row))
}

/// The key's stamp and the id of its value (`None` for a delete marker),
/// without reading the value: all a swap needs to decide.
fn stamp(conn: &Connection, bucket: &str, key: &str) -> rusqlite::Result<Option<(u64, Option<i64>)>> {
    conn.prepare_cached("SELECT stamp, value_id FROM entries WHERE bucket = ?1 AND key = ?2")?
        .query_row(params![bucket, key], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)))
        .optional()
}

/// What a read of `row` offers the cache.
fn seen(row: Option<&Stamped>) -> Seen<'_> {
    match row {
        Some(Stamped { value: Some(v), stamp }) => Seen::Live(*stamp, v),
        Some(Stamped { value: None, stamp }) => Seen::Deleted(*stamp),
        None => Seen::Nothing,
    }
}

/// Where the key's value is: `None` for no row, `Some(None)` for a delete marker.
fn value_id(conn: &Connection, bucket: &str, key: &str) -> rusqlite::Result<Option<Option<i64>>> {
    conn.prepare_cached("SELECT value_id FROM entries WHERE bucket = ?1 AND key = ?2")?.query_row(params![bucket, key], |r| r.get(0)).optional()
}

/// Writes `value` (or a delete marker) under the next stamp; `old` is the
/// id of the key's value now, as the caller read it in this transaction. An
/// overwrite replaces that value row in place; a delete marker frees it.
fn put(conn: &Connection, tx: &mut Tx, bucket: &str, key: &str, old: Option<i64>, value: Option<&[u8]>) -> rusqlite::Result<()> {
    tx.seq += 1;
    let seq = &mut tx.seq;
    let value_id = match (value, old) {
        (Some(v), Some(id)) => {
            conn.prepare_cached("UPDATE vals SET value = ?1 WHERE id = ?2")?.execute(params![v, id])?;
            Some(id)
        }
        (Some(v), None) => {
            conn.prepare_cached("INSERT INTO vals (value) VALUES (?1)")?.execute(params![v])?;
            Some(conn.last_insert_rowid())
        }
        (None, Some(id)) => {
            conn.prepare_cached("DELETE FROM vals WHERE id = ?1")?.execute(params![id])?;
            None
        }
        (None, None) => None,
    };
    let deleted_at = value.is_none().then(now_ms);
    conn.prepare_cached(
        "INSERT INTO entries (bucket, key, stamp, deleted_at, value_id) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (bucket, key) DO UPDATE SET stamp = excluded.stamp, deleted_at = excluded.deleted_at,
             value_id = excluded.value_id",
    )?
    .execute(params![bucket, key, *seq as i64, deleted_at, value_id])?;
    tx.wrote.push(Written::new(bucket, key, *seq, value));
    Ok(())
}

/// Moves a store written in the first layout (one `WITHOUT ROWID` table
/// `kv` holding values beside their keys) into `entries` and `vals`, in one
/// transaction: every key keeps its value, stamp and delete marker, and a
/// failure leaves the old table as it was.
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    let old: bool = conn.query_row("SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'kv')", [], |r| r.get(0))?;
    if !old {
        return Ok(());
    }
    conn.execute_batch(
        "BEGIN IMMEDIATE;
         CREATE TEMP TABLE numbered AS
             SELECT bucket, key, row_number() OVER (ORDER BY bucket, key) AS id FROM main.kv WHERE value IS NOT NULL;
         INSERT INTO vals (id, value) SELECT n.id, k.value FROM temp.numbered n JOIN main.kv k USING (bucket, key);
         INSERT INTO entries (bucket, key, stamp, deleted_at, value_id)
             SELECT k.bucket, k.key, k.stamp, k.deleted_at, n.id FROM main.kv k LEFT JOIN temp.numbered n USING (bucket, key);
         DROP TABLE temp.numbered;
         DROP TABLE main.kv;",
    )
    .and_then(|()| conn.execute_batch("COMMIT"))
    .inspect_err(|_| {
        let _ = conn.execute_batch("ROLLBACK");
    })
}

/// The state one transaction carries: the stamps it hands out, the purge
/// floor, and what it wrote (for the cache, once it commits).
pub(crate) struct Tx {
    pub seq: u64,
    pub floor: u64,
    pub wrote: Vec<Written>,
}

/// One compare-and-swap inside a transaction: `value` is written if nothing
/// wrote the key since `observed` (and no delete marker it could rely on was
/// purged), else the swap fails with what is there now. The decision needs
/// only the key's stamp; the value is read only for a failed swap's answer.
fn swap_in(c: &Connection, tx: &mut Tx, bucket: &str, key: &str, observed: Observed, value: &[u8]) -> Result<Swap> {
    let now = stamp(c, bucket, key).map_err(backend)?;
    // The rule looks at whether the row is live, never at its bytes.
    let current = now.map(|(stamp, id)| Stamped { value: id.map(|_| Vec::new()), stamp });
    if Stamped::swap_allowed(current.as_ref(), observed, tx.floor) {
        put(c, tx, bucket, key, now.and_then(|(_, id)| id), Some(value)).map_err(backend)?;
        Ok(Swap::Done)
    } else {
        let current = row(c, bucket, key).map_err(backend)?;
        Ok(Swap::Failed(Stamped::observe(current.as_ref(), tx.seq)))
    }
}

/// One write inside the writer's transaction (see [`group`]).
fn apply(c: &Connection, tx: &mut Tx, op: &Op) -> Result<Done> {
    match op {
        Op::Swaps { bucket, swaps } => Ok(Done::Swaps(swaps.iter().map(|(k, o, v)| swap_in(c, tx, bucket, k, *o, v)).collect::<Result<_>>()?)),
        Op::Set { bucket, pairs } => {
            for (k, v) in pairs {
                let old = value_id(c, bucket, k).map_err(backend)?.flatten();
                put(c, tx, bucket, k, old, Some(v)).map_err(backend)?;
            }
            Ok(Done::Unit)
        }
        Op::Delete { bucket, keys } => {
            for k in keys {
                if let Some(id) = value_id(c, bucket, k).map_err(backend)?.flatten() {
                    put(c, tx, bucket, k, Some(id), None).map_err(backend)?;
                }
            }
            Ok(Done::Unit)
        }
        Op::Increment { bucket, key, delta } => {
            let (current, old) = entry(c, bucket, key).map_err(backend)?.map_or((None, None), |(row, id)| (Some(row.value), id));
            let next = decode_counter(current.flatten().as_deref())?.wrapping_add(*delta);
            put(c, tx, bucket, key, old, Some(&next.to_le_bytes())).map_err(backend)?;
            Ok(Done::Counter(next))
        }
        Op::Sweep { older_than_ms } => {
            let cutoff = now_ms() - *older_than_ms as i64;
            let max: Option<i64> =
                c.query_row("SELECT MAX(stamp) FROM entries WHERE value_id IS NULL AND deleted_at <= ?1", [cutoff], |r| r.get(0)).map_err(backend)?;
            tx.floor = tx.floor.max(max.unwrap_or(0) as u64);
            c.execute("UPDATE meta SET value = ?1 WHERE name = 'purge_floor'", [tx.floor as i64]).map_err(backend)?;
            let n = c.execute("DELETE FROM entries WHERE value_id IS NULL AND deleted_at <= ?1", [cutoff]).map_err(backend)?;
            Ok(Done::Swept(n))
        }
    }
}

fn unexpected(d: Done) -> Error {
    Error::Backend(format!("the writer answered {d:?} to another kind of write"))
}

fn owned_keys(keys: &[&str]) -> Result<Vec<String>> {
    keys.iter().map(|k| check_key(k).map(|()| k.to_string())).collect()
}

impl Store for SqliteStore {
    fn read(&self, bucket: &str, key: &str) -> Result<Read> {
        check_key(key)?;
        if let Some((stamp, value)) = self.cached(bucket, key)? {
            return Ok(Read { value: Some(value), observed: Observed::Present(stamp) });
        }
        let (row, seq) = self.reading(|c, seq| Ok((row(c, bucket, key)?, seq)))?;
        self.group.cache.fill(bucket, key, seen(row.as_ref()), seq, self.group.committed_stamp());
        Ok(Stamped::observe(row.as_ref(), seq))
    }

    fn swap(&self, bucket: &str, key: &str, observed: Observed, value: &[u8]) -> Result<Swap> {
        let mut swaps = self.swap_each(bucket, &[(key, observed, value)])?;
        swaps.pop().ok_or_else(|| Error::Backend("the writer answered no swap".into()))
    }

    fn read_many(&self, bucket: &str, keys: &[&str]) -> Result<Vec<Read>> {
        for k in keys {
            check_key(k)?;
        }
        if let Some(rows) = self.cached_all(bucket, keys)? {
            return Ok(rows.into_iter().map(|(stamp, v)| Read { value: Some(v), observed: Observed::Present(stamp) }).collect());
        }
        let (rows, seq) = self.read_rows(bucket, keys)?;
        Ok(rows.iter().map(|r| Stamped::observe(r.as_ref(), seq)).collect())
    }

    /// One transaction for every swap, each checked against its own read.
    fn swap_each(&self, bucket: &str, swaps: &[(&str, Observed, &[u8])]) -> Result<Vec<Swap>> {
        for (k, _, v) in swaps {
            check_key(k)?;
            check_value(v)?;
        }
        let swaps = swaps.iter().map(|(k, o, v)| (k.to_string(), *o, v.to_vec())).collect();
        match self.write(Op::Swaps { bucket: bucket.to_string(), swaps })? {
            Done::Swaps(s) => Ok(s),
            d => Err(unexpected(d)),
        }
    }

    fn get_many(&self, bucket: &str, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>> {
        for k in keys {
            check_key(k)?;
        }
        if let Some(rows) = self.cached_all(bucket, keys)? {
            return Ok(rows.into_iter().map(|(_, v)| Some(v)).collect());
        }
        Ok(self.read_rows(bucket, keys)?.0.into_iter().map(|r| r.and_then(|r| r.value)).collect())
    }

    fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        check_key(key)?;
        if let Some((_, value)) = self.cached(bucket, key)? {
            return Ok(Some(value));
        }
        let (row, seq) = self.reading(|c, seq| Ok((row(c, bucket, key)?, seq)))?;
        self.group.cache.fill(bucket, key, seen(row.as_ref()), seq, self.group.committed_stamp());
        Ok(row.and_then(|r| r.value))
    }

    fn set_many(&self, bucket: &str, pairs: &[(&str, &[u8])]) -> Result<()> {
        for (k, v) in pairs {
            check_key(k)?;
            check_value(v)?;
        }
        let pairs = pairs.iter().map(|(k, v)| (k.to_string(), v.to_vec())).collect();
        match self.write(Op::Set { bucket: bucket.to_string(), pairs })? {
            Done::Unit => Ok(()),
            d => Err(unexpected(d)),
        }
    }

    fn delete_many(&self, bucket: &str, keys: &[&str]) -> Result<()> {
        let keys = owned_keys(keys)?;
        match self.write(Op::Delete { bucket: bucket.to_string(), keys })? {
            Done::Unit => Ok(()),
            d => Err(unexpected(d)),
        }
    }

    fn increment(&self, bucket: &str, key: &str, delta: i64) -> Result<i64> {
        check_key(key)?;
        match self.write(Op::Increment { bucket: bucket.to_string(), key: key.to_string(), delta })? {
            Done::Counter(n) => Ok(n),
            d => Err(unexpected(d)),
        }
    }

    fn list_keys(&self, bucket: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        self.reading(|c, _| {
            let mut stmt = c.prepare_cached(
                "SELECT key FROM entries WHERE bucket = ?1 AND key > ?2 AND value_id IS NOT NULL
                 ORDER BY key LIMIT ?3",
            )?;
            let keys = stmt.query_map(params![bucket, after.unwrap_or(""), limit as i64], |r| r.get(0))?.collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(keys)
        })
    }

    /// A range scan bounded at the prefix's end, so it never reads the
    /// rows (and values) that follow it.
    fn list_prefix(&self, bucket: &str, prefix: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        let Some(end) = prefix_end(prefix) else {
            return cairn_kv::list_prefix_by_listing(self, bucket, prefix, after, limit);
        };
        let start = cairn_kv::prefix_start(prefix, after);
        self.reading(|c, _| {
            let mut stmt = c.prepare_cached(
                "SELECT key FROM entries WHERE bucket = ?1 AND key > ?2 AND key < ?3 AND value_id IS NOT NULL
                 ORDER BY key LIMIT ?4",
            )?;
            let keys = stmt.query_map(params![bucket, start, end, limit as i64], |r| r.get(0))?.collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(keys)
        })
    }

    fn sweep(&self, older_than_ms: u64) -> Result<usize> {
        match self.write(Op::Sweep { older_than_ms })? {
            Done::Swept(n) => Ok(n),
            d => Err(unexpected(d)),
        }
    }

    fn vouched(&self) -> bool {
        true
    }

    /// With `fsync`, a write waits for the disk (`Writes`). Without it a
    /// commit only copies pages into the OS cache: a write that joins a
    /// group commit waits for the CPU work of the writers ahead of it, no
    /// longer than a hop to another thread and back costs (see
    /// `docs/decisions/connection-threads.md`), so every call runs where it is made (`Never`).
    fn waits(&self) -> cairn_kv::Waits {
        if self.fsync { cairn_kv::Waits::Writes } else { cairn_kv::Waits::Never }
    }

    /// Closes the readers, checkpoints the WAL into the database and closes
    /// the writer; then releases the file.
    fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::Release);
        self.group.cache.clear();
        self.checkpointer.stop();
        self.readers.close();
        self.group.exclusive(|w| {
            if let Some(conn) = w.conn.take() {
                conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").map_err(backend)?;
                conn.close().map_err(|(_, e)| backend(e))?;
            }
            w.lock = None;
            Ok(())
        })
    }
}

/// The first string after every string that starts with `prefix`, when its
/// last character is ASCII (`t/acme/` → `t/acme0`); `None` otherwise.
fn prefix_end(prefix: &str) -> Option<String> {
    let last = *prefix.as_bytes().last()?;
    if !last.is_ascii() || last == 0x7f {
        return None;
    }
    let mut end = prefix[..prefix.len() - 1].to_string();
    end.push((last + 1) as char);
    Some(end)
}
