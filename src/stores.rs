//! Which backend holds each store label, chosen the way Spin chooses: a
//! runtime config file (`cairn up --runtime-config-file runtime-config.toml`)
//! with `[key_value_store.<label>]` tables, or the `--store` shortcut for the
//! `default` label. Labels nobody configures get the embedded defaults:
//! `default` is SQLite at `<state-dir>/kv.db`, `cache` is in memory (or,
//! when `default` is on Redis, on the same server in a namespace of its
//! own, so every host sharing the notes shares the budgets too).
//!
//! ```toml
//! [key_value_store.default]
//! type = "redis"                 # or "spin" (SQLite, `path`), or "memory"
//! url = "redis://127.0.0.1:6379"
//! namespace = "cairn"            # optional: share a server between apps
//!
//! [key_value_store.cache]
//! type = "redis"
//! url = "redis://127.0.0.1:6379/1"
//! ```
//!
//! Every mistake is a startup error naming the field (an unknown store type,
//! a malformed URL, an unreachable server), and every store is opened before
//! the host listens, so nothing half-starts.

use anyhow::{Context, Result, anyhow, bail};
use cairn_kv::Store;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What `--store` names for the `default` label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreKind {
    /// SQLite in WAL mode at `<state-dir>/kv.db` (durable; one host only).
    Sqlite,
    /// In memory (lost on exit; for tests and benchmarks).
    Memory,
    /// A Redis or Valkey server (`redis://host:port[/db]`), shared by any number of hosts.
    Redis(String),
}

impl std::str::FromStr for StoreKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "sqlite" => Ok(StoreKind::Sqlite),
            "memory" => Ok(StoreKind::Memory),
            url if url.starts_with("redis://") || url.starts_with("rediss://") => Ok(StoreKind::Redis(url.to_string())),
            other => Err(format!("unknown store {other:?}: use sqlite, memory or a redis://host:port URL")),
        }
    }
}

/// One `[key_value_store.<label>]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum StoreConfig {
    /// `type = "redis"`: a Redis or Valkey server.
    Redis {
        /// `redis://[user:password@]host:port[/db]`.
        url: String,
        /// Prefix of every key (several apps can share a server).
        #[serde(default)]
        namespace: Option<String>,
    },
    /// `type = "spin"`: SQLite, as Spin's own default store.
    Spin {
        /// The database file (relative paths start at the runtime config's directory).
        #[serde(default)]
        path: Option<PathBuf>,
    },
    /// `type = "memory"`: in memory (this host's extension; for tests).
    Memory {},
}

/// A runtime config file, as far as this host reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuntimeConfig {
    #[serde(default)]
    key_value_store: BTreeMap<String, toml::Value>,
}

/// The store configuration of every configured label.
#[derive(Debug, Clone, Default)]
pub struct Stores {
    /// Label → backend.
    pub labels: BTreeMap<String, StoreConfig>,
    /// Where relative paths start.
    pub base: PathBuf,
}

