//! How a host opens a store from its runtime config, as Spin's hosts do: a
//! `[key_value_store.<label>]` table names a backend by its `type`, and the
//! rest of the table is that backend's own config.
//!
//! Each backend crate implements [`Backend`] on a maker of its own: the
//! `type` it answers to, the struct its tables read into (with serde; a
//! field it does not know is refused by name), and how to open a store from
//! one. A host keeps one list of the makers it offers and learns nothing else
//! about them: adding a backend is a crate that passes the
//! [`conformance`](crate::conformance) suite and one line in that list.

use crate::{Error, Store};
use serde::de::DeserializeOwned;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// A store that a runtime config table can name and a host can open.
pub trait Backend {
    /// The table's `type` (`"spin"`, `"redis"`, `"memory"`): unique among
    /// the backends of one host.
    const TYPE: &'static str;

    /// The table without its `type`. Configs refuse fields they do not know
    /// (`#[serde(deny_unknown_fields)]`), so a misspelled one is an error
    /// naming it, never a silent default.
    type Config: DeserializeOwned + Clone + fmt::Debug + PartialEq + Eq;

    /// Opens the store `config` describes, for the label in `ctx`.
    fn open(config: &Self::Config, ctx: &OpenContext) -> Result<Arc<dyn Store>, OpenError>;

    /// Where a label nobody configured goes when the `default` label is on
    /// `default`: `Some` for a backend whose stores are shared between
    /// hosts, so that what every host must see alike (budgets, verified
    /// tokens) is shared too; `None` (the default) leaves the label to the
    /// host's embedded store.
    fn alongside(default: &Self::Config, label: &str) -> Option<Self::Config> {
        let _ = (default, label);
        None
    }
}

/// What a backend may need to open a store, besides its config.
#[derive(Debug, Clone, Copy)]
pub struct OpenContext<'a> {
    /// The store label (`default`, `cache`, …).
    pub label: &'a str,
    /// Where relative paths in a config start: the runtime config file's directory.
    pub config_dir: &'a Path,
    /// The host's state directory, where a store placed nowhere else keeps its files.
    pub state_dir: &'a Path,
    /// Every commit must survive power loss, not only the process being
    /// killed (`cairn up --fsync`).
    pub fsync: bool,
}

/// Why [`Backend::open`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenError {
    /// The store's error.
    pub error: Error,
    /// What the backend was opening, when the label alone does not say (a file).
    pub at: Option<String>,
}

impl From<Error> for OpenError {
    fn from(error: Error) -> Self {
        Self { error, at: None }
    }
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.at {
            Some(at) => write!(f, "{at}: {}", self.error),
            None => write!(f, "{}", self.error),
        }
    }
}

impl std::error::Error for OpenError {}
