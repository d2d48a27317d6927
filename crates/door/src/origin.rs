//! Browsers and DNS rebinding, before any token is looked at.
//!
//! - A request with an `Origin` passes if the origin is allow-listed
//!   (`allowed_origins`), is the request's own origin, or if both the
//!   origin and the request's host are loopback (a page on this machine
//!   calling a server on this machine).
//! - When the resource (`audience`) is on a loopback host, the request's
//!   host must be loopback too: a DNS-rebinding page reaches a local server
//!   under a foreign host name, and is refused.
//!
//! Cookies are never credentials anywhere in Cairn, so a cross-site request
//! that passes here still needs a bearer token it cannot read.

use crate::refusal::{Code, Refusal};

/// The host of a URL or a `Host` header, without port or brackets.
pub fn host_of(s: &str) -> &str {
    let s = s.split_once("://").map_or(s, |(_, rest)| rest);
    let s = s.split(['/', '?', '#']).next().unwrap_or(s);
    let s = s.rsplit_once('@').map_or(s, |(_, h)| h);
    if let Some(rest) = s.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    s.rsplit_once(':').map_or(s, |(h, _)| h)
}

/// Whether a host name is this machine.
pub fn loopback(host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    matches!(host.as_str(), "localhost" | "::1") || host.ends_with(".localhost") || host.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// `scheme://host[:port]` of a URL.
pub fn origin_of(url: &str) -> &str {
    match url.find("://") {
        Some(i) => match url[i + 3..].find(['/', '?', '#']) {
            Some(j) => &url[..i + 3 + j],
            None => url,
        },
        None => url,
    }
}

/// The origin rules of one application.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origins {
    /// The protected resource (`audience`), when set.
    pub audience: Option<String>,
    /// Browser origins allowed to call (`allowed_origins`, comma-separated).
    pub allowed: Vec<String>,
}

impl Origins {
    /// From the `audience` and `allowed_origins` variables.
    pub fn new(audience: Option<String>, allowed_origins: &str) -> Self {
        let allowed = allowed_origins.split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_string).collect();
        Origins { audience, allowed }
    }

    /// Checks a request: `full_url` is the URL it was sent to (Spin's
    /// `spin-full-url`, else `http://<Host>`), `origin` its `Origin` header.
    pub fn check(&self, full_url: &str, origin: Option<&str>) -> Result<(), Refusal> {
        let host = host_of(full_url);
        if let Some(resource) = &self.audience
            && loopback(host_of(resource))
            && !host.is_empty()
            && !loopback(host)
        {
            return Err(Refusal::new(Code::ForbiddenOrigin, format!("host {host} is not this local server")));
        }
        if let Some(origin) = origin {
            let listed = self.allowed.iter().any(|a| a == origin);
            let same_origin = full_url.contains("://") && origin == origin_of(full_url);
            let both_local = loopback(host_of(origin)) && loopback(host);
            if !(listed || same_origin || both_local) {
                return Err(Refusal::new(Code::ForbiddenOrigin, format!("origin {origin} is not allowed: an operator can add it to allowed_origins")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_read_from_urls_and_host_headers() {
        assert_eq!(host_of("http://127.0.0.1:3000/mcp"), "127.0.0.1");
        assert_eq!(host_of("localhost:3000"), "localhost");
        assert_eq!(host_of("http://[::1]:80/x"), "::1");
        assert_eq!(host_of("https://user@evil.example/x"), "evil.example");
        assert_eq!(origin_of("https://a.example:8443/mcp?x"), "https://a.example:8443");
        assert!(loopback("127.0.0.2") && loopback("app.localhost") && !loopback("127.example"));
    }

    #[test]
    fn a_foreign_origin_is_refused_and_a_listed_one_passes() {
        let o = Origins::new(Some("https://cairn.example/mcp".into()), "https://app.example, https://b.example");
        assert!(o.check("https://cairn.example/mcp", None).is_ok(), "no origin: not a browser");
        assert!(o.check("https://cairn.example/mcp", Some("https://app.example")).is_ok());
        assert!(o.check("https://cairn.example/mcp", Some("https://cairn.example")).is_ok(), "same origin");
        let r = o.check("https://cairn.example/mcp", Some("https://evil.example")).unwrap_err();
        assert_eq!((r.code, r.status()), (Code::ForbiddenOrigin, 403));
    }

    #[test]
    fn a_local_server_refuses_a_rebound_host() {
        let o = Origins::new(Some("http://127.0.0.1:3000/mcp".into()), "");
        assert!(o.check("http://localhost:3000/mcp", Some("http://localhost:5173")).is_ok(), "loopback page, loopback server");
        assert_eq!(o.check("http://evil.example:3000/mcp", None).unwrap_err().code, Code::ForbiddenOrigin);
    }
}
