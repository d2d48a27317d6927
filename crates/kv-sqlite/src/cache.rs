//! Committed rows kept in memory, so a read of a hot key skips SQLite.
//!
//! A reader connection's page cache is dropped whenever the writer has
//! committed since its last read (WAL mode), so under a steady stream of
//! writes every read of a note head or a content blob went back to the file
//! with `pread`, a B-tree descent and overflow pages. This keeps the latest
//! committed value of recently used keys, up to [`BUDGET`] bytes, values of
//! at most [`MAX_VALUE`] bytes. Only live values are kept: a delete takes the
//! key out, and an absent key is always read from SQLite.
//!
//! # Why a hit is never stale
//!
//! The promise: a read returns a version at least as new as (1) every write
//! acknowledged before the read started and (2) every version an earlier
//! read, finished before this one started, returned. Writes and fills keep
//! it as follows.
//!
//! - **Writes, at commit.** The leader applies the rows its transaction
//!   wrote ([`Cache::commit`]) after `COMMIT` returned and before it answers
//!   any writer of the batch, holding the writer connection (so commits are
//!   applied in commit order) and the cache's lock, under which it also
//!   publishes the committed stamp. After an acknowledged write, the cache
//!   holds that write's value for the key, or nothing for it: (1).
//! - **Fills, from a read of SQLite.** A read that missed reads the row from
//!   SQLite and offers it ([`Cache::fill`]) with the committed stamp it
//!   loaded before its snapshot began:
//!   - a live row replaces a cached row with a lower stamp (stamps only
//!     grow, so it is newer); this is what keeps (2) in the instant between
//!     a `COMMIT` and its leader's apply, when SQLite already shows the new
//!     row and the cache the old one;
//!   - a live row for a key the cache lacks goes in only if nothing
//!     committed since its stamp was loaded: a commit in between may have
//!     written or deleted the key, and its apply has already run, so the
//!     row read may be older than what that apply left (nothing);
//!   - a delete marker or no row at all takes a cached row with a lower
//!     stamp out.
//!
//!   A fill therefore never puts back a version older than one the cache
//!   held or a commit applied, and a version a read returned from SQLite is
//!   in the cache (or something newer is) before that read returns.
//! - **Evictions** only take rows out, and a miss reads SQLite, which holds
//!   every committed write.
//!
//! Rollbacks touch nothing: rows are applied only after their commit. The
//! host is the only process on the file (see the crate's lock), so every
//! commit passes through [`Cache::commit`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

/// A cached key's stamp and value.
pub type Hit = (u64, Vec<u8>);

/// Bytes of values (and their keys) kept at most. Every commit puts in what
/// it wrote, and most of that (a new content blob, a spilled record) is not
/// read again soon, so the budget mostly holds what eviction drops next; the
/// keys read over and over (note heads, current content) stay by recency.
/// At 32 MB the host's resident memory on the append workload grew by
/// about 40 MB for no more hits than this.
pub(crate) const BUDGET: usize = 8 << 20;
/// Larger values are not kept: copying them costs about what reading them does.
pub(crate) const MAX_VALUE: usize = 64 << 10;
/// Bookkeeping counted for each row besides its key and value.
const ROW_OVERHEAD: usize = 64;

/// One cached row: the stamp of its last write and its value.
struct Row {
    stamp: u64,
    value: Arc<[u8]>,
    /// When it was last read (a tick of [`Cache::clock`]), for eviction.
    used: AtomicU64,
}

#[derive(Default)]
struct Rows {
    buckets: HashMap<String, HashMap<String, Row>>,
    bytes: usize,
}

/// What a transaction wrote to a key, applied once it committed.
pub(crate) struct Written {
    pub bucket: String,
    pub key: String,
    pub stamp: u64,
    /// The value, or `None` for a delete or a value too large to keep.
    pub value: Option<Arc<[u8]>>,
}

impl Written {
    /// A write of `value` (or a delete, `None`) under `stamp`.
    pub fn new(bucket: &str, key: &str, stamp: u64, value: Option<&[u8]>) -> Self {
        let value = value.filter(|v| v.len() <= MAX_VALUE).map(Arc::from);
        Self { bucket: bucket.to_string(), key: key.to_string(), stamp, value }
    }
}

/// What a read of SQLite found for a key, offered to the cache.
pub(crate) enum Seen<'a> {
    /// A live value under this stamp.
    Live(u64, &'a [u8]),
    /// A delete marker under this stamp.
    Deleted(u64),
    /// No row at all.
    Nothing,
}

