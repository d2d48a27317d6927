//! What the door answers when it turns a request away: a [`Refusal`] with a
//! stable snake_case [`Code`], the HTTP status that code always has, a
//! message naming what was wrong and what to do, and the headers the
//! status needs (`Retry-After`, the bearer challenge).

/// Why the door refused a request. Each code has one status, always.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    /// A header, or all of them together, is over its limit: 431.
    HeaderTooLarge,
    /// The path and query are over their limit: 414.
    UriTooLong,
    /// The body (declared or read) is over the limit: 413.
    BodyTooLarge,
    /// The host's in-flight body budget is spent: 503, retry shortly.
    Busy,
    /// The host has as many connections open as it allows: 503, and closed.
    TooManyConnections,
    /// The client address has as many connections open as one may: 429, and closed.
    TooManyConnectionsFromAddress,
    /// The client address is sending as many bodies as one may: 429.
    TooManyBodiesFromAddress,
    /// The header section did not arrive within the header timeout: 408.
    HeaderTimeout,
    /// The body did not arrive within the body timeout: 408.
    BodyTimeout,
    /// The body stopped arriving at the minimum rate: 408.
    BodyTooSlow,
    /// A browser origin that is not allowed, or a foreign `Host` on a local server: 403.
    ForbiddenOrigin,
    /// No bearer token, or one that does not verify: 401 with a challenge.
    Unauthorized,
    /// The token lacks the scope the call needs: 403 with a challenge.
    InsufficientScope,
    /// The subject's budget for this minute is spent: 429.
    RateLimited,
    /// The client address sent too many refused requests this minute: 429.
    TooManyRefusals,
    /// The issuer's keys cannot be fetched and none are cached: 503.
    IssuerUnavailable,
    /// The operator's configuration cannot be used: 500.
    Misconfigured,
}

impl Code {
    /// Every code, for closed metric label sets and documentation.
    pub const ALL: [Code; 17] = [
        Code::HeaderTooLarge,
        Code::UriTooLong,
        Code::BodyTooLarge,
        Code::Busy,
        Code::TooManyConnections,
        Code::TooManyConnectionsFromAddress,
        Code::TooManyBodiesFromAddress,
        Code::HeaderTimeout,
        Code::BodyTimeout,
        Code::BodyTooSlow,
        Code::ForbiddenOrigin,
        Code::Unauthorized,
        Code::InsufficientScope,
        Code::RateLimited,
        Code::TooManyRefusals,
        Code::IssuerUnavailable,
        Code::Misconfigured,
    ];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Code::HeaderTooLarge => "header_too_large",
            Code::UriTooLong => "uri_too_long",
            Code::BodyTooLarge => "body_too_large",
            Code::Busy => "busy",
            Code::TooManyConnections => "too_many_connections",
            Code::TooManyConnectionsFromAddress => "too_many_connections_from_address",
            Code::TooManyBodiesFromAddress => "too_many_bodies_from_address",
            Code::HeaderTimeout => "header_timeout",
            Code::BodyTimeout => "body_timeout",
            Code::BodyTooSlow => "body_too_slow",
            Code::ForbiddenOrigin => "forbidden_origin",
            Code::Unauthorized => "unauthorized",
            Code::InsufficientScope => "insufficient_scope",
            Code::RateLimited => "rate_limited",
            Code::TooManyRefusals => "too_many_refusals",
            Code::IssuerUnavailable => "issuer_unavailable",
            Code::Misconfigured => "misconfigured",
        }
    }

    /// The code of a wire name.
    pub fn parse(name: &str) -> Option<Code> {
        Code::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// The HTTP status this code always answers with.
    pub const fn status(self) -> u16 {
        match self {
            Code::HeaderTooLarge => 431,
            Code::UriTooLong => 414,
            Code::BodyTooLarge => 413,
            Code::Busy | Code::TooManyConnections | Code::IssuerUnavailable => 503,
            Code::HeaderTimeout | Code::BodyTimeout | Code::BodyTooSlow => 408,
            Code::ForbiddenOrigin | Code::InsufficientScope => 403,
            Code::Unauthorized => 401,
            Code::RateLimited | Code::TooManyRefusals | Code::TooManyConnectionsFromAddress | Code::TooManyBodiesFromAddress => 429,
            Code::Misconfigured => 500,
        }
    }

    /// Whether a request refused so was refused before anyone was known: it
    /// leaves no durable record, only counters (see [`crate::summary`]).
    pub const fn anonymous(self) -> bool {
        !matches!(self, Code::InsufficientScope | Code::RateLimited)
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The response header that names the refusal's code, so the host counts
/// refusals by code without reading bodies.
pub const REFUSED_HEADER: &str = "cairn-refused";

/// A refused request: what the caller is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Why.
    pub code: Code,
    /// What was wrong and what to do, in one sentence.
    pub message: String,
    /// Seconds to wait before trying again (`Retry-After`).
    pub retry_after: Option<u64>,
    /// The `WWW-Authenticate` challenge (401, and 403 for a scope).
    pub challenge: Option<String>,
}

impl Refusal {
    /// A refusal with a message and no extra headers.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Refusal { code, message: message.into(), retry_after: None, challenge: None }
    }

    /// Ask the caller to wait `seconds` (at least 1).
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds.max(1));
        self
    }

    /// Add the bearer challenge.
    pub fn challenge(mut self, challenge: impl Into<String>) -> Self {
        self.challenge = Some(challenge.into());
        self
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        self.code.status()
    }

    /// The JSON body: `{"error": code, "message": message}`.
    pub fn body(&self) -> String {
        serde_json::json!({"error": self.code.as_str(), "message": self.message}).to_string()
    }

    /// The response headers besides `content-type`: the code, and
    /// `retry-after` and `www-authenticate` when set.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut h = vec![(REFUSED_HEADER, self.code.as_str().to_string())];
        if let Some(s) = self.retry_after {
            h.push(("retry-after", s.to_string()));
        }
        if let Some(c) = &self.challenge {
            h.push(("www-authenticate", c.clone()));
        }
        h
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_one_wire_name_and_reads_back() {
        let mut names: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        for c in Code::ALL {
            assert_eq!(Code::parse(c.as_str()), Some(c));
            assert!(c.as_str().bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{c}");
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Code::ALL.len());
    }

    #[test]
    fn a_refusal_carries_its_code_status_and_headers() {
        let r = Refusal::new(Code::RateLimited, "slow down").retry_after(0);
        assert_eq!(r.status(), 429);
        assert_eq!(r.retry_after, Some(1), "a wait is at least a second");
        let body: serde_json::Value = serde_json::from_str(&r.body()).unwrap();
        assert_eq!(body["error"], "rate_limited");
        assert!(r.headers().contains(&(REFUSED_HEADER, "rate_limited".into())));
        assert!(r.headers().contains(&("retry-after", "1".into())));
    }
}
