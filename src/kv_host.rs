//! Host side of `wasi:keyvalue@0.2.0-draft2` (store, atomics, batch) and of
//! `fermyon:spin/key-value@2.0.0`, over a [`cairn_kv::Store`].
//!
//! Permissions come from the manifest: a component may open only the labels
//! in its `key_value_stores` (`access-denied` otherwise); a label the host
//! has no store for is `no-such-store`. A label is a bucket of the backend.
//!
//! A call the store says may wait ([`Store::waits`]: a SQLite write under
//! `--fsync`, any round trip to Redis) runs on tokio's blocking pool and the
//! instance awaits it, so the request threads (the host's connection threads) never sit idle
//! waiting for a disk or a server, and under `--fsync` every request whose
//! write is in flight at once joins the same group commit and its one flush.
//! Every other call (SQLite's reads, its writes without `--fsync`, the
//! in-memory store) runs in place: a hop to another thread and back would
//! cost more than the call waits.

use crate::bindings::fermyon::spin::key_value as spin_kv;
use crate::bindings::wasi::keyvalue::{atomics, batch, store};
use crate::instance::Ctx;
use cairn_kv::{Observed, Store, Swap};
use std::future::Future;
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

/// Whether a call of this kind (`write` or a read) on `store` may wait. If
/// it may, the instance gives back its permit for costly work first: an
/// instance waiting on its store computes nothing, so a hung store never
/// holds up another request's compute (the permit is asked for again if it
/// still computes long after the wait), as an outbound call does
/// (`instance::Waits`).
fn may_wait(load: &crate::pool::Load, store: &dyn Store, write: bool) -> bool {
    let waits = store.waits().call(write);
    if waits {
        load.release_costly();
    }
    waits
}

/// Run `f` on `store`: in place, or on the blocking pool when the call
/// [`may_wait`] (the host runs every instance on tokio). A call that cannot
/// run to its end (the runtime is shutting down) is a store failure, never
/// a silent success.
async fn on_store<R: Send + 'static>(
    store: Arc<dyn Store>,
    waits: bool,
    f: impl FnOnce(&dyn Store) -> cairn_kv::Result<R> + Send + 'static,
) -> cairn_kv::Result<R> {
    if !waits {
        return f(store.as_ref());
    }
    match tokio::task::spawn_blocking(move || f(store.as_ref())).await {
        Ok(r) => r,
        Err(e) => Err(cairn_kv::Error::Unavailable(format!("the store call did not run to its end: {e}"))),
    }
}