/// The cache (see the module docs).
pub(crate) struct Cache {
    rows: RwLock<Rows>,
    clock: AtomicU64,
    budget: usize,
    hits: AtomicU64,
    misses: AtomicU64,
}

fn size(key: &str, value: &[u8]) -> usize {
    key.len() + value.len() + ROW_OVERHEAD
}

impl Cache {
    pub fn new(budget: usize) -> Self {
        Self { rows: RwLock::default(), clock: AtomicU64::new(0), budget, hits: AtomicU64::new(0), misses: AtomicU64::new(0) }
    }

    /// The cached value of `key` and its stamp.
    pub fn get(&self, bucket: &str, key: &str) -> Option<(u64, Vec<u8>)> {
        let rows = self.rows.read().unwrap_or_else(PoisonError::into_inner);
        let hit = rows.buckets.get(bucket).and_then(|b| b.get(key)).map(|row| {
            row.used.store(self.clock.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
            (row.stamp, row.value.to_vec())
        });
        drop(rows);
        let counter = if hit.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        hit
    }

    /// Every key's cached value and stamp, under one lock (one point in the
    /// commit order), or `None` unless every key is cached.
    pub fn get_all(&self, bucket: &str, keys: &[&str]) -> Option<Vec<Hit>> {
        let rows = self.rows.read().unwrap_or_else(PoisonError::into_inner);
        let b = rows.buckets.get(bucket);
        let all: Option<Vec<_>> = keys
            .iter()
            .map(|k| {
                b.and_then(|b| b.get(*k)).map(|row| {
                    row.used.store(self.clock.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
                    (row.stamp, row.value.to_vec())
                })
            })
            .collect();
        drop(rows);
        let counter = if all.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        all
    }

    /// Applies a committed transaction's writes, in order, then runs
    /// `publish` (which publishes the committed stamp) under the same lock.
    pub fn commit(&self, wrote: Vec<Written>, publish: impl FnOnce()) {
        let mut rows = self.rows.write().unwrap_or_else(PoisonError::into_inner);
        if self.budget == 0 {
            publish();
            return;
        }
        for w in wrote {
            match w.value {
                Some(v) => self.put(&mut rows, w.bucket, w.key, w.stamp, v),
                None => remove(&mut rows, &w.bucket, &w.key),
            }
        }
        publish();
        self.evict(&mut rows);
    }

    /// Offers what a read of SQLite saw; `loaded` is the committed stamp the
    /// read loaded before its snapshot began, `committed` the stamp now.
    pub fn fill(&self, bucket: &str, key: &str, seen: Seen<'_>, loaded: u64, committed: &AtomicU64) {
        if self.budget == 0 || matches!(seen, Seen::Live(_, v) if v.len() > MAX_VALUE) {
            return;
        }
        let mut rows = self.rows.write().unwrap_or_else(PoisonError::into_inner);
        let cached = rows.buckets.get(bucket).and_then(|b| b.get(key)).map(|r| r.stamp);
        match (seen, cached) {
            (Seen::Live(stamp, v), Some(c)) if c < stamp => self.put(&mut rows, bucket.to_string(), key.to_string(), stamp, Arc::from(v)),
            (Seen::Live(stamp, v), None) if committed.load(Ordering::Acquire) == loaded => {
                self.put(&mut rows, bucket.to_string(), key.to_string(), stamp, Arc::from(v))
            }
            (Seen::Deleted(stamp), Some(c)) if c < stamp => remove(&mut rows, bucket, key),
            (Seen::Nothing, Some(_)) => remove(&mut rows, bucket, key),
            _ => return,
        }
        self.evict(&mut rows);
    }

    /// Forgets everything (the store closed).
    pub fn clear(&self) {
        *self.rows.write().unwrap_or_else(PoisonError::into_inner) = Rows::default();
    }

    /// Bytes held now, and reads answered from memory and not.
    pub fn counts(&self) -> (usize, u64, u64) {
        let bytes = self.rows.read().unwrap_or_else(PoisonError::into_inner).bytes;
        (bytes, self.hits.load(Ordering::Relaxed), self.misses.load(Ordering::Relaxed))
    }

    fn put(&self, rows: &mut Rows, bucket: String, key: String, stamp: u64, value: Arc<[u8]>) {
        let add = size(&key, &value);
        let used = AtomicU64::new(self.clock.fetch_add(1, Ordering::Relaxed));
        let old = rows.buckets.entry(bucket).or_default().insert(key.clone(), Row { stamp, value, used });
        rows.bytes += add;
        if let Some(old) = old {
            rows.bytes -= size(&key, &old.value);
        }
    }

    /// Past the budget, drops the least recently used rows down to three
    /// quarters of it (so eviction runs once per quarter budget of writes).
    fn evict(&self, rows: &mut Rows) {
        if rows.bytes <= self.budget {
            return;
        }
        let mut by_use: Vec<(u64, &str, &str, usize)> = rows
            .buckets
            .iter()
            .flat_map(|(b, keys)| keys.iter().map(move |(k, r)| (r.used.load(Ordering::Relaxed), b.as_str(), k.as_str(), size(k, &r.value))))
            .collect();
        by_use.sort_unstable_by_key(|r| r.0);
        let target = self.budget / 4 * 3;
        let mut bytes = rows.bytes;
        let mut gone = Vec::new();
        for (_, b, k, n) in by_use {
            if bytes <= target {
                break;
            }
            bytes -= n;
            gone.push((b.to_string(), k.to_string()));
        }
        for (b, k) in gone {
            remove(rows, &b, &k);
        }
    }
}

fn remove(rows: &mut Rows, bucket: &str, key: &str) {
    let Some(b) = rows.buckets.get_mut(bucket) else { return };
    if let Some(old) = b.remove(key) {
        rows.bytes -= size(key, &old.value);
    }
    if b.is_empty() {
        rows.buckets.remove(bucket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(key: &str, stamp: u64, value: Option<&[u8]>) -> Written {
        Written::new("b", key, stamp, value)
    }

    #[test]
    fn a_fill_never_puts_back_an_older_version() {
        let c = Cache::new(BUDGET);
        let committed = AtomicU64::new(5);
        c.commit(vec![written("k", 5, Some(b"new"))], || ());
        c.fill("b", "k", Seen::Live(3, b"old"), 5, &committed);
        assert_eq!(c.get("b", "k"), Some((5, b"new".to_vec())));
    }

    #[test]
    fn a_fill_of_an_uncached_key_is_dropped_once_anything_committed_since_its_read() {
        let c = Cache::new(BUDGET);
        let committed = AtomicU64::new(7);
        c.fill("b", "k", Seen::Live(3, b"v"), 6, &committed);
        assert_eq!(c.get("b", "k"), None);
        c.fill("b", "k", Seen::Live(3, b"v"), 7, &committed);
        assert_eq!(c.get("b", "k"), Some((3, b"v".to_vec())));
    }

    #[test]
    fn a_newer_row_read_from_sqlite_replaces_the_cached_one_before_its_apply() {
        let c = Cache::new(BUDGET);
        let committed = AtomicU64::new(4);
        c.commit(vec![written("k", 4, Some(b"v4"))], || ());
        // Version 9 has committed in SQLite, its leader has not applied it yet.
        c.fill("b", "k", Seen::Live(9, b"v9"), 4, &committed);
        assert_eq!(c.get("b", "k"), Some((9, b"v9".to_vec())));
        c.fill("b", "k", Seen::Deleted(10), 4, &committed);
        assert_eq!(c.get("b", "k"), None, "a newer delete marker takes the row out");
    }

    #[test]
    fn a_delete_takes_the_key_out() {
        let c = Cache::new(BUDGET);
        c.commit(vec![written("k", 1, Some(b"v")), written("k", 2, None)], || ());
        assert_eq!(c.get("b", "k"), None);
        assert_eq!(c.counts().0, 0);
    }

    #[test]
    fn the_budget_holds_and_the_recently_read_stay() {
        let c = Cache::new(100 * (1024 + ROW_OVERHEAD + 4));
        let value = vec![7u8; 1024];
        c.commit(vec![written("hot0", 1, Some(&value))], || ());
        for i in 0..1000u64 {
            assert!(c.get("b", "hot0").is_some(), "the row read before every write stays");
            c.commit(vec![written(&format!("k{i:03}"), i + 2, Some(&value))], || ());
            assert!(c.counts().0 <= c.budget);
        }
        assert!(c.get("b", "k000").is_none(), "the oldest unread rows went first");
        assert!(c.get("b", "k999").is_some());
    }

    #[test]
    fn large_values_are_not_kept() {
        let c = Cache::new(BUDGET);
        let big = vec![1u8; MAX_VALUE + 1];
        c.commit(vec![written("small", 1, Some(b"s")), written("small", 2, Some(&big))], || ());
        assert_eq!(c.get("b", "small"), None, "the earlier small version is not left behind");
    }
}
