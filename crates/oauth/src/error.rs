//! OAuth errors: one enum of the codes the RFCs name, each with its HTTP
//! status, and a description a person can act on.

use serde_json::json;

/// The error codes of RFC 6749 §4.1.2.1 and §5.2, RFC 7591 §3.2.2, RFC 8707
/// §2, and Cairn's own (`invalid_link`, `forbidden`, `limit_reached`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// A parameter is missing, repeated or malformed.
    InvalidRequest,
    /// The client is unknown or its metadata cannot be used.
    InvalidClient,
    /// The code or refresh token is not good (unknown, used, expired,
    /// revoked, for another client, or the PKCE verifier does not match).
    InvalidGrant,
    /// The grant type is not one this server offers.
    UnsupportedGrantType,
    /// The response type is not `code`.
    UnsupportedResponseType,
    /// The scope asked for is none this server grants.
    InvalidScope,
    /// The resource is not Cairn's (RFC 8707).
    InvalidTarget,
    /// The person said no.
    AccessDenied,
    /// Registration: a redirect URI cannot be used (RFC 7591).
    InvalidRedirectUri,
    /// Registration: other metadata cannot be used (RFC 7591).
    InvalidClientMetadata,
    /// The editor asked for a code with no session (OpenID's name).
    LoginRequired,
    /// A one-time sign-in link used already, expired or unknown.
    InvalidLink,
    /// A person without the role an action needs.
    Forbidden,
    /// Too many requests from one address.
    SlowDown,
    /// A stated bound on stored records is reached (open invitations,
    /// people of a tenant): nothing was written.
    LimitReached,
    /// The store failed: nothing was issued.
    TemporarilyUnavailable,
}

impl Code {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidRequest => "invalid_request",
            Code::InvalidClient => "invalid_client",
            Code::InvalidGrant => "invalid_grant",
            Code::UnsupportedGrantType => "unsupported_grant_type",
            Code::UnsupportedResponseType => "unsupported_response_type",
            Code::InvalidScope => "invalid_scope",
            Code::InvalidTarget => "invalid_target",
            Code::AccessDenied => "access_denied",
            Code::InvalidRedirectUri => "invalid_redirect_uri",
            Code::InvalidClientMetadata => "invalid_client_metadata",
            Code::LoginRequired => "login_required",
            Code::InvalidLink => "invalid_link",
            Code::Forbidden => "forbidden",
            Code::SlowDown => "slow_down",
            Code::LimitReached => "limit_reached",
            Code::TemporarilyUnavailable => "temporarily_unavailable",
        }
    }

    /// The status of a JSON answer carrying it.
    pub fn status(self) -> u16 {
        match self {
            Code::InvalidClient => 401,
            Code::AccessDenied | Code::Forbidden => 403,
            Code::LimitReached => 409,
            Code::SlowDown => 429,
            Code::TemporarilyUnavailable => 503,
            _ => 400,
        }
    }
}

/// An OAuth error with what went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// Which.
    pub code: Code,
    /// What to fix.
    pub description: String,
}

impl Error {
    /// An error of `code`.
    pub fn new(code: Code, description: impl Into<String>) -> Self {
        Error { code, description: description.into() }
    }

    /// The JSON body (`error`, `error_description`).
    pub fn body(&self) -> serde_json::Value {
        json!({"error": self.code.as_str(), "error_description": self.description})
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.description)
    }
}

impl std::error::Error for Error {}

impl From<cairn_kv::Error> for Error {
    fn from(e: cairn_kv::Error) -> Self {
        Error::new(Code::TemporarilyUnavailable, format!("the store failed, nothing was issued; try again: {e}"))
    }
}

/// Shorthand.
pub type Result<T> = std::result::Result<T, Error>;

/// An error of `code`, as a `Result`.
pub fn fail<T>(code: Code, description: impl Into<String>) -> Result<T> {
    Err(Error::new(code, description))
}
