//! The table of every application variable ([`VARIABLES`]) and what each
//! accepts ([`Kind`]).

/// Which part of Cairn reads a variable. A component is handed exactly the
/// variables its readers name (`spin.toml`'s `[component.<id>.variables]`,
/// generated); the router's list includes its composed tools', since a
/// composed tool runs with the router's variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// The embedded host itself (never a component).
    Host,
    /// The router (MCP), and the tools composed into it.
    Router,
    /// Every tool component (served apart at `/tools/<tool>`).
    Tools,
    /// The people's REST API.
    Rest,
    /// Cairn's own authorization server.
    Authz,
    /// The people's editor.
    Ui,
    /// The key-value probe.
    KvProbe,
}

/// What a variable accepts. The empty string means "not set" for every kind
/// that may be left empty ([`Var::optional`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Any text.
    Text,
    /// A whole number in `min..=max`.
    Count {
        /// The least.
        min: u64,
        /// The most.
        max: u64,
    },
    /// One of these words.
    Choice(&'static [&'static str]),
    /// An absolute `http` or `https` URL.
    Url,
    /// An origin: `scheme://host[:port]`, nothing after it.
    Origin,
    /// Origins, separated by commas.
    Origins,
    /// A token claim's name: `[A-Za-z0-9_.:-]{1,64}`.
    Claim,
    /// A tenant id: `[a-z0-9_-]{1,64}`.
    Tenant,
    /// 64 hexadecimal digits (an Ed25519 seed).
    Hex32,
    /// A JSON object (a JWKS document: `{"keys": [...]}`).
    Jwks,
}

impl Kind {
    /// What the kind expects, for an error.
    pub fn expected(self) -> String {
        match self {
            Kind::Text => "text".into(),
            Kind::Count { min, max } if max == u64::MAX => format!("a whole number of at least {min}"),
            Kind::Count { min, max } => format!("a whole number from {min} to {max}"),
            Kind::Choice(words) => format!("one of {}", words.join(", ")),
            Kind::Url => "an absolute http:// or https:// URL".into(),
            Kind::Origin => "an origin, scheme://host[:port]".into(),
            Kind::Origins => "origins (scheme://host[:port]) separated by commas".into(),
            Kind::Claim => "a claim name: 1 to 64 of A-Z a-z 0-9 _ . : -".into(),
            Kind::Tenant => "a tenant id: 1 to 64 of a-z 0-9 _ -".into(),
            Kind::Hex32 => "64 hexadecimal digits".into(),
            Kind::Jwks => "a JWKS document: a JSON object with a \"keys\" array".into(),
        }
    }

    /// Whether `value` (not empty) is one this kind accepts.
    pub fn accepts(self, value: &str) -> bool {
        match self {
            Kind::Text => true,
            Kind::Count { min, max } => value.trim().parse::<u64>().is_ok_and(|n| (min..=max).contains(&n)),
            Kind::Choice(words) => words.contains(&value.trim()),
            Kind::Url => url_parts(value).is_some(),
            Kind::Origin => url_parts(value).is_some_and(|(_, rest)| !rest.contains('/')),
            Kind::Origins => value.split(',').map(str::trim).filter(|o| !o.is_empty()).all(|o| Kind::Origin.accepts(o)),
            Kind::Claim => (1..=64).contains(&value.len()) && value.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b)),
            Kind::Tenant => (1..=64).contains(&value.len()) && value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-".contains(&b)),
            Kind::Hex32 => value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit()),
            Kind::Jwks => looks_like_jwks(value),
        }
    }
}

/// `(scheme, rest)` of an absolute http(s) URL with a host.
fn url_parts(value: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = value.split_once("://")?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let ok = matches!(scheme, "http" | "https") && !host.is_empty() && !host.contains(char::is_whitespace) && !host.contains('@');
    ok.then_some((scheme, rest))
}

