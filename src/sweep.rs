//! The embedded host's periodic work: the sweep (old delete markers in the
//! store, lapsed claims of every tenant, released with reason `expired`, the
//! history past retention, [`cairn_notes::sweep_history`], and the `cache`
//! store's expired records, [`cairn_door::cache::sweep`]) and, far more
//! often, the search merge ([`merge_search`]: the notes commits marked dirty
//! brought into the postings). On Spin, an external scheduler calls the REST
//! component's sweep route instead, and queries merge what they find.

use crate::clock::SystemEnv;
use anyhow::Result;
use cairn_kv::Store;
use cairn_notes::env::Retention;
use std::sync::Arc;

/// What one sweep did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    /// Delete markers older than an hour.
    pub markers: usize,
    /// Lapsed claims released.
    pub claims: usize,
    /// History past retention.
    pub history: cairn_notes::HistorySweep,
    /// The `cache` store's expired records.
    pub cache: cairn_door::cache::Swept,
}

/// One sweep of every tenant, keeping history as `retention` says, and of
/// the `cache` store (`cache`), keeping the door's window.
pub fn sweep_once(store: &Arc<dyn Store>, cache: &Arc<dyn Store>, retention: Retention, door: &cairn_door::Settings) -> Result<Swept> {
    let now_s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let mut out = Swept { markers: store.sweep(3_600_000)?, ..Swept::default() };
    out.cache = cairn_door::cache::sweep(cache.as_ref(), now_s, door.window_minutes, 10_000)?;
    let mut env = SystemEnv::with_retention(0, retention);
    for tenant in cairn_notes::list_tenants(store.as_ref())? {
        out.claims += cairn_notes::sweep_expired_claims(store.as_ref(), &mut env, &tenant)?;
        out.history += cairn_notes::sweep_history(store.as_ref(), &mut env, &tenant)?;
    }
    Ok(out)
}

/// One round of the search merge over every tenant: what it did, summed.
pub fn merge_search(store: &Arc<dyn Store>) -> Result<cairn_notes::search::MergeReport> {
    let mut env = SystemEnv::new(0);
    let mut out = cairn_notes::search::MergeReport::default();
    for tenant in cairn_notes::list_tenants(store.as_ref())? {
        out += cairn_notes::search::merge(store.as_ref(), &mut env, &tenant, cairn_notes::search::MERGE_BUDGET)?;
    }
    Ok(out)
}