/// [`on_store`] for a bucket resource of this instance.
fn on_bucket<R: Send + 'static>(
    ctx: &Ctx,
    b: &Resource<Bucket>,
    write: bool,
    f: impl FnOnce(&dyn Store, &str) -> cairn_kv::Result<R> + Send + 'static,
) -> wasmtime::Result<impl Future<Output = Result<R, store::Error>> + Send + 'static> {
    let (label, store) = ctx.label(b)?;
    let waits = may_wait(&ctx.in_flight, store.as_ref(), write);
    Ok(async move { on_store(store, waits, move |s| f(s, &label)).await.map_err(other) })
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
    async fn get(&mut self, b: Resource<Bucket>, key: String) -> wasmtime::Result<Result<Option<Vec<u8>>, store::Error>> {
        Ok(on_bucket(self, &b, false, move |s, l| s.get(l, &key))?.await)
    }
    async fn set(&mut self, b: Resource<Bucket>, key: String, value: Vec<u8>) -> wasmtime::Result<Result<(), store::Error>> {
        Ok(on_bucket(self, &b, true, move |s, l| s.set(l, &key, &value))?.await)
    }
    async fn delete(&mut self, b: Resource<Bucket>, key: String) -> wasmtime::Result<Result<(), store::Error>> {
        Ok(on_bucket(self, &b, true, move |s, l| s.delete(l, &key))?.await)
    }
    async fn exists(&mut self, b: Resource<Bucket>, key: String) -> wasmtime::Result<Result<bool, store::Error>> {
        Ok(on_bucket(self, &b, false, move |s, l| s.exists(l, &key))?.await)
    }
    async fn list_keys(&mut self, b: Resource<Bucket>, cursor: Option<String>) -> wasmtime::Result<Result<store::KeyResponse, store::Error>> {
        // The cursor is the key to list after (Cairn's guests start a
        // listing there); small pages, since a guest listing a prefix stops
        // at its end.
        const PAGE: usize = 256;
        let keys = on_bucket(self, &b, false, move |s, l| s.list_keys(l, cursor.as_deref(), PAGE))?.await;
        Ok(keys.map(|keys| {
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
    async fn increment(&mut self, b: Resource<Bucket>, key: String, delta: i64) -> wasmtime::Result<Result<i64, store::Error>> {
        Ok(on_bucket(self, &b, true, move |s, l| s.increment(l, &key, delta))?.await)
    }

    async fn swap(&mut self, cas: Resource<CasHandle>, value: Vec<u8>) -> wasmtime::Result<Result<(), atomics::CasError>> {
        let CasHandle { label, store, key, observed, .. } = self.table.delete(cas).map_err(table_err)?;
        // The key and label go with the call and come back for a fresh handle.
        let waits = may_wait(&self.in_flight, store.as_ref(), true);
        let swapped = on_store(store.clone(), waits, move |s| Ok((s.swap(&label, &key, observed, &value)?, label, key))).await;
        match swapped {
            Ok((Swap::Done, ..)) => Ok(Ok(())),
            Ok((Swap::Failed(fresh), label, key)) => {
                let fresh = CasHandle { label, store, key, value: fresh.value, observed: fresh.observed };
                let res = self.table.push(fresh).map_err(table_err)?;
                Ok(Err(atomics::CasError::CasFailed(res)))
            }
            Err(e) => Ok(Err(atomics::CasError::StoreError(other(e)))),
        }
    }
}

impl atomics::HostCas for Ctx {
    async fn new(&mut self, b: Resource<Bucket>, key: String) -> wasmtime::Result<Result<Resource<CasHandle>, store::Error>> {
        let (label, store) = self.label(&b)?;
        let waits = may_wait(&self.in_flight, store.as_ref(), false);
        match on_store(store.clone(), waits, move |s| Ok((s.read(&label, &key)?, label, key))).await {
            Ok((read, label, key)) => {
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
    async fn get_many(&mut self, b: Resource<Bucket>, keys: Vec<String>) -> wasmtime::Result<Result<Vec<(String, Option<Vec<u8>>)>, store::Error>> {
        Ok(on_bucket(self, &b, false, move |s, l| {
            let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            let values = s.get_many(l, &refs)?;
            Ok(keys.into_iter().zip(values).collect())
        })?
        .await)
    }
    async fn set_many(&mut self, b: Resource<Bucket>, pairs: Vec<(String, Vec<u8>)>) -> wasmtime::Result<Result<(), store::Error>> {
        Ok(on_bucket(self, &b, true, move |s, l| {
            let refs: Vec<(&str, &[u8])> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_slice())).collect();
            s.set_many(l, &refs)
        })?
        .await)
    }
    async fn delete_many(&mut self, b: Resource<Bucket>, keys: Vec<String>) -> wasmtime::Result<Result<(), store::Error>> {
        Ok(on_bucket(self, &b, true, move |s, l| {
            let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            s.delete_many(l, &refs)
        })?
        .await)
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
    async fn get(&mut self, s: Resource<Bucket>, key: String) -> wasmtime::Result<Result<Option<Vec<u8>>, spin_kv::Error>> {
        Ok(store::HostBucket::get(self, s, key).await?.map_err(spin_err))
    }
    async fn set(&mut self, s: Resource<Bucket>, key: String, value: Vec<u8>) -> wasmtime::Result<Result<(), spin_kv::Error>> {
        Ok(store::HostBucket::set(self, s, key, value).await?.map_err(spin_err))
    }
    async fn delete(&mut self, s: Resource<Bucket>, key: String) -> wasmtime::Result<Result<(), spin_kv::Error>> {
        Ok(store::HostBucket::delete(self, s, key).await?.map_err(spin_err))
    }
    async fn exists(&mut self, s: Resource<Bucket>, key: String) -> wasmtime::Result<Result<bool, spin_kv::Error>> {
        Ok(store::HostBucket::exists(self, s, key).await?.map_err(spin_err))
    }
    async fn get_keys(&mut self, s: Resource<Bucket>) -> wasmtime::Result<Result<Vec<String>, spin_kv::Error>> {
        let all = on_bucket(self, &s, false, |store, label| {
            let mut all: Vec<String> = Vec::new();
            loop {
                match store.list_keys(label, all.last().map(String::as_str), 1000)? {
                    page if page.is_empty() => return Ok(all),
                    page => all.extend(page),
                }
            }
        })?
        .await;
        Ok(all.map_err(spin_err))
    }
    fn drop(&mut self, s: Resource<Bucket>) -> wasmtime::Result<()> {
        store::HostBucket::drop(self, s)
    }
}
