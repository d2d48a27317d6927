//! `cairn-auth`: who is calling, proven twice.
//!
//! - [`jwt`]: the OAuth 2.1 resource server check of a bearer JWT: signature
//!   against configured keys (a JWKS), the algorithm pinned by the key, `iss`,
//!   `aud`, `exp`/`nbf`; the claims become a [`Principal`].
//! - [`identity`]: the principal as the router hands it to a tool component,
//!   signed with HMAC-SHA256 under a secret only components know, so nobody
//!   outside can forge it (the token itself never travels to tools).
//! - [`mint`]: Ed25519 keys and tokens for local use (`cairn token`, tests).
//!
//! Pure Rust, no wasm dependencies: the router and REST components and the
//! host all use this one crate.

pub mod identity;
pub mod jwt;
pub mod mint;

/// Compare two byte strings in time independent of where they differ (for
/// operator tokens: the host's `/metrics`, the components' probe and sweep).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

use serde::{Deserialize, Serialize};

/// Agent or person, and the role in the tenant: the notes core's types, so a
/// verified principal needs no translation to become the core's identity.
pub use cairn_notes::{ActorType as Actor, Role};

/// The verified caller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    /// Tenant id.
    pub tenant: String,
    /// Subject (`sub`).
    pub subject: String,
    /// Display name (`name`, else the subject).
    pub name: String,
    /// Agent or human.
    pub actor: Actor,
    /// Admin or member.
    pub role: Role,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// Expiry of the token it came from (seconds since the epoch).
    pub exp: u64,
}

impl Principal {
    /// Whether the principal holds `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}
