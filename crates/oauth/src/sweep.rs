//! The sweep of the server's records: what can never be used again is
//! deleted, so every record a caller can cause lives a bounded time.
//!
//! - one-time links spent or expired ([`links`]);
//! - per tenant ([`tenant`]): sessions expired, grants dead
//!   ([`crate::grants::Grant::dead`]: revoked, never exchanged before their
//!   codes expired, or unused past their lifetime), and the ids of deleted
//!   grants in people's indexes.
//!
//! **Safe against every writer.** Each state deleted is terminal: a spent
//! or expired link is refused whether it exists or not, an expired session
//! signs nobody in, a dead grant issues nothing (each check reads the
//! record, and an absent record is refused as never issued). The one
//! record brought back from such a state is the editor's grant of a
//! session ([`crate::grants::approve_editor`] makes it anew over a revoked
//! one): a sign-in racing the sweep of its revoked grant may lose its code
//! and is refused `invalid_grant`; the editor signs in again. Index
//! entries are removed by compare-and-swap against the read they were
//! checked on.
//!
//! Each call looks at no more than its `budget` of records (the embedded
//! host sweeps every minute by default; the operators' route on hosts
//! without a timer).

use crate::grants::{Grant, grants_prefix, indexes_prefix};
use crate::people::{BUCKET, LINKS, Link, Session, sessions_prefix};
use cairn_kv::{Result, Store, Swap};
use serde::de::DeserializeOwned;

/// Records one call of [`links`] or [`tenant`] looks at, at most.
pub const BUDGET: usize = 10_000;
/// Keys listed and read at once.
const PAGE: usize = 500;

/// What one sweep deleted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    /// One-time links spent or expired.
    pub links: usize,
    /// Sessions expired.
    pub sessions: usize,
    /// Grants dead.
    pub grants: usize,
    /// Ids of deleted grants taken out of people's indexes.
    pub index_entries: usize,
}

impl Swept {
    /// Everything deleted.
    pub fn total(&self) -> usize {
        self.links + self.sessions + self.grants + self.index_entries
    }
}

impl std::ops::AddAssign for Swept {
    fn add_assign(&mut self, o: Swept) {
        self.links += o.links;
        self.sessions += o.sessions;
        self.grants += o.grants;
        self.index_entries += o.index_entries;
    }
}

/// Deletes the records under `prefix` that parse as `T` and are `dead`,
/// looking at `budget` records at most; answers how many it deleted.
fn delete_dead<T: DeserializeOwned>(store: &dyn Store, prefix: &str, budget: usize, dead: impl Fn(&T) -> bool) -> Result<usize> {
    let (mut seen, mut deleted, mut after) = (0, 0, None::<String>);
    while seen < budget {
        let keys = store.list_prefix(BUCKET, prefix, after.as_deref(), PAGE.min(budget - seen))?;
        let Some(last) = keys.last().cloned() else { break };
        seen += keys.len();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let values = store.get_many(BUCKET, &refs)?;
        let gone: Vec<&str> = refs
            .iter()
            .zip(values)
            .filter(|(_, v)| v.as_deref().and_then(|v| serde_json::from_slice::<T>(v).ok()).is_some_and(|t| dead(&t)))
            .map(|(k, _)| *k)
            .collect();
        store.delete_many(BUCKET, &gone)?;
        deleted += gone.len();
        after = Some(last);
    }
    Ok(deleted)
}

/// One-time links spent or expired at `now`, deleted.
pub fn links(store: &dyn Store, now: u64, budget: usize) -> Result<usize> {
    delete_dead(store, LINKS, budget, |l: &Link| l.spent.is_some() || l.expires <= now)
}

/// Tenant `tenant`'s sessions expired and grants dead at `now`, deleted,
/// and their ids taken out of people's indexes.
pub fn tenant(store: &dyn Store, tenant: &str, now: u64, budget: usize) -> Result<Swept> {
    let sessions = delete_dead(store, &sessions_prefix(tenant), budget, |s: &Session| s.expires <= now)?;
    let grants = delete_dead(store, &grants_prefix(tenant), budget, |g: &Grant| g.dead(now))?;
    let index_entries = prune_indexes(store, tenant, budget)?;
    Ok(Swept { links: 0, sessions, grants, index_entries })
}

/// Takes the ids of grants that no longer exist out of the tenant's indexes.
fn prune_indexes(store: &dyn Store, tenant: &str, budget: usize) -> Result<usize> {
    let prefix = grants_prefix(tenant);
    let indexes = store.list_prefix(BUCKET, &indexes_prefix(tenant), None, budget.div_ceil(crate::grants::MAX_GRANTS).max(1))?;
    let mut pruned = 0;
    for key in indexes {
        let read = store.read(BUCKET, &key)?;
        let ids: Vec<String> = read.value.as_deref().and_then(|v| serde_json::from_slice(v).ok()).unwrap_or_default();
        let keys: Vec<String> = ids.iter().map(|id| format!("{prefix}{id}")).collect();
        let present = store.get_many(BUCKET, &keys.iter().map(String::as_str).collect::<Vec<_>>())?;
        let kept: Vec<&String> = ids.iter().zip(&present).filter(|(_, v)| v.is_some()).map(|(id, _)| id).collect();
        if kept.len() == ids.len() {
            continue;
        }
        // A lost swap means the person approved an app meanwhile: the next sweep prunes.
        if let Swap::Done = store.swap(BUCKET, &key, read.observed, &serde_json::to_vec(&kept).expect("ids serialize"))? {
            pruned += ids.len() - kept.len();
        }
    }
    Ok(pruned)
}
