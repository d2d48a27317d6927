//! The host's key-value stores as a [`cairn_kv::Store`], over
//! `wasi:keyvalue@0.2.0-draft2` (store, atomics, batch): what the notes core
//! and the `kv-probe` component see. `wit/deps/keyvalue` states the promise
//! every Cairn host keeps; on other hosts the probe tells which rules hold.
//!
//! A read for a later swap is an `atomics.cas` handle owned by the host. The
//! store keeps the handles it gave out in a table and hands the caller the
//! handle's number as the [`Observed`] token; a swap takes the handle back out
//! (a second swap on the same read fails with a fresh one).
//! Buckets are opened on first use and kept for the request.
//!
//! Listing: `list-keys` cursors are opaque in `wasi:keyvalue`. Cairn's host
//! makes a cursor the key to list after, so a listing starts where it is
//! asked to and stops at the end of its prefix; on a host that refuses such
//! a cursor (Spin's stores take none) the whole bucket is listed and
//! filtered here, which is correct but costs the whole listing.

use crate::bindings::imports::wasi::keyvalue::{atomics, batch, store};
use cairn_kv::{Error, Observed, Read, Result, Store, Swap};
use std::cell::RefCell;
use std::collections::HashMap;

/// The stores of the host this component runs on.
#[derive(Default)]
pub struct GuestStore {
    buckets: RefCell<HashMap<String, store::Bucket>>,
    handles: RefCell<HashMap<u64, (String, String, atomics::Cas)>>,
    next: RefCell<u64>,
    vouched: bool,
    /// Whether the host takes a key as a listing cursor (found on first use).
    key_cursors: std::cell::Cell<Option<bool>>,
    /// Whether the `cache` label falls back to `default` on a host without it.
    cache_in_default: bool,
}

// A component instance is single-threaded: nothing here is ever shared
// between threads, but the Store trait asks for Send + Sync.
unsafe impl Send for GuestStore {}
unsafe impl Sync for GuestStore {}

/// A readable description of a host store error.
pub fn describe(e: &store::Error) -> String {
    match e {
        store::Error::NoSuchStore => "no such store".into(),
        store::Error::AccessDenied => "access to the store denied".into(),
        store::Error::Other(msg) => msg.clone(),
    }
}

/// The host's error as a store error: the host passes Cairn's own error text
/// through, so its classes (unavailable, full) survive the trip.
fn err(e: store::Error) -> Error {
    let msg = describe(&e);
    if msg.starts_with("store unavailable") {
        Error::Unavailable(msg)
    } else if msg.starts_with("store full") {
        Error::Full(msg)
    } else {
        Error::Backend(msg)
    }
}

impl GuestStore {
    /// A store with no bucket opened yet. Whether the host's store keeps the
    /// promise is the operator's word: the `commit_check` variable set to
    /// `off` vouches for it (Cairn's embedded host sets it for its own
    /// stores); anything else, and writers confirm each commit.
    pub fn new() -> Self {
        Self { vouched: crate::config::config().is_ok_and(|c| !c.notes.commit_check), ..Self::default() }
    }

    /// A store for what may be lost (the front door's counters, verified
    /// tokens): its `cache` label is the host's `cache` store, or, on a
    /// host that offers none, `default` (the keys do not collide).
    pub fn cache() -> Self {
        Self { cache_in_default: true, ..Self::new() }
    }

    /// Opens `label` now: an error when the component may not use it.
    pub fn open(label: &str) -> Result<Self> {
        let s = Self::new();
        s.with_bucket(label, |_| Ok(()))?;
        Ok(s)
    }

    fn with_bucket<T>(&self, label: &str, f: impl FnOnce(&store::Bucket) -> Result<T>) -> Result<T> {
        if let Some(b) = self.buckets.borrow().get(label) {
            return f(b);
        }
        // See `GuestStore::cache`.
        let b = match store::open(label) {
            Err(store::Error::NoSuchStore | store::Error::AccessDenied) if self.cache_in_default && label == cairn_door::budget::CACHE => {
                store::open("default")
            }
            other => other,
        }
        .map_err(err)?;
        let out = f(&b);
        self.buckets.borrow_mut().insert(label.to_string(), b);
        out
    }

