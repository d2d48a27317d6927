//! An in-memory [`Store`]: the same rules as SQLite, no disk.
//! [`Memory`] opens one for a runtime config table of `type = "memory"`.

use crate::{Backend, Error, Observed, OpenContext, OpenError, Read, Result, Stamped, Store, Swap, check_key, check_value, decode_counter};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

#[derive(Default)]
struct Inner {
    rows: BTreeMap<(String, String), (Stamped, Option<Instant>)>,
    seq: u64,
    purge_floor: u64,
    closed: bool,
}

/// An in-memory store. Cheap to create; everything is lost on drop.
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> Result<T>) -> Result<T> {
        let mut guard = self.inner.lock().map_err(|_| Error::Backend("store lock poisoned".into()))?;
        if guard.closed {
            return Err(Error::Backend("store is closed".into()));
        }
        f(&mut guard)
    }
}

impl Inner {
    fn write(&mut self, bucket: &str, key: &str, value: Option<Vec<u8>>) {
        self.seq += 1;
        let deleted_at = value.is_none().then(Instant::now);
        self.rows.insert((bucket.to_owned(), key.to_owned()), (Stamped { value, stamp: self.seq }, deleted_at));
    }
    fn row(&self, bucket: &str, key: &str) -> Option<&Stamped> {
        self.rows.get(&(bucket.to_owned(), key.to_owned())).map(|(s, _)| s)
    }
}

impl Store for MemoryStore {
    fn read(&self, bucket: &str, key: &str) -> Result<Read> {
        check_key(key)?;
        self.with(|s| Ok(Stamped::observe(s.row(bucket, key), s.seq)))
    }

    fn swap(&self, bucket: &str, key: &str, observed: Observed, value: &[u8]) -> Result<Swap> {
        check_key(key)?;
        check_value(value)?;
        self.with(|s| {
            if Stamped::swap_allowed(s.row(bucket, key), observed, s.purge_floor) {
                s.write(bucket, key, Some(value.to_vec()));
                Ok(Swap::Done)
            } else {
                Ok(Swap::Failed(Stamped::observe(s.row(bucket, key), s.seq)))
            }
        })
    }

    fn set_many(&self, bucket: &str, pairs: &[(&str, &[u8])]) -> Result<()> {
        for (k, v) in pairs {
            check_key(k)?;
            check_value(v)?;
        }
        self.with(|s| {
            for (k, v) in pairs {
                s.write(bucket, k, Some(v.to_vec()));
            }
            Ok(())
        })
    }

    fn delete_many(&self, bucket: &str, keys: &[&str]) -> Result<()> {
        for k in keys {
            check_key(k)?;
        }
        self.with(|s| {
            for k in keys {
                if s.row(bucket, k).is_some_and(|r| r.value.is_some()) {
                    s.write(bucket, k, None);
                }
            }
            Ok(())
        })
    }

    fn increment(&self, bucket: &str, key: &str, delta: i64) -> Result<i64> {
        check_key(key)?;
        self.with(|s| {
            let current = decode_counter(s.row(bucket, key).and_then(|r| r.value.as_deref()))?;
            let next = current.wrapping_add(delta);
            s.write(bucket, key, Some(next.to_le_bytes().to_vec()));
            Ok(next)
        })
    }

    fn list_keys(&self, bucket: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        self.with(|s| {
            let start = (bucket.to_owned(), after.unwrap_or("").to_owned());
            Ok(s.rows
                .range(start..)
                .take_while(|((b, _), _)| b == bucket)
                .filter(|((_, k), (row, _))| row.value.is_some() && Some(k.as_str()) != after)
                .take(limit)
                .map(|((_, k), _)| k.clone())
                .collect())
        })
    }

    fn sweep(&self, older_than_ms: u64) -> Result<usize> {
        self.with(|s| {
            let now = Instant::now();
            let old = |at: &Option<Instant>| at.is_some_and(|t| now.duration_since(t).as_millis() as u64 >= older_than_ms);
            let mut floor = s.purge_floor;
            let before = s.rows.len();
            s.rows.retain(|_, (row, at)| {
                if old(at) {
                    floor = floor.max(row.stamp);
                    false
                } else {
                    true
                }
            });
            s.purge_floor = floor;
            Ok(before - s.rows.len())
        })
    }

    fn close(&self) -> Result<()> {
        self.with(|s| {
            s.closed = true;
            Ok(())
        })
    }

    fn vouched(&self) -> bool {
        true
    }
}

/// The in-memory backend: `type = "memory"` (this host's extension of
/// Spin's types; for tests and benchmarks).
pub struct Memory;

/// A `type = "memory"` table: no fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryConfig {}

impl Backend for Memory {
    const TYPE: &'static str = "memory";
    type Config = MemoryConfig;

    fn open(_: &MemoryConfig, _: &OpenContext) -> std::result::Result<Arc<dyn Store>, OpenError> {
        Ok(Arc::new(MemoryStore::new()))
    }
}

impl MemoryStore {
    /// Every live key of `bucket` with its value, in key order (tests use it
    /// to show that nothing was written).
    pub fn dump(&self, bucket: &str) -> Vec<(String, Vec<u8>)> {
        self.with(|s| {
            Ok(s.rows
                .iter()
                .filter(|((b, _), (row, _))| b == bucket && row.value.is_some())
                .map(|((_, k), (row, _))| (k.clone(), row.value.clone().unwrap_or_default()))
                .collect())
        })
        .unwrap_or_default()
    }
}
