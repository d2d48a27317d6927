//! Host side of `wasi:keyvalue@0.2.0-draft2` (store, atomics, batch) and of
//! `fermyon:spin/key-value@2.0.0`, over a [`cairn_kv::Store`].
//!
//! Permissions come from the manifest: a component may open only the labels
//! in its `key_value_stores` (`access-denied` otherwise); a label the host
//! has no store for is `no-such-store`. A label is a bucket of the backend.

use crate::bindings::fermyon::spin::key_value as spin_kv;
use crate::bindings::wasi::keyvalue::{atomics, batch, store};
use crate::instance::Ctx;
use cairn_kv::{Observed, Store, Swap};
use std::sync::Arc;
use wasmtime::component::Resource;

/// An open bucket: its label and the store behind it, checked at open.
pub struct Bucket {
    label: String,
    store: Arc<dyn Store>,
}

/// A CAS handle: the key and what was observed.
pub struct CasHandle {
    label: String,
    store: Arc<dyn Store>,
    key: String,
    value: Option<Vec<u8>>,
    observed: Observed,
}

fn other(e: cairn_kv::Error) -> store::Error {
    store::Error::Other(e.to_string())
}

fn table_err(e: wasmtime::component::ResourceTableError) -> wasmtime::Error {
    wasmtime::Error::from(e)
}

impl Ctx {
    fn check_label(&self, label: &str) -> Result<Arc<dyn Store>, store::Error> {
        if !self.component.key_value_stores.iter().any(|l| l == label) {
            return Err(store::Error::AccessDenied);
        }
        self.app.stores.get(label).cloned().ok_or(store::Error::NoSuchStore)
    }

    fn label(&self, b: &Resource<Bucket>) -> wasmtime::Result<(String, Arc<dyn Store>)> {
        let b = self.table.get(b).map_err(table_err)?;
        Ok((b.label.clone(), b.store.clone()))
    }
}

impl store::Host for Ctx {
    fn open(&mut self, identifier: String) -> wasmtime::Result<Result<Resource<Bucket>, store::Error>> {
        match self.check_label(&identifier) {
            Ok(store) => Ok(Ok(self.table.push(Bucket { label: identifier, store }).map_err(table_err)?)),
            Err(e) => Ok(Err(e)),
        }
    }
}

impl store::HostBucket for Ctx {
    fn get(&mut self, b: Resource<Bucket>, key: String) -> wasmtime::Result<Result<Option<Vec<u8>>, store::Error>> {
        let (label, store) = self.label(&b)?;
        Ok(store.get(&label, &key).map_err(other))
    }
    fn set(&mut self, b: Resource<Bucket>, key: String, value: Vec<u8>) -> wasmtime::Result<Result<(), store::Error>> {
        let (label, store) = self.label(&b)?;
        Ok(store.set(&label, &key, &value).map_err(other))
    }
    fn delete(&mut self, b: Resource<Bucket>, key: String) -> wasmtime::Result<Result<(), store::Error>> {
        let (label, store) = self.label(&b)?;
        Ok(store.delete(&label, &key).map_err(other))
    }
    fn exists(&mut self, b: Resource<Bucket>, key: String) -> wasmtime::Result<Result<bool, store::Error>> {
        let (label, store) = self.label(&b)?;
        Ok(store.exists(&label, &key).map_err(other))
    }
    fn list_keys(
        &mut self,
        b: Resource<Bucket>,
        cursor: Option<String>,
    ) -> wasmtime::Result<Result<store::KeyResponse, store::Error>> {
        // The cursor is the key to list after (Cairn's guests start a
        // listing there); small pages, since a guest listing a prefix stops
        // at its end.
        const PAGE: usize = 256;
        let (label, store) = self.label(&b)?;
        Ok(store.list_keys(&label, cursor.as_deref(), PAGE).map_err(other).map(|keys| {
            let cursor = (keys.len() == PAGE).then(|| keys.last().cloned()).flatten();
            store::KeyResponse { keys, cursor }
        }))
    }
    fn drop(&mut self, b: Resource<Bucket>) -> wasmtime::Result<()> {
        self.table.delete(b).map_err(table_err)?;
        Ok(())
    }
}

impl atomics::Host for Ctx {
    fn increment(&mut self, b: Resource<Bucket>, key: String, delta: i64) -> wasmtime::Result<Result<i64, store::Error>> {
        let (label, store) = self.label(&b)?;
        Ok(store.increment(&label, &key, delta).map_err(other))
    }

