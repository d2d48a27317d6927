//! The identity header from the router to a tool component.
//!
//! `cairn-identity: <base64url(JSON principal)>.<base64url(HMAC-SHA256)>`,
//! keyed with the `identity_secret` variable that only components hold. A
//! tool refuses a call whose header is missing, altered or signed with
//! another secret.

use crate::Principal;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use sha2::{Digest, Sha256};

/// Header name.
pub const HEADER: &str = "cairn-identity";

/// HMAC-SHA256 (RFC 2104).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(message);
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// Sign a principal into a header value.
pub fn sign(p: &Principal, secret: &str) -> String {
    let body = B64.encode(serde_json::to_vec(p).expect("a principal always serializes"));
    let mac = hmac_sha256(secret.as_bytes(), body.as_bytes());
    format!("{body}.{}", B64.encode(mac))
}

/// Verify a header value; `None` when it is missing, altered or foreign.
pub fn verify(value: &str, secret: &str) -> Option<Principal> {
    if secret.is_empty() {
        return None;
    }
    let (body, mac) = value.split_once('.')?;
    let mac = B64.decode(mac).ok()?;
    let want = hmac_sha256(secret.as_bytes(), body.as_bytes());
    if mac.len() != want.len() || mac.iter().zip(want).fold(0u8, |a, (x, y)| a | (x ^ y)) != 0 {
        return None;
    }
    serde_json::from_slice(&B64.decode(body).ok()?).ok()
}
