//! The Redis backend as a runtime config names it: `type = "redis"`, with
//! the server's `url` and an optional `namespace`.

use crate::{DEFAULT_NAMESPACE, Options, RedisStore, redact};
use cairn_kv::{Backend, OpenContext, OpenError, Store};
use serde::Deserialize;
use std::fmt;
use std::sync::Arc;

/// The Redis backend's maker.
pub struct Redis;

/// A `type = "redis"` table.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisConfig {
    /// `redis://[user:password@]host:port[/db]`.
    pub url: String,
    /// Prefix of every key, so several apps can share a server
    /// ([`Options::namespace`]; default [`DEFAULT_NAMESPACE`]).
    #[serde(default)]
    pub namespace: Option<String>,
}

/// Without the URL's password.
impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConfig").field("url", &redact(&self.url)).field("namespace", &self.namespace).finish()
    }
}

impl Backend for Redis {
    const TYPE: &'static str = "redis";
    type Config = RedisConfig;

    /// Connects, checks the server and loads the scripts ([`RedisStore::open`]).
    fn open(config: &RedisConfig, _: &OpenContext) -> Result<Arc<dyn Store>, OpenError> {
        let options = match &config.namespace {
            Some(ns) => Options::with_namespace(ns.clone()),
            None => Options::default(),
        };
        Ok(Arc::new(RedisStore::open(&config.url, options)?))
    }

    /// The same server, in a namespace of the label's own
    /// (`<namespace>-<label>`): every host sharing the notes shares it too.
    fn alongside(default: &RedisConfig, label: &str) -> Option<RedisConfig> {
        let namespace = default.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
        Some(RedisConfig { url: default.url.clone(), namespace: Some(format!("{namespace}-{label}")) })
    }
}
