//! Local keys and tokens: the key `cairn up` creates in its state dir, the
//! tokens `cairn token` mints with it, and the bad tokens tests need.

use crate::{Actor, Role};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// An Ed25519 signing key.
pub struct LocalKey {
    seed: [u8; 32],
    /// Key id published in the JWKS and put in token headers.
    pub kid: String,
}

impl LocalKey {
    /// From 32 secret bytes.
    pub fn from_seed(seed: [u8; 32]) -> Self {
        let public = ed25519_dalek::SigningKey::from_bytes(&seed).verifying_key().to_bytes();
        let kid = format!("cairn-{}", &B64.encode(sha(&public))[..16]);
        Self { seed, kid }
    }

    /// The 32 secret bytes (to store).
    pub fn seed(&self) -> [u8; 32] {
        self.seed
    }

    /// The public JWKS (`{"keys":[…]}`).
    pub fn jwks(&self) -> String {
        let public = ed25519_dalek::SigningKey::from_bytes(&self.seed).verifying_key().to_bytes();
        json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": B64.encode(public), "kid": self.kid, "alg": "EdDSA", "use": "sig"}]})
            .to_string()
    }

    /// Sign arbitrary claims (tests use this for wrong `aud`, expired, …).
    pub fn sign(&self, claims: &Value) -> String {
        // PKCS#8 wrapping of an Ed25519 seed (RFC 8410).
        let mut der = vec![0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];
        der.extend_from_slice(&self.seed);
        let key = EncodingKey::from_ed_der(&der);
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &key).expect("Ed25519 signing does not fail")
    }
}

fn sha(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

/// What a token says.
#[derive(Debug, Clone)]
pub struct TokenSpec {
    /// Issuer.
    pub issuer: String,
    /// Audience (the resource URL).
    pub audience: String,
    /// Tenant.
    pub tenant: String,
    /// Subject.
    pub subject: String,
    /// Display name.
    pub name: Option<String>,
    /// Agent or human.
    pub actor: Actor,
    /// Role.
    pub role: Role,
    /// Space-separated scopes.
    pub scope: String,
    /// Seconds since the epoch: issued at.
    pub now: u64,
    /// Lifetime in seconds.
    pub ttl: u64,
}

impl TokenSpec {
    /// The claims of this token.
    pub fn claims(&self) -> Value {
        let mut c = json!({
            "iss": self.issuer, "aud": self.audience, "sub": self.subject, "tenant": self.tenant,
            "actor": self.actor, "role": self.role, "scope": self.scope,
            "iat": self.now, "nbf": self.now, "exp": self.now + self.ttl,
        });
        if let Some(n) = &self.name {
            c["name"] = json!(n);
        }
        c
    }
}

/// A token with the header `{"alg":"none"}` and no signature.
pub fn unsigned(claims: &Value) -> String {
    format!("{}.{}.", B64.encode(br#"{"alg":"none","typ":"JWT"}"#), B64.encode(claims.to_string()))
}