    fn swap(
        &mut self,
        cas: Resource<CasHandle>,
        value: Vec<u8>,
    ) -> wasmtime::Result<Result<(), atomics::CasError>> {
        let handle = self.table.delete(cas).map_err(table_err)?;
        match handle.store.swap(&handle.label, &handle.key, handle.observed, &value) {
            Ok(Swap::Done) => Ok(Ok(())),
            Ok(Swap::Failed(fresh)) => {
                let fresh = CasHandle { value: fresh.value, observed: fresh.observed, ..handle };
                let res = self.table.push(fresh).map_err(table_err)?;
                Ok(Err(atomics::CasError::CasFailed(res)))
            }
            Err(e) => Ok(Err(atomics::CasError::StoreError(other(e)))),
        }
    }
}

impl atomics::HostCas for Ctx {
    fn new(&mut self, b: Resource<Bucket>, key: String) -> wasmtime::Result<Result<Resource<CasHandle>, store::Error>> {
        let (label, store) = self.label(&b)?;
        match store.read(&label, &key) {
            Ok(read) => {
                let h = CasHandle { label, store, key, value: read.value, observed: read.observed };
                Ok(Ok(self.table.push(h).map_err(table_err)?))
            }
            Err(e) => Ok(Err(other(e))),
        }
    }
    fn current(&mut self, cas: Resource<CasHandle>) -> wasmtime::Result<Result<Option<Vec<u8>>, store::Error>> {
        Ok(Ok(self.table.get(&cas).map_err(table_err)?.value.clone()))
    }
    fn drop(&mut self, cas: Resource<CasHandle>) -> wasmtime::Result<()> {
        self.table.delete(cas).map_err(table_err)?;
        Ok(())
    }
}

impl batch::Host for Ctx {
    fn get_many(
        &mut self,
        b: Resource<Bucket>,
        keys: Vec<String>,
    ) -> wasmtime::Result<Result<Vec<(String, Option<Vec<u8>>)>, store::Error>> {
        let (label, store) = self.label(&b)?;
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            match store.get(&label, &key) {
                Ok(v) => out.push((key, v)),
                Err(e) => return Ok(Err(other(e))),
            }
        }
        Ok(Ok(out))
    }
    fn set_many(
        &mut self,
        b: Resource<Bucket>,
        pairs: Vec<(String, Vec<u8>)>,
    ) -> wasmtime::Result<Result<(), store::Error>> {
        let (label, store) = self.label(&b)?;
        let refs: Vec<(&str, &[u8])> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_slice())).collect();
        Ok(store.set_many(&label, &refs).map_err(other))
    }
    fn delete_many(&mut self, b: Resource<Bucket>, keys: Vec<String>) -> wasmtime::Result<Result<(), store::Error>> {
        let (label, store) = self.label(&b)?;
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        Ok(store.delete_many(&label, &refs).map_err(other))
    }
}

fn spin_err(e: store::Error) -> spin_kv::Error {
    match e {
        store::Error::NoSuchStore => spin_kv::Error::NoSuchStore,
        store::Error::AccessDenied => spin_kv::Error::AccessDenied,
        store::Error::Other(m) => spin_kv::Error::Other(m),
    }
}

impl spin_kv::Host for Ctx {}

impl spin_kv::HostStore for Ctx {
    fn open(&mut self, label: String) -> wasmtime::Result<Result<Resource<Bucket>, spin_kv::Error>> {
        Ok(store::Host::open(self, label)?.map_err(spin_err))
    }
    fn get(&mut self, s: Resource<Bucket>, key: String) -> wasmtime::Result<Result<Option<Vec<u8>>, spin_kv::Error>> {
        Ok(store::HostBucket::get(self, s, key)?.map_err(spin_err))
    }
    fn set(&mut self, s: Resource<Bucket>, key: String, value: Vec<u8>) -> wasmtime::Result<Result<(), spin_kv::Error>> {
        Ok(store::HostBucket::set(self, s, key, value)?.map_err(spin_err))
    }
    fn delete(&mut self, s: Resource<Bucket>, key: String) -> wasmtime::Result<Result<(), spin_kv::Error>> {
        Ok(store::HostBucket::delete(self, s, key)?.map_err(spin_err))
    }
    fn exists(&mut self, s: Resource<Bucket>, key: String) -> wasmtime::Result<Result<bool, spin_kv::Error>> {
        Ok(store::HostBucket::exists(self, s, key)?.map_err(spin_err))
    }
    fn get_keys(&mut self, s: Resource<Bucket>) -> wasmtime::Result<Result<Vec<String>, spin_kv::Error>> {
        let (label, store) = self.label(&s)?;
        let mut all = Vec::new();
        loop {
            match store.list_keys(&label, all.last().map(String::as_str), 1000) {
                Ok(page) if page.is_empty() => return Ok(Ok(all)),
                Ok(page) => all.extend(page),
                Err(e) => return Ok(Err(spin_kv::Error::Other(e.to_string()))),
            }
        }
    }
    fn drop(&mut self, s: Resource<Bucket>) -> wasmtime::Result<()> {
        store::HostBucket::drop(self, s)
    }
}
