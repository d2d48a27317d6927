//! Bearer-token authentication for the public components (router, REST):
//! configuration from variables, a verified-token cache in the store, the
//! RFC 6750 / RFC 9728 challenge, and the audit record of a refusal.

use crate::kv::Bucket;
use crate::respond;
use cairn_auth::Principal;
use cairn_auth::jwt::{AuthError, Verifier};
use sha2::{Digest, Sha256};
use spin_sdk::http::{Request, Response};

/// Where tokens are checked against and the URLs it advertises. The JWKS is
/// parsed only when a token is not in the verified-token cache, so a cache
/// hit costs a hash and a store read.
pub struct Config {
    jwks: String,
    issuer: String,
    /// The protected resource (the `aud` tokens must carry).
    pub resource: String,
    /// The authorization server to advertise.
    pub authorization_server: String,
    cache_salt: String,
}

impl Config {
    /// Read `jwks`, `issuer`, `audience` and `authorization_server`.
    pub fn load() -> Result<Self, String> {
        let jwks = crate::variable("jwks").ok_or("the jwks variable is not set")?;
        let issuer = crate::variable("issuer").ok_or("the issuer variable is not set")?;
        let resource = crate::variable("audience").ok_or("the audience variable is not set")?;
        let authorization_server = crate::variable("authorization_server").unwrap_or_else(|| issuer.clone());
        // The salt changes whenever the trusted keys or the names change, so a
        // token verified under an old configuration is verified again; it
        // needs no collision resistance (nobody chooses the configuration
        // to collide), so it is a fast hash rather than SHA-256.
        let cache_salt = format!("{:016x}", fnv64(format!("{jwks}\n{issuer}\n{resource}").as_bytes()));
        Ok(Self { jwks, issuer, resource, authorization_server, cache_salt })
    }

    /// Where the protected-resource metadata lives (RFC 9728).
    pub fn metadata_url(&self) -> String {
        let origin = origin(&self.resource);
        let path = self.resource.strip_prefix(&origin).unwrap_or("").trim_end_matches('/');
        format!("{origin}/.well-known/oauth-protected-resource{path}")
    }

    /// The RFC 9728 metadata document.
    pub fn metadata(&self) -> serde_json::Value {
        serde_json::json!({
            "resource": self.resource,
            "authorization_servers": [self.authorization_server],
            "scopes_supported": cairn_notes::scopes::ALL,
            "bearer_methods_supported": ["header"],
            "resource_name": "Cairn",
        })
    }

    /// Verify the request's bearer token, through the store's cache of
    /// tokens already verified (keyed by a hash of token and configuration,
    /// valid until the token's `exp`). A JWKS that cannot be used is the
    /// operator's fault, not the caller's: [`Refused::Misconfigured`].
    pub fn authenticate(&self, req: &Request, bucket: Option<&Bucket>, now_s: u64) -> Result<Principal, Refused> {
        let token = respond::bearer(req).ok_or(Refused::Token(AuthError::Missing))?;
        let key = cairn_notes::keys::verified_token(&self.cache_salt, &token_digest(token));
        if let Some(b) = bucket {
            if let Ok(Some(bytes)) = b.get(&key) {
                if let Ok(p) = serde_json::from_slice::<Principal>(&bytes) {
                    if p.exp > now_s {
                        return Ok(p);
                    }
                    let _ = b.delete(&key);
                }
            }
        }
        let verifier = Verifier::from_jwks(&self.jwks, &self.issuer, &self.resource).map_err(Refused::Misconfigured)?;
        let p = verifier.verify(token).map_err(Refused::Token)?;
        if let Some(b) = bucket {
            let _ = b.set(&key, &serde_json::to_vec(&p).unwrap_or_default());
        }
        Ok(p)
    }

    /// The answer to a refused authentication: 401 with the challenge, or
    /// 500 `misconfigured`.
    pub fn refusal(&self, refused: &Refused) -> Response {
        match refused {
            Refused::Token(e) => self.unauthorized(e),
            Refused::Misconfigured(e) => respond::error(500, "misconfigured", e),
        }
    }

