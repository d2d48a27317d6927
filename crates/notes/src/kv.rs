//! [`TenantKv`]: the only way the core reaches a store. Every key gets the
//! tenant's prefix ([`crate::keys::tenant_prefix`]), so no tool can build an
//! unprefixed key; every read and write goes to the `default` bucket.

use cairn_kv::{Observed, Read, Store, Swap};

use crate::keys::{tenant_prefix, valid_tenant};
use crate::refusal::{Failure, Out, Refusal};

pub use crate::keys::BUCKET;

/// Attempts of every compare-and-swap loop before it gives up as `busy`.
pub(crate) const MAX_ATTEMPTS: usize = 32;

/// A store confined to one tenant.
pub struct TenantKv<'a> {
    store: &'a dyn Store,
    prefix: String,
    confirm: bool,
    /// `<note_id>/<generation>`: where this view writes content blobs
    /// (`blob/<note_id>/<generation>/<hash>`); `None`: `blob/<hash>`.
    blob_scope: Option<String>,
    /// A staging view's buffer: its `set` and `set_many` land here (relative
    /// keys) for the head transaction to write in one batch before its swap.
    staging: Option<&'a Staged>,
}

/// Writes a staging view gathered ([`TenantKv::staging`]).
pub(crate) type Staged = std::cell::RefCell<Vec<(String, Vec<u8>)>>;

/// A read of a key for a later [`TenantKv::swap`].
pub(crate) struct Held {
    pub value: Option<Vec<u8>>,
    pub observed: Observed,
}

impl From<Read> for Held {
    fn from(r: Read) -> Self {
        Held { value: r.value, observed: r.observed }
    }
}

impl<'a> TenantKv<'a> {
    /// `store` seen by `tenant`; `None` if the tenant id is not `[a-z0-9_-]{1,64}`.
    pub fn new(store: &'a dyn Store, tenant: &str) -> Option<Self> {
        valid_tenant(tenant).then(|| TenantKv { store, prefix: tenant_prefix(tenant), confirm: !store.vouched(), blob_scope: None, staging: None })
    }

    /// `store` seen by `tenant` for the system (sweeps, rebuilds): an invalid
    /// tenant id is a [`Failure::Store`], a bug of the host that asked.
    pub(crate) fn system(store: &'a dyn Store, tenant: &str) -> Result<Self, Failure> {
        TenantKv::new(store, tenant).ok_or_else(|| Failure::Store(cairn_kv::Error::Backend(format!("invalid tenant id {tenant:?}"))))
    }

