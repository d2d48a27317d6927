//! The storage abstraction: the [`Kv`] trait, its failure type [`KvError`], an in-memory
//! store [`MemKv`] for tests and benchmarks, and [`TenantKv`], the only way tool code
//! reaches a store (every key gets the `t/<tenant>/` prefix).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;

/// Longest key a store accepts, in bytes (Spin's documented limit).
pub const MAX_KEY_BYTES: usize = 256;
/// Largest value a store accepts, in bytes (Spin's documented limit).
pub const MAX_VALUE_BYTES: usize = 1_000_000;

/// A key-value store with compare-and-swap.
///
/// The core never relies on `swap` comparing versions correctly: every record it swaps
/// carries its own increasing version, so a store that compares values behaves the same.
pub trait Kv {
    /// A handle from a read, consumed by [`Kv::swap`].
    type Cas;
    /// Reads a key.
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError>;
    /// Reads a key and returns a handle for a later conditional write.
    fn read_cas(&self, key: &str) -> Result<(Self::Cas, Option<Vec<u8>>), KvError>;
    /// true = swapped; false = someone wrote since the read (conflict). Never report a lost
    /// swap as true.
    fn swap(&self, cas: Self::Cas, value: Vec<u8>) -> Result<bool, KvError>;
    /// Writes a key unconditionally.
    fn set(&self, key: &str, value: &[u8]) -> Result<(), KvError>;
    /// Writes several keys unconditionally. A backend may do it in one round trip
    /// or transaction; the core only batches immutable records written before a CAS,
    /// so it never relies on the batch being atomic.
    fn set_many(&self, pairs: &[(&str, &[u8])]) -> Result<(), KvError> {
        for (k, v) in pairs {
            self.set(k, v)?;
        }
        Ok(())
    }
    /// Deletes a key (absent is fine).
    fn delete(&self, key: &str) -> Result<(), KvError>;
}

/// A host or store failure. Not a domain refusal: those are tool results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvError {
    /// The backend failed (I/O, connection, host error), with its message.
    Store(String),
    /// A key longer than [`MAX_KEY_BYTES`] reached the store (a bug in the caller).
    KeyTooLong(usize),
    /// A value larger than [`MAX_VALUE_BYTES`] reached the store (a bug in the caller).
    ValueTooLarge(usize),
    /// A stored record could not be decoded or a referenced blob is missing.
    Corrupt(String),
}

impl fmt::Display for KvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KvError::Store(m) => write!(f, "store failure: {m}"),
            KvError::KeyTooLong(n) => write!(f, "key of {n} bytes exceeds {MAX_KEY_BYTES}"),
            KvError::ValueTooLarge(n) => write!(f, "value of {n} bytes exceeds {MAX_VALUE_BYTES}"),
            KvError::Corrupt(m) => write!(f, "corrupt record: {m}"),
        }
    }
}

impl std::error::Error for KvError {}

fn check_key(key: &str) -> Result<(), KvError> {
    if key.len() > MAX_KEY_BYTES {
        return Err(KvError::KeyTooLong(key.len()));
    }
    Ok(())
}

fn check_value(value: &[u8]) -> Result<(), KvError> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(KvError::ValueTooLarge(value.len()));
    }
    Ok(())
}

#[derive(Default)]
struct MemState {
    map: BTreeMap<String, (u64, Vec<u8>)>,
    stamp: u64,
    lose_swaps: u32,
    reads: Vec<String>,
}

/// An in-memory store keeping a write stamp per key: `swap` succeeds only if the key was
/// not written since the read (create-if-absent on an absent key). For tests and benchmarks.
#[derive(Default)]
pub struct MemKv {
    state: Mutex<MemState>,
}

/// The [`Kv::Cas`] handle of [`MemKv`]: the key and the stamp it had when read.
pub struct MemCas {
    key: String,
    stamp: Option<u64>,
}

impl MemKv {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every key with its value, in key order (to check that nothing was written).
    pub fn dump(&self) -> Vec<(String, Vec<u8>)> {
        self.lock()
            .map
            .iter()
            .map(|(k, (_, v))| (k.clone(), v.clone()))
            .collect()
    }

    /// The size of the largest stored value, in bytes.
    pub fn max_value_len(&self) -> usize {
        self.lock()
            .map
            .values()
            .map(|(_, v)| v.len())
            .max()
            .unwrap_or(0)
    }

