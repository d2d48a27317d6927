//! The audit trail people read (`GET /api/v1/audit`, scope `audit:read`):
//! every write attempt and how it ended, claim events, and refused calls,
//! with who, when, the tool or route, the outcome and the version. Never the
//! content, never a token.
//!
//! It is drawn from three families of immutable records, each written where
//! its event happens:
//! - committed writes: the note's history ([`crate::history`]), written by
//!   the commit itself, so the trail cannot miss or invent a commit;
//! - claim events: `audit/claims/<note_id>/…` ([`crate::claim_audit`]);
//! - refused calls: `audit/refused/…`: the router's and the REST API's
//!   token, scope and rate refusals, and refused writes (recorded here by
//!   [`record_refused_write`] after the refusal, best effort: a lost record
//!   never changes an answer).
//!
//! Everything is under the caller's tenant prefix, so a tenant sees only
//! its own trail.

use serde_json::{Map, Value, json};

use crate::claim_audit::who_json;
use crate::env::{Env, Identity};
use crate::head::load_head;
use crate::keys;
use crate::kv::TenantKv;
use crate::model::{Who, rfc3339, sha_hex};
use crate::refusal::{Code, Out, Refusal};

/// Records scanned per family and page: bounds the work of one call.
const SCAN: usize = 1_000;

/// Records a refused write attempt (`tool`: the tool, or the REST route):
/// the refusal body's code, field and current version are kept; its
/// message is not (it may quote the caller's arguments).
pub(crate) fn record_refused_write(kv: &TenantKv, env: &mut dyn Env, who: &Identity, tool: &str, note_id: Option<&str>, refusal: &Value) {
    if refusal["error"] == Code::ClaimConflict.as_str() {
        return; // the claims audit records it with the claim that was in the way
    }
    let now = env.now_us();
    let rec = json!({
        "reason": "write",
        "tool": tool,
        "note_id": note_id,
        "error": refusal["error"],
        "field": refusal.get("field"),
        "current_version": refusal.get("current_version"),
        "by": who_json(&Who::of(who)),
        "at_us": now,
    });
    // The tag tells apart records of one microsecond; drawn from the record
    // itself, so recording takes nothing from the caller's randomness.
    let digest = sha_hex(rec.to_string().as_bytes());
    let tag = u32::from_str_radix(&digest[..8], 16).unwrap_or(0);
    let _ = kv.set(&keys::refused(now, tag), rec.to_string().as_bytes());
}

/// One event of the trail, with its sort key.
struct Event {
    at_us: u64,
    id: String,
    body: Value,
}

fn cursor_of(at_us: u64, id: &str) -> String {
    crate::args::cursor_token(&format!("{at_us:020}|{id}"))
}

fn parse_cursor(c: &str) -> Result<(u64, String), Refusal> {
    let bad = || Refusal::invalid("cursor", "cursor is not one this listing returned");
    let raw = crate::args::cursor_text(c)?;
    let (at, id) = raw.split_once('|').ok_or_else(bad)?;
    Ok((at.parse().map_err(|_| bad())?, id.to_string()))
}

/// Decodes the records `keys` name (skipping any that vanished or do not parse).
fn records(kv: &TenantKv, keys: &[String]) -> Out<Vec<(String, Value)>> {
    let values = kv.get_many(keys)?;
    Ok(keys.iter().zip(values).filter_map(|(k, v)| Some((k.clone(), serde_json::from_slice::<Value>(&v?).ok()?))).collect())
}

/// The claim events from `from` on, of one note or of every note.
fn claim_events(kv: &TenantKv, note_id: Option<&str>, from: u64, events: &mut Vec<Event>) -> Out<()> {
    let claims_prefix = match note_id {
        Some(n) => format!("{}{n}/", keys::CLAIM_AUDIT),
        None => keys::CLAIM_AUDIT.to_string(),
    };
    let claim_keys = kv.list_prefix(&claims_prefix, None, SCAN)?;
    for (k, r) in records(kv, &claim_keys)? {
        let at_us = r["at_us"].as_u64().unwrap_or(0);
        if at_us < from {
            continue;
        }
        let mut body = Map::new();
        body.insert("kind".into(), "claim".into());
        body.insert("outcome".into(), r["event"].clone());
        body.insert("tool".into(), r["action"].clone());
        for f in ["note_id", "claim_id", "tab_id", "by", "error", "reason"] {
            if let Some(v) = r.get(f).filter(|v| !v.is_null()) {
                body.insert(f.into(), v.clone());
            }
        }
        body.insert("at".into(), rfc3339(at_us).into());
        events.push(Event { at_us, id: k, body: Value::Object(body) });
    }
    Ok(())
}

