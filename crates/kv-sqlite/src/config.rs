//! The SQLite backend as a runtime config names it: `type = "spin"` (the
//! type of Spin's own default store, which is SQLite too), with an optional
//! `path`.

use crate::SqliteStore;
use cairn_kv::{Backend, Error, OpenContext, OpenError, Store};
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;

/// The SQLite backend's maker.
pub struct Sqlite;

/// A `type = "spin"` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqliteConfig {
    /// The database file; a relative path starts at the runtime config's
    /// directory. None: `<state-dir>/kv.db` for the `default` label,
    /// `<state-dir>/kv-<label>.db` for any other.
    #[serde(default)]
    pub path: Option<PathBuf>,
}

impl SqliteConfig {
    /// The database file of the store `ctx` opens.
    pub fn file(&self, ctx: &OpenContext) -> PathBuf {
        match &self.path {
            Some(p) if p.is_relative() => ctx.config_dir.join(p),
            Some(p) => p.clone(),
            None if ctx.label == "default" => ctx.state_dir.join("kv.db"),
            None => ctx.state_dir.join(format!("kv-{}.db", ctx.label)),
        }
    }
}

impl Backend for Sqlite {
    const TYPE: &'static str = "spin";
    type Config = SqliteConfig;

    /// Opens (or creates) the database file, and the directory it goes in.
    fn open(config: &SqliteConfig, ctx: &OpenContext) -> Result<Arc<dyn Store>, OpenError> {
        let path = config.file(ctx);
        let at = Some(path.display().to_string());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| OpenError { error: Error::Backend(format!("cannot create {}: {e}", dir.display())), at: at.clone() })?;
        }
        let store = SqliteStore::open(&path, ctx.fsync).map_err(|error| OpenError { error, at })?;
        Ok(Arc::new(store))
    }
}
