//! The typed configuration: every variable of [`crate::VARIABLES`] parsed once.

use crate::table::{Kind, TOOL_URL_PREFIX, Var, variable};
use std::collections::BTreeMap;
use std::fmt;

/// A variable whose value Cairn cannot use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The variable.
    pub variable: String,
    /// Its value (empty for a secret).
    pub value: String,
    /// What it expected.
    pub expected: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env = format!("SPIN_VARIABLE_{}", self.variable.to_ascii_uppercase());
        if self.value.is_empty() {
            write!(f, "the {} variable ({env}) is empty; it expects {}", self.variable, self.expected)
        } else {
            write!(f, "the {} variable ({env}) is {:?}; it expects {}", self.variable, self.value, self.expected)
        }
    }
}

impl std::error::Error for Error {}

/// How the router reaches the tools of this application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolTransport {
    /// Through the router's slot for each, composed at load time.
    Composed,
    /// Over `wasi:http`, to `tool_url_<tool>`.
    Http,
}

/// The front door's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Door {
    /// The largest request body, in bytes.
    pub max_body_bytes: u64,
    /// Calls one subject may make a minute.
    pub rate_limit_per_minute: u64,
    /// Refusals one client address may cause a minute.
    pub refused_per_minute: u64,
    /// Browser origins allowed to call.
    pub allowed_origins: Vec<String>,
    /// This resource's URL (its origin is always allowed).
    pub audience: Option<String>,
}

/// Which token claims name what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// The tenant's claim.
    pub tenant: String,
    /// Every token in this tenant, when set.
    pub fixed_tenant: Option<String>,
    /// The actor type's claim.
    pub actor: String,
    /// The display name's claim.
    pub name: String,
    /// The role's claim.
    pub role: String,
}

/// Bearer tokens: who is trusted and how tokens map to principals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auth {
    /// A pasted JWKS document.
    pub jwks: Option<String>,
    /// Where keys are fetched from, when none is pasted.
    pub jwks_url: Option<String>,
    /// The issuer tokens must carry.
    pub issuer: Option<String>,
    /// The audience tokens must carry.
    pub audience: Option<String>,
    /// The authorization server to advertise.
    pub authorization_server: Option<String>,
    /// How long fetched keys are kept, in seconds.
    pub jwks_cache_seconds: u64,
    /// The least time between two fetches for an unknown key, in seconds.
    pub jwks_refetch_seconds: u64,
    /// The claims mapping.
    pub claims: Claims,
}

/// The notes core's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Notes {
    /// Notes per tenant.
    pub quota_notes: u64,
    /// Bytes of content per tenant.
    pub quota_bytes: u64,
    /// Versions kept whatever their age.
    pub history_keep_versions: u64,
    /// Days versions are kept.
    pub history_keep_days: u64,
    /// Versions kept at most.
    pub history_max_versions: u64,
    /// The default cap of an agent's read.
    pub read_max_chars: u64,
    /// Whether writers confirm their commits.
    pub commit_check: bool,
}

/// How tools are reached and how their callers are proved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tools {
    /// Composed or over HTTP.
    pub transport: ToolTransport,
    /// `tool_url_<tool>` by tool name, where set.
    pub urls: BTreeMap<String, String>,
    /// The key of the identity the router signs for tools.
    pub identity_secret: Option<String>,
}

/// Cairn's own authorization server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuth {
    /// The signing key (hex Ed25519 seed); the server is off without it.
    pub signing_key: Option<String>,
    /// Access token lifetime, in seconds.
    pub access_token_seconds: u64,
    /// Days an unused grant lasts.
    pub refresh_token_days: u64,
    /// The origin whose metadata documents may be private.
    pub client_metadata_origin: String,
    /// The editor's client id.
    pub ui_client_id: Option<String>,
}

/// The operators' secrets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Operators {
    /// `GET /.well-known/cairn/kv-probe`.
    pub kv_probe_token: Option<String>,
    /// `GET /metrics` (the embedded host).
    pub metrics_token: Option<String>,
    /// The sweep route.
    pub sweep_token: Option<String>,
}

/// The change feed (`subscriptions/listen`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feed {
    /// How long one stream lasts before it ends with its result.
    pub stream_seconds: u64,
}

