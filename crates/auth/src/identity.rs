//! The identity header from the router to a tool component.
//!
//! `cairn-identity: <base64url(JSON)>.<base64url(HMAC-SHA256)>`, keyed with
//! the `identity_secret` variable that only components hold (at least
//! [`MIN_SECRET_BYTES`]). The JSON is the principal bound to one call: the
//! tool it is for, its method, path and the SHA-256 of its body, a nonce,
//! and an expiry [`TTL_SECONDS`] after signing. A tool refuses a call whose
//! header is missing, altered or signed with another secret, was signed for
//! another tool or call (a captured header replayed with other arguments or
//! elsewhere), or has expired; the nonce lets it refuse the same header a
//! second time within its window (the tool keeps the nonces it has seen
//! until they expire: see `cairn_guest::tool`).

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

/// How long a signed identity is good for, in seconds: long enough for a
/// call to cross to a tool host, short enough that a captured header is
/// soon worthless.
pub const TTL_SECONDS: u64 = 60;

/// Shortest secret that signs or verifies, in bytes.
pub const MIN_SECRET_BYTES: usize = 32;

/// The one call an identity is signed for: the tool, its method, its path and its body.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The tool's name (`edit_note_tab`): the only tool that accepts it.
    pub tool: &'a str,
    /// `POST`.
    pub method: &'a str,
    /// `/tools/<tool>`.
    pub path: &'a str,
    /// The arguments, exactly as sent.
    pub body: &'a [u8],
}

/// What a header carries: the principal, bound to one call until `expires`.
#[derive(serde::Serialize, serde::Deserialize)]
struct Signed {
    principal: Principal,
    tool: String,
    nonce: String,
    method: String,
    path: String,
    body_sha256: String,
    expires: u64,
}

/// Why a header was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Missing, malformed, altered, or signed with another secret.
    Invalid,
    /// Signed for another method, path or body: a captured header replayed.
    OtherCall,
    /// Past its expiry.
    Expired,
    /// The secret is shorter than [`MIN_SECRET_BYTES`]: the operator's to fix.
    WeakSecret,
    /// Seen before: each header is good for one call (checked by the tool,
    /// which keeps the nonces it has seen).
    Replayed,
}

/// A verified header: who, and what makes this header single-use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The caller.
    pub principal: Principal,
    /// The signer's nonce: the same header seen twice has the same one.
    pub nonce: String,
    /// When the header stops verifying (Unix seconds).
    pub expires: u64,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refused::Invalid => "missing or invalid cairn-identity: tools are reached through the router",
            Refused::OtherCall => "this cairn-identity was signed for another call (tool, method, path or body)",
            Refused::Expired => "this cairn-identity has expired",
            Refused::WeakSecret => "the identity_secret variable is too short: it must be at least 32 bytes",
            Refused::Replayed => "this cairn-identity was already used: each one is good for one call",
        })
    }
}

impl std::error::Error for Refused {}

fn digest(body: &[u8]) -> String {
    Sha256::digest(body).iter().map(|b| format!("{b:02x}")).collect()
}

/// Signs a principal into a header value for one call, good for
/// [`TTL_SECONDS`] from `now_s` (Unix seconds); `nonce` is the signer's
/// fresh random value (a tool accepts each nonce once). A secret shorter
/// than [`MIN_SECRET_BYTES`] signs nothing.
pub fn sign(p: &Principal, secret: &str, call: &Call, now_s: u64, nonce: &str) -> Result<String, Refused> {
    if secret.len() < MIN_SECRET_BYTES {
        return Err(Refused::WeakSecret);
    }
    let signed = Signed {
        principal: p.clone(),
        tool: call.tool.to_string(),
        nonce: nonce.to_string(),
        method: call.method.to_string(),
        path: call.path.to_string(),
        body_sha256: digest(call.body),
        expires: now_s + TTL_SECONDS,
    };
    let body = B64.encode(serde_json::to_vec(&signed).expect("a signed identity always serializes"));
    let mac = hmac_sha256(secret.as_bytes(), body.as_bytes());
    Ok(format!("{body}.{}", B64.encode(mac)))
}

/// Verifies a header value for the call it arrived with, at `now_s`.
/// Whether its nonce was seen before is the caller's to check.
pub fn verify(value: &str, secret: &str, call: &Call, now_s: u64) -> Result<Verified, Refused> {
    if secret.len() < MIN_SECRET_BYTES {
        return Err(Refused::WeakSecret);
    }
    let (body, mac) = value.split_once('.').ok_or(Refused::Invalid)?;
    let mac = B64.decode(mac).map_err(|_| Refused::Invalid)?;
    let want = hmac_sha256(secret.as_bytes(), body.as_bytes());
    if !crate::constant_time_eq(&mac, &want) {
        return Err(Refused::Invalid);
    }
    let signed: Signed = serde_json::from_slice(&B64.decode(body).map_err(|_| Refused::Invalid)?).map_err(|_| Refused::Invalid)?;
    if signed.tool != call.tool
        || signed.method != call.method
        || signed.path != call.path
        || !crate::constant_time_eq(signed.body_sha256.as_bytes(), digest(call.body).as_bytes())
    {
        return Err(Refused::OtherCall);
    }
    if now_s >= signed.expires {
        return Err(Refused::Expired);
    }
    Ok(Verified { principal: signed.principal, nonce: signed.nonce, expires: signed.expires })
}
