//! `cairn-kv-sqlite`: the durable embedded store, one SQLite database in WAL
//! mode, keeping the promise of [`cairn_kv::Store`].
//!
//! SQLite because it is what Spin's own default key-value store uses, it is
//! embedded (no service to run), crash-safe in WAL mode, and one file is easy
//! to back up. Every write is one transaction; with `synchronous = NORMAL` a
//! committed transaction survives the process being killed (the WAL is in the
//! OS page cache); `cairn up --fsync` switches to `FULL` so it also survives
//! power loss, at a cost per write.
//!
//! One connection serves the whole process (the host is the only writer; the
//! database is opened in exclusive locking mode so a second process gets a
//! clear error instead of a silent split-brain).

use cairn_kv::{Error, Observed, Read, Result, Stamped, Store, Swap, check_key, check_value, decode_counter};
use rusqlite::{Connection, OptionalExtension, params};
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

struct Inner {
    conn: Option<Connection>,
    seq: u64,
    purge_floor: u64,
}

/// A store in one SQLite file.
pub struct SqliteStore {
    inner: Mutex<Inner>,
}

/// SQLite's errors as store errors: a full disk is [`Error::Full`] (the
/// transaction rolled back, nothing was written), a locked file
/// [`Error::Unavailable`], anything else [`Error::Backend`].
fn backend(e: rusqlite::Error) -> Error {
    match &e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DiskFull => Error::Full(e.to_string()),
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) =>
        {
            Error::Unavailable(e.to_string())
        }
        _ => Error::Backend(e.to_string()),
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

impl SqliteStore {
    /// Open (or create) the database at `path`. `fsync` selects
    /// `synchronous = FULL` instead of `NORMAL`.
    pub fn open(path: &Path, fsync: bool) -> Result<Self> {
        let conn = Connection::open(path).map_err(backend)?;
        let sync = if fsync { "FULL" } else { "NORMAL" };
        conn.execute_batch(&format!(
            "PRAGMA locking_mode = EXCLUSIVE;
             PRAGMA journal_mode = WAL;
             PRAGMA synchronous = {sync};
             PRAGMA busy_timeout = 200;
             PRAGMA wal_autocheckpoint = 8192;
             PRAGMA mmap_size = 268435456;
             CREATE TABLE IF NOT EXISTS kv (
                 bucket TEXT NOT NULL,
                 key TEXT NOT NULL,
                 value BLOB,
                 stamp INTEGER NOT NULL,
                 deleted_at INTEGER,
                 PRIMARY KEY (bucket, key)
             ) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
             INSERT OR IGNORE INTO meta VALUES ('purge_floor', 0);"
        ))
        .map_err(|e| match e {
            rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DatabaseBusy => {
                Error::Backend(format!(
                    "{} is in use by another process (is another cairn running on this state dir?)",
                    path.display()
                ))
            }
            e => backend(e),
        })?;
        let purge_floor: i64 = conn
            .query_row("SELECT value FROM meta WHERE name = 'purge_floor'", [], |r| r.get(0))
            .map_err(backend)?;
        let max_stamp: Option<i64> =
            conn.query_row("SELECT MAX(stamp) FROM kv", [], |r| r.get(0)).map_err(backend)?;
        let seq = (max_stamp.unwrap_or(0).max(purge_floor)) as u64;
        Ok(Self { inner: Mutex::new(Inner { conn: Some(conn), seq, purge_floor: purge_floor as u64 }) })
    }

    fn with<T>(&self, f: impl FnOnce(&Connection, &mut u64, u64) -> rusqlite::Result<T>) -> Result<T> {
        let mut guard = self.inner.lock().map_err(|_| Error::Backend("store lock poisoned".into()))?;
        let Inner { conn, seq, purge_floor } = &mut *guard;
        let conn = conn.as_ref().ok_or_else(|| Error::Backend("store is closed".into()))?;
        f(conn, seq, *purge_floor).map_err(backend)
    }

