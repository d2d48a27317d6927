//! What travels: form and query decoding, URLs taken apart, secrets and
//! their hashes. Small and strict: a repeated parameter is an error, as
//! RFC 6749 §3.1 asks.

use crate::error::{Code, Result, fail};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Parameters of a query string or an `application/x-www-form-urlencoded`
/// body; a name sent twice is refused naming it, an empty value counts as absent.
pub fn params(raw: &str) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for pair in raw.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let (name, value) = (decode(name)?, decode(value)?);
        if value.is_empty() {
            continue;
        }
        if out.insert(name.clone(), value).is_some() {
            return fail(Code::InvalidRequest, format!("the {name} parameter is sent more than once"));
        }
    }
    Ok(out)
}

/// Percent-decoding with `+` as a space.
pub fn decode(s: &str) -> Result<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
                let Some(b) = hex else { return fail(Code::InvalidRequest, "a parameter has a broken percent-escape") };
                out.push(b);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| crate::error::Error::new(Code::InvalidRequest, "a parameter is not UTF-8"))
}

/// Percent-encoding of everything but the unreserved characters.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `uri` with `pairs` added to its query.
pub fn with_query(uri: &str, pairs: &[(&str, &str)]) -> String {
    let mut out = uri.to_string();
    let mut sep = if uri.contains('?') { '&' } else { '?' };
    for (name, value) in pairs {
        out.push(sep);
        out.push_str(name);
        out.push('=');
        out.push_str(&encode(value));
        sep = '&';
    }
    out
}

/// A URL taken apart: `scheme:` then, for hierarchical URLs, the host and
/// port of `//authority` and the rest (path and query).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url<'a> {
    /// Lower-case scheme.
    pub scheme: String,
    /// Host (without brackets for IPv6), lower-case; empty when none.
    pub host: String,
    /// Explicit port.
    pub port: Option<u16>,
    /// Path and query.
    pub rest: &'a str,
    /// Whether it carries `user@`.
    pub userinfo: bool,
    /// Whether it carries a `#fragment`.
    pub fragment: bool,
}

/// Takes `s` apart; `None` when it has no scheme or a broken authority.
pub fn url(s: &str) -> Option<Url<'_>> {
    let colon = s.find(':')?;
    let scheme = &s[..colon];
    if scheme.is_empty() || !scheme.starts_with(|c: char| c.is_ascii_alphabetic()) || !scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) {
        return None;
    }
    let after = &s[colon + 1..];
    let fragment = after.contains('#');
    let Some(hier) = after.strip_prefix("//") else {
        return Some(Url { scheme: scheme.to_ascii_lowercase(), host: String::new(), port: None, rest: after, userinfo: false, fragment });
    };
    let end = hier.find(['/', '?', '#']).unwrap_or(hier.len());
    let (authority, rest) = hier.split_at(end);
    let userinfo = authority.contains('@');
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (h, tail) = v6.split_once(']')?;
        (h, tail.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    let port = match port {
        Some(p) if !p.is_empty() => Some(p.parse().ok()?),
        _ => None,
    };
    Some(Url { scheme: scheme.to_ascii_lowercase(), host: host.to_ascii_lowercase(), port, rest, userinfo, fragment })
}

/// Whether `host` names this machine: `localhost`, `127.0.0.0/8` or `::1`.
pub fn loopback(host: &str) -> bool {
    host == "localhost" || host == "::1" || host.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// Base64url without padding.
pub fn b64(bytes: &[u8]) -> String {
    B64.encode(bytes)
}

/// Decodes base64url without padding.
pub fn unb64(s: &str) -> Option<Vec<u8>> {
    B64.decode(s).ok()
}

/// 256 random bits as base64url, from `random` (the host's randomness).
pub fn secret(random: &dyn Fn() -> u64) -> String {
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_mut(8) {
        chunk.copy_from_slice(&random().to_le_bytes());
    }
    b64(&bytes)
}

/// 64 random bits as 16 hex digits.
pub fn short_id(random: &dyn Fn() -> u64) -> String {
    format!("{:016x}", random())
}

/// What the store keeps of a secret: the hex of its SHA-256 (a leaked store
/// holds no usable secret).
pub fn hash(secret: &str) -> String {
    Sha256::digest(secret.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Byte strings compared in time independent of where they differ.
pub fn same(a: &str, b: &str) -> bool {
    cairn_auth::constant_time_eq(a.as_bytes(), b.as_bytes())
}
