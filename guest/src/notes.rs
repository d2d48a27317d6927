//! The notes core on the host's store: [`cairn_notes::Kv`] over
//! `wasi:keyvalue`, and [`cairn_notes::Env`] over `wasi:clocks`/`wasi:random`.

use crate::kv::{Bucket, Cas, Swap, describe};
use cairn_notes::{Env, Kv, KvError};

/// The `default` store as the notes core sees it.
pub struct GuestKv(pub Bucket);

impl GuestKv {
    /// Open the `default` store.
    pub fn open() -> Result<Self, KvError> {
        Bucket::open("default").map(GuestKv).map_err(|e| KvError::Store(describe(&e)))
    }
}

fn store(e: crate::kv::Error) -> KvError {
    KvError::Store(describe(&e))
}

impl Kv for GuestKv {
    type Cas = Cas;
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        self.0.get(key).map_err(store)
    }
    fn read_cas(&self, key: &str) -> Result<(Cas, Option<Vec<u8>>), KvError> {
        let cas = self.0.read(key).map_err(store)?;
        let value = cas.value().map_err(store)?;
        Ok((cas, value))
    }
    fn swap(&self, cas: Cas, value: Vec<u8>) -> Result<bool, KvError> {
        match self.0.swap(cas, &value).map_err(store)? {
            Swap::Done => Ok(true),
            Swap::Conflict(_) => Ok(false),
        }
    }
    fn set(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        self.0.set(key, value).map_err(store)
    }
    /// One `wasi:keyvalue/batch.set-many` call: one host round trip.
    fn set_many(&self, pairs: &[(&str, &[u8])]) -> Result<(), KvError> {
        let owned: Vec<(String, Vec<u8>)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_vec())).collect();
        self.0.set_many(&owned).map_err(store)
    }
    fn delete(&self, key: &str) -> Result<(), KvError> {
        self.0.delete(key).map_err(store)
    }
}

/// The host's clock and randomness.
pub struct HostEnv;

/// Microseconds since the epoch, from the host's wall clock.
pub fn now_us() -> u64 {
    let now = wasi::clocks::wall_clock::now();
    now.seconds * 1_000_000 + u64::from(now.nanoseconds / 1_000)
}

impl Env for HostEnv {
    fn now_us(&self) -> u64 {
        now_us()
    }
    fn random_u64(&mut self) -> u64 {
        crate::random_u64()
    }
}

/// The notes core's view of a verified principal.
pub fn identity(p: &cairn_auth::Principal) -> cairn_notes::Identity {
    cairn_notes::Identity {
        tenant: p.tenant.clone(),
        subject: p.subject.clone(),
        display_name: p.name.clone(),
        actor_type: match p.actor {
            cairn_auth::Actor::Agent => cairn_notes::ActorType::Agent,
            cairn_auth::Actor::Human => cairn_notes::ActorType::Human,
        },
        role: match p.role {
            cairn_auth::Role::Admin => cairn_notes::Role::Admin,
            cairn_auth::Role::Member => cairn_notes::Role::Member,
        },
    }
}
