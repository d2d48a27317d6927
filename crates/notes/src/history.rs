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
//! retention", naming `at_version`). The history sweep
//! ([`crate::history_sweep`]) deletes what is past retention and raises the
//! head's `history_floor`: below it only the bases remain (per tab, its
//! newest entry under the floor), which is all a retained version needs. A
//! reader treats a spilled entry that is not there as past retention (a sweep
//! ran since it read the head), never as a version that did not change the tab.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Serialize;

use crate::content::empty_hash;
use crate::env::{ActorType, Env, Retention};
use crate::head::Reader;
use crate::keys;
use crate::kv::TenantKv;
use crate::model::{Head, HistoryEntry, Tab, TabKind, Who, decode, rfc3339};
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
        format!("the newest {} versions and the last {} days are kept, {} versions at most", self.keep.versions, self.keep.days, self.keep.max_versions)
    }
}

/// Entries read per store round trip while walking back.
const BATCH: u64 = 64;

/// The entries of versions `from` down to `to` (inclusive, `from >= to`),
/// newest first, from the head and the spilled keys. One that is not there
/// (swept since the head was read) is left out.
fn entries(kv: &TenantKv, head: &Head, from: u64, to: u64) -> Out<Vec<HistoryEntry>> {
    Ok(slots(kv, head, from, to)?.into_iter().flatten().collect())
}

/// [`entries`], or past retention when one of them is not there.
fn all_entries(kv: &TenantKv, head: &Head, from: u64, to: u64, w: Window) -> Out<Vec<HistoryEntry>> {
    let got = slots(kv, head, from, to)?;
    if got.iter().any(Option::is_none) {
        return Err(past_retention(to, w));
    }
    Ok(got.into_iter().flatten().collect())
}

/// The oldest version a reader may see of `head` (see [`Head::visible_from`]).
pub(crate) fn visible_from(head: &Head, reader: Reader) -> u64 {
    match reader {
        Reader::Caller(who) => head.visible_from(who),
        Reader::System => 1,
    }
}

fn not_visible(at: u64, from: u64) -> crate::refusal::Halt {
    Refusal::new(Code::NotFound, format!("version {at} is from before this note was approved for agents; agents read versions {from} and later"))
        .with("field", "at_version")
        .into()
}

fn past_retention(at: u64, w: Window) -> crate::refusal::Halt {
    Refusal::new(Code::NotFound, format!("version {at} is past retention ({})", w.describe())).with("field", "at_version").into()
}

/// The entries of versions `from` down to `to`, newest first; `None` where one is missing.
fn slots(kv: &TenantKv, head: &Head, from: u64, to: u64) -> Out<Vec<Option<HistoryEntry>>> {
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
    Ok(out)
}

/// Whether version `v` (committed at `at`) is still within retention (and
/// not under the floor a sweep left).
pub(crate) fn retained(head: &Head, v: u64, at: u64, w: Window) -> bool {
    let age = head.version.saturating_sub(v);
    v >= head.history_floor && age < w.keep.max_versions && (age < w.keep.versions || w.now.saturating_sub(at) < w.keep.days.saturating_mul(DAY_US))
}

/// A day in microseconds.
pub(crate) const DAY_US: u64 = 24 * 3600 * 1_000_000;

// The wire form of an entry: `list_note_history` and the REST history.
/// One committed version of a note.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct EntryView {
    /// The note version this commit made.
    version: u64,
    /// What it did: replace_text, append_text, create_tab, delete_tab, restore, …
    action: String,
    /// The tab it changed; null for a change to the note itself.
    #[schemars(schema_with = "text_or_null")]
    tab_id: Option<String>,
    /// Who made it.
    by: ByView,
    /// When it was committed.
    #[schemars(schema_with = "crate::results::shape::timestamp")]
    at: String,
    /// When it was committed, in microseconds since the Unix epoch.
    at_us: u64,
    /// The hash of the tab's content as this commit left it; null for a change to the note itself.
    #[schemars(schema_with = "hash_or_null")]
    content_hash: Option<String>,
    /// The tab's own version after this commit (absent when the entry keeps no copy of the tab).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    tab_version: Option<u64>,
    /// The tab's label after this commit (absent when the entry keeps no copy of the tab).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    label: Option<String>,
    /// The tab's type (absent when the entry keeps no copy of the tab).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "TabKind")]
    kind: Option<TabKind>,
    /// Bytes of a markdown tab's text after this commit (markdown tabs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    size_bytes: Option<u64>,
    /// True when this commit deleted the tab (absent otherwise).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    deleted: bool,
}

/// Who made a version.
#[derive(Debug, Serialize, JsonSchema)]
struct ByView {
    /// Their subject (stable id).
    subject: String,
    /// Their display name.
    name: String,
    /// Agent or human.
    #[schemars(schema_with = "actor_type")]
    actor_type: ActorType,
}

fn text_or_null(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"anyOf": [{"type": "string"}, {"type": "null"}]})
}

fn hash_or_null(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"anyOf": [{"type": "string", "pattern": "^[0-9a-f]{64}$"}, {"type": "null"}]})
}