    /// Like `with`, inside one transaction that commits only if `f` succeeds.
    /// The in-memory sequence is restored if the transaction fails.
    fn tx<T>(&self, f: impl FnOnce(&Connection, &mut u64, u64) -> Result<T>) -> Result<T> {
        let mut guard = self.inner.lock().map_err(|_| Error::Backend("store lock poisoned".into()))?;
        let Inner { conn, seq, purge_floor } = &mut *guard;
        let conn = conn.as_ref().ok_or_else(|| Error::Backend("store is closed".into()))?;
        let start = *seq;
        conn.execute_batch("BEGIN IMMEDIATE").map_err(backend)?;
        match f(conn, seq, *purge_floor) {
            Ok(v) => match conn.execute_batch("COMMIT") {
                Ok(()) => Ok(v),
                Err(e) => {
                    let _ = conn.execute_batch("ROLLBACK");
                    *seq = start;
                    Err(backend(e))
                }
            },
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                *seq = start;
                Err(e)
            }
        }
    }
}

impl SqliteStore {
    /// Caps the database at `pages` pages (`PRAGMA max_page_count`), so a
    /// test can fill it as a full disk would.
    #[doc(hidden)]
    pub fn limit_pages_for_tests(&self, pages: u32) -> Result<()> {
        self.with(|c, _, _| c.query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(())))
    }
}

fn row(conn: &Connection, bucket: &str, key: &str) -> rusqlite::Result<Option<Stamped>> {
    conn.prepare_cached("SELECT value, stamp FROM kv WHERE bucket = ?1 AND key = ?2")?
        .query_row(params![bucket, key], |r| {
            Ok(Stamped { value: r.get(0)?, stamp: r.get::<_, i64>(1)? as u64 })
        })
        .optional()
}

fn put(conn: &Connection, seq: &mut u64, bucket: &str, key: &str, value: Option<&[u8]>) -> rusqlite::Result<()> {
    *seq += 1;
    let deleted_at = value.is_none().then(now_ms);
    conn.prepare_cached(
        "INSERT INTO kv (bucket, key, value, stamp, deleted_at) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (bucket, key) DO UPDATE SET value = excluded.value, stamp = excluded.stamp,
             deleted_at = excluded.deleted_at",
    )?
    .execute(params![bucket, key, value, *seq as i64, deleted_at])?;
    Ok(())
}

/// One compare-and-swap inside a transaction: `value` is written if nothing
/// wrote the key since `observed` (and no delete marker it could rely on was
/// purged), else the swap fails with what is there now.
fn swap_in(c: &Connection, seq: &mut u64, floor: u64, bucket: &str, key: &str, observed: Observed, value: &[u8]) -> Result<Swap> {
    let current = row(c, bucket, key).map_err(backend)?;
    if Stamped::swap_allowed(current.as_ref(), observed, floor) {
        put(c, seq, bucket, key, Some(value)).map_err(backend)?;
        Ok(Swap::Done)
    } else {
        Ok(Swap::Failed(Stamped::observe(current.as_ref(), *seq)))
    }
}

impl Store for SqliteStore {
    fn read(&self, bucket: &str, key: &str) -> Result<Read> {
        check_key(key)?;
        self.with(|c, seq, _| Ok(Stamped::observe(row(c, bucket, key)?.as_ref(), *seq)))
    }

    fn swap(&self, bucket: &str, key: &str, observed: Observed, value: &[u8]) -> Result<Swap> {
        check_key(key)?;
        check_value(value)?;
        self.tx(|c, seq, floor| swap_in(c, seq, floor, bucket, key, observed, value))
    }

    fn read_many(&self, bucket: &str, keys: &[&str]) -> Result<Vec<Read>> {
        for k in keys {
            check_key(k)?;
        }
        self.with(|c, seq, _| keys.iter().map(|k| Ok(Stamped::observe(row(c, bucket, k)?.as_ref(), *seq))).collect())
    }

    /// One transaction for every swap, each checked against its own read.
    fn swap_each(&self, bucket: &str, swaps: &[(&str, Observed, &[u8])]) -> Result<Vec<Swap>> {
        for (k, _, v) in swaps {
            check_key(k)?;
            check_value(v)?;
        }
        self.tx(|c, seq, floor| swaps.iter().map(|(k, o, v)| swap_in(c, seq, floor, bucket, k, *o, v)).collect())
    }

