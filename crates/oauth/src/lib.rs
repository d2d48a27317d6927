//! `cairn-oauth`: Cairn's own OAuth 2.1 authorization server, on when no
//! issuer is configured (see `docs/oauth.md`). The rules, in pure Rust over
//! a [`cairn_kv::Store`]; the `authz` component is their adapter.
//!
//! - [`endpoints`]: the routes ([`endpoints::Route`]) and their answers
//!   ([`Server::serve`]): RFC 8414 metadata, `authorize` with PKCE S256,
//!   `token` (code and refresh), RFC 7591 registration, RFC 7009
//!   revocation, consent, sessions, connected apps and invitations.
//! - [`clients`]: metadata documents, sealed dynamic registrations, the
//!   editor; redirect URI rules.
//! - [`grants`]: grants, codes and rotating refresh tokens (single use,
//!   reuse revokes the family), with their invariants.
//! - [`people`]: people, one-time sign-in links and sessions.
//! - [`seal`]: values sealed with a key derived from the signing key.
//! - [`sweep`]: spent and expired links, sessions and grants deleted.
//! - [`wire`]: forms, URLs, secrets and their hashes.
//! - [`error`]: OAuth error codes, one enum.

pub mod clients;
pub mod endpoints;
pub mod error;
pub mod grants;
pub mod people;
pub mod seal;
pub mod sweep;
pub mod wire;

pub use endpoints::{Reply, Request, Route, Server};

use cairn_notes::scopes;

/// What an app (an agent) may be granted.
pub const AGENT_SCOPES: [&str; 2] = [scopes::READ, scopes::WRITE];
/// What a person signed in to the editor holds.
pub const PERSON_SCOPES: [&str; 4] = scopes::ALL;

/// The server's settings, from application variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The issuer: an `http(s)` origin, no trailing slash.
    pub issuer: String,
    /// The protected resource (`aud` of every token).
    pub resource: String,
    /// Access token lifetime, in seconds (`access_token_seconds`).
    pub access_seconds: u64,
    /// How long a grant may go unused, in seconds (`refresh_token_days`).
    pub idle_seconds: u64,
    /// The one origin whose metadata documents may live on a private or
    /// loopback host (`client_metadata_origin`), if the operator named one.
    pub metadata_origin: Option<String>,
}

/// Default of `access_token_seconds`.
pub const ACCESS_SECONDS: u64 = 600;
/// Default of `refresh_token_days`.
pub const REFRESH_DAYS: u64 = 30;

impl Settings {
    /// The own authorization server's settings of Cairn's configuration:
    /// `issuer` (an `http(s)` origin; else the origin of `audience`),
    /// `audience`, `access_token_seconds`, `refresh_token_days`,
    /// `client_metadata_origin` (each checked when the configuration was
    /// read). An issuer that is not an origin is an error naming it.
    pub fn of(config: &cairn_config::Config) -> Result<Settings, String> {
        let resource = config.auth.audience.clone().ok_or("the audience variable is not set")?;
        let origin_of = |u: &str| -> Option<String> {
            let w = wire::url(u).filter(|w| (w.scheme == "http" || w.scheme == "https") && !w.host.is_empty())?;
            let scheme_len = w.scheme.len() + 3;
            let end = u[scheme_len..].find(['/', '?', '#']).map_or(u.len(), |i| scheme_len + i);
            Some(u[..end].to_string())
        };
        let issuer = match &config.auth.issuer {
            Some(i) => origin_of(i)
                .filter(|o| *o == i.trim_end_matches('/'))
                .ok_or_else(|| format!("the issuer variable ({i}) must be an http(s) origin for Cairn's own authorization server"))?,
            None => origin_of(&resource).ok_or_else(|| format!("the audience variable ({resource}) is not an http(s) URL"))?,
        };
        let o = &config.oauth;
        Ok(Settings {
            issuer,
            resource,
            access_seconds: o.access_token_seconds,
            idle_seconds: o.refresh_token_days.saturating_mul(86_400),
            metadata_origin: Some(o.client_metadata_origin.clone()),
        })
    }
}
