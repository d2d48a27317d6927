//! `spin.toml` (manifest version 2): the single source of truth for
//! components, routes, stores, outbound hosts and variables.
//!
//! Only what Cairn uses is read; anything Spin would reject (a component id
//! that is not kebab-case, a trigger naming an unknown component) is refused
//! here with the same rule and a message naming the entry.

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    spin_manifest_version: u32,
    application: RawApp,
    #[serde(default)]
    variables: BTreeMap<String, Variable>,
    #[serde(default)]
    trigger: RawTriggers,
    #[serde(default)]
    component: BTreeMap<String, RawComponent>,
}

#[derive(Debug, Deserialize)]
struct RawApp {
    name: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    description: String,
}

#[derive(Debug, Default, Deserialize)]
struct RawTriggers {
    #[serde(default)]
    http: Vec<RawHttpTrigger>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHttpTrigger {
    route: RawRoute,
    component: String,
    #[serde(default)]
    #[allow(dead_code)]
    id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawRoute {
    Path(String),
    Private { private: bool },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawComponent {
    source: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    key_value_stores: Vec<String>,
    #[serde(default)]
    allowed_outbound_hosts: Vec<String>,
    #[serde(default)]
    variables: BTreeMap<String, String>,
    #[serde(default)]
    build: Option<Build>,
}

/// An application variable (`[variables]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variable {
    /// Value when the environment does not set one.
    #[serde(default)]
    pub default: Option<String>,
    /// Startup fails when no value is found.
    #[serde(default)]
    pub required: bool,
    /// Never printed.
    #[serde(default)]
    pub secret: bool,
}

/// A component's build step (`[component.<id>.build]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Build {
    /// Shell command, run as `sh -c`.
    pub command: String,
    /// Directory to run it in, relative to the manifest.
    #[serde(default)]
    pub workdir: Option<String>,
    /// Files whose change calls for a rebuild (informational here).
    #[serde(default)]
    #[allow(dead_code)]
    pub watch: Vec<String>,
}

/// Where a route sends requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/path`: exactly this path.
    Exact(String),
    /// `/prefix/...`: this prefix and everything under it (`/...` is all).
    Wildcard(String),
    /// `{ private = true }`: reachable only from other components.
    Private,
}

/// One component of the application.
#[derive(Debug, Clone)]
pub struct Component {
    /// Kebab-case id, also the `<id>.spin.internal` host name.
    pub id: String,
    /// Absolute path of the `.wasm` file.
    pub source: PathBuf,
    /// Free text.
    pub description: String,
    /// Store labels it may open.
    pub key_value_stores: Vec<String>,
    /// Outbound hosts it may call (entries with `{{ variable }}` templates
    /// join once [`Manifest::resolve_outbound`] expanded them).
    pub allowed_outbound_hosts: Vec<OutboundRule>,
    /// `allowed_outbound_hosts` entries written with `{{ variable }}`
    /// templates, as Spin allows, before expansion.
    pub outbound_templates: Vec<String>,
    /// Component variable templates (`{{ app_var }}`).
    pub variables: BTreeMap<String, String>,
    /// Build step.
    pub build: Option<Build>,
    /// Its trigger routes (none: private, reachable only from components).
    pub routes: Vec<Route>,
}

/// The application.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// Directory holding `spin.toml`; relative paths start here.
    pub dir: PathBuf,
    /// `[application] name`.
    pub name: String,
    /// `[application] version`.
    pub version: String,
    /// `[application] description`.
    pub description: String,
    /// `[variables]`.
    pub variables: BTreeMap<String, Variable>,
    /// Components in manifest order of their triggers.
    pub components: Vec<Component>,
}

/// One `allowed_outbound_hosts` entry: `scheme://host[:port]`, where host may
/// be `*` or `*.suffix` and port may be `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundRule {
    scheme: String,
    host: String,
    port: Option<String>,
}

