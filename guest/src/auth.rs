//! Bearer-token authentication for the public components (router, REST):
//! configuration from variables, the issuer's keys (pasted, or fetched and
//! cached), a verified-token cache in the store, the RFC 6750 / RFC 9728
//! challenge, and the audit record of a refusal.
//!
//! ## Keys by URL, rotation without restart
//!
//! With `jwks` empty, the keys come from `jwks_url`, or from the issuer's
//! metadata (`<issuer>/.well-known/oauth-authorization-server`, then
//! `openid-configuration`) when that is empty too. The fetched JWKS is kept
//! in the `cache` store with the time it was fetched:
//!
//! - younger than `jwks_cache_seconds` (default 300): used as it is;
//! - older: fetched again; if the issuer does not answer (or answers
//!   something that is not a usable JWKS), the cached keys keep serving;
//! - a token whose `kid` is not in it: fetched again at once, but at most
//!   once every `jwks_refetch_seconds` (default 30, counted from the last
//!   attempt, so a flood of tokens with made-up kids cannot hammer the
//!   issuer). A rotated-in key therefore works within that window, and a
//!   key that left the JWKS stops working at the next fetch.
//!
//! Verified tokens are cached under a salt that includes the JWKS itself, so
//! a new JWKS has every token verified again against it.

use crate::kv::Bucket;
use crate::respond;
use cairn_auth::Principal;
use cairn_auth::jwt::{AuthError, ClaimMap, Verifier};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use spin_sdk::http::{Method, Request, Response};

/// Where the trusted keys come from.
enum KeySource {
    /// A JWKS document in the `jwks` variable.
    Pasted(String),
    /// Fetched from this URL (`jwks_url`), or found through the issuer's
    /// metadata when `None`.
    Fetched(Option<String>),
}

/// Where tokens are checked against and the URLs it advertises. The JWKS is
/// parsed only when a token is not in the verified-token cache, so a cache
/// hit costs a hash and a store read (two with fetched keys).
pub struct Config {
    keys: KeySource,
    issuer: String,
    /// The protected resource (the `aud` tokens must carry).
    pub resource: String,
    /// The authorization server to advertise.
    pub authorization_server: String,
    claims: ClaimMap,
    cache_seconds: u64,
    refetch_seconds: u64,
}

/// A JWKS as fetched: the document, when it was fetched and when a fetch was last tried.
struct Fetched {
    jwks: String,
    fetched_at: u64,
    tried_at: u64,
}