/// A JSON object that names a `"keys"` member (the full check is the token
/// verifier's, with the keys' own types).
fn looks_like_jwks(value: &str) -> bool {
    let v = value.trim();
    v.starts_with('{') && v.ends_with('}') && v.contains("\"keys\"")
}

/// One application variable.
#[derive(Debug, Clone, Copy)]
pub struct Var {
    /// Its name (`[a-z0-9_]`, as Spin requires).
    pub name: &'static str,
    /// Its default in the manifest.
    pub default: &'static str,
    /// What it accepts.
    pub kind: Kind,
    /// Whether the empty string (not set) is allowed.
    pub optional: bool,
    /// What it is for: the comment above it in `spin.toml`.
    pub doc: &'static str,
    /// Who reads it.
    pub readers: &'static [Reader],
    /// A secret (Spin's `secret = true`): never logged nor repeated in an error.
    pub secret: bool,
}

impl Var {
    /// Checks `value`: `Err` says what the variable expected.
    pub fn check(&self, value: &str) -> Result<(), String> {
        if value.is_empty() {
            return if self.optional { Ok(()) } else { Err(self.kind.expected()) };
        }
        if self.kind.accepts(value) { Ok(()) } else { Err(self.kind.expected()) }
    }

    /// Whether `reader` reads it.
    pub fn read_by(&self, reader: Reader) -> bool {
        self.readers.contains(&reader)
    }
}

/// The variable named `name` (`tool_url_<tool>` included, as a URL read by the router).
pub fn variable(name: &str) -> Option<Var> {
    VARIABLES.iter().copied().find(|v| v.name == name).or_else(|| name.starts_with(TOOL_URL_PREFIX).then_some(TOOL_URL))
}

/// The prefix of the variable naming where one tool is served.
pub const TOOL_URL_PREFIX: &str = "tool_url_";

/// `tool_url_<tool>`: one per tool (their defaults come from the tool table).
pub const TOOL_URL: Var = Var {
    name: "tool_url_",
    default: "",
    kind: Kind::Url,
    optional: false,
    doc: "Where the tool is served: the base URL of the host serving it.",
    readers: &[Reader::Router],
    secret: false,
};

use Reader::{Authz, Host, KvProbe, Rest, Router, Tools, Ui};

/// Who runs the front door (limits, origin, budgets) before their own work.
const DOOR: &[Reader] = &[Router, Tools, Rest, Authz];
/// Who verifies bearer tokens.
const TOKENS: &[Reader] = &[Router, Rest, Authz, Ui];
/// Who runs the notes core.
const NOTES: &[Reader] = &[Router, Tools, Rest];

const ANY: Kind = Kind::Count { min: 0, max: u64::MAX };
const POSITIVE: Kind = Kind::Count { min: 1, max: u64::MAX };

const fn var(name: &'static str, default: &'static str, kind: Kind, optional: bool, doc: &'static str, readers: &'static [Reader]) -> Var {
    Var { name, default, kind, optional, doc, readers, secret: false }
}

/// A secret variable: optional (empty keeps what it guards off).
const fn secret(name: &'static str, kind: Kind, doc: &'static str, readers: &'static [Reader]) -> Var {
    Var { name, default: "", kind, optional: true, doc, readers, secret: true }
}

/// Variables that were renamed: the old name, and the new one. A host that
/// is given an old name refuses to start, naming the new one, rather than
/// serve with the old setting silently dropped.
pub const RENAMED: &[(&str, &str)] = &[("tool_calls", "tool_transport")];