    fn get_many(&self, bucket: &str, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>> {
        for k in keys {
            check_key(k)?;
        }
        self.with(|c, _, _| keys.iter().map(|k| Ok(row(c, bucket, k)?.and_then(|r| r.value))).collect())
    }

    fn set_many(&self, bucket: &str, pairs: &[(&str, &[u8])]) -> Result<()> {
        for (k, v) in pairs {
            check_key(k)?;
            check_value(v)?;
        }
        self.tx(|c, seq, _| {
            for (k, v) in pairs {
                put(c, seq, bucket, k, Some(v)).map_err(backend)?;
            }
            Ok(())
        })
    }

    fn delete_many(&self, bucket: &str, keys: &[&str]) -> Result<()> {
        for k in keys {
            check_key(k)?;
        }
        self.tx(|c, seq, _| {
            for k in keys {
                let live = row(c, bucket, k).map_err(backend)?.is_some_and(|r| r.value.is_some());
                if live {
                    put(c, seq, bucket, k, None).map_err(backend)?;
                }
            }
            Ok(())
        })
    }

    fn increment(&self, bucket: &str, key: &str, delta: i64) -> Result<i64> {
        check_key(key)?;
        self.tx(|c, seq, _| {
            let current = row(c, bucket, key).map_err(backend)?;
            let next = decode_counter(current.as_ref().and_then(|r| r.value.as_deref()))?.wrapping_add(delta);
            put(c, seq, bucket, key, Some(&next.to_le_bytes())).map_err(backend)?;
            Ok(next)
        })
    }

    fn list_keys(&self, bucket: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        self.with(|c, _, _| {
            let mut stmt = c.prepare_cached(
                "SELECT key FROM kv WHERE bucket = ?1 AND key > ?2 AND typeof(value) <> 'null'
                 ORDER BY key LIMIT ?3",
            )?;
            let keys = stmt
                .query_map(params![bucket, after.unwrap_or(""), limit as i64], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
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
        self.with(|c, _, _| {
            let mut stmt = c.prepare_cached(
                "SELECT key FROM kv WHERE bucket = ?1 AND key > ?2 AND key < ?3 AND typeof(value) <> 'null'
                 ORDER BY key LIMIT ?4",
            )?;
            let keys = stmt
                .query_map(params![bucket, start, end, limit as i64], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(keys)
        })
    }

    fn sweep(&self, older_than_ms: u64) -> Result<usize> {
        let mut guard = self.inner.lock().map_err(|_| Error::Backend("store lock poisoned".into()))?;
        let inner = &mut *guard;
        let conn = inner.conn.as_ref().ok_or_else(|| Error::Backend("store is closed".into()))?;
        let cutoff = now_ms() - older_than_ms as i64;
        let run = || -> rusqlite::Result<(usize, u64)> {
            conn.execute_batch("BEGIN IMMEDIATE")?;
            let max: Option<i64> = conn.query_row(
                "SELECT MAX(stamp) FROM kv WHERE value IS NULL AND deleted_at <= ?1",
                [cutoff],
                |r| r.get(0),
            )?;
            let floor = inner.purge_floor.max(max.unwrap_or(0) as u64);
            conn.execute("UPDATE meta SET value = ?1 WHERE name = 'purge_floor'", [floor as i64])?;
            let n = conn.execute("DELETE FROM kv WHERE value IS NULL AND deleted_at <= ?1", [cutoff])?;
            conn.execute_batch("COMMIT")?;
            Ok((n, floor))
        };
        match run() {
            Ok((n, floor)) => {
                inner.purge_floor = floor;
                Ok(n)
            }
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                Err(backend(e))
            }
        }
    }

    fn vouched(&self) -> bool {
        true
    }

    fn close(&self) -> Result<()> {
        let mut guard = self.inner.lock().map_err(|_| Error::Backend("store lock poisoned".into()))?;
        if let Some(conn) = guard.conn.take() {
            conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").map_err(backend)?;
            conn.close().map_err(|(_, e)| backend(e))?;
        }
        Ok(())
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
