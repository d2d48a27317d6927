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
    #[serde(default)]
    dependencies_inherit_configuration: Option<bool>,
    #[serde(default)]
    dependencies: BTreeMap<String, RawDependency>,
}

/// `[component.<id>.dependencies]` entries Cairn composes: a `.wasm` by
/// path or another component of the application (Spin's other sources, a
/// registry or a URL, are refused with a message).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawDependency {
    Path {
        path: String,
        #[serde(default)]
        export: Option<String>,
        #[serde(default)]
        inherit_configuration: Option<RawInherit>,
    },
    Component {
        component: String,
        #[serde(default)]
        export: Option<String>,
        #[serde(default)]
        inherit_configuration: Option<RawInherit>,
    },
    Other(toml::Value),
}

/// `inherit_configuration`: all or nothing, or a list of keys.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawInherit {
    All(bool),
    Some(Vec<String>),
}

/// One composed dependency of a component (Spin's component dependencies):
/// the component's import `import` is filled by the export `export` of the
/// component in `source`, instantiated inside the dependent's instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    /// The import it fills: a plain name (`read-note-tab`) or an interface
    /// (`ns:pkg/iface@1.0.0`).
    pub import: String,
    /// The `.wasm` that implements it.
    pub source: PathBuf,
    /// The export of `source` that fills the import (default: the import's own name).
    pub export: String,
    /// Whether it runs with the dependent's configuration (stores,
    /// variables, outbound hosts); else with none, as Spin composes it.
    pub inherit: bool,
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
    /// Components composed into it at load time.
    pub dependencies: Vec<Dependency>,
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
        let (scheme, rest) =
            text.split_once("://").with_context(|| format!("allowed_outbound_hosts entry {text:?} has no scheme (write e.g. \"http://host\")"))?;
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

    /// Whether the rule names no host (`*`): it lets the caller go anywhere.
    pub fn any_host(&self) -> bool {
        self.host == "*"
    }

    /// Whether a request to `scheme://host:port` is allowed by this rule.
    pub fn allows(&self, scheme: &str, host: &str, port: u16) -> bool {
        let scheme_ok = self.scheme == "*" || self.scheme.eq_ignore_ascii_case(scheme);
        let host = host.to_ascii_lowercase();
        let host_ok = self.host == "*" || self.host == host || self.host.strip_prefix("*.").is_some_and(|suffix| host.ends_with(&format!(".{suffix}")));
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

/// The dependencies of component `id`, with Spin's rules: names are plain
/// kebab-case names or interface names; `dependencies_inherit_configuration`
/// and per-dependency `inherit_configuration` exclude each other; a
/// component used as a dependency may not have its own stores, variables or
/// outbound hosts.
fn dependencies(
    id: &str,
    raw: BTreeMap<String, RawDependency>,
    inherit_all: Option<bool>,
    dir: &Path,
    components: &BTreeMap<String, (PathBuf, bool)>,
) -> Result<Vec<Dependency>> {
    let mut out = Vec::new();
    for (import, dep) in raw {
        if !import.contains(':') {
            valid_id(&import, '-').map_err(|e| anyhow::anyhow!("component {id:?}: dependency name {import:?} {e} (plain names are kebab-case)"))?;
        }
        let (source, export, inherit) = match dep {
            RawDependency::Path { path, export, inherit_configuration } => (dir.join(path), export, inherit_configuration),
            RawDependency::Component { component, export, inherit_configuration } => {
                let (source, plain) = components
                    .get(&component)
                    .with_context(|| format!("component {id:?}: dependency {import:?} names component {component:?}, which does not exist"))?;
                if !plain {
                    bail!(
                        "component {id:?}: dependency {import:?}: component {component:?} cannot be used as a dependency because it has \
                         its own key_value_stores, variables or allowed_outbound_hosts (name its .wasm with `path` instead)"
                    );
                }
                (source.clone(), export, inherit_configuration)
            }
            RawDependency::Other(v) => {
                let given = match &v {
                    toml::Value::Table(t) => format!("a table with {}", t.keys().cloned().collect::<Vec<_>>().join(", ")),
                    other => format!("a {}", other.type_str()),
                };
                bail!(
                    "component {id:?}: dependency {import:?} is {given}: Cairn's host composes dependencies given by `path` or \
                     `component` (with optional `export` and `inherit_configuration`); registry and URL sources are not fetched here"
                )
            }
        };
        let inherit = match inherit {
            None => None,
            Some(RawInherit::All(b)) => Some(b),
            Some(RawInherit::Some(keys)) => bail!(
                "component {id:?}: dependency {import:?} inherits only {keys:?}: Cairn's host composes with all of the \
                 dependent's configuration or none (write `inherit_configuration = true` or `false`)"
            ),
        };
        if inherit_all.is_some() && inherit.is_some() {
            bail!("component {id:?} sets both dependencies_inherit_configuration and inherit_configuration on {import:?}: use one or the other");
        }
        let export = export.unwrap_or_else(|| import.clone());
        out.push(Dependency { import, source, export, inherit: inherit.or(inherit_all).unwrap_or(false) });
    }
    Ok(out)
}

/// Each component's routes, from the `[[trigger.http]]` tables: every
/// trigger names a component of the manifest, every path starts with `/`.
fn routes_of(raw: &Raw) -> Result<BTreeMap<String, Vec<Route>>> {
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
    Ok(routes)
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
        let mut routes = routes_of(&raw)?;
        let mut components = Vec::new();
        let sources: BTreeMap<String, (PathBuf, bool)> = raw
            .component
            .iter()
            .map(|(id, c)| {
                let plain = c.key_value_stores.is_empty() && c.variables.is_empty() && c.allowed_outbound_hosts.is_empty();
                (id.clone(), (dir.join(&c.source), plain))
            })
            .collect();
        for (id, c) in raw.component {
            let dependencies = dependencies(&id, c.dependencies, c.dependencies_inherit_configuration, &dir, &sources)?;
            valid_id(&id, '-').map_err(|e| anyhow::anyhow!("component id {id:?} {e} (Spin requires kebab-case ids)"))?;
            for label in &c.key_value_stores {
                valid_id(label, '_').map_err(|e| anyhow::anyhow!("component {id:?}: store label {label:?} {e}"))?;
            }
            let (templates, fixed): (Vec<String>, Vec<String>) = c.allowed_outbound_hosts.into_iter().partition(|h| h.contains("{{"));
            let rules = fixed.iter().map(|h| OutboundRule::parse(h).with_context(|| format!("component {id:?}"))).collect::<Result<Vec<_>>>()?;
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
                dependencies,
            });
        }
        let manifest = Manifest {
            dir,
            name: raw.application.name,
            version: raw.application.version,
            description: raw.application.description,
            variables: raw.variables,
            components,
        };
        for hazard in manifest.spin_route_hazards() {
            tracing::warn!("{hazard}");
        }
        Ok(manifest)
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
                        if (path == prefix || path.starts_with(&format!("{prefix}/"))) && best.is_none_or(|(_, _, len)| prefix.len() >= len) =>
                    {
                        best = Some((c, r, prefix.len()));
                    }
                    _ => {}
                }
            }
        }
        best.map(|(c, r, _)| (c, r))
    }

    /// Routes this host serves as written but Spin may not: a wildcard at
    /// the root (`/...`) beside other routes. Spin's router (`routefinder`
    /// 0.5.4, Spin 4.1 and earlier) does not order routes totally, and may
    /// hand the root wildcard requests meant for exact routes
    /// (docs/upstream/spin-router-root-wildcard.md). One sentence each,
    /// naming the component and the fix.
    pub fn spin_route_hazards(&self) -> Vec<String> {
        let routes: usize = self.components.iter().map(|c| c.routes.iter().filter(|r| **r != Route::Private).count()).sum();
        self.components
            .iter()
            .filter(|c| routes > 1 && c.routes.contains(&Route::Wildcard(String::new())))
            .map(|c| {
                format!(
                    "component {:?} is routed at the root wildcard /...: on Spin it may be handed requests meant for other routes; \
                     route it at \"/\" and a prefix (\"/ui/...\") instead",
                    c.id
                )
            })
            .collect()
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
                let host = expand(&t, app).with_context(|| format!("component {:?}: allowed_outbound_hosts", c.id))?;
                let rule = OutboundRule::parse(&host)
                    .with_context(|| format!("component {:?}: allowed_outbound_hosts entry {t:?} expands to {host:?}, which is not a host", c.id))?;
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

/// Expand the `{{ app_var }}` templates of one string; a template naming a
/// variable `[variables]` does not declare is an error naming it.
pub fn expand(template: &str, app: &BTreeMap<String, String>) -> Result<String> {
    let mut value = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        value.push_str(&rest[..start]);
        let Some(end) = rest[start..].find("}}") else {
            bail!("{template:?} has an unclosed '{{{{'");
        };
        let var = rest[start + 2..start + end].trim();
        let Some(v) = app.get(var) else {
            bail!("{template:?} refers to {var:?}, which [variables] does not declare");
        };
        value.push_str(v);
        rest = &rest[start + end + 2..];
    }
    value.push_str(rest);
    Ok(value)
}
