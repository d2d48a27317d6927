//! The server URL: `redis://[user:pass@]host:port[/db]` (also `valkey://`),
//! checked part by part so that a mistake is named, and never echoed with
//! its password.

use cairn_kv::{Error, Result};
use redis::io::tcp::TcpSettings;
use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisConnectionInfo};

/// Port used when the URL names none.
pub const DEFAULT_PORT: u16 = 6379;

/// A checked server address.
pub(crate) struct Target {
    /// What to connect with.
    pub info: ConnectionInfo,
    /// `host:port` (and `/db` when not 0), for messages: no credentials.
    pub shown: String,
}

const SHAPE: &str = "expected redis://[user:password@]host:port[/db]";

/// The URL with its password (if any) replaced by `***`, for messages.
pub fn redact(url: &str) -> String {
    // Only the userinfo part before the last '@' of the authority can hold a password.
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            let hidden = if userinfo.contains(':') { format!("{user}:***") } else { user.to_string() };
            format!("{scheme}://{hidden}@{host}{tail}")
        }
        None => url.to_string(),
    }
}

fn bad(url: &str, why: impl std::fmt::Display) -> Error {
    Error::Backend(format!("malformed Redis URL `{}`: {why} ({SHAPE})", redact(url)))
}

fn decode(url: &str, part: &str, what: &str) -> Result<String> {
    let mut out = Vec::with_capacity(part.len());
    let bytes = part.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            let byte = hex.and_then(|h| u8::from_str_radix(h, 16).ok());
            match byte {
                Some(b) => {
                    out.push(b);
                    i += 3;
                }
                None => return Err(bad(url, format!("the {what} has a broken %-escape"))),
            }
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad(url, format!("the {what} is not UTF-8 after %-decoding")))
}

/// Parse and check `url`.
pub(crate) fn parse(url: &str) -> Result<Target> {
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("redis" | "valkey") => {}
        Some("rediss" | "valkeys") => {
            return Err(Error::Backend(format!(
                "Redis URL `{}` asks for TLS, which cairn-kv-redis does not support (it would need a TLS \
                 stack in the host); use redis:// on a private network, or a local TLS tunnel (stunnel, \
                 spiped) and point redis:// at it",
                redact(url)
            )));
        }
        Some(other) => return Err(bad(url, format!("the scheme is `{other}`, not `redis`"))),
        None => return Err(bad(url, "there is no scheme (`redis://`)")),
    }
    let parsed = url::Url::parse(url).map_err(|e| bad(url, e))?;
    let host = match parsed.host() {
        Some(url::Host::Domain(d)) if !d.is_empty() => d.to_string(),
        Some(url::Host::Ipv4(v4)) => v4.to_string(),
        Some(url::Host::Ipv6(v6)) => v6.to_string(),
        _ => return Err(bad(url, "the host is missing")),
    };
    if host == "0.0.0.0" || host == "::" {
        return Err(bad(url, format!("`{host}` is a wildcard address, not a server to connect to")));
    }
    let port = parsed.port().unwrap_or(DEFAULT_PORT);
    if port == 0 {
        return Err(bad(url, "port 0 is not a server port"));
    }
    let db: i64 = match parsed.path().strip_prefix('/').unwrap_or(parsed.path()) {
        "" => 0,
        path => match path.parse::<u32>() {
            Ok(n) => n.into(),
            Err(_) => return Err(bad(url, format!("the database `/{path}` is not a number"))),
        },
    };
    if let Some(q) = parsed.query() {
        return Err(bad(url, format!("query parameters are not supported (got `?{q}`)")));
    }
    if parsed.fragment().is_some() {
        return Err(bad(url, "a `#fragment` is not supported"));
    }
    let username = decode(url, parsed.username(), "user name")?;
    let password = match parsed.password() {
        Some(p) => Some(decode(url, p, "password")?),
        None => None,
    };
    if !username.is_empty() && password.is_none() {
        return Err(bad(url, "a user name needs a password (`user:password@`)"));
    }
    // No `CLIENT SETINFO` at connect: it is cosmetic, and the client waits the
    // connect timeout once per handshake command on a peer that never answers.
    let mut redis_info = RedisConnectionInfo::default().set_db(db).set_skip_set_lib_name();
    if !username.is_empty() {
        redis_info = redis_info.set_username(&username);
    }
    if let Some(p) = &password {
        redis_info = redis_info.set_password(p);
    }
    let host_shown = if host.contains(':') { format!("[{host}]") } else { host.clone() };
    let shown = if db == 0 { format!("{host_shown}:{port}") } else { format!("{host_shown}:{port}/{db}") };
    let info = ConnectionAddr::Tcp(host, port)
        .into_connection_info()
        .map_err(|e| bad(url, e))?
        .set_redis_settings(redis_info)
        // Small request/reply exchanges: Nagle's algorithm would only add latency.
        .set_tcp_settings(TcpSettings::default().set_nodelay(true));
    Ok(Target { info, shown })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact("redis://u:secret@h:1/2"), "redis://u:***@h:1/2");
        assert_eq!(redact("redis://:secret@h:1"), "redis://:***@h:1");
        assert_eq!(redact("redis://h:1"), "redis://h:1");
    }

    #[test]
    fn good_urls_parse() {
        let t = parse("redis://127.0.0.1:7000/3").unwrap();
        assert_eq!(t.shown, "127.0.0.1:7000/3");
        let t = parse("redis://localhost").unwrap();
        assert_eq!(t.shown, "localhost:6379");
        let t = parse("redis://[::1]:7000").unwrap();
        assert_eq!(t.shown, "[::1]:7000");
        let t = parse("redis://me:p%40ss@h:1").unwrap();
        assert_eq!(t.info.redis_settings().password(), Some("p@ss"));
        assert_eq!(t.info.redis_settings().username(), Some("me"));
    }
}
