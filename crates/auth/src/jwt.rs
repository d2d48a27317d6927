//! Bearer JWT verification.
//!
//! Each key of the JWKS fixes its own algorithm from its type and curve
//! (OKP/Ed25519 → EdDSA, EC/P-256 → ES256, EC/P-384 → ES384, RSA → RS256 or
//! the key's declared RSA `alg`); a token whose header names another
//! algorithm is refused, so `none` and algorithm confusion cannot get in.
//! Symmetric (`oct`) keys are refused when the JWKS is loaded.
//!
//! Which claims name the tenant, the actor type, the display name and the
//! role is a [`ClaimMap`]: Cairn's own names by default (`tenant`, `actor`,
//! `name`, `role`), an issuer's (`org_id`, `cairn_actor`, …) when
//! configured, or a fixed tenant for single-tenant installs. Scopes come
//! from `scope` (space-separated) or `scp` (a list, or a string).

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

/// Which token claims carry Cairn's identity fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimMap {
    /// The claim naming the tenant (ignored when `fixed_tenant` is set).
    pub tenant: String,
    /// Every token's tenant, for single-tenant installs.
    pub fixed_tenant: Option<String>,
    /// The claim naming the actor type (`agent` or `human`; absent: agent).
    pub actor: String,
    /// The claim with the display name (absent: the subject).
    pub name: String,
    /// The claim with the role (`admin` takes effect for people only).
    pub role: String,
}

impl Default for ClaimMap {
    fn default() -> Self {
        Self { tenant: "tenant".into(), fixed_tenant: None, actor: "actor".into(), name: "name".into(), role: "role".into() }
    }
}

/// A configured verifier.
pub struct Verifier {
    keys: Vec<Key>,
    issuer: String,
    audience: String,
    leeway: u64,
    claims: ClaimMap,
}

/// The claims every token must carry; the rest are read through the [`ClaimMap`].
#[derive(Deserialize)]
struct Claims {
    sub: String,
    exp: u64,
    #[serde(flatten)]
    rest: serde_json::Map<String, serde_json::Value>,
}

/// The `kid` in a token's header, if it names one (no verification).
pub fn token_kid(token: &str) -> Option<String> {
    jsonwebtoken::decode_header(token).ok()?.kid
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
        Ok(Self { keys, issuer: issuer.to_string(), audience: audience.to_string(), leeway: 30, claims: ClaimMap::default() })
    }

    /// Read identity fields through `map` instead of Cairn's own claim names.
    pub fn with_claims(mut self, map: ClaimMap) -> Self {
        self.claims = map;
        self
    }

    /// Whether some key of the JWKS has this `kid`.
    pub fn knows_kid(&self, kid: &str) -> bool {
        self.keys.iter().any(|k| k.kid.as_deref() == Some(kid))
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
                Ok(data) => return principal(data.claims, &self.claims),
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

/// A string claim, `None` when absent or null; a claim of another type is refused, naming it.
fn text_claim(c: &serde_json::Map<String, serde_json::Value>, name: &str) -> Result<Option<String>, AuthError> {
    match c.get(name) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(AuthError::BadClaims(format!("the {name} claim must be a string"))),
    }
}

fn principal(c: Claims, map: &ClaimMap) -> Result<Principal, AuthError> {
    let tenant = match &map.fixed_tenant {
        Some(t) => t.clone(),
        None => text_claim(&c.rest, &map.tenant)?.ok_or_else(|| AuthError::BadClaims(format!("missing {} (the tenant claim)", map.tenant)))?,
    };
    if tenant.is_empty() || tenant.len() > 64 || !tenant.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_') {
        return Err(AuthError::BadClaims(format!("the tenant ({}) must be 1-64 of [a-z0-9_-]", map.tenant)));
    }
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let scopes = match (c.rest.get("scope"), c.rest.get("scp")) {
        (Some(serde_json::Value::String(s)), _) => words(s),
        (None | Some(serde_json::Value::Null), Some(serde_json::Value::String(s))) => words(s),
        (None | Some(serde_json::Value::Null), Some(serde_json::Value::Array(list))) => {
            list.iter().map(|v| v.as_str().map(str::to_string)).collect::<Option<_>>().ok_or_else(|| AuthError::BadClaims("scp must list strings".into()))?
        }
        (None | Some(serde_json::Value::Null), None | Some(serde_json::Value::Null)) => Vec::new(),
        _ => return Err(AuthError::BadClaims("scope must be a space-separated string (or scp a list)".into())),
    };
    let actor = match text_claim(&c.rest, &map.actor)?.as_deref() {
        None | Some("agent") => Actor::Agent,
        Some("human") => Actor::Human,
        Some(other) => return Err(AuthError::BadClaims(format!("the {} claim must be agent or human, not {other:?}", map.actor))),
    };
    // Only people can be admins: no agent token, however broad, gets a role.
    let role = match (actor, text_claim(&c.rest, &map.role)?.as_deref()) {
        (Actor::Human, Some("admin")) => Role::Admin,
        _ => Role::Member,
    };
    let name = text_claim(&c.rest, &map.name)?.unwrap_or_else(|| c.sub.clone());
    Ok(Principal { name, subject: c.sub, tenant, actor, role, scopes, exp: c.exp })
}
