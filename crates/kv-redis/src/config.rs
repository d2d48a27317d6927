//! The Redis backend as a runtime config names it: `type = "redis"`, with
//! one server's `url`, or a cluster's nodes (`urls`, or `url` with
//! `cluster = true`), an optional `namespace`, and how many replicas must
//! confirm a write before it is acknowledged.
//!
//! ```toml
//! [key_value_store.default]       # one primary
//! type = "redis"
//! url = "redis://127.0.0.1:6379"
//!
//! [key_value_store.default]       # a Redis Cluster: any of its nodes
//! type = "redis"
//! urls = ["redis://10.0.0.1:6379", "redis://10.0.0.2:6379"]
//! wait_for_replicas = 1           # the default on a cluster; 0 on one primary
//! wait_timeout_ms = 1000
//! ```

use crate::{DEFAULT_NAMESPACE, Options, RedisStore, redact};
use cairn_kv::{Backend, OpenContext, OpenError, Store};
use serde::Deserialize;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The Redis backend's maker.
pub struct Redis;

/// A `type = "redis"` table. Reading it checks that it names exactly one
/// of `url` and `urls` (the error names what is missing or doubled).
#[derive(Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields, try_from = "Table")]
pub struct RedisConfig {
    /// `redis://[user:password@]host:port[/db]`: the server, or with
    /// `cluster = true` one node of the cluster.
    #[serde(default)]
    pub url: Option<String>,
    /// Several nodes of one Redis Cluster (`redis://host:port` each); the
    /// first that answers gives the cluster's shape. Implies `cluster`.
    #[serde(default)]
    pub urls: Vec<String>,
    /// The server is a Redis Cluster (implied by `urls`).
    #[serde(default)]
    pub cluster: bool,
    /// Prefix of every key, so several apps can share a server
    /// ([`Options::namespace`]; default [`DEFAULT_NAMESPACE`]).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Replicas that must confirm each write (`WAIT`) before it is
    /// acknowledged: default 1 on a cluster (a failover of one primary
    /// loses no acknowledged write), 0 on one server. 0 acknowledges on the
    /// primary alone.
    #[serde(default)]
    pub wait_for_replicas: Option<u32>,
    /// How long a write waits for those replicas before it is refused as
    /// unavailable (default 1000 ms).
    #[serde(default)]
    pub wait_timeout_ms: Option<u64>,
}

/// The table as written, before [`RedisConfig::seeds`] checks it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    urls: Vec<String>,
    #[serde(default)]
    cluster: bool,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    wait_for_replicas: Option<u32>,
    #[serde(default)]
    wait_timeout_ms: Option<u64>,
}

impl TryFrom<Table> for RedisConfig {
    type Error = String;
    fn try_from(t: Table) -> Result<Self, String> {
        let c = RedisConfig {
            url: t.url,
            urls: t.urls,
            cluster: t.cluster,
            namespace: t.namespace,
            wait_for_replicas: t.wait_for_replicas,
            wait_timeout_ms: t.wait_timeout_ms,
        };
        c.seeds()?;
        Ok(c)
    }
}

impl RedisConfig {
    /// One server at `url`, with the defaults.
    pub fn server(url: impl Into<String>) -> Self {
        Self { url: Some(url.into()), ..Self::default() }
    }

    /// Whether the table names a cluster.
    pub fn is_cluster(&self) -> bool {
        self.cluster || !self.urls.is_empty()
    }

    /// The URLs to start from, checked for shape: exactly one of `url` and
    /// `urls`, and `urls` only for a cluster.
    pub fn seeds(&self) -> Result<Vec<&str>, String> {
        match (&self.url, self.urls.as_slice()) {
            (Some(_), [_, ..]) => Err("give either `url` or `urls`, not both".into()),
            (None, []) => Err("missing field `url` (or `urls` for a Redis Cluster)".into()),
            (Some(u), []) => Ok(vec![u.as_str()]),
            (None, many) if !self.cluster && many.len() == 1 => Ok(vec![many[0].as_str()]),
            (None, many) => Ok(many.iter().map(String::as_str).collect()),
        }
    }