/// Every application variable Cairn reads, in the order `spin.toml` lists them.
pub const VARIABLES: &[Var] = &[
    secret("kv_probe_token", Kind::Text, "Operator secret for the kv-probe component; empty keeps the probe hidden (404).", &[KvProbe]),
    secret("metrics_token", Kind::Text, "Operator secret for the embedded host's GET /metrics (Prometheus text); empty keeps it hidden (404).", &[Host]),
    var(
        "jwks",
        "",
        Kind::Jwks,
        true,
        "The trusted keys of bearer tokens, a JWKS document. Left empty with issuer and audience, the embedded host fills all three with its own local key (.cairn/signing-key), its issuer and http://<listen>/mcp.",
        &[Router, Rest, Authz],
    ),
    var("issuer", "", Kind::Text, true, "The issuer (iss) bearer tokens must carry.", &[Router, Rest, Authz, Ui]),
    var("audience", "", Kind::Url, true, "The audience (aud) bearer tokens must carry: this MCP resource's URL.", &[Router, Rest, Authz, Ui]),
    var("authorization_server", "", Kind::Url, true, "Advertised in /.well-known/oauth-protected-resource (defaults to the issuer).", TOKENS),
    var(
        "jwks_url",
        "",
        Kind::Url,
        true,
        "Keys by URL instead of a pasted JWKS: with jwks empty, fetched from here, or discovered from the issuer's metadata when this is empty too.",
        &[Router, Rest, Authz],
    ),
    var("jwks_cache_seconds", "300", POSITIVE, false, "How long fetched keys are kept.", &[Router, Rest]),
    var(
        "jwks_refetch_seconds",
        "30",
        POSITIVE,
        false,
        "How often keys are fetched again, at most, when a token names an unknown key (a rotation).",
        &[Router, Rest],
    ),
    var(
        "auth_origin",
        "https://issuer.invalid",
        Kind::Origin,
        false,
        "The one origin keys and metadata are fetched from (the default never resolves, RFC 2606, for installs with a pasted jwks).",
        &[Host],
    ),
    var("tenant_claim", "tenant", Kind::Claim, false, "The token claim naming the tenant.", TOKENS),
    var("fixed_tenant", "", Kind::Tenant, true, "Puts every token in this one tenant (single-tenant installs).", TOKENS),
    var("actor_claim", "actor", Kind::Claim, false, "The token claim naming the actor type (agent or human).", &[Router, Rest, Authz]),
    var("name_claim", "name", Kind::Claim, false, "The token claim naming the display name.", TOKENS),
    var("role_claim", "role", Kind::Claim, false, "The token claim naming the role (admin counts for people only).", &[Router, Rest, Authz]),
    secret(
        "identity_secret",
        Kind::Text,
        "HMAC key of the identity the router hands to tools over HTTP; the embedded host generates one in .cairn/identity-secret when empty.",
        &[Router, Tools],
    ),
    var("allowed_origins", "", Kind::Origins, true, "Browser origins allowed to call, comma-separated; none by default.", &[Router, Tools, Rest, Authz, Ui]),
    var("rate_limit_per_minute", "600", POSITIVE, false, "MCP messages and REST calls one subject may make a minute, across all its tokens.", DOOR),
    var("refused_per_minute", "120", POSITIVE, false, "Refused requests one client address may send a minute before it is turned away unheard.", DOOR),
    var("max_body_bytes", "4194304", POSITIVE, false, "The largest request body, in bytes.", DOOR),
    secret(
        "sweep_token",
        Kind::Text,
        "Operator token for POST /api/v1/sweep-claims (an external scheduler on Spin); empty keeps the route hidden. The embedded host sweeps by itself.",
        &[Rest],
    ),
    var(
        "commit_check",
        "on",
        Kind::Choice(&["on", "off"]),
        false,
        "Whether components confirm that each compare-and-swap of theirs landed (a host's store may lie: Spin's Redis backend). Cairn's embedded host turns it off for its own stores, unless SPIN_VARIABLE_COMMIT_CHECK is set. Off also lets kv-probe run the checks that could harm a store nobody vouches for.",
        &[Router, Tools, Rest, KvProbe],
    ),
    var(
        "tool_transport",
        "composed",
        Kind::Choice(&["composed", "http"]),
        false,
        "How the router reaches the tools of this application: composed (each through its slot, composed at load time) or http (to tool_url_<tool> over wasi:http). A tool whose tool_url_<tool> names another host is always called there.",
        &[Router, Tools],
    ),
    var(
        "feed_stream_seconds",
        "20",
        Kind::Count { min: 1, max: 3_600 },
        false,
        "How long one change-feed stream (subscriptions/listen) lasts before it ends with its result and the client listens again. Keep it below the host's request timeout (30 s by default), which ends the instance serving a request past it.",
        &[Router],
    ),
    var("history_keep_versions", "1000", ANY, false, "A version stays readable while it is among the newest history_keep_versions of its note...", NOTES),
    var("history_keep_days", "30", ANY, false, "...or younger than history_keep_days...", NOTES),
    var("history_max_versions", "10000", POSITIVE, false, "...and in any case among the newest history_max_versions of its note.", NOTES),
    var("quota_notes", "10000", ANY, false, "Notes one tenant may have.", NOTES),
    var(
        "quota_bytes",
        "1073741824",
        ANY,
        false,
        "Bytes of content one tenant may store, every retained version counted (checked at every write against the tenant's exact usage).",
        NOTES,
    ),
    var(
        "read_max_chars",
        "24000",
        Kind::Count { min: 1_000, max: 1_000_000 },
        false,
        "The most characters one agent read returns unless the call asks for more (max_chars): a cut read says so and hands out a part version token.",
        NOTES,
    ),
    var(
        "ui_client_id",
        "",
        Kind::Text,
        true,
        "The OAuth client id of the people's editor (authorization code + PKCE at authorization_server). Empty: people sign in with the link cairn up prints, or by pasting a token.",
        &[Ui],
    ),
    secret(
        "signing_key",
        Kind::Hex32,
        "Cairn's own authorization server is on while this holds a key (a hex Ed25519 seed). The embedded host fills it when no issuer is configured; on Spin, set it and issuer (this application's origin).",
        &[Authz],
    ),
    var("access_token_seconds", "600", POSITIVE, false, "How long the own authorization server's access tokens last.", &[Authz]),
    var("refresh_token_days", "30", POSITIVE, false, "A grant unused for this many days ends.", &[Authz]),
    var(
        "client_metadata_origin",
        "https://client-metadata.invalid",
        Kind::Origin,
        false,
        "The one origin whose client metadata documents may come from a private or loopback address (the default never resolves).",
        &[Authz],
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_passes_its_own_check_and_names_are_unique() {
        for v in VARIABLES {
            assert_eq!(v.check(v.default), Ok(()), "{}", v.name);
            assert_eq!(VARIABLES.iter().filter(|w| w.name == v.name).count(), 1, "{}", v.name);
            assert!(v.name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'), "{}", v.name);
        }
    }

    #[test]
    fn kinds_refuse_what_they_do_not_accept() {
        let cases: [(Kind, &str, &str); 10] = [
            (POSITIVE, "10", "10GB"),
            (Kind::Count { min: 1_000, max: 1_000_000 }, "1000", "999"),
            (Kind::Choice(&["on", "off"]), "off", "yes"),
            (Kind::Url, "https://a.example/mcp", "a.example/mcp"),
            (Kind::Origin, "http://127.0.0.1:3000", "http://127.0.0.1:3000/x"),
            (Kind::Origins, "https://a.example, https://b.example", "https://a.example,nope"),
            (Kind::Claim, "https://x/tenant".rsplit('/').next().unwrap(), "a b"),
            (Kind::Tenant, "acme-1", "Acme"),
            (Kind::Hex32, &"ab".repeat(32), "abc"),
            (Kind::Jwks, r#"{"keys": []}"#, "[]"),
        ];
        for (kind, good, bad) in cases {
            assert!(kind.accepts(good), "{kind:?} accepts {good:?}");
            assert!(!kind.accepts(bad), "{kind:?} refuses {bad:?}");
        }
    }
}