    fn keep(&self, bucket: &str, key: &str, cas: atomics::Cas) -> Result<Read> {
        let value = cas.current().map_err(err)?;
        let mut next = self.next.borrow_mut();
        *next += 1;
        let id = *next;
        self.handles.borrow_mut().insert(id, (bucket.to_string(), key.to_string(), cas));
        Ok(Read { observed: if value.is_some() { Observed::Present(id) } else { Observed::Absent(id) }, value })
    }
}

impl GuestStore {
    /// Up to `limit` keys after `start` that start with `prefix`, in order.
    fn list_where(&self, bucket: &str, start: &str, prefix: &str, limit: usize) -> Result<Vec<String>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        if self.key_cursors.get() != Some(false) {
            if let Some(keys) = self.walk(bucket, start, prefix, limit)? {
                self.key_cursors.set(Some(true));
                return Ok(keys);
            }
            self.key_cursors.set(Some(false));
        }
        // A host with opaque cursors (Spin's answer a cursor with an error):
        // the whole listing, filtered and sorted here.
        self.with_bucket(bucket, |b| {
            let mut all = Vec::new();
            let mut cursor: Option<String> = None;
            loop {
                let page = b.list_keys(cursor.as_deref()).map_err(err)?;
                all.extend(page.keys.into_iter().filter(|k| k.as_str() > start && k.starts_with(prefix)));
                match page.cursor {
                    Some(c) => cursor = Some(c),
                    None => break,
                }
            }
            all.sort();
            all.truncate(limit);
            Ok(all)
        })
    }

    /// On a host whose cursor is the key to list after (Cairn's): pages from
    /// `start` until `limit` keys, or the end of `prefix`. `None` when the
    /// host does not take a key as a cursor (it refuses it, or lists from
    /// elsewhere).
    fn walk(&self, bucket: &str, start: &str, prefix: &str, limit: usize) -> Result<Option<Vec<String>>> {
        self.with_bucket(bucket, |b| {
            let mut out = Vec::new();
            let mut cursor = start.to_string();
            let mut first = true;
            loop {
                let page = match b.list_keys(Some(&cursor)) {
                    Ok(p) => p,
                    Err(_) if first => return Ok(None),
                    Err(e) => return Err(err(e)),
                };
                if first && page.keys.first().is_some_and(|k| k.as_str() <= start) {
                    return Ok(None);
                }
                first = false;
                for k in page.keys {
                    if !k.starts_with(prefix) && k.as_str() > prefix {
                        return Ok(Some(out));
                    }
                    if k.starts_with(prefix) {
                        out.push(k);
                        if out.len() == limit {
                            return Ok(Some(out));
                        }
                    }
                }
                match page.cursor {
                    Some(c) => cursor = c,
                    None => return Ok(Some(out)),
                }
            }
        })
    }
}

impl Store for GuestStore {
    fn read(&self, bucket: &str, key: &str) -> Result<Read> {
        let cas = self.with_bucket(bucket, |b| atomics::Cas::new(b, key).map_err(err))?;
        self.keep(bucket, key, cas)
    }

    fn swap(&self, bucket: &str, key: &str, observed: Observed, value: &[u8]) -> Result<Swap> {
        cairn_kv::check_key(key)?;
        let id = match observed {
            Observed::Present(id) | Observed::Absent(id) => id,
        };
        let Some((b, k, cas)) = self.handles.borrow_mut().remove(&id) else {
            // A read this store gave out and a swap already spent: that swap
            // moved the key or found it moved, so the value is no longer the
            // one observed and this swap fails, as on every other backend.
            if (1..=*self.next.borrow()).contains(&id) {
                return Ok(Swap::Failed(self.read(bucket, key)?));
            }
            return Err(Error::Backend(format!("no read of {key} is pending for this swap")));
        };
        if b != bucket || k != key {
            return Err(Error::Backend(format!("the read handed in was of {b}/{k}, not {bucket}/{key}")));
        }
        match atomics::swap(cas, value) {
            Ok(()) => Ok(Swap::Done),
            Err(atomics::CasError::CasFailed(fresh)) => Ok(Swap::Failed(self.keep(bucket, key, fresh)?)),
            Err(atomics::CasError::StoreError(e)) => Err(err(e)),
        }
    }