impl OutboundRule {
    /// Parse one entry, refusing what Spin refuses.
    pub fn parse(text: &str) -> Result<Self> {
        let (scheme, rest) = text
            .split_once("://")
            .with_context(|| format!("allowed_outbound_hosts entry {text:?} has no scheme (write e.g. \"http://host\")"))?;
        let rest = rest.trim_end_matches('/');
        if rest.contains('/') {
            bail!("allowed_outbound_hosts entry {text:?} must not contain a path");
        }
        let (host, port) = match rest.rsplit_once(':') {
            Some((h, p)) => (h, Some(p.to_string())),
            None => (rest, None),
        };
        if host.is_empty() {
            bail!("allowed_outbound_hosts entry {text:?} has no host");
        }
        Ok(Self { scheme: scheme.to_ascii_lowercase(), host: host.to_ascii_lowercase(), port })
    }

    /// Whether a request to `scheme://host:port` is allowed by this rule.
    pub fn allows(&self, scheme: &str, host: &str, port: u16) -> bool {
        let scheme_ok = self.scheme == "*" || self.scheme.eq_ignore_ascii_case(scheme);
        let host = host.to_ascii_lowercase();
        let host_ok = self.host == "*"
            || self.host == host
            || self.host.strip_prefix("*.").is_some_and(|suffix| host.ends_with(&format!(".{suffix}")));
        let default_port = if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 };
        let port_ok = match self.port.as_deref() {
            Some("*") => true,
            Some(p) => p.parse::<u16>().ok() == Some(port),
            None => port == default_port,
        };
        scheme_ok && host_ok && port_ok
    }
}

/// Spin's identifier rule: words of ASCII letters and digits, each starting
/// with a letter, all lower or all upper case, joined by `delim`.
pub fn valid_id(id: &str, delim: char) -> Result<(), String> {
    if id.is_empty() {
        return Err("is empty".into());
    }
    for word in id.split(delim) {
        let mut chars = word.chars();
        let Some(first) = chars.next() else {
            return Err(format!("has an empty word between {delim:?} separators"));
        };
        if !first.is_ascii_alphabetic() {
            return Err(format!("has a word starting with {first:?}; words start with a letter"));
        }
        let upper = first.is_ascii_uppercase();
        for c in chars {
            if !c.is_ascii_alphanumeric() {
                return Err(format!("contains {c:?}; only letters, digits and {delim:?} are allowed"));
            }
            if c.is_ascii_alphabetic() && c.is_ascii_uppercase() != upper {
                return Err(format!("mixes case in {word:?}"));
            }
        }
    }
    Ok(())
}