/// Every variable Cairn reads, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The front door.
    pub door: Door,
    /// Bearer tokens.
    pub auth: Auth,
    /// The notes core.
    pub notes: Notes,
    /// How the router reaches the tools.
    pub tools: Tools,
    /// The change feed.
    pub feed: Feed,
    /// The own authorization server.
    pub oauth: OAuth,
    /// Operators' secrets.
    pub operators: Operators,
    /// The origin keys and metadata are fetched from.
    pub auth_origin: String,
}

/// The values being read: each checked against its [`Var`] once.
struct Values<'a> {
    get: &'a dyn Fn(&str) -> Option<String>,
}

impl Values<'_> {
    /// The checked value of `name`: the one given, else the table's default.
    fn raw(&self, name: &str) -> Result<String, Error> {
        let var = variable(name).unwrap_or_else(|| panic!("{name} is not in the variables table"));
        let value = (self.get)(name).unwrap_or_else(|| var.default.to_string());
        match var.check(&value) {
            Ok(()) => Ok(value.trim().to_string()),
            Err(expected) => Err(Error { variable: name.into(), value: if var.secret { String::new() } else { value }, expected }),
        }
    }

    fn text(&self, name: &str) -> Result<String, Error> {
        self.raw(name)
    }

    fn optional(&self, name: &str) -> Result<Option<String>, Error> {
        Ok(Some(self.raw(name)?).filter(|v| !v.is_empty()))
    }

    fn number(&self, name: &str) -> Result<u64, Error> {
        let v = self.raw(name)?;
        // Checked by the kind: a whole number in range.
        Ok(v.parse().expect("a Count variable holds a whole number once checked"))
    }
}

impl Config {
    /// Parses every variable through `get` (`None`: not set, the table's
    /// default applies). `tools` names the tools whose `tool_url_<tool>` is
    /// read. The first variable that does not parse is the error.
    pub fn read(get: &dyn Fn(&str) -> Option<String>, tools: &[&str]) -> Result<Config, Error> {
        let v = Values { get };
        Ok(Config {
            door: door(&v)?,
            auth: auth(&v)?,
            notes: notes(&v)?,
            tools: tools_of(&v, tools)?,
            feed: Feed { stream_seconds: v.number("feed_stream_seconds")? },
            oauth: OAuth {
                signing_key: v.optional("signing_key")?,
                access_token_seconds: v.number("access_token_seconds")?,
                refresh_token_days: v.number("refresh_token_days")?,
                client_metadata_origin: v.text("client_metadata_origin")?,
                ui_client_id: v.optional("ui_client_id")?,
            },
            operators: Operators {
                kv_probe_token: v.optional("kv_probe_token")?,
                metrics_token: v.optional("metrics_token")?,
                sweep_token: v.optional("sweep_token")?,
            },
            auth_origin: v.text("auth_origin")?,
        })
    }

    /// [`Config::read`] as the component `reader` reads it: `host` is asked
    /// only for the variables `reader` reads (a component is given no
    /// others); the rest keep the table's default.
    pub fn read_as(reader: crate::Reader, host: &dyn Fn(&str) -> Option<String>, tools: &[&str]) -> Result<Config, Error> {
        let get = |name: &str| -> Option<String> { variable(name).is_some_and(|v| v.read_by(reader)).then(|| host(name)).flatten() };
        Config::read(&get, tools)
    }

    /// The configuration with every variable at the table's default.
    pub fn defaults() -> Config {
        Config::read(&|_| None, &[]).expect("every default passes its own check (a test holds the table to it)")
    }

    /// Every error among `values` (a name → value map, as a host holds the
    /// application's variables), checked against the table: each name the
    /// table does not know is skipped (it is the application's, not Cairn's).
    pub fn check_all(values: &BTreeMap<String, String>) -> Vec<Error> {
        values
            .iter()
            .filter_map(|(name, value)| {
                let var: Var = variable(name)?;
                let expected = var.check(value).err()?;
                Some(Error { variable: name.clone(), value: if var.secret { String::new() } else { value.clone() }, expected })
            })
            .collect()
    }
}

fn door(v: &Values) -> Result<Door, Error> {
    Ok(Door {
        max_body_bytes: v.number("max_body_bytes")?,
        rate_limit_per_minute: v.number("rate_limit_per_minute")?,
        refused_per_minute: v.number("refused_per_minute")?,
        allowed_origins: v.text("allowed_origins")?.split(',').map(str::trim).filter(|o| !o.is_empty()).map(String::from).collect(),
        audience: v.optional("audience")?,
    })
}

