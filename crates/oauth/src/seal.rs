//! Sealed values: JSON with an HMAC-SHA256 under a key derived from the
//! signing key and a purpose, so a value sealed for one purpose (a client
//! id) never opens as another (a consent request). What the server seals it
//! need not store: every host that holds the key opens it.

use crate::wire::{b64, unb64};
use cairn_auth::identity::hmac_sha256;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The sealing key of one purpose.
#[derive(Clone)]
pub struct Sealer {
    key: [u8; 32],
}

impl Sealer {
    /// The key for `purpose`, derived from the signing key's secret bytes.
    pub fn new(signing_seed: &[u8; 32], purpose: &str) -> Self {
        Sealer { key: hmac_sha256(signing_seed, format!("cairn-oauth/{purpose}").as_bytes()) }
    }

    /// `<base64url(JSON)>.<base64url(MAC)>`.
    pub fn seal<T: Serialize>(&self, value: &T) -> String {
        let body = b64(&serde_json::to_vec(value).expect("sealed values serialize"));
        let mac = hmac_sha256(&self.key, body.as_bytes());
        format!("{body}.{}", b64(&mac))
    }

    /// A secret derived from `input` (base64url of its MAC): the same input
    /// always gives the same secret, which nobody can compute without the key.
    pub fn derive(&self, input: &str) -> String {
        b64(&hmac_sha256(&self.key, input.as_bytes()))
    }

    /// The value, if `sealed` is one this key sealed and it parses as `T`.
    pub fn open<T: DeserializeOwned>(&self, sealed: &str) -> Option<T> {
        let (body, mac) = sealed.rsplit_once('.')?;
        let want = hmac_sha256(&self.key, body.as_bytes());
        let got = unb64(mac)?;
        if !cairn_auth::constant_time_eq(&want, &got) {
            return None;
        }
        serde_json::from_slice(&unb64(body)?).ok()
    }
}
