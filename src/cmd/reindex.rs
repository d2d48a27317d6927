//! `cairn reindex`: rebuild a tenant's search index from its committed notes,
//! or (`--check`) only compare the two. The rebuild follows the index's own
//! rules (`cairn_notes::search`), so writers on a shared store (Redis) lose
//! nothing; the embedded SQLite store is locked to one process, so a host
//! serving it must be stopped first.

use crate::stores::{StoreKind, Stores};
use anyhow::{Result, anyhow, bail};
use cairn_notes::search::{IndexReport, check, reindex};
use std::path::PathBuf;

/// Arguments of `cairn reindex`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The tenant to rebuild (repeatable; default: every tenant in the store).
    #[arg(long = "tenant")]
    pub tenants: Vec<String>,
    /// Only compare the index with the notes; exit 1 if a committed word is missing.
    #[arg(long)]
    pub check: bool,
    /// The state directory of the embedded store.
    #[arg(long, default_value = ".cairn")]
    pub state_dir: PathBuf,
    /// Backend of the `default` store, as for `cairn up`.
    #[arg(long)]
    pub store: Option<StoreKind>,
    /// A Spin runtime config file, as for `cairn up`.
    #[arg(long)]
    pub runtime_config_file: Option<PathBuf>,
}

/// Rebuild (or check) and print one line per tenant.
pub fn run(a: Args) -> Result<()> {
    let stores = match &a.runtime_config_file {
        Some(path) => Stores::from_file(path)?,
        None => Stores::default(),
    }
    .with_default(a.store.as_ref());
    let opened = stores.open(&a.state_dir, false)?;
    let store = opened.get("default").ok_or_else(|| anyhow!("no default store"))?.clone();
    let tenants =
        if a.tenants.is_empty() { cairn_notes::keys::list_tenants(store.as_ref()).map_err(|e| anyhow!("listing tenants: {e}"))? } else { a.tenants.clone() };
    let mut missing = 0;
    for tenant in &tenants {
        if !cairn_notes::keys::valid_tenant(tenant) {
            bail!("{tenant:?} is not a tenant id ([a-z0-9_-]{{1,64}})");
        }
        let report = if a.check { check(store.as_ref(), tenant) } else { reindex(store.as_ref(), tenant) }.map_err(|e| anyhow!("tenant {tenant}: {e}"))?;
        missing += report.missing;
        println!("{}", line(tenant, a.check, &report));
    }
    store.close().map_err(|e| anyhow!("closing the store: {e}"))?;
    if a.check && missing > 0 {
        bail!("the search index lacks {missing} committed words: run `cairn reindex` to add them");
    }
    Ok(())
}

fn line(tenant: &str, check: bool, r: &IndexReport) -> String {
    let verb = if check { "checked" } else { "reindexed" };
    let fixed = if check { "" } else { " (now added, dirty notes merged, stale entries removed)" };
    format!(
        "tenant {tenant}: {verb} {} notes, {} tabs, {} terms; missing {}, dirty {}, stale {}, counts out of date {}{fixed}",
        r.notes, r.tabs, r.terms, r.missing, r.dirty, r.stale, r.drifted
    )
}
