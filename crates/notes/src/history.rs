//! A note's history: one entry per committed version, the newest
//! [`crate::write::HISTORY_IN_HEAD`] in the head, older ones spilled to
//! `audit/<note_id>/<version:020>` by the commit that dropped them from the
//! head (see [`crate::write`]). Every version from 1 to the head's has
//! exactly one entry, because every commit that moves the note version adds
//! one (claims move only the head's `rev`).
//!
//! An entry that changed a tab carries the tab as that commit left it (its
//! content refs, label and tab version): content blobs are immutable and
//! content-addressed, so the snapshot is all it takes to read or restore
//! that version. The tab as it was at note version `v` is the snapshot of
//! the newest entry at or before `v` that changed it; a fixed tab no entry
//! changed since the note was created is empty at its first version.
//!
//! Retention ([`crate::env::Retention`], from the host's variables): a
//! version stays readable while it is among the newest `versions` of its
//! note **or** younger than `days`; past both it is `not_found` ("past
//! retention", naming `at_version`). Entries and blobs are not deleted yet:
//! the window is what readers are promised, not what is kept.

use serde_json::{Value, json};

use crate::content::empty_hash;
use crate::env::{Env, Retention};
use crate::keys;
use crate::kv::TenantKv;
use crate::model::{Head, HistoryEntry, Tab, TabKind, decode, rfc3339};
use crate::refusal::{Code, Out, Refusal};

/// The moment a history read happens and the retention it honours.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    now: u64,
    keep: Retention,
}

impl Window {
    /// Now, with the host's retention.
    pub fn of(env: &dyn Env) -> Self {
        Window { now: env.now_us(), keep: env.retention() }
    }

    fn describe(&self) -> String {
        format!("the newest {} versions and the last {} days are kept", self.keep.versions, self.keep.days)
    }
}

/// Entries read per store round trip while walking back.
const BATCH: u64 = 64;

/// The entries of versions `from` down to `to` (inclusive, `from >= to`),
/// newest first, from the head and the spilled keys.
fn entries(kv: &TenantKv, head: &Head, from: u64, to: u64) -> Out<Vec<HistoryEntry>> {
    let mut out = Vec::new();
    let mut missing = Vec::new();
    for v in (to..=from).rev() {
        match head.history.iter().find(|e| e.version == v) {
            Some(e) => out.push(Some(e.clone())),
            None => {
                missing.push((out.len(), keys::history(&head.note_id, v)));
                out.push(None);
            }
        }
    }
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|(_, k)| k.clone()).collect();
        for ((slot, _), bytes) in missing.iter().zip(kv.get_many(&names)?) {
            if let Some(b) = bytes {
                out[*slot] = Some(decode("history entry", &b)?);
            }
        }
    }
    Ok(out.into_iter().flatten().collect())
}

/// Whether version `v` (committed at `at`) is still within retention.
fn retained(head: &Head, v: u64, at: u64, w: Window) -> bool {
    head.version.saturating_sub(v) < w.keep.versions || w.now.saturating_sub(at) < w.keep.days.saturating_mul(24 * 3600 * 1_000_000)
}

/// The wire form of an entry (`list_note_history`, the REST history).
pub(crate) fn entry_json(e: &HistoryEntry) -> Value {
    let mut v = json!({
        "version": e.version,
        "action": e.action,
        "tab_id": e.tab_id,
        "by": crate::claim_audit::who_json(&e.by),
        "at": rfc3339(e.at),
        "at_us": e.at,
        "content_hash": e.content_hash,
    });
    if let Some(t) = &e.tab {
        v["tab_version"] = t.version.into();
        v["label"] = t.label.clone().into();
        v["type"] = t.kind.as_str().into();
        if t.kind == TabKind::Markdown {
            v["size_bytes"] = t.size.into();
        }
    }
    if e.deleted {
        v["deleted"] = true.into();
    }
    v
}

/// One page of a note's history, newest first: at most `limit` entries
/// (of `tab_id` only, if given) at or below version `top` (default: the
/// head's), looking at no more than `max(limit * 20, 64)` versions per call
/// so a filter that matches rarely still answers quickly. Returns the
/// entries and the version to continue at, `None` once the first retained
/// version was seen.
pub(crate) fn page(kv: &TenantKv, head: &Head, tab_id: Option<&str>, top: Option<u64>, limit: usize, now: Window) -> Out<(Vec<HistoryEntry>, Option<u64>)> {
    let top = top.unwrap_or(head.version).min(head.version);
    let floor = top.saturating_sub((limit as u64 * 20).max(BATCH)).max(1);
    let mut found = Vec::new();
    let mut v = top;
    while v >= floor && v >= 1 {
        let low = v.saturating_sub(BATCH - 1).max(floor);
        for e in entries(kv, head, v, low)? {
            if !retained(head, e.version, e.at, now) {
                return Ok((found, None));
            }
            if tab_id.is_none_or(|t| e.tab_id.as_deref() == Some(t)) {
                let version = e.version;
                found.push(e);
                if found.len() == limit {
                    return Ok((found, (version > 1).then(|| version - 1)));
                }
            }
        }
        v = low - 1;
    }
    Ok((found, (v >= 1).then_some(v)))
}

/// The tab `tab_id` as it was at note version `at` (or `not_found`: the
/// version is past retention, the tab did not exist then, or its entry
/// predates snapshots). A deleted tab reads as it was before deletion for
/// versions before the delete; at or after it, `not_found`.
pub(crate) fn tab_at(kv: &TenantKv, head: &Head, tab_id: &str, at: u64, now: Window) -> Out<Tab> {
    if at == 0 || at > head.version {
        return Err(Refusal::invalid("at_version", format!("at_version must be between 1 and the note's version {}", head.version))
            .with_version(head.version)
            .into());
    }
    // Walk back in growing steps: the version asked for is usually recent
    // (in the head: no store read) or a few versions back.
    let mut v = at;
    let mut step = 4;
    loop {
        let low = v.saturating_sub(step - 1).max(1);
        step = (step * 2).min(BATCH);
        for e in entries(kv, head, v, low)? {
            if e.version == at && !retained(head, e.version, e.at, now) {
                return Err(Refusal::new(
                    Code::NotFound,
                    format!("version {at} is past retention ({})", now.describe()),
                )
                .with("field", "at_version")
                .into());
            }
            if e.tab_id.as_deref() != Some(tab_id) {
                continue;
            }
            return match e.tab {
                Some(_) if e.deleted => {
                    Err(Refusal::new(Code::NotFound, format!("tab {tab_id} was deleted at version {}", e.version)).with("field", "tab_id").into())
                }
                Some(t) => Ok(t),
                None => Err(Refusal::new(
                    Code::NotFound,
                    format!("version {} of tab {tab_id} was written before history kept content", e.version),
                )
                .with("field", "at_version")
                .into()),
            };
        }
        if low == 1 {
            break;
        }
        v = low - 1;
    }
    // No entry changed it: a fixed tab, as the note was created.
    match head.tabs.iter().find(|t| t.id == tab_id) {
        Some(t) if matches!(t.kind, TabKind::Markdown | TabKind::Files | TabKind::Sources) && t.created_at == head.created_at => {
            Ok(Tab {
                version: 1,
                content_hash: empty_hash(),
                blobs: Vec::new(),
                size: 0,
                updated_at: t.created_at,
                updated_by: t.author.clone(),
                ..t.clone()
            })
        }
        _ => Err(Refusal::new(Code::NotFound, format!("tab {tab_id} did not exist at version {at}")).with("field", "tab_id").into()),
    }
}