    /// The same view, writing the content blobs it stores under note
    /// `note_id`'s generation `generation` (see [`crate::history_sweep`]).
    pub(crate) fn for_note_blobs(&self, note_id: &str, generation: u64) -> TenantKv<'a> {
        TenantKv {
            store: self.store,
            prefix: self.prefix.clone(),
            confirm: self.confirm,
            blob_scope: Some(format!("{note_id}/{generation}")),
            staging: self.staging,
        }
    }

    /// The same view, but its `set` and `set_many` only gather into
    /// `staged` (its reads see what it gathered): for the immutable records
    /// a commit writes before its swap ([`crate::head::Decision::CommitWith`]).
    pub(crate) fn staging<'b>(&self, staged: &'b Staged) -> TenantKv<'b>
    where
        'a: 'b,
    {
        TenantKv { store: self.store, prefix: self.prefix.clone(), confirm: self.confirm, blob_scope: self.blob_scope.clone(), staging: Some(staged) }
    }

    /// The name a content blob of hash `hash` is written under by this view.
    pub(crate) fn blob_name(&self, hash: &str) -> String {
        match &self.blob_scope {
            Some(scope) => format!("{scope}/{hash}"),
            None => hash.to_string(),
        }
    }

    /// Deletes keys (relative to the tenant), in one call.
    pub(crate) fn delete_many(&self, keys: &[String]) -> Result<(), Failure> {
        let full: Vec<String> = keys.iter().map(|k| self.key(k)).collect();
        let refs: Vec<&str> = full.iter().map(String::as_str).collect();
        Ok(self.store.delete_many(BUCKET, &refs)?)
    }

    /// Whether commits confirm themselves: the store is one Cairn cannot
    /// vouch for ([`Store::vouched`]).
    pub(crate) fn confirms_commits(&self) -> bool {
        self.confirm
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    pub(crate) fn get(&self, key: &str) -> Result<Option<Vec<u8>>, Failure> {
        if let Some(staged) = self.staging
            && let Some((_, v)) = staged.borrow().iter().rev().find(|(k, _)| k == key)
        {
            return Ok(Some(v.clone()));
        }
        Ok(self.store.get(BUCKET, &self.key(key))?)
    }

    pub(crate) fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, Failure> {
        if self.staging.is_some() {
            return keys.iter().map(|k| self.get(k)).collect();
        }
        // One key is one read. (Spin's Redis store answers a batch read with
        // `KEYS <key>…`: for one key that exists its host panics, failing the
        // request; for more keys Redis refuses the arguments.)
        if let [one] = keys {
            return Ok(vec![self.get(one)?]);
        }
        let full: Vec<String> = keys.iter().map(|k| self.key(k)).collect();
        let refs: Vec<&str> = full.iter().map(String::as_str).collect();
        match self.store.get_many(BUCKET, &refs) {
            // A host store nobody vouches for whose batch read fails: the
            // same values, key by key.
            Err(cairn_kv::Error::Backend(_)) if self.confirm => refs.iter().map(|k| Ok(self.store.get(BUCKET, k)?)).collect(),
            other => Ok(other?),
        }
    }

    /// Adds `delta` to the counter under `key` (absent = 0), atomically; the new value.
    pub(crate) fn increment(&self, key: &str, delta: i64) -> Result<i64, Failure> {
        Ok(self.store.increment(BUCKET, &self.key(key), delta)?)
    }

    pub(crate) fn read(&self, key: &str) -> Result<Held, Failure> {
        Ok(self.store.read(BUCKET, &self.key(key))?.into())
    }

    /// `Ok(None)`: written. `Ok(Some(fresh))`: someone wrote since the read.
    ///
    /// On a store Cairn cannot vouch for, a swap reported failed whose fresh
    /// read holds exactly the bytes it wrote is taken as written: the record
    /// is what this writer made it (Spin's Redis store reports every swap
    /// failed, landed or not). A note head is never taken at that word
    /// alone: its writer confirms its commit marker ([`crate::head`]).
    pub(crate) fn swap(&self, key: &str, observed: Observed, value: &[u8]) -> Result<Option<Held>, Failure> {
        let out = self.store.swap(BUCKET, &self.key(key), observed, value)?;
        Ok(self.landed(out, value))
    }

    /// A swap's outcome: `None` when written, or when reported failed on a
    /// store Cairn cannot vouch for with a fresh read of exactly `value`
    /// (see [`swap`](Self::swap)); else the fresh read.
    fn landed(&self, out: Swap, value: &[u8]) -> Option<Held> {
        match cairn_kv::landed(out, value, !self.confirm) {
            Swap::Done => None,
            Swap::Failed(fresh) => Some(fresh.into()),
        }
    }

    /// Reads of several keys for later swaps, in one call.
    pub(crate) fn read_many(&self, keys: &[String]) -> Result<Vec<Held>, Failure> {
        let full: Vec<String> = keys.iter().map(|k| self.key(k)).collect();
        let refs: Vec<&str> = full.iter().map(String::as_str).collect();
        Ok(self.store.read_many(BUCKET, &refs)?.into_iter().map(Held::from).collect())
    }

    /// Several independent swaps in one call: per swap, `None` when written
    /// (as [`swap`](Self::swap) tells it), else a fresh read.
    pub(crate) fn swap_each(&self, swaps: &[(String, Observed, Vec<u8>)]) -> Result<Vec<Option<Held>>, Failure> {
        let full: Vec<String> = swaps.iter().map(|(k, _, _)| self.key(k)).collect();
        let refs: Vec<(&str, Observed, &[u8])> = full.iter().zip(swaps).map(|(k, (_, o, v))| (k.as_str(), *o, v.as_slice())).collect();
        let outs = self.store.swap_each(BUCKET, &refs)?;
        Ok(outs.into_iter().zip(swaps).map(|(out, (_, _, value))| self.landed(out, value)).collect())
    }

    /// Rewrites records by compare-and-swap, 512 to a batch (one
    /// [`read_many`](Self::read_many) and one [`swap_each`](Self::swap_each)
    /// a round, the lost ones again): `f` turns a record's bytes (absent:
    /// `None`) into its new bytes, or `None` to leave it. Refused as `busy`
    /// (with that message) after [`MAX_ATTEMPTS`] rounds.
    pub(crate) fn rewrite_many(&self, keys: Vec<String>, busy: &str, mut f: impl FnMut(&str, Option<&[u8]>) -> Out<Option<Vec<u8>>>) -> Out<()> {
        for chunk in keys.chunks(512) {
            let mut pending: Vec<String> = chunk.to_vec();
            for attempt in 0.. {
                if pending.is_empty() {
                    break;
                }
                if attempt == MAX_ATTEMPTS {
                    return Err(Refusal::busy(busy).into());
                }
                let reads = self.read_many(&pending)?;
                let mut writes = Vec::new();
                for (k, held) in pending.iter().zip(reads) {
                    if let Some(bytes) = f(k, held.value.as_deref())? {
                        writes.push((k.clone(), held.observed, bytes));
                    }
                }
                let out = self.swap_each(&writes)?;
                pending = writes.into_iter().zip(out).filter(|(_, lost)| lost.is_some()).map(|((k, _, _), _)| k).collect();
            }
        }
        Ok(())
    }

    pub(crate) fn set(&self, key: &str, value: &[u8]) -> Result<(), Failure> {
        if let Some(staged) = self.staging {
            cairn_kv::check_key(&self.key(key))?;
            cairn_kv::check_value(value)?;
            staged.borrow_mut().push((key.to_string(), value.to_vec()));
            return Ok(());
        }
        Ok(self.store.set(BUCKET, &self.key(key), value)?)
    }

    /// Several immutable records in one call (one `wasi:keyvalue/batch` call in components).
    pub(crate) fn set_many<K: AsRef<str>, V: AsRef<[u8]>>(&self, pairs: &[(K, V)]) -> Result<(), Failure> {
        if self.staging.is_some() {
            for (k, v) in pairs {
                self.set(k.as_ref(), v.as_ref())?;
            }
            return Ok(());
        }
        let full: Vec<(String, &[u8])> = pairs.iter().map(|(k, v)| (self.key(k.as_ref()), v.as_ref())).collect();
        let refs: Vec<(&str, &[u8])> = full.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        Ok(self.store.set_many(BUCKET, &refs)?)
    }

    /// Up to `limit` keys under `prefix` (relative to the tenant), in key
    /// order, after `prefix` + `after` (or from the start of the prefix).
    pub(crate) fn list_prefix(&self, prefix: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>, Failure> {
        let full = self.key(prefix);
        let after = after.map(|a| format!("{full}{a}"));
        let keys = self.store.list_prefix(BUCKET, &full, after.as_deref(), limit)?;
        let strip = self.prefix.len();
        Ok(keys.into_iter().map(|k| k[strip..].to_string()).collect())
    }
}

pub use cairn_kv::{MAX_KEY_BYTES, MAX_VALUE_BYTES};

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_kv::memory::MemoryStore;

    #[test]
    fn the_tenant_prefix_counts_toward_the_key_limit() {
        let store = MemoryStore::new();
        let t = TenantKv::new(&store, "acme").unwrap();
        let fits = "k".repeat(MAX_KEY_BYTES - "t/acme/".len());
        t.set(&fits, b"x").unwrap();
        assert_eq!(store.get(BUCKET, &format!("t/acme/{fits}")).unwrap().as_deref(), Some(&b"x"[..]));
        let over = format!("{fits}k");
        assert!(matches!(
            t.set(&over, b"x"),
            Err(Failure::Store(cairn_kv::Error::KeyTooLong { len })) if len == MAX_KEY_BYTES + 1
        ));
    }

    #[test]
    fn tenant_kv_prefixes_keys_and_keeps_tenants_apart() {
        let kv = MemoryStore::new();
        let a = TenantKv::new(&kv, "a").unwrap();
        let b = TenantKv::new(&kv, "b").unwrap();
        a.set("note/x", b"A").unwrap();
        assert_eq!(b.get("note/x").unwrap(), None);
        assert_eq!(kv.get(BUCKET, "t/a/note/x").unwrap(), Some(b"A".to_vec()));
    }

    #[test]
    fn tenant_ids_outside_the_alphabet_get_no_view() {
        let store = MemoryStore::new();
        for bad in ["", "Acme", "a/b", "a.b", &"a".repeat(65)] {
            assert!(TenantKv::new(&store, bad).is_none(), "{bad:?}");
        }
    }
}