impl Stores {
    /// Reads a runtime config file; every error names the file and the field.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read the runtime config {}", path.display()))?;
        let raw: RuntimeConfig = toml::from_str(&text).map_err(|e| {
            anyhow!("runtime config {}: {} (this host reads only [key_value_store.<label>] tables)", path.display(), e.message())
        })?;
        let mut labels = BTreeMap::new();
        for (label, table) in raw.key_value_store {
            let field = format!("key_value_store.{label}");
            let Some(kind) = table.get("type").and_then(|t| t.as_str()) else {
                bail!("runtime config {}: {field}.type is missing (redis, spin or memory)", path.display());
            };
            if !matches!(kind, "redis" | "spin" | "memory") {
                bail!("runtime config {}: {field}.type = {kind:?} is not a store type this host knows (redis, spin or memory)", path.display());
            }
            let config: StoreConfig = table
                .try_into()
                .map_err(|e: toml::de::Error| anyhow!("runtime config {}: {field}: {}", path.display(), e.message()))?;
            labels.insert(label, config);
        }
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(Self { labels, base })
    }

    /// The `--store` shortcut for the `default` label, on top of the file.
    pub fn with_default(mut self, kind: Option<&StoreKind>) -> Self {
        let config = match kind {
            None => return self,
            Some(StoreKind::Sqlite) => StoreConfig::Spin { path: None },
            Some(StoreKind::Memory) => StoreConfig::Memory {},
            Some(StoreKind::Redis(url)) => StoreConfig::Redis { url: url.clone(), namespace: None },
        };
        self.labels.insert("default".into(), config);
        self
    }

    /// Whether the `default` label is on a store shared between hosts.
    pub fn shared(&self) -> bool {
        matches!(self.labels.get("default"), Some(StoreConfig::Redis { .. }))
    }

    /// Opens every label the host serves: `default` and `cache`, plus any
    /// other the runtime config names. `fsync` applies to SQLite.
    pub fn open(&self, state_dir: &Path, fsync: bool) -> Result<BTreeMap<String, Arc<dyn Store>>> {
        let mut out = BTreeMap::new();
        let mut labels: Vec<&str> = self.labels.keys().map(String::as_str).collect();
        for l in ["default", "cache"] {
            if !labels.contains(&l) {
                labels.push(l);
            }
        }
        for label in labels {
            let config = match (self.labels.get(label), label) {
                (Some(c), _) => c.clone(),
                (None, "default") => StoreConfig::Spin { path: None },
                // Budgets and verified tokens must be shared by every host
                // that shares the notes: with `default` on Redis and no
                // `cache` configured, the cache lives on the same server,
                // in a namespace of its own.
                (None, _) => match self.labels.get("default") {
                    Some(StoreConfig::Redis { url, namespace }) => {
                        StoreConfig::Redis { url: url.clone(), namespace: Some(format!("{}-{label}", namespace.as_deref().unwrap_or("cairn"))) }
                    }
                    _ => StoreConfig::Memory {},
                },
            };
            let store: Arc<dyn Store> = match config {
                StoreConfig::Memory {} => Arc::new(cairn_kv::memory::MemoryStore::new()),
                StoreConfig::Spin { path } => {
                    let path = match path {
                        Some(p) if p.is_relative() => self.base.join(p),
                        Some(p) => p,
                        None => state_dir.join(if label == "default" { "kv.db".to_string() } else { format!("kv-{label}.db") }),
                    };
                    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                        std::fs::create_dir_all(dir).with_context(|| format!("store {label}: cannot create {}", dir.display()))?;
                    }
                    Arc::new(cairn_kv_sqlite::SqliteStore::open(&path, fsync).map_err(|e| anyhow!("store {label:?} ({}): {e}", path.display()))?)
                }
                StoreConfig::Redis { url, namespace } => {
                    let mut options = cairn_kv_redis::Options::default();
                    if let Some(ns) = namespace {
                        options.namespace = ns;
                    }
                    Arc::new(cairn_kv_redis::RedisStore::open(&url, options).map_err(|e| anyhow!("store {label:?}: {e}"))?)
                }
            };
            out.insert(label.to_string(), store);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Stores> {
        let dir = std::env::temp_dir().join(format!("cairn-rc-{}-{}", std::process::id(), text.len()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("runtime-config.toml");
        std::fs::write(&p, text).unwrap();
        Stores::from_file(&p)
    }

    #[test]
    fn a_redis_default_and_a_memory_cache_are_read() {
        let s = parse("[key_value_store.default]\ntype = \"redis\"\nurl = \"redis://127.0.0.1:6379\"\n\n[key_value_store.cache]\ntype = \"memory\"\n").unwrap();
        assert_eq!(s.labels["default"], StoreConfig::Redis { url: "redis://127.0.0.1:6379".into(), namespace: None });
        assert_eq!(s.labels["cache"], StoreConfig::Memory {});
        assert!(s.shared());
    }

    #[test]
    fn an_unknown_store_type_names_the_field() {
        let e = parse("[key_value_store.default]\ntype = \"dynamo\"\n").unwrap_err().to_string();
        assert!(e.contains("key_value_store.default.type") && e.contains("dynamo"), "{e}");
    }

    #[test]
    fn a_missing_or_misspelled_field_names_it() {
        let e = parse("[key_value_store.default]\ntype = \"redis\"\n").unwrap_err().to_string();
        assert!(e.contains("key_value_store.default") && e.contains("url"), "{e}");
        let e = parse("[key_value_store.default]\ntype = \"redis\"\nurl = \"redis://x:1\"\nulr = 3\n").unwrap_err().to_string();
        assert!(e.contains("ulr"), "{e}");
        let e = parse("[sqlite_database.default]\ntype = \"spin\"\n").unwrap_err().to_string();
        assert!(e.contains("sqlite_database"), "{e}");
    }

    #[test]
    fn the_store_shortcut_overrides_the_default_label() {
        assert_eq!("redis://h:1".parse::<StoreKind>(), Ok(StoreKind::Redis("redis://h:1".into())));
        assert!("postgres://h".parse::<StoreKind>().unwrap_err().contains("redis://"));
        let s = Stores::default().with_default(Some(&StoreKind::Memory));
        assert_eq!(s.labels["default"], StoreConfig::Memory {});
    }
}