/// The refused calls from `from` on: of one note, its refused writes; of
/// the tenant, every refused call.
fn refused_events(kv: &TenantKv, note_id: Option<&str>, from: u64, events: &mut Vec<Event>) -> Out<()> {
    let start = format!("{from:020}");
    let refused_keys = kv.list_prefix(keys::REFUSED, Some(start.as_str()).filter(|_| from > 0), SCAN)?;
    for (k, r) in records(kv, &refused_keys)? {
        let at_us = r["at_us"].as_u64().unwrap_or(0);
        let write = r["reason"] == "write";
        if at_us < from || (note_id.is_some() && (!write || r["note_id"].as_str() != note_id)) {
            continue;
        }
        let body = if write {
            json!({"kind": "write", "outcome": r["error"], "tool": r["tool"], "note_id": r["note_id"], "field": r["field"],
                "current_version": r["current_version"], "by": r["by"], "at": rfc3339(at_us)})
        } else {
            // Token, scope, origin and rate refusals: what was refused and why,
            // never the token.
            json!({"kind": "refused", "outcome": r["reason"], "api": r.get("api").cloned().unwrap_or("mcp".into()),
                "subject": r.get("sub"), "scope": r.get("scope"), "at": rfc3339(at_us)})
        };
        events.push(Event { at_us, id: k, body });
    }
    Ok(())
}

/// The trail, oldest first from `since` (µs, default 0), at most `limit`
/// events after `cursor`; of one note if `note_id` is given (its committed
/// writes, claim events and refused writes), else of the tenant (claim
/// events and refused calls of every note; committed writes are listed per
/// note, as they are the note's history).
pub(crate) fn list(
    kv: &TenantKv,
    who: &Identity,
    note_id: Option<&str>,
    since: u64,
    cursor: Option<&str>,
    limit: usize,
    now: crate::history::Window,
) -> Out<Value> {
    if who.actor_type != crate::env::ActorType::Human {
        return Err(Refusal::new(Code::Forbidden, "the audit trail is for people: agents read a note's history with list_note_history").into());
    }
    let after = cursor.map(parse_cursor).transpose()?;
    let from = after.as_ref().map_or(since, |(at, _)| (*at).max(since));
    let mut events = Vec::new();

    if let Some(note) = note_id {
        let head = load_head(kv, who, note)?;
        let (entries, _) = crate::history::page(kv, &head, crate::head::Reader::Caller(who), None, None, SCAN, now)?;
        for e in entries.iter().filter(|e| e.at >= from) {
            let body = json!({"kind": "write", "outcome": "committed", "tool": e.action, "note_id": note, "tab_id": e.tab_id,
                "version": e.version, "by": who_json(&e.by), "content_hash": e.content_hash, "at": rfc3339(e.at)});
            events.push(Event { at_us: e.at, id: format!("v{:020}", e.version), body });
        }
    }

    claim_events(kv, note_id, from, &mut events)?;
    refused_events(kv, note_id, from, &mut events)?;

    events.sort_by(|a, b| (a.at_us, &a.id).cmp(&(b.at_us, &b.id)));
    if let Some((at, id)) = &after {
        events.retain(|e| (e.at_us, &e.id) > (*at, id));
    }
    let more = events.len() > limit;
    events.truncate(limit);
    let next = more.then(|| events.last().map(|e| cursor_of(e.at_us, &e.id))).flatten();
    Ok(json!({
        "note_id": note_id,
        "events": events.into_iter().map(|e| {
            let mut b = e.body;
            b["at_us"] = e.at_us.into();
            b
        }).collect::<Vec<_>>(),
        "next_cursor": next,
    }))
}