impl Manifest {
    /// Read and validate the manifest at `path`.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        let raw: Raw = toml::from_str(&text).with_context(|| format!("{} is not a valid Spin manifest", path.display()))?;
        if raw.spin_manifest_version != 2 {
            bail!("{}: spin_manifest_version must be 2, found {}", path.display(), raw.spin_manifest_version);
        }
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
        for name in raw.variables.keys() {
            valid_id(name, '_').map_err(|e| anyhow::anyhow!("variable {name:?} {e} (variables are snake_case)"))?;
        }
        let mut routes: BTreeMap<String, Vec<Route>> = BTreeMap::new();
        for t in &raw.trigger.http {
            if !raw.component.contains_key(&t.component) {
                bail!("a [[trigger.http]] names component {:?}, which has no [component.{}] table", t.component, t.component);
            }
            let route = match &t.route {
                RawRoute::Private { private: true } => Route::Private,
                RawRoute::Private { private: false } => bail!("route of {:?}: `private = false` is not a route", t.component),
                RawRoute::Path(p) if !p.starts_with('/') => bail!("route {p:?} of {:?} must start with '/'", t.component),
                RawRoute::Path(p) => match p.strip_suffix("/...") {
                    Some(prefix) => Route::Wildcard(prefix.to_string()),
                    None if p == "/..." => Route::Wildcard(String::new()),
                    None => Route::Exact(p.trim_end_matches('/').to_string()),
                },
            };
            routes.entry(t.component.clone()).or_default().push(route);
        }
        let mut components = Vec::new();
        for (id, c) in raw.component {
            valid_id(&id, '-').map_err(|e| anyhow::anyhow!("component id {id:?} {e} (Spin requires kebab-case ids)"))?;
            for label in &c.key_value_stores {
                valid_id(label, '_').map_err(|e| anyhow::anyhow!("component {id:?}: store label {label:?} {e}"))?;
            }
            let (templates, fixed): (Vec<String>, Vec<String>) =
                c.allowed_outbound_hosts.into_iter().partition(|h| h.contains("{{"));
            let rules = fixed
                .iter()
                .map(|h| OutboundRule::parse(h).with_context(|| format!("component {id:?}")))
                .collect::<Result<Vec<_>>>()?;
            let routes = routes.remove(&id).unwrap_or_else(|| vec![Route::Private]);
            components.push(Component {
                source: dir.join(&c.source),
                id,
                description: c.description,
                key_value_stores: c.key_value_stores,
                allowed_outbound_hosts: rules,
                outbound_templates: templates,
                variables: c.variables,
                build: c.build,
                routes,
            });
        }
        Ok(Manifest {
            dir,
            name: raw.application.name,
            version: raw.application.version,
            description: raw.application.description,
            variables: raw.variables,
            components,
        })
    }

    /// The component serving a public request path and the route that
    /// matched, most specific first (an exact route beats any wildcard; a
    /// longer prefix beats a shorter).
    pub fn route(&self, path: &str) -> Option<(&Component, &Route)> {
        let path = if path.len() > 1 { path.trim_end_matches('/') } else { path };
        let mut best: Option<(&Component, &Route, usize)> = None;
        for c in &self.components {
            for r in &c.routes {
                match r {
                    Route::Exact(p) if p == path || (p.is_empty() && path == "/") => return Some((c, r)),
                    Route::Wildcard(prefix)
                        if (path == prefix || path.starts_with(&format!("{prefix}/")))
                            && best.is_none_or(|(_, _, len)| prefix.len() >= len) =>
                    {
                        best = Some((c, r, prefix.len()));
                    }
                    _ => {}
                }
            }
        }
        best.map(|(c, r, _)| (c, r))
    }

    /// A component by id.
    pub fn component(&self, id: &str) -> Option<&Component> {
        self.components.iter().find(|c| c.id == id)
    }

    /// Expands the `{{ variable }}` templates of every component's
    /// `allowed_outbound_hosts` with the application's values, as Spin does
    /// at load: an entry that expands to something that is not a host is an
    /// error naming the component and the template.
    pub fn resolve_outbound(&mut self, app: &BTreeMap<String, String>) -> Result<()> {
        for c in &mut self.components {
            for t in std::mem::take(&mut c.outbound_templates) {
                let host = crate::variables::expand(&t, app).with_context(|| format!("component {:?}: allowed_outbound_hosts", c.id))?;
                let rule = OutboundRule::parse(&host).with_context(|| {
                    format!("component {:?}: allowed_outbound_hosts entry {t:?} expands to {host:?}, which is not a host", c.id)
                })?;
                c.allowed_outbound_hosts.push(rule);
            }
        }
        Ok(())
    }

    /// Keeps only the components `ids` (and their routes), as `spin up -c`
    /// does: `cairn up --component <id>` serves a part of the application.
    pub fn select(&mut self, ids: &[String]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        for id in ids {
            if self.component(id).is_none() {
                let known: Vec<&str> = self.components.iter().map(|c| c.id.as_str()).collect();
                bail!("--component {id:?}: spin.toml has no such component (it has {})", known.join(", "));
            }
        }
        self.components.retain(|c| ids.contains(&c.id));
        Ok(())
    }
}
