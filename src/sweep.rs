//! The embedded host's periodic sweep: old delete markers in the store, and
//! lapsed claims of every tenant (released with reason `expired`). On Spin,
//! an external scheduler calls the REST component's sweep route instead.

use crate::clock::SystemEnv;
use anyhow::Result;
use cairn_kv::Store;
use std::sync::Arc;

/// One sweep: delete markers older than an hour, and lapsed claims of every
/// tenant. Returns both counts.
pub fn sweep_once(store: &Arc<dyn Store>) -> Result<(usize, usize)> {
    let markers = store.sweep(3_600_000)?;
    let mut env = SystemEnv::new(0);
    let mut claims = 0;
    for tenant in cairn_notes::list_tenants(store.as_ref())? {
        claims += cairn_notes::sweep_expired_claims(store.as_ref(), &mut env, &tenant)?;
    }
    Ok((markers, claims))
}
