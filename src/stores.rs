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
//! The backends register themselves: each backend crate exports a maker
//! ([`cairn_kv::Backend`]: its `type`, its config, how to open it), and the
//! registry below lists the makers, one line each. The type names accepted,
//! the error naming them, reading a table and opening a store all come from
//! that list; this module knows no backend's fields. The `--store` shortcut
//! and the embedded defaults are the exceptions: they name the backends they
//! stand for.
//!
//! Every mistake is a startup error naming the field (an unknown store type,
//! a malformed URL, an unreachable server), and every store is opened before
//! the host listens, so nothing half-starts.

use anyhow::{Context, Result, anyhow, bail};
use cairn_kv::memory::MemoryConfig;
use cairn_kv::{Backend, OpenContext, OpenError, Store};
use cairn_kv_redis::RedisConfig;
use cairn_kv_sqlite::SqliteConfig;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Builds, from the list of makers, [`StoreConfig`] (one variant per
/// backend, holding its config), the list of their types, and reading,
/// opening and placing a store by dispatch on the variant.
macro_rules! registry {
    ($($variant:ident => $maker:ty),+ $(,)?) => {
        /// One `[key_value_store.<label>]` table, read by the backend its `type` names.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum StoreConfig {
            $(
                #[doc = concat!("A table of [`", stringify!($maker), "`].")]
                $variant(<$maker as Backend>::Config),
            )+
        }

        /// The `type` of every backend, in the registry's order.
        const TYPES: &[&str] = &[$(<$maker as Backend>::TYPE),+];

        impl StoreConfig {
            /// Reads a table (without its `type`) for the backend of type
            /// `kind`; `None` when no backend has that type.
            fn read(kind: &str, table: toml::Table) -> Option<Result<Self, toml::de::Error>> {
                $(
                    if kind == <$maker as Backend>::TYPE {
                        return Some(toml::Value::Table(table).try_into().map(StoreConfig::$variant));
                    }
                )+
                None
            }

            /// Opens the store this config describes.
            fn open(&self, ctx: &OpenContext) -> Result<Arc<dyn Store>, OpenError> {
                match self {
                    $(StoreConfig::$variant(c) => <$maker as Backend>::open(c, ctx),)+
                }
            }

            /// Where a label nobody configured goes when `default` is on this config.
            fn alongside(&self, label: &str) -> Option<Self> {
                match self {
                    $(StoreConfig::$variant(c) => <$maker as Backend>::alongside(c, label).map(StoreConfig::$variant),)+
                }
            }
        }
    };
}

// The backends this host offers, one line each: the variant of
// `StoreConfig` that holds its config, and its maker. Error messages name
// the types in this order.
registry! {
    Sqlite => cairn_kv_sqlite::Sqlite,
    Redis => cairn_kv_redis::Redis,
    Memory => cairn_kv::memory::Memory,
}