fn seconds(name: &str, default: u64) -> u64 {
    crate::variable(name).and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

impl Config {
    /// Read `jwks` (or `jwks_url`, or discovery), `issuer`, `audience`,
    /// `authorization_server` and the claims mapping (`tenant_claim`,
    /// `fixed_tenant`, `actor_claim`, `name_claim`, `role_claim`).
    pub fn load() -> Result<Self, String> {
        let issuer = crate::variable("issuer").ok_or("the issuer variable is not set")?;
        let keys = match (crate::variable("jwks"), crate::variable("jwks_url")) {
            (Some(j), _) => KeySource::Pasted(j),
            (None, Some(url)) => KeySource::Fetched(Some(url)),
            (None, None) if issuer.starts_with("https://") || issuer.starts_with("http://") => KeySource::Fetched(None),
            (None, None) => return Err("no trusted keys: set jwks (a JWKS document), jwks_url, or an http(s) issuer to discover them from".into()),
        };
        let resource = crate::variable("audience").ok_or("the audience variable is not set")?;
        let authorization_server = crate::variable("authorization_server").unwrap_or_else(|| issuer.clone());
        let d = ClaimMap::default();
        let claims = ClaimMap {
            tenant: crate::variable("tenant_claim").unwrap_or(d.tenant),
            fixed_tenant: crate::variable("fixed_tenant"),
            actor: crate::variable("actor_claim").unwrap_or(d.actor),
            name: crate::variable("name_claim").unwrap_or(d.name),
            role: crate::variable("role_claim").unwrap_or(d.role),
        };
        Ok(Self {
            keys,
            issuer,
            resource,
            authorization_server,
            claims,
            cache_seconds: seconds("jwks_cache_seconds", 300),
            refetch_seconds: seconds("jwks_refetch_seconds", 30),
        })
    }

    /// The salt of verified-token cache keys: it changes whenever the trusted
    /// keys, the names or the mapping change, so a token verified under an
    /// old configuration is verified again. It needs no collision resistance
    /// (nobody chooses the configuration to collide), so it is a fast hash.
    fn cache_salt(&self, jwks: &str) -> String {
        let c = &self.claims;
        let text = format!("{jwks}\n{}\n{}\n{}|{:?}|{}|{}|{}", self.issuer, self.resource, c.tenant, c.fixed_tenant, c.actor, c.name, c.role);
        format!("{:016x}", fnv64(text.as_bytes()))
    }

    /// Where fetched keys are cached: one entry per JWKS URL (or issuer, for discovery).
    fn fetched_key(&self) -> String {
        let source = match &self.keys {
            KeySource::Fetched(Some(url)) => url.as_str(),
            _ => self.issuer.as_str(),
        };
        cairn_notes::keys::fetched_jwks(&format!("{:016x}", fnv64(source.as_bytes())))
    }

    fn cached(&self, bucket: Option<&Bucket>) -> Option<Fetched> {
        let v: Value = serde_json::from_slice(&bucket?.get(&self.fetched_key()).ok()??).ok()?;
        Some(Fetched {
            jwks: v["jwks"].as_str()?.to_string(),
            fetched_at: v["fetched_at"].as_u64()?,
            tried_at: v["tried_at"].as_u64().unwrap_or(0),
        })
    }

    fn remember(&self, bucket: Option<&Bucket>, f: &Fetched) {
        if let Some(b) = bucket {
            let doc = json!({"jwks": f.jwks, "fetched_at": f.fetched_at, "tried_at": f.tried_at});
            let _ = b.set(&self.fetched_key(), doc.to_string().as_bytes());
        }
    }

    /// The JWKS URL: `jwks_url`, or `jwks_uri` from the issuer's metadata.
    async fn jwks_url(&self) -> Result<String, String> {
        if let KeySource::Fetched(Some(url)) = &self.keys {
            return Ok(url.clone());
        }
        let base = self.issuer.trim_end_matches('/');
        let mut why = Vec::new();
        for path in ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"] {
            match get_json(&format!("{base}{path}")).await {
                Ok(meta) => match meta["jwks_uri"].as_str() {
                    Some(u) => return Ok(u.to_string()),
                    None => why.push(format!("{base}{path} names no jwks_uri")),
                },
                Err(e) => why.push(e),
            }
        }
        Err(format!("cannot discover the issuer's keys: {}", why.join("; ")))
    }

    /// Fetches the JWKS and checks that it is usable.
    async fn fetch(&self) -> Result<String, String> {
        let url = self.jwks_url().await?;
        let doc = get_json(&url).await?.to_string();
        Verifier::from_jwks(&doc, &self.issuer, &self.resource).map_err(|e| format!("{url}: {e}"))?;
        Ok(doc)
    }

    /// The trusted keys now: pasted, cached while fresh, else fetched (the
    /// cached ones when the issuer does not answer). `again` asks for a fetch
    /// even while the cache is fresh (a token names an unknown `kid`), at
    /// most once every `jwks_refetch_seconds`. The second value says whether
    /// these keys were just fetched.
    async fn keys(&self, bucket: Option<&Bucket>, now_s: u64, again: bool) -> Result<(String, bool), Refused> {
        if let KeySource::Pasted(j) = &self.keys {
            return Ok((j.clone(), false));
        }
        let cached = self.cached(bucket);
        if let Some(c) = &cached {
            let fresh = now_s.saturating_sub(c.fetched_at) < self.cache_seconds;
            let tried_lately = now_s.saturating_sub(c.tried_at) < self.refetch_seconds;
            if (fresh && !again) || tried_lately {
                return Ok((c.jwks.clone(), false));
            }
        }
        match self.fetch().await {
            Ok(jwks) => {
                self.remember(bucket, &Fetched { jwks: jwks.clone(), fetched_at: now_s, tried_at: now_s });
                Ok((jwks, true))
            }
            Err(e) => match cached {
                // The issuer is briefly away: keep serving with the keys we have.
                Some(c) => {
                    let c = Fetched { tried_at: now_s, ..c };
                    self.remember(bucket, &c);
                    Ok((c.jwks, false))
                }
                None => Err(Refused::Unavailable(e)),
            },
        }
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
    /// Also returns the token's id ([`token_digest`]), which names it in
    /// rate-limit counters without hashing it again.
    pub async fn authenticate(&self, req: &Request, bucket: Option<&Bucket>, now_s: u64) -> Result<(Principal, String), Refused> {
        let token = respond::bearer(req).ok_or(Refused::Token(AuthError::Missing))?;
        let (mut jwks, mut fresh) = self.keys(bucket, now_s, false).await?;
        let digest = token_digest(token);
        let mut key = cairn_notes::keys::verified_token(&self.cache_salt(&jwks), &digest);
        if let Some(b) = bucket {
            if let Ok(Some(bytes)) = b.get(&key) {
                if let Ok(p) = serde_json::from_slice::<Principal>(&bytes) {
                    if p.exp > now_s {
                        return Ok((p, digest));
                    }
                    let _ = b.delete(&key);
                }
            }
        }
        let verifier = |jwks: &str| {
            Verifier::from_jwks(jwks, &self.issuer, &self.resource).map(|v| v.with_claims(self.claims.clone())).map_err(Refused::Misconfigured)
        };
        let mut v = verifier(&jwks)?;
        // A key the cached JWKS lacks may have just been rotated in.
        if !fresh && matches!(self.keys, KeySource::Fetched(_)) && cairn_auth::jwt::token_kid(token).is_some_and(|k| !v.knows_kid(&k)) {
            (jwks, fresh) = self.keys(bucket, now_s, true).await?;
            if fresh {
                v = verifier(&jwks)?;
                key = cairn_notes::keys::verified_token(&self.cache_salt(&jwks), &digest);
            }
        }
        let p = v.verify(token).map_err(Refused::Token)?;
        if let Some(b) = bucket {
            let _ = b.set(&key, &serde_json::to_vec(&p).unwrap_or_default());
        }
        Ok((p, digest))
    }

    /// The answer to a refused authentication: 401 with the challenge, or
    /// 500 `misconfigured`.
    pub fn refusal(&self, refused: &Refused) -> Response {
        match refused {
            Refused::Token(e) => self.unauthorized(e),
            Refused::Misconfigured(e) => respond::error(500, "misconfigured", e),
            Refused::Unavailable(e) => {
                let mut r = respond::error(503, "issuer_unavailable", &format!("the issuer's keys cannot be fetched, and none are cached yet: {e}"));
                r.set_header("retry-after", "5");
                r
            }
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
    /// The issuer's keys cannot be fetched and none are cached: 503.
    Unavailable(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Token(e) => e.fmt(f),
            Refused::Misconfigured(e) => write!(f, "misconfigured: {e}"),
            Refused::Unavailable(e) => write!(f, "issuer unavailable: {e}"),
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

/// GET a JSON document over outbound HTTP (the host allow-lists the issuer's origin).
async fn get_json(url: &str) -> Result<Value, String> {
    let req = Request::builder().method(Method::Get).uri(url).header("accept", "application/json").build();
    let resp: Response = spin_sdk::http::send(req).await.map_err(|e| format!("{url} did not answer: {e}"))?;
    if *resp.status() != 200 {
        return Err(format!("{url} answered {}", resp.status()));
    }
    serde_json::from_slice(resp.body()).map_err(|e| format!("{url} is not JSON: {e}"))
}