    /// 401 with the challenge naming the metadata.
    pub fn unauthorized(&self, err: &AuthError) -> Response {
        let challenge = match err {
            AuthError::Missing => format!("Bearer resource_metadata=\"{}\"", self.metadata_url()),
            e => format!(
                "Bearer resource_metadata=\"{}\", error=\"invalid_token\", error_description=\"{}\"",
                self.metadata_url(),
                e.to_string().replace('"', "'")
            ),
        };
        let mut r = respond::error(401, "unauthorized", &err.to_string());
        r.set_header("www-authenticate", challenge);
        r
    }

    /// 403 naming the missing scope.
    pub fn insufficient_scope(&self, scope: &str) -> Response {
        let mut r = respond::error(403, "insufficient_scope", &format!("this call needs the {scope} scope"));
        r.set_header(
            "www-authenticate",
            format!(
                "Bearer resource_metadata=\"{}\", error=\"insufficient_scope\", scope=\"{scope}\", error_description=\"the token lacks {scope}\"",
                self.metadata_url()
            ),
        );
        r
    }
}

/// Why a request was not authenticated.
#[derive(Debug)]
pub enum Refused {
    /// The caller's token: 401.
    Token(AuthError),
    /// The configured JWKS cannot be used: 500.
    Misconfigured(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Token(e) => e.fmt(f),
            Refused::Misconfigured(e) => write!(f, "misconfigured: {e}"),
        }
    }
}

/// The host of a URL or a Host header, without port or brackets.
fn host_of(s: &str) -> &str {
    let s = s.split_once("://").map_or(s, |(_, rest)| rest);
    let s = s.split('/').next().unwrap_or(s);
    if let Some(rest) = s.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    s.rsplit_once(':').map_or(s, |(h, _)| h)
}

fn loopback(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "::1") || host.ends_with(".localhost")
}

/// Browser and DNS-rebinding checks, before any token is looked at.
///
/// - A request with an `Origin` passes if the origin is in the
///   `allowed_origins` variable (comma-separated), or if both the origin and
///   the request's `Host` are loopback (a page on this machine calling a
///   server on this machine).
/// - When the resource (`audience`) is on a loopback host, the `Host` header
///   must be loopback too: a DNS-rebinding page reaches a local server under
///   a foreign host name, and is refused.
///
/// Returns the reason for a refusal.
pub fn check_origin(req: &Request) -> Result<(), String> {
    // wasi:http hides `host` from guests; Spin (and Cairn) pass the full URL.
    let full = req.header("spin-full-url").or_else(|| req.header("host")).and_then(|v| v.as_str()).unwrap_or("");
    let host = host_of(full);
    if let Some(resource) = crate::variable("audience") {
        if loopback(host_of(&resource)) && !host.is_empty() && !loopback(host) {
            return Err(format!("host {host} is not this local server"));
        }
    }
    if let Some(origin) = req.header("origin").and_then(|v| v.as_str()) {
        let allowed = crate::variable("allowed_origins").unwrap_or_default();
        let listed = allowed.split(',').map(str::trim).any(|a| !a.is_empty() && a == origin);
        let same_origin = full.contains("://") && origin == self::origin(full);
        if !listed && !same_origin && !(loopback(host_of(origin)) && loopback(host)) {
            return Err(format!("origin {origin} is not allowed"));
        }
    }
    Ok(())
}

/// `scheme://host[:port]` of a URL.
pub fn origin(url: &str) -> String {
    match url.find("://") {
        Some(i) => match url[i + 3..].find('/') {
            Some(j) => url[..i + 3 + j].to_string(),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// A name for a bearer token that does not keep the token: the hex of the
/// first 16 bytes of its SHA-256 (the key of its verified-token cache entry
/// and of its rate-limit counter).
pub fn token_digest(token: &str) -> String {
    cairn_notes::hex(&Sha256::digest(token.as_bytes())[..16])
}

/// FNV-1a, 64 bits.
fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// Record a refused call: under the tenant when known, else under `sys/`
/// (the key layout is the core's: [`cairn_notes::keys::refused_audit_key`]).
pub fn audit_refusal(bucket: Option<&Bucket>, tenant: Option<&str>, record: serde_json::Value) {
    let Some(b) = bucket else { return };
    let now = crate::notes::now_us();
    let key = cairn_notes::keys::refused_audit_key(tenant, now, crate::random_u64() as u32);
    let mut record = record;
    record["at_us"] = serde_json::json!(now);
    let _ = b.set(&key, record.to_string().as_bytes());
}
