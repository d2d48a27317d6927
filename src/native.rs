//! The notes core called natively, in this process, on the same stores the
//! components use: the baseline every benchmark compares the stack against.

use cairn_kv::{Observed, Store, Swap};
use cairn_notes::{Env, Kv, KvError};
use std::sync::Arc;

/// [`cairn_notes::Kv`] over a host store's `default` bucket.
pub struct NativeKv(pub Arc<dyn Store>);

const BUCKET: &str = "default";

fn err(e: cairn_kv::Error) -> KvError {
    KvError::Store(e.to_string())
}

impl Kv for NativeKv {
    type Cas = (String, Observed);
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        self.0.get(BUCKET, key).map_err(err)
    }
    fn read_cas(&self, key: &str) -> Result<(Self::Cas, Option<Vec<u8>>), KvError> {
        let read = self.0.read(BUCKET, key).map_err(err)?;
        Ok(((key.to_string(), read.observed), read.value))
    }
    fn swap(&self, cas: Self::Cas, value: Vec<u8>) -> Result<bool, KvError> {
        Ok(matches!(self.0.swap(BUCKET, &cas.0, cas.1, &value).map_err(err)?, Swap::Done))
    }
    fn set(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        self.0.set(BUCKET, key, value).map_err(err)
    }
    fn set_many(&self, pairs: &[(&str, &[u8])]) -> Result<(), KvError> {
        self.0.set_many(BUCKET, pairs).map_err(err)
    }
    fn delete(&self, key: &str) -> Result<(), KvError> {
        self.0.delete(BUCKET, key).map_err(err)
    }
}

/// The system clock and a xorshift generator seeded from it.
pub struct NativeEnv(u64);

impl NativeEnv {
    /// Seeded from the clock and `salt`.
    pub fn new(salt: u64) -> Self {
        Self((Self::now() ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1)
    }
    fn now() -> u64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(1)
    }
}

impl Env for NativeEnv {
    fn now_us(&self) -> u64 {
        Self::now()
    }
    fn random_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}