    /// The store's options from the table.
    pub fn options(&self) -> Options {
        let mut o = match &self.namespace {
            Some(ns) => Options::with_namespace(ns.clone()),
            None => Options::default(),
        };
        o.wait_for_replicas = self.wait_for_replicas.unwrap_or(if self.is_cluster() { 1 } else { 0 });
        if let Some(ms) = self.wait_timeout_ms {
            o.wait_timeout = Duration::from_millis(ms);
        }
        o
    }
}

/// Without the URLs' passwords.
impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &self.url.as_deref().map(redact))
            .field("urls", &self.urls.iter().map(|u| redact(u)).collect::<Vec<_>>())
            .field("cluster", &self.cluster)
            .field("namespace", &self.namespace)
            .field("wait_for_replicas", &self.wait_for_replicas)
            .field("wait_timeout_ms", &self.wait_timeout_ms)
            .finish()
    }
}

impl Backend for Redis {
    const TYPE: &'static str = "redis";
    type Config = RedisConfig;

    /// Connects, checks the server (or the cluster's shape) and loads the
    /// scripts ([`RedisStore::open`], [`RedisStore::open_cluster`]).
    fn open(config: &RedisConfig, _: &OpenContext) -> Result<Arc<dyn Store>, OpenError> {
        let seeds = config.seeds().map_err(cairn_kv::Error::Backend)?;
        let options = config.options();
        let store = if config.is_cluster() { RedisStore::open_cluster(&seeds, options)? } else { RedisStore::open(seeds[0], options)? };
        Ok(Arc::new(store))
    }

    /// The same server or cluster, in a namespace of the label's own
    /// (`<namespace>-<label>`): every host sharing the notes shares it too.
    fn alongside(default: &RedisConfig, label: &str) -> Option<RedisConfig> {
        let namespace = default.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
        Some(RedisConfig { namespace: Some(format!("{namespace}-{label}")), ..default.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> RedisConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn several_urls_or_cluster_true_name_a_cluster_and_wait_for_one_replica() {
        let c = table("urls = [\"redis://a:1\", \"redis://b:2\"]");
        assert!(c.is_cluster());
        assert_eq!(c.seeds().unwrap(), ["redis://a:1", "redis://b:2"]);
        assert_eq!(c.options().wait_for_replicas, 1);
        let c = table("url = \"redis://a:1\"\ncluster = true\nwait_for_replicas = 0");
        assert!(c.is_cluster());
        assert_eq!(c.options().wait_for_replicas, 0);
        let c = table("url = \"redis://a:1\"\nwait_timeout_ms = 250");
        assert!(!c.is_cluster());
        assert_eq!(c.options().wait_for_replicas, 0);
        assert_eq!(c.options().wait_timeout, Duration::from_millis(250));
    }

    #[test]
    fn url_and_urls_together_or_neither_are_refused_when_read() {
        let e = toml::from_str::<RedisConfig>("url = \"redis://a:1\"\nurls = [\"redis://b:2\"]").unwrap_err();
        assert!(e.to_string().contains("not both"), "{e}");
        let e = toml::from_str::<RedisConfig>("namespace = \"x\"").unwrap_err();
        assert!(e.to_string().contains("missing field `url`"), "{e}");
        let e = toml::from_str::<RedisConfig>("urls = [\"redis://a:1\"]\nclustr = true").unwrap_err();
        assert!(e.to_string().contains("clustr"), "{e}");
    }

    #[test]
    fn alongside_keeps_the_cluster_and_its_confirmation() {
        let c = table("urls = [\"redis://a:1\"]\nwait_timeout_ms = 5");
        let cache = Redis::alongside(&c, "cache").unwrap();
        assert_eq!(cache.urls, c.urls);
        assert_eq!(cache.wait_timeout_ms, Some(5));
        assert_eq!(cache.namespace.as_deref(), Some("cairn-cache"));
    }
}
