//! What refusals before authentication leave behind: counters, never a
//! record per request. Per minute, in the `cache` store: how many were
//! refused for each [`Code`] (a closed set), and how many came from each
//! client address (at most [`crate::Settings::addresses_per_minute`]
//! addresses, the rest counted together as `other`). The address counters
//! are also the addresses' budgets ([`crate::budget`]). Both are swept once
//! they leave the window ([`crate::budget::sweep`]).
//!
//! So a flood of refused requests of any shape grows the store by at most
//! `window × (codes + addresses_per_minute + 1)` small counters, whatever
//! its size or length.

use crate::budget::{ADDRESS, ADDRESSES, CACHE, PREFIX, REASON, key, minute_of};
use crate::refusal::Code;
use cairn_kv::Store;
use std::collections::BTreeMap;

/// Counts one refusal of `code` from `address` (an [`crate::budget::address_id`])
/// in `minute`; returns the address's refusals this minute, this one included.
pub(crate) fn record(store: &dyn Store, minute: u64, code: Code, address: &str, cap: u64) -> cairn_kv::Result<i64> {
    store.increment(CACHE, &key(REASON, minute, code.as_str()), 1)?;
    let own = key(ADDRESS, minute, address);
    let count = store.increment(CACHE, &own, 1)?;
    if count == 1 && address != "other" {
        // A new address this minute: within the cap it keeps its own
        // counter; past it, its counter goes and it shares `other`'s.
        let distinct = store.increment(CACHE, &key(ADDRESSES, minute, "count"), 1)?;
        if distinct > cap as i64 {
            store.delete(CACHE, &own)?;
            return store.increment(CACHE, &key(ADDRESS, minute, "other"), 1);
        }
    }
    Ok(count)
}

/// The refusals an address has this minute (0 when none, or when the store
/// cannot say).
pub(crate) fn refusals_of(store: &dyn Store, minute: u64, address: &str, cap: u64) -> i64 {
    match store.get(CACHE, &key(ADDRESS, minute, address)).ok().flatten() {
        Some(v) => cairn_kv::decode_counter(Some(&v)).unwrap_or(0),
        // Once this minute's addresses reach the cap, an address without
        // a key of its own is judged by the shared one.
        None => match store.get(CACHE, &key(ADDRESSES, minute, "count")).ok().flatten() {
            Some(n) if cairn_kv::decode_counter(Some(&n)).unwrap_or(0) >= cap as i64 => {
                store.get(CACHE, &key(ADDRESS, minute, "other")).ok().flatten().map_or(0, |v| cairn_kv::decode_counter(Some(&v)).unwrap_or(0))
            }
            _ => 0,
        },
    }
}

/// The summary of the last `minutes` minutes, for operators.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Minutes covered.
    pub minutes: u64,
    /// Refusals by code.
    pub by_code: BTreeMap<String, i64>,
    /// The addresses with the most refusals, most first (at most `top`).
    pub top_addresses: Vec<(String, i64)>,
}

impl Summary {
    /// As JSON.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "minutes": self.minutes,
            "by_code": self.by_code,
            "top_addresses": self.top_addresses.iter().map(|(a, n)| serde_json::json!({"address": a, "refused": n})).collect::<Vec<_>>(),
        })
    }
}

/// Reads the summary of the last `minutes` minutes (reading at most
/// `max_keys` counters), with the `top` busiest addresses.
pub fn read(store: &dyn Store, now_s: u64, minutes: u64, top: usize, max_keys: usize) -> cairn_kv::Result<Summary> {
    let from = (now_s / 60).saturating_sub(minutes.saturating_sub(1));
    let mut out = Summary { minutes, ..Summary::default() };
    let mut addresses: BTreeMap<String, i64> = BTreeMap::new();
    let mut read = 0;
    for kind in [REASON, ADDRESS] {
        let prefix = format!("{PREFIX}{kind}/");
        let start = key(kind, from, "");
        let mut after: Option<String> = Some(start[..start.len() - 1].to_string());
        while read < max_keys {
            let page = store.list_prefix(CACHE, &prefix, after.as_deref(), 256.min(max_keys - read))?;
            if page.is_empty() {
                break;
            }
            read += page.len();
            let keys: Vec<&str> = page.iter().map(String::as_str).filter(|k| minute_of(k).is_some_and(|m| m >= from)).collect();
            let values = store.get_many(CACHE, &keys)?;
            for (k, v) in keys.iter().zip(values) {
                let n = cairn_kv::decode_counter(v.as_deref()).unwrap_or(0);
                // `door/<kind>/<minute>/<id>`; an IPv6 id holds a `/` of its own.
                let id = k.splitn(4, '/').nth(3).unwrap_or("").to_string();
                let map = if kind == REASON { &mut out.by_code } else { &mut addresses };
                *map.entry(id).or_default() += n;
            }
            after = page.last().cloned();
        }
    }
    let mut busiest: Vec<(String, i64)> = addresses.into_iter().collect();
    busiest.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    busiest.truncate(top);
    out.top_addresses = busiest;
    Ok(out)
}