fn auth(v: &Values) -> Result<Auth, Error> {
    Ok(Auth {
        jwks: v.optional("jwks")?,
        jwks_url: v.optional("jwks_url")?,
        issuer: v.optional("issuer")?,
        audience: v.optional("audience")?,
        authorization_server: v.optional("authorization_server")?,
        jwks_cache_seconds: v.number("jwks_cache_seconds")?,
        jwks_refetch_seconds: v.number("jwks_refetch_seconds")?,
        claims: Claims {
            tenant: v.text("tenant_claim")?,
            fixed_tenant: v.optional("fixed_tenant")?,
            actor: v.text("actor_claim")?,
            name: v.text("name_claim")?,
            role: v.text("role_claim")?,
        },
    })
}

fn notes(v: &Values) -> Result<Notes, Error> {
    Ok(Notes {
        quota_notes: v.number("quota_notes")?,
        quota_bytes: v.number("quota_bytes")?,
        history_keep_versions: v.number("history_keep_versions")?,
        history_keep_days: v.number("history_keep_days")?,
        history_max_versions: v.number("history_max_versions")?,
        read_max_chars: v.number("read_max_chars")?,
        commit_check: v.text("commit_check")? == "on",
    })
}

fn tools_of(v: &Values, tools: &[&str]) -> Result<Tools, Error> {
    let mut urls = BTreeMap::new();
    for tool in tools {
        let name = format!("{TOOL_URL_PREFIX}{tool}");
        if let Some(url) = (v.get)(&name).filter(|u| !u.is_empty()) {
            if !Kind::Url.accepts(&url) {
                return Err(Error { variable: name, value: url, expected: Kind::Url.expected() });
            }
            urls.insert(tool.to_string(), url);
        }
    }
    Ok(Tools {
        transport: if v.text("tool_transport")? == "http" { ToolTransport::Http } else { ToolTransport::Composed },
        urls,
        identity_secret: v.optional("identity_secret")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::VARIABLES;

    fn with(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn the_defaults_read() {
        let c = Config::read(&with(&[]), &["read_note_tab"]).unwrap();
        assert_eq!((c.notes.read_max_chars, c.notes.commit_check, c.tools.transport), (24_000, true, ToolTransport::Composed));
        assert_eq!(c.door.rate_limit_per_minute, 600);
    }

    #[test]
    fn a_value_that_does_not_parse_is_named_with_what_it_expected() {
        let e = Config::read(&with(&[("quota_bytes", "10GB")]), &[]).unwrap_err();
        assert_eq!((e.variable.as_str(), e.value.as_str()), ("quota_bytes", "10GB"));
        assert!(e.to_string().contains("SPIN_VARIABLE_QUOTA_BYTES") && e.to_string().contains("whole number"), "{e}");
        let e = Config::read(&with(&[("tool_url_read_note_tab", "nowhere")]), &["read_note_tab"]).unwrap_err();
        assert_eq!(e.variable, "tool_url_read_note_tab");
    }

    #[test]
    fn a_secret_is_never_repeated_in_an_error() {
        let e = Config::read(&with(&[("signing_key", "not-hex-but-secret")]), &[]).unwrap_err();
        assert_eq!((e.variable.as_str(), e.value.as_str()), ("signing_key", ""));
        assert!(!e.to_string().contains("not-hex"), "{e}");
    }

    #[test]
    fn check_all_names_every_bad_variable_and_skips_the_applications_own() {
        let values: BTreeMap<String, String> = [("read_max_chars", "12"), ("tool_transport", "smoke"), ("greeting", "hello"), ("quota_notes", "5")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let names: Vec<String> = Config::check_all(&values).into_iter().map(|e| e.variable).collect();
        assert_eq!(names, ["read_max_chars", "tool_transport"]);
    }

    #[test]
    fn every_variable_of_the_table_is_read() {
        // Each variable set to a value its kind refuses must fail the read, by name.
        for var in VARIABLES {
            let bad = match var.kind {
                Kind::Text => continue,
                _ => "\u{1}not valid",
            };
            let got = Config::read(&with(&[(var.name, bad)]), &[]);
            assert_eq!(got.err().map(|e| e.variable), Some(var.name.to_string()), "{} is read by Config::read", var.name);
        }
    }
}