/// The registered types as prose: `a, b or c`.
fn known_types() -> String {
    match TYPES.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

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

impl StoreKind {
    /// The table this shortcut stands for.
    pub fn config(&self) -> StoreConfig {
        match self {
            StoreKind::Sqlite => StoreConfig::Sqlite(SqliteConfig::default()),
            StoreKind::Memory => StoreConfig::Memory(MemoryConfig::default()),
            StoreKind::Redis(url) => StoreConfig::Redis(RedisConfig::server(url.clone())),
        }
    }
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
        let raw: RuntimeConfig = toml::from_str(&text)
            .map_err(|e| anyhow!("runtime config {}: {} (this host reads only [key_value_store.<label>] tables)", path.display(), e.message()))?;
        let mut labels = BTreeMap::new();
        for (label, table) in raw.key_value_store {
            let field = format!("key_value_store.{label}");
            let toml::Value::Table(mut table) = table else {
                bail!("runtime config {}: {field}.type is missing ({})", path.display(), known_types());
            };
            let Some(toml::Value::String(kind)) = table.remove("type") else {
                bail!("runtime config {}: {field}.type is missing ({})", path.display(), known_types());
            };
            let Some(config) = StoreConfig::read(&kind, table) else {
                bail!("runtime config {}: {field}.type = {kind:?} is not a store type this host knows ({})", path.display(), known_types());
            };
            let config = config.map_err(|e| anyhow!("runtime config {}: {field}: {}", path.display(), e.message()))?;
            labels.insert(label, config);
        }
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(Self { labels, base })
    }

    /// The `--store` shortcut for the `default` label, on top of the file.
    pub fn with_default(mut self, kind: Option<&StoreKind>) -> Self {
        if let Some(kind) = kind {
            self.labels.insert("default".into(), kind.config());
        }
        self
    }

    /// Whether the `default` label is on a store shared between hosts (its
    /// backend keeps the labels nobody configured beside it).
    pub fn shared(&self) -> bool {
        self.labels.get("default").is_some_and(|d| d.alongside("cache").is_some())
    }

    /// The backend of `label`: its table, else the embedded default. Budgets
    /// and verified tokens must be shared by every host that shares the
    /// notes: with `default` on a shared store and `cache` not configured,
    /// the cache goes where that backend puts it (Redis: the same server, a
    /// namespace of its own); else it is in memory.
    pub fn config(&self, label: &str) -> StoreConfig {
        if let Some(c) = self.labels.get(label) {
            return c.clone();
        }
        if label == "default" {
            return StoreKind::Sqlite.config();
        }
        self.labels.get("default").and_then(|d| d.alongside(label)).unwrap_or_else(|| StoreKind::Memory.config())
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
            let ctx = OpenContext { label, config_dir: &self.base, state_dir, fsync };
            let store = self.config(label).open(&ctx).map_err(|e| match &e.at {
                Some(at) => anyhow!("store {label:?} ({at}): {}", e.error),
                None => anyhow!("store {label:?}: {}", e.error),
            })?;
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

    fn redis(url: &str, namespace: Option<&str>) -> StoreConfig {
        StoreConfig::Redis(RedisConfig { namespace: namespace.map(Into::into), ..RedisConfig::server(url) })
    }

    #[test]
    fn a_redis_default_and_a_memory_cache_are_read() {
        let s = parse("[key_value_store.default]\ntype = \"redis\"\nurl = \"redis://127.0.0.1:6379\"\n\n[key_value_store.cache]\ntype = \"memory\"\n").unwrap();
        assert_eq!(s.labels["default"], redis("redis://127.0.0.1:6379", None));
        assert_eq!(s.labels["cache"], StoreConfig::Memory(MemoryConfig {}));
        assert!(s.shared());
    }

    #[test]
    fn an_unknown_store_type_names_the_field_and_every_registered_type() {
        let e = parse("[key_value_store.default]\ntype = \"dynamo\"\n").unwrap_err().to_string();
        assert!(e.contains("key_value_store.default.type") && e.contains("dynamo"), "{e}");
        assert!(e.contains("(spin, redis or memory)"), "{e}");
        let e = parse("[key_value_store.default]\nurl = \"redis://x:1\"\n").unwrap_err().to_string();
        assert!(e.contains("key_value_store.default.type is missing (spin, redis or memory)"), "{e}");
        let e = parse("[key_value_store]\ndefault = 3\n").unwrap_err().to_string();
        assert!(e.contains("key_value_store.default.type is missing"), "{e}");
    }

    #[test]
    fn every_backend_has_a_type_of_its_own() {
        let mut types = TYPES.to_vec();
        types.sort();
        types.dedup();
        assert_eq!(types.len(), TYPES.len(), "{TYPES:?}");
    }

    #[test]
    fn a_missing_or_misspelled_field_names_it() {
        let e = parse("[key_value_store.default]\ntype = \"redis\"\n").unwrap_err().to_string();
        assert!(e.contains("key_value_store.default") && e.contains("missing field `url`"), "{e}");
        let e = parse("[key_value_store.default]\ntype = \"redis\"\nurl = \"redis://x:1\"\nulr = 3\n").unwrap_err().to_string();
        assert!(e.contains("unknown field `ulr`"), "{e}");
        let e = parse("[key_value_store.default]\ntype = \"memory\"\npath = \"x\"\n").unwrap_err().to_string();
        assert!(e.contains("unknown field `path`"), "{e}");
        let e = parse("[key_value_store.default]\ntype = \"spin\"\npath = 3\n").unwrap_err().to_string();
        assert!(e.contains("key_value_store.default: "), "{e}");
        let e = parse("[sqlite_database.default]\ntype = \"spin\"\n").unwrap_err().to_string();
        assert!(e.contains("sqlite_database"), "{e}");
    }

    #[test]
    fn a_cluster_is_named_by_several_urls_or_cluster_true_and_cache_goes_beside_it() {
        let s = parse("[key_value_store.default]\ntype = \"redis\"\nurls = [\"redis://a:1\", \"redis://b:2\"]\nwait_for_replicas = 1\n").unwrap();
        let StoreConfig::Redis(c) = &s.labels["default"] else { panic!("{:?}", s.labels) };
        assert!(c.is_cluster());
        assert_eq!(c.urls, ["redis://a:1", "redis://b:2"]);
        let StoreConfig::Redis(cache) = s.config("cache") else { panic!("cache is not beside default") };
        assert_eq!((cache.urls.clone(), cache.namespace.as_deref()), (c.urls.clone(), Some("cairn-cache")));
        let s = parse("[key_value_store.default]\ntype = \"redis\"\nurl = \"redis://a:1\"\ncluster = true\n").unwrap();
        let StoreConfig::Redis(c) = &s.labels["default"] else { panic!() };
        assert!(c.is_cluster() && c.options().wait_for_replicas == 1);
        let e = parse("[key_value_store.default]\ntype = \"redis\"\nurls = [\"redis://a:1\"]\nwait_for_replica = 1\n").unwrap_err().to_string();
        assert!(e.contains("wait_for_replica"), "{e}");
    }

    #[test]
    fn the_store_shortcut_overrides_the_default_label() {
        assert_eq!("redis://h:1".parse::<StoreKind>(), Ok(StoreKind::Redis("redis://h:1".into())));
        assert!("postgres://h".parse::<StoreKind>().unwrap_err().contains("redis://"));
        let s = Stores::default().with_default(Some(&StoreKind::Memory));
        assert_eq!(s.labels["default"], StoreConfig::Memory(MemoryConfig {}));
        let s = Stores::default().with_default(Some(&StoreKind::Redis("redis://h:1".into())));
        assert_eq!(s.labels["default"], redis("redis://h:1", None));
        let s = Stores::default().with_default(Some(&StoreKind::Sqlite));
        assert_eq!(s.labels["default"], StoreConfig::Sqlite(SqliteConfig { path: None }));
    }

    #[test]
    fn labels_nobody_configured_get_the_embedded_defaults_or_go_beside_a_shared_default() {
        let none = Stores::default();
        assert_eq!(none.config("default"), StoreConfig::Sqlite(SqliteConfig { path: None }));
        assert_eq!(none.config("cache"), StoreConfig::Memory(MemoryConfig {}));
        assert!(!none.shared());
        let on_redis = Stores::default().with_default(Some(&StoreKind::Redis("redis://h:1/2".into())));
        assert_eq!(on_redis.config("cache"), redis("redis://h:1/2", Some("cairn-cache")));
        let named = parse("[key_value_store.default]\ntype = \"redis\"\nurl = \"redis://h:1\"\nnamespace = \"app\"\n").unwrap();
        assert_eq!(named.config("cache"), redis("redis://h:1", Some("app-cache")));
        let cache_set = parse("[key_value_store.default]\ntype = \"redis\"\nurl = \"redis://h:1\"\n[key_value_store.cache]\ntype = \"memory\"\n").unwrap();
        assert_eq!(cache_set.config("cache"), StoreConfig::Memory(MemoryConfig {}));
        let in_memory = Stores::default().with_default(Some(&StoreKind::Memory));
        assert_eq!(in_memory.config("cache"), StoreConfig::Memory(MemoryConfig {}));
        assert!(!in_memory.shared());
    }

    #[test]
    fn sqlite_files_go_in_the_state_dir_or_beside_the_runtime_config() {
        let root = std::env::temp_dir().join(format!("cairn-stores-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let rc = root.join("rc");
        std::fs::create_dir_all(&rc).unwrap();
        std::fs::write(
            rc.join("runtime-config.toml"),
            "[key_value_store.notes]\ntype = \"spin\"\npath = \"data/notes.db\"\n\n[key_value_store.cache]\ntype = \"spin\"\n",
        )
        .unwrap();
        let s = Stores::from_file(&rc.join("runtime-config.toml")).unwrap();
        let state = root.join("state");
        let opened = s.open(&state, false).unwrap();
        assert_eq!(opened.keys().collect::<Vec<_>>(), ["cache", "default", "notes"]);
        for store in opened.values() {
            store.close().unwrap();
        }
        drop(opened);
        for file in [rc.join("data/notes.db"), state.join("kv.db"), state.join("kv-cache.db")] {
            assert!(file.is_file(), "{} was not created", file.display());
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_store_that_cannot_open_is_an_error_naming_its_label_and_file() {
        let root = std::env::temp_dir().join(format!("cairn-stores-busy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let first = Stores::default().open(&root, false).unwrap();
        let Err(e) = Stores::default().open(&root, false) else { panic!("a second store opened the same file") };
        let e = e.to_string();
        let file = root.join("kv.db");
        assert!(e.starts_with(&format!("store \"default\" ({}): ", file.display())) && e.contains("in use by another process"), "{e}");
        drop(first);
        let Err(e) = Stores::default().with_default(Some(&StoreKind::Redis("redis://".into()))).open(&root, false) else {
            panic!("a URL without a host opened")
        };
        let e = e.to_string();
        assert!(e.starts_with("store \"default\": ") && e.contains("URL"), "{e}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