    fn set(&self, bucket: &str, key: &str, value: &[u8]) -> Result<()> {
        self.with_bucket(bucket, |b| b.set(key, value).map_err(err))
    }

    fn set_many(&self, bucket: &str, pairs: &[(&str, &[u8])]) -> Result<()> {
        let owned: Vec<(String, Vec<u8>)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_vec())).collect();
        self.with_bucket(bucket, |b| batch::set_many(b, &owned).map_err(err))
    }

    fn get_many(&self, bucket: &str, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>> {
        let owned: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        let got = self.with_bucket(bucket, |b| batch::get_many(b, &owned).map_err(err))?;
        // The host answers in order, one entry per key asked for.
        let mut by_key: HashMap<String, Option<Vec<u8>>> = got.into_iter().collect();
        Ok(keys.iter().map(|k| by_key.remove(*k).flatten()).collect())
    }

    fn delete_many(&self, bucket: &str, keys: &[&str]) -> Result<()> {
        let owned: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        self.with_bucket(bucket, |b| batch::delete_many(b, &owned).map_err(err))
    }

    fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        self.with_bucket(bucket, |b| b.delete(key).map_err(err))
    }

    fn increment(&self, bucket: &str, key: &str, delta: i64) -> Result<i64> {
        self.with_bucket(bucket, |b| atomics::increment(b, key, delta).map_err(err))
    }

    /// Keys after `after`: from there on a host whose cursors are keys
    /// (see `GuestStore::walk`), else by the whole listing.
    fn list_keys(&self, bucket: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        self.list_where(bucket, after.unwrap_or(""), "", limit)
    }

    fn list_prefix(&self, bucket: &str, prefix: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        self.list_where(bucket, cairn_kv::prefix_start(prefix, after), prefix, limit)
    }

    /// Delete markers are the host's business: nothing to do from inside.
    fn sweep(&self, _older_than_ms: u64) -> Result<usize> {
        Ok(0)
    }

    fn close(&self) -> Result<()> {
        self.handles.borrow_mut().clear();
        self.buckets.borrow_mut().clear();
        Ok(())
    }

    fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        self.with_bucket(bucket, |b| b.get(key).map_err(err))
    }

    fn exists(&self, bucket: &str, key: &str) -> Result<bool> {
        self.with_bucket(bucket, |b| b.exists(key).map_err(err))
    }

    fn vouched(&self) -> bool {
        self.vouched
    }
}

/// One store label of the host, opened: a convenience for code that works on
/// a single label (the router's cache, audit records).
pub struct Bucket {
    store: GuestStore,
    label: String,
}

impl Bucket {
    /// Opens `label` (it must be in the component's `key_value_stores`).
    pub fn open(label: &str) -> Result<Self> {
        Ok(Bucket { store: GuestStore::open(label)?, label: label.to_string() })
    }
    /// The value under `key`.
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.store.get(&self.label, key)
    }
    /// Writes unconditionally.
    pub fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        self.store.set(&self.label, key, value)
    }
    /// Deletes (absent is fine).
    pub fn delete(&self, key: &str) -> Result<()> {
        self.store.delete(&self.label, key)
    }
    /// Atomically adds `delta` to the counter under `key`.
    pub fn increment(&self, key: &str, delta: i64) -> Result<i64> {
        self.store.increment(&self.label, key, delta)
    }
    /// The store behind the label.
    pub fn store(&self) -> &GuestStore {
        &self.store
    }
}
