//! The embedded host's periodic work: the sweep (old delete markers in the
//! store, lapsed claims of every tenant, released with reason `expired`, the
//! history past retention, [`cairn_notes::sweep_history`], the `cache`
//! store's expired records, [`cairn_door::cache::sweep`], and the
//! authorization server's spent or expired links, sessions and grants,
//! [`cairn_oauth::sweep`]) and, far more
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
    /// Tenants with notes.
    pub tenants: usize,
    /// Refusal records of an earlier layout (`sys/audit/refused/`) deleted.
    pub legacy: usize,
    /// The authorization server's records that can never be used again.
    pub oauth: cairn_oauth::sweep::Swept,
}

impl Swept {
    /// Whether anything was deleted or released (what is worth a log line).
    pub fn did_work(&self) -> bool {
        let h = &self.history;
        self.markers
            + self.claims
            + h.notes
            + h.entries
            + h.blobs
            + h.idempotency
            + h.audit
            + self.cache.counters
            + self.cache.tokens
            + self.cache.other
            + self.legacy
            + self.oauth.total()
            > 0
    }
}

/// Records of an earlier layout: anonymous refusals kept one per request.
const LEGACY_REFUSALS: &str = "sys/audit/refused/";

/// One sweep of every tenant, keeping history as `retention` says, and of
/// the `cache` store (`cache`), keeping the door's window.
pub fn sweep_once(store: &Arc<dyn Store>, cache: &Arc<dyn Store>, retention: Retention, door: &cairn_door::Settings) -> Result<Swept> {
    let now_s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let mut out = Swept { markers: store.sweep(3_600_000)?, ..Swept::default() };
    out.cache = cairn_door::cache::sweep(cache.as_ref(), now_s, door.window_minutes, 10_000)?;
    let legacy = store.list_prefix("default", LEGACY_REFUSALS, None, 10_000)?;
    store.delete_many("default", &legacy.iter().map(String::as_str).collect::<Vec<_>>())?;
    out.legacy = legacy.len();
    out.oauth.links = cairn_oauth::sweep::links(store.as_ref(), now_s, cairn_oauth::sweep::BUDGET)?;
    let mut env = SystemEnv::retaining(0, retention);
    for tenant in cairn_notes::list_tenants(store.as_ref())? {
        out.claims += cairn_notes::sweep_expired_claims(store.as_ref(), &mut env, &tenant)?;
        out.history += cairn_notes::sweep_history(store.as_ref(), &mut env, &tenant)?;
        out.oauth += cairn_oauth::sweep::tenant(store.as_ref(), &tenant, now_s, cairn_oauth::sweep::BUDGET)?;
        out.tenants += 1;
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
