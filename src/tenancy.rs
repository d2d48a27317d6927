//! Cairn's partitioner ([`crate::pool::Partitioner`]): the tenant a request
//! belongs to, told from the request alone before any guest code runs, so
//! an instance never serves two tenants.
//!
//! - a bearer token that verifies against the keys this host trusts (the
//!   same keys, issuer and audience the components verify with): its tenant;
//! - a tool's signed identity (`cairn-identity`, tools served over HTTP)
//!   that verifies against the identity secret: its principal's tenant;
//! - no credential at all on a `GET`, `HEAD` or `OPTIONS`: anonymous;
//! - anything else (a token this host cannot verify, a session cookie, a
//!   secret in a `POST` body, a forged identity): an instance of its own.
//!
//! Verified bearer tokens are remembered by digest until they expire, at
//! most [`REMEMBERED`], so a token is verified once per host, not per request.

use crate::pool::{Partition, Partitioner};
use cairn_auth::jwt::Verifier;
use hyper::http::request::Parts;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;

/// Verified tokens remembered at most; past it, the expired go, then all.
pub const REMEMBERED: usize = 10_000;

/// Tenants by verified credential.
pub struct Tenants {
    verifier: Option<Verifier>,
    identity_secret: Option<String>,
    remembered: Mutex<HashMap<[u8; 32], (String, u64)>>,
}

impl Tenants {
    /// The partitioner of `config`: bearer tokens verified as the
    /// components verify them (a pasted JWKS, with the issuer and audience;
    /// keys fetched by URL are not known here, and such requests get an
    /// instance of their own), tool identities with the identity secret.
    pub fn of(config: &cairn_config::Config) -> Tenants {
        let a = &config.auth;
        let verifier = match (&a.jwks, &a.issuer, &a.audience) {
            (Some(jwks), Some(iss), Some(aud)) => Verifier::from_jwks(jwks, iss, aud).ok().map(|v| {
                let c = &a.claims;
                v.with_claims(cairn_auth::jwt::ClaimMap {
                    tenant: c.tenant.clone(),
                    fixed_tenant: c.fixed_tenant.clone(),
                    actor: c.actor.clone(),
                    name: c.name.clone(),
                    role: c.role.clone(),
                })
            }),
            _ => None,
        };
        Tenants { verifier, identity_secret: config.tools.identity_secret.clone(), remembered: Mutex::default() }
    }

    /// The tenant of a bearer token, verified (or remembered verified).
    fn bearer(&self, token: &str) -> Option<String> {
        let now = crate::clock::now_s();
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut remembered = self.remembered.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((tenant, _)) = remembered.get(&digest).filter(|(_, exp)| *exp > now) {
            return Some(tenant.clone());
        }
        let principal = self.verifier.as_ref()?.verify(token).ok()?;
        if remembered.len() >= REMEMBERED {
            remembered.retain(|_, (_, exp)| *exp > now);
            if remembered.len() >= REMEMBERED {
                remembered.clear();
            }
        }
        remembered.insert(digest, (principal.tenant.clone(), principal.exp));
        Some(principal.tenant)
    }

    /// The tenant of a tool's signed identity for this very call.
    fn identity(&self, value: &str, head: &Parts, body: &[u8]) -> Option<String> {
        let secret = self.identity_secret.as_deref()?;
        let tool = head.uri.path().strip_prefix("/tools/")?;
        let call = cairn_auth::identity::Call { tool, method: if head.method == hyper::Method::POST { "POST" } else { "OTHER" }, path: head.uri.path(), body };
        cairn_auth::identity::verify(value, secret, &call, crate::clock::now_s()).ok().map(|v| v.principal.tenant)
    }
}

impl Partitioner for Tenants {
    fn partition(&self, _component: &str, head: &Parts, body: &[u8]) -> Partition {
        let header = |name: &str| head.headers.get(name).and_then(|v| v.to_str().ok());
        if let Some(auth) = header("authorization") {
            let token = auth.split_once(' ').filter(|(s, _)| s.eq_ignore_ascii_case("bearer")).map(|(_, t)| t.trim());
            return token.and_then(|t| self.bearer(t)).map_or(Partition::Alone, Partition::Tenant);
        }
        if let Some(identity) = header(cairn_auth::identity::HEADER) {
            return self.identity(identity, head, body).map_or(Partition::Alone, Partition::Tenant);
        }
        let reads = matches!(head.method, hyper::Method::GET | hyper::Method::HEAD | hyper::Method::OPTIONS);
        if reads && header("cookie").is_none() { Partition::Anonymous } else { Partition::Alone }
    }
}