    /// Makes the next `n` swaps fail as if another writer had written in between.
    pub fn lose_next_swaps(&self, n: u32) {
        self.lock().lose_swaps = n;
    }

    /// Returns and clears the keys read (by `get` or `read_cas`) since the last call.
    pub fn take_reads(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().reads)
    }
}

impl Kv for MemKv {
    type Cas = MemCas;

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        check_key(key)?;
        let mut s = self.lock();
        s.reads.push(key.to_string());
        Ok(s.map.get(key).map(|(_, v)| v.clone()))
    }

    fn read_cas(&self, key: &str) -> Result<(MemCas, Option<Vec<u8>>), KvError> {
        check_key(key)?;
        let mut s = self.lock();
        s.reads.push(key.to_string());
        let (stamp, value) = match s.map.get(key) {
            Some((st, v)) => (Some(*st), Some(v.clone())),
            None => (None, None),
        };
        Ok((
            MemCas {
                key: key.to_string(),
                stamp,
            },
            value,
        ))
    }

    fn swap(&self, cas: MemCas, value: Vec<u8>) -> Result<bool, KvError> {
        check_value(&value)?;
        let mut s = self.lock();
        if s.lose_swaps > 0 {
            s.lose_swaps -= 1;
            return Ok(false);
        }
        if s.map.get(&cas.key).map(|(st, _)| *st) != cas.stamp {
            return Ok(false);
        }
        s.stamp += 1;
        let stamp = s.stamp;
        s.map.insert(cas.key, (stamp, value));
        Ok(true)
    }

    fn set(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        check_key(key)?;
        check_value(value)?;
        let mut s = self.lock();
        s.stamp += 1;
        let stamp = s.stamp;
        s.map.insert(key.to_string(), (stamp, value.to_vec()));
        Ok(())
    }

    fn delete(&self, key: &str) -> Result<(), KvError> {
        check_key(key)?;
        self.lock().map.remove(key);
        Ok(())
    }
}

/// Tenant ids: `[a-z0-9_-]{1,64}`.
pub fn valid_tenant(tenant: &str) -> bool {
    (1..=64).contains(&tenant.len())
        && tenant
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// A view of a store confined to one tenant: every key is prefixed with `t/<tenant>/`,
/// and keys and values are checked against the store's limits before they reach it.
pub struct TenantKv<'a, K: Kv> {
    kv: &'a K,
    prefix: String,
}

impl<'a, K: Kv> TenantKv<'a, K> {
    /// Wraps `kv` for `tenant`; `None` if the tenant id is not `[a-z0-9_-]{1,64}`.
    pub fn new(kv: &'a K, tenant: &str) -> Option<Self> {
        valid_tenant(tenant).then(|| TenantKv {
            kv,
            prefix: format!("t/{tenant}/"),
        })
    }

    fn key(&self, key: &str) -> Result<String, KvError> {
        let full = format!("{}{key}", self.prefix);
        check_key(&full)?;
        Ok(full)
    }

    /// See [`Kv::get`].
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        self.kv.get(&self.key(key)?)
    }

    /// See [`Kv::read_cas`].
    pub fn read_cas(&self, key: &str) -> Result<(K::Cas, Option<Vec<u8>>), KvError> {
        self.kv.read_cas(&self.key(key)?)
    }

    /// See [`Kv::swap`].
    pub fn swap(&self, cas: K::Cas, value: Vec<u8>) -> Result<bool, KvError> {
        check_value(&value)?;
        self.kv.swap(cas, value)
    }

    /// See [`Kv::set`].
    pub fn set(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        check_value(value)?;
        self.kv.set(&self.key(key)?, value)
    }

    /// See [`Kv::set_many`].
    pub fn set_many(&self, pairs: &[(String, Vec<u8>)]) -> Result<(), KvError> {
        let mut full = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            check_value(v)?;
            full.push((self.key(k)?, v.as_slice()));
        }
        let refs: Vec<(&str, &[u8])> = full.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        self.kv.set_many(&refs)
    }

    /// See [`Kv::delete`].
    pub fn delete(&self, key: &str) -> Result<(), KvError> {
        self.kv.delete(&self.key(key)?)
    }
}
