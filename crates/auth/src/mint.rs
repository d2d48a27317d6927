//! Local keys and tokens: the key `cairn up` creates in its state dir, the
//! tokens `cairn token` mints with it, and the bad tokens tests need.

use crate::{Actor, Role};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// The public JWK of a private key, with a key id derived from it.
fn public_jwk(key: &EncodingKey, alg: Algorithm, prefix: &str) -> (Jwk, String) {
    let mut jwk = Jwk::from_encoding_key(key, alg).expect("a well-formed private key has a public JWK");
    let material = match &jwk.algorithm {
        AlgorithmParameters::OctetKeyPair(p) => p.x.clone(),
        AlgorithmParameters::EllipticCurve(p) => format!("{}{}", p.x, p.y),
        _ => String::new(),
    };
    let kid = format!("{prefix}-{}", &B64.encode(sha(material.as_bytes()))[..16]);
    jwk.common.key_id = Some(kid.clone());
    (jwk, kid)
}

fn sign_with(key: &EncodingKey, alg: Algorithm, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.to_string());
    jsonwebtoken::encode(&header, claims, key).expect("signing with a well-formed key does not fail")
}

/// An Ed25519 signing key.
pub struct LocalKey {
    seed: [u8; 32],
    /// Key id published in the JWKS and put in token headers.
    pub kid: String,
}

impl LocalKey {
    /// From 32 secret bytes.
    pub fn from_seed(seed: [u8; 32]) -> Self {
        let (_, kid) = public_jwk(&Self::encoding(&seed), Algorithm::EdDSA, "cairn");
        Self { seed, kid }
    }

    fn encoding(seed: &[u8; 32]) -> EncodingKey {
        // PKCS#8 wrapping of an Ed25519 seed (RFC 8410).
        let mut der = vec![0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];
        der.extend_from_slice(seed);
        EncodingKey::from_ed_der(&der)
    }

    /// The 32 secret bytes (to store).
    pub fn seed(&self) -> [u8; 32] {
        self.seed
    }

    /// The secret bytes as 64 hex digits: how the state dir and the
    /// `signing_key` variable keep them.
    pub fn to_hex(&self) -> String {
        self.seed.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// From 64 hex digits (surrounding whitespace ignored); `None` otherwise.
    pub fn from_hex(text: &str) -> Option<Self> {
        let t = text.trim();
        let bytes: Option<Vec<u8>> = (0..t.len()).step_by(2).map(|i| t.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok())).collect();
        bytes?.try_into().ok().map(Self::from_seed)
    }

    /// The public key as a JWK.
    pub fn jwk(&self) -> Value {
        serde_json::to_value(public_jwk(&Self::encoding(&self.seed), Algorithm::EdDSA, "cairn").0).unwrap_or_default()
    }

    /// The public JWKS (`{"keys":[…]}`).
    pub fn jwks(&self) -> String {
        json!({"keys": [self.jwk()]}).to_string()
    }

    /// Sign arbitrary claims (tests use this for wrong `aud`, expired, …).
    pub fn sign(&self, claims: &Value) -> String {
        sign_with(&Self::encoding(&self.seed), Algorithm::EdDSA, &self.kid, claims)
    }
}

/// A P-256 (ES256) signing key, for issuers that use ECDSA.
pub struct EcKey {
    key: EncodingKey,
    /// Key id.
    pub kid: String,
}

impl EcKey {
    /// From a 32-byte secret scalar (must be a valid P-256 scalar).
    pub fn from_scalar(d: [u8; 32]) -> Self {
        // PKCS#8 (RFC 5208) wrapping an RFC 5915 ECPrivateKey on prime256v1.
        let mut der = vec![
            0x30, 0x41, 0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03,
            0x01, 0x07, 0x04, 0x27, 0x30, 0x25, 0x02, 0x01, 0x01, 0x04, 0x20,
        ];
        der.extend_from_slice(&d);
        let key = EncodingKey::from_ec_der(&der);
        let (_, kid) = public_jwk(&key, Algorithm::ES256, "ec");
        Self { key, kid }
    }

    /// The public key as a JWK.
    pub fn jwk(&self) -> Value {
        serde_json::to_value(public_jwk(&self.key, Algorithm::ES256, "ec").0).unwrap_or_default()
    }

    /// Sign claims with ES256.
    pub fn sign(&self, claims: &Value) -> String {
        sign_with(&self.key, Algorithm::ES256, &self.kid, claims)
    }
}

/// A token signed with HS256 using `secret`: what an algorithm-confusion
/// attack sends (with a public key's bytes as the secret).
pub fn hmac_signed(secret: &[u8], kid: &str, claims: &Value) -> String {
    sign_with(&EncodingKey::from_secret(secret).expect("non-empty secret"), Algorithm::HS256, kid, claims)
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