fn actor_type(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "enum": ["agent", "human"]})
}

impl EntryView {
    /// The wire form of an entry.
    pub(crate) fn of(e: &HistoryEntry) -> EntryView {
        let tab = e.tab.as_ref();
        EntryView {
            version: e.version,
            action: e.action.clone(),
            tab_id: e.tab_id.clone(),
            by: ByView::of(&e.by),
            at: rfc3339(e.at),
            at_us: e.at,
            content_hash: e.content_hash.clone(),
            tab_version: tab.map(|t| t.version),
            label: tab.map(|t| t.label.clone()),
            kind: tab.map(|t| t.kind),
            size_bytes: tab.filter(|t| t.kind == TabKind::Markdown).map(|t| t.size),
            deleted: e.deleted,
        }
    }
}

impl ByView {
    fn of(w: &Who) -> ByView {
        ByView { subject: w.subject.clone(), name: w.name.clone(), actor_type: w.actor_type }
    }
}

/// One page of a note's history, newest first: at most `limit` entries
/// (of `tab_id` only, if given) at or below version `top` (default: the
/// head's), looking at no more than `max(limit * 20, 64)` versions per call
/// so a filter that matches rarely still answers quickly. Returns the
/// entries and the version to continue at, `None` once the first retained
/// version the reader may see was seen.
pub(crate) fn page(
    kv: &TenantKv,
    head: &Head,
    reader: Reader,
    tab_id: Option<&str>,
    top: Option<u64>,
    limit: usize,
    now: Window,
) -> Out<(Vec<HistoryEntry>, Option<u64>)> {
    let top = top.unwrap_or(head.version).min(head.version);
    let visible = visible_from(head, reader);
    if top < visible {
        return Ok((Vec::new(), None));
    }
    let floor = top.saturating_sub((limit as u64 * 20).max(BATCH)).max(1).max(head.history_floor).max(visible);
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
    Ok((found, (v >= 1 && v >= head.history_floor && v >= visible).then_some(v)))
}

/// The tab `tab_id` as it was at note version `at` (or `not_found`: the
/// version is past retention, the tab did not exist then, or its entry
/// predates snapshots, or the reader may not see it: an agent reads no
/// version from before the note was approved for agents). A deleted tab
/// reads as it was before deletion for versions before the delete; at or
/// after it, `not_found`.
pub(crate) fn tab_at(kv: &TenantKv, head: &Head, reader: Reader, tab_id: &str, at: u64, now: Window) -> Out<Tab> {
    if at == 0 || at > head.version {
        return Err(Refusal::invalid("at_version", format!("at_version must be between 1 and the note's version {}", head.version))
            .with_version(head.version)
            .into());
    }
    let from = visible_from(head, reader);
    if at < from {
        return Err(not_visible(at, from));
    }
    if at < head.history_floor {
        return Err(past_retention(at, now));
    }
    // Walk back in growing steps: the version asked for is usually recent
    // (in the head: no store read) or a few versions back. Under the floor
    // only the tab's base is left.
    let bottom = head.history_floor.max(1);
    let mut v = at;
    let mut step = 4;
    loop {
        let low = v.saturating_sub(step - 1).max(bottom);
        step = (step * 2).min(BATCH);
        for e in all_entries(kv, head, v, low, now)? {
            if e.version == at && !retained(head, e.version, e.at, now) {
                return Err(past_retention(at, now));
            }
            if e.tab_id.as_deref() != Some(tab_id) {
                continue;
            }
            return snapshot(e, tab_id);
        }
        if low == bottom {
            break;
        }
        v = low - 1;
    }
    if let Some(&base) = head.history_bases.get(tab_id) {
        let e = all_entries(kv, head, base, base, now)?.pop().ok_or_else(|| past_retention(at, now))?;
        return snapshot(e, tab_id);
    }
    // No entry changed it: a fixed tab, as the note was created.
    match head.tabs.iter().find(|t| t.id == tab_id) {
        Some(t) if matches!(t.kind, TabKind::Markdown | TabKind::Files | TabKind::Sources) && t.created_at == head.created_at => {
            Ok(Tab { version: 1, content_hash: empty_hash(), blobs: Vec::new(), size: 0, updated_at: t.created_at, updated_by: t.author.clone(), ..t.clone() })
        }
        _ => Err(Refusal::new(Code::NotFound, format!("tab {tab_id} did not exist at version {at}")).with("field", "tab_id").into()),
    }
}

/// The tab an entry that changed it left (a deleted tab is `not_found`).
fn snapshot(e: HistoryEntry, tab_id: &str) -> Out<Tab> {
    match e.tab {
        Some(_) if e.deleted => Err(Refusal::new(Code::NotFound, format!("tab {tab_id} was deleted at version {}", e.version)).with("field", "tab_id").into()),
        Some(t) => Ok(t),
        None => Err(Refusal::new(Code::NotFound, format!("version {} of tab {tab_id} was written before history kept content", e.version))
            .with("field", "at_version")
            .into()),
    }
}
