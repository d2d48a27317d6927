//! Bearer-token authentication for the public components (router, REST):
//! configuration from variables, the issuer's keys (pasted, or fetched and
//! cached), a verified-token cache in the `cache` store, the RFC 6750 /
//! RFC 9728 challenge, and the audit record of an authenticated refusal.
//! The order of checks around it is the front door's ([`crate::door`]).
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
//! One fetch at a time per key source, across every instance and host on
//! the store: a caller claims the fetch by moving `tried_at` with a
//! compare-and-swap before it sends anything; whoever loses the swap uses
//! the keys cached (or, with none yet, is told to retry in a second). A
//! failed fetch is remembered the same way (negative caching): nobody tries
//! again within `jwks_refetch_seconds`.
//!
//! Verified tokens are cached under a salt that includes the JWKS itself, so
//! a new JWKS has every token verified again against it.

use crate::http::Request;
use crate::kv::{Bucket, GuestStore};
use crate::respond;
use cairn_auth::Principal;
use cairn_auth::jwt::{AuthError, ClaimMap, Verifier};
use cairn_door::budget::CACHE;
use cairn_door::{Code, Refusal};
use cairn_kv::{Observed, Store, Swap};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The largest issuer document (metadata, JWKS) read, in bytes: reading
/// stops there.
const MAX_ISSUER_DOCUMENT: usize = 256 * 1024;
/// The whole fetch of an issuer document.
const ISSUER_FETCH_TIME: std::time::Duration = std::time::Duration::from_secs(10);

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

