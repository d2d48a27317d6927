//! Source URL normalization: the form under which a note holds a source at most once.
//!
//! https scheme, lower-case host without `www.`, no default port, no user info, no
//! fragment, no `utm_*` query parameters, no trailing slash. Only http and https are
//! accepted; a URL without a scheme is read as https.

/// Normalizes an http(s) URL, or says why it is refused.
pub fn normalize_url(raw: &str) -> Result<String, String> {
    let s = raw.trim();
    if s.is_empty() {
        return Err("url is empty".into());
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("url must not contain spaces or control characters".into());
    }
    let rest = without_scheme(s)?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if authority.contains('@') {
        return Err("url must not carry a user name or password".into());
    }
    let (host, port) = host_and_port(authority)?;
    let tail = tail.split('#').next().unwrap_or("");
    let (path, query) = match tail.split_once('?') {
        Some((p, q)) => (p, q),
        None => (tail, ""),
    };
    let path = path.trim_end_matches('/');
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter(|p| {
            let name = p.split('=').next().unwrap_or("");
            !name.to_ascii_lowercase().starts_with("utm_")
        })
        .collect();
    let mut out = format!("https://{host}{port}{path}");
    if !kept.is_empty() {
        out.push('?');
        out.push_str(&kept.join("&"));
    }
    Ok(out)
}

/// The URL after its scheme, which must be http or https; without one,
/// `host/path` is read as https, and `mailto:x` or `javascript:x` are refused.
fn without_scheme(s: &str) -> Result<&str, String> {
    match s.find("://") {
        Some(i) => {
            let scheme = s[..i].to_ascii_lowercase();
            if scheme != "http" && scheme != "https" {
                return Err(format!("url scheme {scheme} is not allowed: use http or https"));
            }
            Ok(&s[i + 3..])
        }
        None => {
            let head = s.split(['/', '?', '#']).next().unwrap_or("");
            if let Some((_, port)) = head.rsplit_once(':')
                && (port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()))
            {
                return Err("url must be http or https".into());
            }
            Ok(s)
        }
    }
}

/// The host (lower case, without `www.`) and the port (empty for the
/// default ports 80 and 443, else `:<n>`) of an authority without user info.
fn host_and_port(authority: &str) -> Result<(String, String), String> {
    let (host, port) = if authority.starts_with('[') {
        let close = authority.find(']').ok_or("url has an invalid host")?;
        let after = &authority[close + 1..];
        if !after.is_empty() && !after.starts_with(':') {
            return Err("url has an invalid host".into());
        }
        (&authority[..=close], after.strip_prefix(':').unwrap_or(""))
    } else {
        authority.split_once(':').unwrap_or((authority, ""))
    };
    let mut host = host.to_ascii_lowercase();
    if let Some(h) = host.strip_prefix("www.") {
        host = h.to_string();
    }
    if host.is_empty() || host.starts_with('.') || host.contains("..") {
        return Err("url has no valid host".into());
    }
    let port = match port {
        "" => String::new(),
        p => match p.parse::<u16>() {
            Ok(80 | 443) => String::new(),
            Ok(n) => format!(":{n}"),
            Err(_) => return Err("url has an invalid port".into()),
        },
    };
    Ok((host, port))
}
