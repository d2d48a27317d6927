//! `wasi:keyvalue@0.2.0-draft2` for components: see `wit/deps/keyvalue` for
//! the promise every Cairn host keeps.

use spin_sdk::wit::wasi::keyvalue::{atomics, batch, store};

pub use store::Error;

/// An open store.
pub struct Bucket(store::Bucket);

/// A read of one key, kept for a conditional write.
pub struct Cas(atomics::Cas);

/// What a [`Bucket::swap`] did.
pub enum Swap {
    /// The value was written.
    Done,
    /// The key was written since the read; nothing was written. The handle
    /// has read the key again.
    Conflict(Cas),
}

/// A readable description of a store error.
pub fn describe(e: &Error) -> String {
    match e {
        Error::NoSuchStore => "no such store".into(),
        Error::AccessDenied => "access to the store denied".into(),
        Error::Other(msg) => msg.clone(),
    }
}

impl Bucket {
    /// Open the store with this label (it must be in the component's
    /// `key_value_stores`).
    pub fn open(label: &str) -> Result<Self, Error> {
        store::open(label).map(Bucket)
    }
    /// The value under `key`.
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>, Error> {
        self.0.get(key)
    }
    /// Write unconditionally.
    pub fn set(&self, key: &str, value: &[u8]) -> Result<(), Error> {
        self.0.set(key, value)
    }
    /// Delete (absent is fine).
    pub fn delete(&self, key: &str) -> Result<(), Error> {
        self.0.delete(key)
    }
    /// Whether `key` is present.
    pub fn exists(&self, key: &str) -> Result<bool, Error> {
        self.0.exists(key)
    }
    /// One page of keys and the cursor of the next.
    pub fn list_keys(&self, cursor: Option<&str>) -> Result<(Vec<String>, Option<String>), Error> {
        let page = self.0.list_keys(cursor)?;
        Ok((page.keys, page.cursor))
    }
    /// Read `key` for a later [`swap`](Bucket::swap).
    pub fn read(&self, key: &str) -> Result<Cas, Error> {
        atomics::Cas::new(&self.0, key).map(Cas)
    }
    /// Atomically add `delta` to the counter under `key`.
    pub fn increment(&self, key: &str, delta: i64) -> Result<i64, Error> {
        atomics::increment(&self.0, key, delta)
    }
    /// Write `value` if nothing wrote the key since `cas` read it.
    pub fn swap(&self, cas: Cas, value: &[u8]) -> Result<Swap, Error> {
        match atomics::swap(cas.0, value) {
            Ok(()) => Ok(Swap::Done),
            Err(atomics::CasError::CasFailed(fresh)) => Ok(Swap::Conflict(Cas(fresh))),
            Err(atomics::CasError::StoreError(e)) => Err(e),
        }
    }
    /// Values of several keys.
    pub fn get_many(&self, keys: &[String]) -> Result<Vec<(String, Option<Vec<u8>>)>, Error> {
        batch::get_many(&self.0, keys)
    }
    /// Set several keys at once.
    pub fn set_many(&self, pairs: &[(String, Vec<u8>)]) -> Result<(), Error> {
        batch::set_many(&self.0, pairs)
    }
    /// Delete several keys at once.
    pub fn delete_many(&self, keys: &[String]) -> Result<(), Error> {
        batch::delete_many(&self.0, keys)
    }
}

impl Cas {
    /// The value the handle saw (`None`: absent).
    pub fn value(&self) -> Result<Option<Vec<u8>>, Error> {
        self.0.current()
    }
}