impl Config {
    /// The token settings of this component's configuration: `jwks` (or
    /// `jwks_url`, or discovery from the issuer), `issuer`, `audience`,
    /// `authorization_server` and the claims mapping. Made once per instance.
    pub fn load() -> Result<&'static Self, String> {
        static LOADED: std::sync::OnceLock<Result<Config, String>> = std::sync::OnceLock::new();
        LOADED.get_or_init(|| Config::of(&crate::config::config().map_err(|e| e.to_string())?.auth)).as_ref().map_err(Clone::clone)
    }

    /// The token settings of `auth`.
    fn of(auth: &cairn_config::Auth) -> Result<Self, String> {
        let issuer = auth.issuer.clone().ok_or("the issuer variable is not set")?;
        let keys = match (&auth.jwks, &auth.jwks_url) {
            (Some(j), _) => KeySource::Pasted(j.clone()),
            (None, Some(url)) => KeySource::Fetched(Some(url.clone())),
            (None, None) if issuer.starts_with("https://") || issuer.starts_with("http://") => KeySource::Fetched(None),
            (None, None) => return Err("no trusted keys: set jwks (a JWKS document), jwks_url, or an http(s) issuer to discover them from".into()),
        };
        let resource = auth.audience.clone().ok_or("the audience variable is not set")?;
        let authorization_server = auth.authorization_server.clone().unwrap_or_else(|| issuer.clone());
        let c = &auth.claims;
        let claims =
            ClaimMap { tenant: c.tenant.clone(), fixed_tenant: c.fixed_tenant.clone(), actor: c.actor.clone(), name: c.name.clone(), role: c.role.clone() };
        Ok(Self { keys, issuer, resource, authorization_server, claims, cache_seconds: auth.jwks_cache_seconds, refetch_seconds: auth.jwks_refetch_seconds })
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
        cairn_door::cache::fetched_jwks(&format!("{:016x}", fnv64(source.as_bytes())))
    }

    /// The cached JWKS record and the read a claim swaps against.
    fn cached(&self, cache: &GuestStore) -> (Option<Fetched>, Option<Observed>) {
        let Ok(read) = cache.read(CACHE, &self.fetched_key()) else { return (None, None) };
        let f = read.value.as_deref().and_then(|raw| serde_json::from_slice::<Value>(raw).ok()).and_then(|v| {
            Some(Fetched {
                jwks: v["jwks"].as_str().unwrap_or("").to_string(),
                fetched_at: v["fetched_at"].as_u64()?,
                tried_at: v["tried_at"].as_u64().unwrap_or(0),
            })
        });
        (f, Some(read.observed))
    }

    fn record(f: &Fetched) -> Vec<u8> {
        json!({"jwks": f.jwks, "fetched_at": f.fetched_at, "tried_at": f.tried_at}).to_string().into_bytes()
    }

    fn remember(&self, cache: &GuestStore, f: &Fetched) {
        let _ = cache.set(CACHE, &self.fetched_key(), &Self::record(f));
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
    /// these keys were just fetched. Only the caller that wins the claim on
    /// the record fetches (see the module doc).
    async fn keys(&self, cache: &GuestStore, now_s: u64, again: bool) -> Result<(String, bool), Refused> {
        if let KeySource::Pasted(j) = &self.keys {
            return Ok((j.clone(), false));
        }
        let (cached, observed) = self.cached(cache);
        let usable = cached.as_ref().filter(|c| !c.jwks.is_empty());
        if let Some(c) = &cached {
            let fresh = now_s.saturating_sub(c.fetched_at) < self.cache_seconds;
            let tried_lately = now_s.saturating_sub(c.tried_at) < self.refetch_seconds;
            if (fresh && !again && usable.is_some()) || tried_lately {
                return match usable {
                    Some(u) => Ok((u.jwks.clone(), false)),
                    None => Err(Refused::Unavailable("no keys yet: a fetch is under way or failed moments ago".into())),
                };
            }
        }
        // Claim the fetch: move `tried_at` to now, or lose to whoever did.
        let claim =
            Fetched { jwks: usable.map(|u| u.jwks.clone()).unwrap_or_default(), fetched_at: cached.as_ref().map_or(0, |c| c.fetched_at), tried_at: now_s };
        if let Some(o) = observed {
            match cache.swap(CACHE, &self.fetched_key(), o, &Self::record(&claim)) {
                Ok(Swap::Done) => {}
                Ok(Swap::Failed(_)) => {
                    return match usable {
                        Some(u) => Ok((u.jwks.clone(), false)),
                        None => Err(Refused::Unavailable("no keys yet: another request is fetching them".into())),
                    };
                }
                // A cache that cannot be written: fetch without the claim.
                Err(_) => {}
            }
        }
        match self.fetch().await {
            Ok(jwks) => {
                self.remember(cache, &Fetched { jwks: jwks.clone(), fetched_at: now_s, tried_at: now_s });
                Ok((jwks, true))
            }
            // The issuer is briefly away: keep serving with the keys we have
            // (the claim already recorded the attempt).
            Err(e) => match usable {
                Some(u) => Ok((u.jwks.clone(), false)),
                None => Err(Refused::Unavailable(e)),
            },
        }
    }

    /// Where the protected-resource metadata lives (RFC 9728).
    pub fn metadata_url(&self) -> String {
        let origin = cairn_door::origin::origin_of(&self.resource);
        let path = self.resource.strip_prefix(origin).unwrap_or("").trim_end_matches('/');
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

    /// Verify the request's bearer token, through the `cache` store's
    /// record of tokens already verified (keyed by a hash of token and
    /// configuration, valid until the token's `exp`). A JWKS that cannot be
    /// used is the operator's fault, not the caller's:
    /// [`Refused::Misconfigured`]. With `throttled` (the client address is
    /// past its budget of refusals, see [`cairn_door`]), only a token found
    /// in that record passes: nothing is verified or fetched for it.
    pub async fn authenticate(&self, req: &Request, cache: &GuestStore, now_s: u64, throttled: bool) -> Result<Principal, Refused> {
        let Some(token) = respond::bearer(req) else {
            return Err(if throttled { Refused::Throttled } else { Refused::Token(AuthError::Missing) });
        };
        let (mut jwks, mut fresh) = self.keys(cache, now_s, false).await?;
        let digest = token_digest(token);
        let mut key = cairn_door::cache::verified_token(&self.cache_salt(&jwks), &digest);
        if let Ok(Some(bytes)) = cache.get(CACHE, &key)
            && let Ok(p) = serde_json::from_slice::<Principal>(&bytes)
        {
            if p.exp > now_s {
                return Ok(p);
            }
            let _ = cache.delete(CACHE, &key);
        }
        if throttled {
            return Err(Refused::Throttled);
        }
        let verifier =
            |jwks: &str| Verifier::from_jwks(jwks, &self.issuer, &self.resource).map(|v| v.with_claims(self.claims.clone())).map_err(Refused::Misconfigured);
        let mut v = verifier(&jwks)?;
        // A key the cached JWKS lacks may have just been rotated in.
        if !fresh && matches!(self.keys, KeySource::Fetched(_)) && cairn_auth::jwt::token_kid(token).is_some_and(|k| !v.knows_kid(&k)) {
            (jwks, fresh) = self.keys(cache, now_s, true).await?;
            if fresh {
                v = verifier(&jwks)?;
                key = cairn_door::cache::verified_token(&self.cache_salt(&jwks), &digest);
            }
        }
        let p = v.verify(token).map_err(Refused::Token)?;
        let _ = cache.set(CACHE, &key, &serde_json::to_vec(&p).unwrap_or_default());
        Ok(p)
    }

    /// The challenge every refusal of a token starts with.
    pub fn challenge(&self) -> String {
        format!("Bearer resource_metadata=\"{}\"", self.metadata_url())
    }

    /// The refusal of an authentication: 401 with the challenge, 429 for a
    /// throttled address, 500 `misconfigured`, or 503 while no keys can be had.
    pub fn refusal(&self, refused: &Refused) -> Refusal {
        match refused {
            Refused::Token(AuthError::Missing) => Refusal::new(Code::Unauthorized, AuthError::Missing.to_string()).challenge(self.challenge()),
            Refused::Token(e) => Refusal::new(Code::Unauthorized, e.to_string()).challenge(format!(
                "{}, error=\"invalid_token\", error_description=\"{}\"",
                self.challenge(),
                e.to_string().replace('"', "'")
            )),
            Refused::Throttled => {
                Refusal::new(Code::TooManyRefusals, "this address sent too many refused requests this minute; retry with a valid token later").retry_after(60)
            }
            Refused::Misconfigured(e) => Refusal::new(Code::Misconfigured, e.clone()),
            Refused::Unavailable(e) => Refusal::new(Code::IssuerUnavailable, format!("the issuer's keys cannot be fetched, and none are cached yet: {e}"))
                .retry_after(if e.starts_with("no keys yet") { 1 } else { 5 }),
        }
    }
}

/// Why a request was not authenticated.
#[derive(Debug)]
pub enum Refused {
    /// The caller's token: 401.
    Token(AuthError),
    /// The client address is past its budget of refusals and the token was
    /// not verified before: 429.
    Throttled,
    /// The configured JWKS cannot be used: 500.
    Misconfigured(String),
    /// The issuer's keys cannot be fetched and none are cached: 503.
    Unavailable(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Token(e) => e.fmt(f),
            Refused::Throttled => f.write_str("throttled: too many refused requests from this address"),
            Refused::Misconfigured(e) => write!(f, "misconfigured: {e}"),
            Refused::Unavailable(e) => write!(f, "issuer unavailable: {e}"),
        }
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

/// Record an authenticated refusal (scope, budget) in the tenant's audit
/// trail. Refusals before anyone is known leave no record (see
/// [`cairn_door::summary`]); the tenant's records are bounded and swept
/// with its history.
pub fn audit_refusal(tenant: &str, record: serde_json::Value) {
    let Ok(b) = Bucket::open("default") else { return };
    let now = crate::notes::now_us();
    let key = cairn_notes::keys::refused_audit_key(Some(tenant), now, crate::random_u64() as u32);
    let mut record = record;
    record["at_us"] = serde_json::json!(now);
    let _ = b.set(&key, record.to_string().as_bytes());
}

/// GET a JSON document over outbound HTTP (the host allow-lists the
/// issuer's origin), reading no more than [`MAX_ISSUER_DOCUMENT`] of it.
async fn get_json(url: &str) -> Result<Value, String> {
    let got = crate::fetch::get(url, "application/json", MAX_ISSUER_DOCUMENT, ISSUER_FETCH_TIME).await.map_err(|e| format!("{url}: {e}"))?;
    if got.status != 200 {
        return Err(format!("{url} answered {}", got.status));
    }
    serde_json::from_slice(&got.body).map_err(|e| format!("{url} is not JSON: {e}"))
}
