//! What travels: form and query decoding, URLs taken apart, secrets and
//! their hashes, and which hosts and addresses are public ([`public_ip`],
//! [`public_host`]). Small and strict: a repeated parameter is an error, as
//! RFC 6749 §3.1 asks.

use crate::error::{Code, Result, fail};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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
    host == "localhost" || host == "::1" || host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether an address is on the public internet: not this machine, not a
/// private, shared, link-local, site-local, documentation, benchmarking,
/// discard, multicast, reserved or unspecified range. An IPv6 address that
/// carries an IPv4 one (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`,
/// NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is judged as that IPv4 address.
/// The one rule for every fetch a stranger aims: the server's before a
/// metadata document is fetched ([`public_host`]), the embedded host's
/// after a name is resolved.
pub fn public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => embedded_v4(v6).map_or_else(|| public_v6(v6), public_v4),
    }
}

fn public_v4(v4: Ipv4Addr) -> bool {
    let [a, b, c, _] = v4.octets();
    let special =
        v4.is_loopback() || v4.is_private() || v4.is_link_local() || v4.is_unspecified() || v4.is_broadcast() || v4.is_documentation() || v4.is_multicast();
    let reserved = a == 0 // this network
        || (a == 100 && (64..128).contains(&b)) // shared address space (carrier NAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240; // reserved
    !(special || reserved)
}

/// The IPv4 address an IPv6 address carries, where it carries one.
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match v6.segments() {
        // IPv4-mapped, IPv4-compatible (and `::`, `::1`), NAT64 well-known prefix.
        [0, 0, 0, 0, 0, 0xffff, hi, lo] | [0, 0, 0, 0, 0, 0, hi, lo] | [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(v4(hi, lo)),
        // 6to4: the IPv4 address follows the prefix.
        [0x2002, hi, lo, ..] => Some(v4(hi, lo)),
        _ => None,
    }
}

fn public_v6(v6: Ipv6Addr) -> bool {
    let s = v6.segments();
    let special = v6.is_loopback() || v6.is_unspecified() || v6.is_multicast();
    let reserved = (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (s[0] & 0xffc0) == 0xfec0 // site-local fec0::/10
        || (s[0] == 0x64 && s[1] == 0xff9b) // NAT64 64:ff9b::/32 beyond the /96 (local use)
        || (s[0] == 0x100 && s[1..4] == [0, 0, 0]) // discard 100::/64
        || (s[0] == 0x2001 && s[1] < 0x200) // IETF protocol assignments 2001::/23 (Teredo, benchmarking)
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation 2001:db8::/32
        || (s[0] == 0x3fff && s[1] < 0x1000); // documentation 3fff::/20
    !(special || reserved)
}

/// Names under which no public document lives: special-use (RFC 6761,
/// RFC 8375), and private suffixes in common use (`*.spin.internal` is a
/// component of this very application).
const PRIVATE_SUFFIXES: &[&str] =
    &["localhost", "local", "internal", "invalid", "test", "example", "localdomain", "home.arpa", "lan", "intranet", "corp", "private", "onion"];

/// Whether `host` (as [`url`] gives it: lower-case, no brackets) is a
/// public DNS name or a public address; `Err` says why not. A public DNS
/// name has two or more labels of letters, digits and inner hyphens, a last
/// label that is not a number (`2130706433` or `127.1` are addresses in
/// disguise), no trailing dot, and no private suffix. A name may still
/// resolve to a private address: the embedded host checks the resolved
/// address too.
pub fn public_host(host: &str) -> std::result::Result<(), String> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return if public_ip(ip) { Ok(()) } else { Err(format!("{host} is not a public address")) };
    }
    if host.is_empty() || host.len() > 253 || host.ends_with('.') {
        return Err(format!("{host:?} is not a DNS name (empty, too long, or ending in a dot)"));
    }
    let labels: Vec<&str> = host.split('.').collect();
    let ldh = |l: &str| (1..=63).contains(&l.len()) && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') && !l.starts_with('-') && !l.ends_with('-');
    if labels.len() < 2 || !labels.iter().all(|l| ldh(l)) || !labels[labels.len() - 1].bytes().any(|b| b.is_ascii_alphabetic()) {
        return Err(format!("{host} is not a public DNS name (it needs two or more labels of letters, digits and hyphens, ending in a name)"));
    }
    match PRIVATE_SUFFIXES.iter().find(|s| host == **s || host.ends_with(&format!(".{s}"))) {
        Some(s) => Err(format!("{host} is a private name (.{s}), not a public one")),
        None => Ok(()),
    }
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
