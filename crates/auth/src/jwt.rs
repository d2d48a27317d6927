//! Bearer JWT verification.
//!
//! Each key of the JWKS fixes its own algorithm from its type and curve
//! (OKP/Ed25519 → EdDSA, EC/P-256 → ES256, EC/P-384 → ES384, RSA → RS256 or
//! the key's declared RSA `alg`); a token whose header names another
//! algorithm is refused, so `none` and algorithm confusion cannot get in.
//! Symmetric (`oct`) keys are refused when the JWKS is loaded.

use crate::{Actor, Principal, Role};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use std::fmt;

/// Why a token was refused. `Display` is safe to send back to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// No bearer token.
    Missing,
    /// Not a JWT, or a header/claim that cannot be read.
    Malformed(String),
    /// The header's algorithm is not the one its key is for.
    AlgorithmMismatch,
    /// No configured key matches the token's `kid`.
    UnknownKey,
    /// The signature does not verify.
    BadSignature,
    /// `exp` has passed.
    Expired,
    /// `nbf` is in the future.
    NotYetValid,
    /// `iss` is not the configured issuer.
    WrongIssuer,
    /// `aud` does not name this resource.
    WrongAudience,
    /// A required claim is missing or invalid.
    BadClaims(String),
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthError::Missing => write!(f, "a bearer token is required"),
            AuthError::Malformed(m) => write!(f, "the token is malformed: {m}"),
            AuthError::AlgorithmMismatch => write!(f, "the token's algorithm does not match its key"),
            AuthError::UnknownKey => write!(f, "the token was not signed by a trusted key"),
            AuthError::BadSignature => write!(f, "the token's signature is invalid"),
            AuthError::Expired => write!(f, "the token has expired"),
            AuthError::NotYetValid => write!(f, "the token is not valid yet"),
            AuthError::WrongIssuer => write!(f, "the token was issued by an untrusted issuer"),
            AuthError::WrongAudience => write!(f, "the token is not meant for this resource"),
            AuthError::BadClaims(m) => write!(f, "the token's claims are invalid: {m}"),
        }
    }
}

struct Key {
    kid: Option<String>,
    alg: Algorithm,
    key: DecodingKey,
}

/// A configured verifier.
pub struct Verifier {
    keys: Vec<Key>,
    issuer: String,
    audience: String,
    leeway: u64,
}

#[derive(Deserialize)]
struct Claims {
    sub: String,
    exp: u64,
    #[serde(default)]
    tenant: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    actor: Option<Actor>,
    #[serde(default)]
    role: Option<Role>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<Vec<String>>,
}

impl Verifier {
    /// Load a JWKS (`{"keys":[…]}`) for tokens from `issuer` meant for `audience`.
    pub fn from_jwks(jwks: &str, issuer: &str, audience: &str) -> Result<Self, String> {
        let set: JwkSet = serde_json::from_str(jwks).map_err(|e| format!("the JWKS is not valid: {e}"))?;
        let mut keys = Vec::new();
        for jwk in &set.keys {
            let alg = match &jwk.algorithm {
                AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => Algorithm::EdDSA,
                AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => Algorithm::ES256,
                AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P384 => Algorithm::ES384,
                AlgorithmParameters::RSA(_) => match jwk.common.key_algorithm.map(|a| a.to_string()).as_deref() {
                    Some("RS384") => Algorithm::RS384,
                    Some("RS512") => Algorithm::RS512,
                    Some("PS256") => Algorithm::PS256,
                    _ => Algorithm::RS256,
                },
                AlgorithmParameters::OctetKey(_) => {
                    return Err("the JWKS holds a symmetric (oct) key; only public keys are accepted".into());
                }
                _ => return Err("the JWKS holds a key of an unsupported type or curve".into()),
            };
            let key = DecodingKey::from_jwk(jwk).map_err(|e| format!("a JWKS key is unusable: {e}"))?;
            keys.push(Key { kid: jwk.common.key_id.clone(), alg, key });
        }
        if keys.is_empty() {
            return Err("the JWKS holds no keys".into());
        }
        Ok(Self { keys, issuer: issuer.to_string(), audience: audience.to_string(), leeway: 30 })
    }

    /// The configured audience (the resource URL).
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// Verify `token` and read its principal.
    pub fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        if token.is_empty() {
            return Err(AuthError::Missing);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| AuthError::Malformed(e.to_string()))?;
        let candidates: Vec<&Key> = match &header.kid {
            Some(kid) => self.keys.iter().filter(|k| k.kid.as_deref() == Some(kid)).collect(),
            None => self.keys.iter().collect(),
        };
        if candidates.is_empty() {
            return Err(AuthError::UnknownKey);
        }
        let mut last = AuthError::AlgorithmMismatch;
        for key in candidates {
            if key.alg != header.alg {
                continue;
            }
            let mut v = Validation::new(key.alg);
            v.leeway = self.leeway;
            v.validate_nbf = true;
            v.set_issuer(&[&self.issuer]);
            v.set_audience(&[&self.audience]);
            v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
            match jsonwebtoken::decode::<Claims>(token, &key.key, &v) {
                Ok(data) => return principal(data.claims),
                Err(e) => {
                    use jsonwebtoken::errors::ErrorKind as K;
                    last = match e.kind() {
                        K::InvalidSignature => AuthError::BadSignature,
                        K::ExpiredSignature => return Err(AuthError::Expired),
                        K::ImmatureSignature => return Err(AuthError::NotYetValid),
                        K::InvalidIssuer => return Err(AuthError::WrongIssuer),
                        K::InvalidAudience => return Err(AuthError::WrongAudience),
                        K::MissingRequiredClaim(c) => return Err(AuthError::BadClaims(format!("missing {c}"))),
                        K::Json(e) => return Err(AuthError::BadClaims(e.to_string())),
                        other => AuthError::Malformed(format!("{other:?}")),
                    };
                }
            }
        }
        Err(last)
    }
}

fn principal(c: Claims) -> Result<Principal, AuthError> {
    let tenant = c.tenant.ok_or_else(|| AuthError::BadClaims("missing tenant".into()))?;
    if tenant.is_empty() || tenant.len() > 64 || !tenant.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_') {
        return Err(AuthError::BadClaims("tenant must be 1-64 of [a-z0-9_-]".into()));
    }
    let scopes = match (c.scope, c.scp) {
        (Some(s), _) => s.split_whitespace().map(str::to_string).collect(),
        (None, Some(list)) => list,
        (None, None) => Vec::new(),
    };
    let actor = c.actor.unwrap_or(Actor::Agent);
    // Only people can be admins: no agent token, however broad, gets a role.
    let role = match (actor, c.role) {
        (Actor::Human, Some(Role::Admin)) => Role::Admin,
        _ => Role::Member,
    };
    Ok(Principal { name: c.name.unwrap_or_else(|| c.sub.clone()), subject: c.sub, tenant, actor, role, scopes, exp: c.exp })
}
