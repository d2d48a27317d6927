//! The key layout, in one place: every key Cairn writes, the tenant prefix
//! that confines a tenant's keys, and the system keys outside every tenant.
//! The host and the components build keys only through these functions.
//!
//! Under `t/<tenant>/` (see [`tenant_prefix`]):
//! - `note/<note_id>`: the note head, the commit point of every write.
//! - `blob/<note_id>/<generation>/<sha256>[.<i>]`: immutable content chunks of a
//!   note, written before the head swap under the head's blob generation (see
//!   [`crate::history_sweep`]); `blob/<sha256>`: the tenant's own immutable
//!   records (note index pages) and contents written before generations.
//! - `idem/<note_id>/<sha256(key)>`: idempotency records spilled from the head.
//! - `audit/<note_id>/<version:020>`: history entries spilled from the head.
//! - `audit/claims/<note_id>/<time µs:020>-<tag>`: claim audit records.
//! - `audit/refused/<time µs:020>-<tag>`: refused calls of the tenant (token, scope, rate,
//!   and refused writes: version conflict, invalid argument, forbidden, …).
//! - `idx/notes`: the tenant's note list.
//! - `usage`: what the tenant stores (notes, bytes of content), as of its
//!   last history sweep (see [`crate::env::Quotas`]).
//! - `claims/index`: notes holding claims, with their due times.
//! - `srch/dirty/<note_id>/<rev:016x>`: a commit of the note at head
//!   revision `rev` the search index may not cover yet, written before the
//!   head swap (see `crate::index`).
//! - `srch/doc/<note_id>`: what the search index holds of the note (the head
//!   revision it reflects, each tab's terms).
//! - `srch/t/<term>/<bucket:02>`: the postings of a term.
//! - `srch/dict/<first two characters>`: the indexed terms that start so (for prefix queries).
//!
//! Outside every tenant:
//! - `sys/audit/refused/<time µs:020>-<tag>`: refusals before a tenant is
//!   known, as an earlier layout kept them (no longer written; swept).
//! - the `cache` store's keys are the front door's (`cairn_door::cache`).
//! - `kv-probe/<random>/…`: the probe's scratch keys, deleted afterwards.

use crate::model::sha_hex;

/// The bucket (Spin store label) holding notes: `default`.
pub const BUCKET: &str = "default";

/// Tenant ids: `[a-z0-9_-]{1,64}`.
pub fn valid_tenant(tenant: &str) -> bool {
    (1..=64).contains(&tenant.len()) && tenant.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// The prefix of every key of `tenant`: `t/<tenant>/`.
pub fn tenant_prefix(tenant: &str) -> String {
    format!("t/{tenant}/")
}

/// The tenant a full key belongs to, if it is a tenant key.
pub fn tenant_of(key: &str) -> Option<&str> {
    key.strip_prefix("t/")?.split_once('/').map(|(t, _)| t)
}

/// Every tenant with keys in the store, by skipping from one tenant's prefix
/// to the next (`'0'` follows `'/'`, so `t/<tenant>0` is the first key after
/// all of `t/<tenant>/…`): one ordered lookup per tenant.
pub fn list_tenants(store: &dyn cairn_kv::Store) -> Result<Vec<String>, crate::Failure> {
    let mut out = Vec::new();
    let mut after = "t/".to_string();
    loop {
        let next = store.list_keys(BUCKET, Some(&after), 1)?;
        let Some(tenant) = next.first().and_then(|k| tenant_of(k)).map(str::to_string) else { break };
        after = format!("t/{tenant}0");
        out.push(tenant);
    }
    Ok(out)
}

/// Where refusals of a call are recorded: under the tenant when it is known,
/// else under `sys/`. `tag` tells apart records of the same microsecond.
pub fn refused_audit_key(tenant: Option<&str>, at_us: u64, tag: u32) -> String {
    match tenant {
        Some(t) if valid_tenant(t) => format!("{}{}", tenant_prefix(t), refused(at_us, tag)),
        _ => format!("sys/{}", refused(at_us, tag)),
    }
}

/// Under the tenant: one refused call (token, scope, rate, or a write).
pub(crate) fn refused(at_us: u64, tag: u32) -> String {
    format!("{REFUSED}{at_us:020}-{tag:08x}")
}

/// The prefix of refused-call records.
pub(crate) const REFUSED: &str = "audit/refused/";
/// The prefix of claim audit records (then `<note_id>/`).
pub(crate) const CLAIM_AUDIT: &str = "audit/claims/";

// Keys inside a tenant (relative to its prefix).

pub(crate) fn note(note_id: &str) -> String {
    format!("note/{note_id}")
}

pub(crate) fn blob(hash: &str) -> String {
    format!("blob/{hash}")
}

pub(crate) fn idem(note_id: &str, key: &str) -> String {
    format!("idem/{note_id}/{}", sha_hex(key.as_bytes()))
}

pub(crate) fn history(note_id: &str, version: u64) -> String {
    format!("audit/{note_id}/{version:020}")
}

pub(crate) fn claim_audit(note_id: &str, at: u64, tag: &str) -> String {
    format!("{CLAIM_AUDIT}{note_id}/{at:020}-{tag}")
}

/// The prefix of search-index dirty markers (then `<note_id>/<rev:016x>`).
pub(crate) const SEARCH_DIRTY: &str = "srch/dirty/";

/// A dirty marker: a commit of `note_id` at head revision `rev` is on its way.
pub(crate) fn search_dirty(note_id: &str, rev: u64) -> String {
    format!("{SEARCH_DIRTY}{note_id}/{rev:016x}")
}

/// What the search index holds of a note.
pub(crate) fn search_doc(note_id: &str) -> String {
    format!("srch/doc/{note_id}")
}

/// The dictionary record of indexed terms starting with `start`.
pub(crate) fn search_dict(start: &str) -> String {
    format!("srch/dict/{start}")
}

/// The tenant's note list.
pub(crate) const NOTE_INDEX: &str = "idx/notes";
/// The tenant's usage as of its last history sweep.
pub(crate) const USAGE: &str = "usage";
/// The tenant's stored bytes, exact: a counter moved only by `increment`
/// ([`crate::quota`]).
pub(crate) const USAGE_BYTES: &str = "usage-bytes";
/// The prefix of every content blob of the tenant.
pub(crate) const BLOBS: &str = "blob/";
/// The tenant's claim index.
pub(crate) const CLAIM_INDEX: &str = "claims/index";
