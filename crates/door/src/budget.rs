//! Budgets, kept in the `cache` store (shared by every host on the same
//! store, so a budget holds across hosts on Redis):
//!
//! - **per subject**: every MCP message and every REST call of one subject
//!   (tenant + `sub`), whatever token it came with, spends one budget
//!   ([`spend`]): a rate of `rate_limit_per_minute` units a minute with a
//!   burst of a sixth of that ([`Rate`]), kept as the generic cell rate
//!   algorithm's one number per subject (`door/g/<subject>`: when its
//!   spending is paid off), moved by compare-and-swap; work a call did past
//!   its first unit is added afterwards, as debt;
//! - **per client address**: requests refused before anyone is known
//!   (origin, token, limits) count against their address
//!   (`refused_per_minute`); an address past it gets 429 before its token is
//!   even verified, unless the token is one already verified.
//!
//! # Keys and their bound
//!
//! `door/<kind>/<minute:010>/<id>`: the minute first, so [`sweep`] deletes
//! whole minutes in key order. Per minute there is at most one subject key
//! per subject that sent something, and at most
//! [`Settings::addresses_per_minute`](crate::Settings) address keys: the
//! first address past that cap and every later one share the key `other`
//! (so a spread-out flood shares one budget). Subjects' keys live two
//! minutes, the rest for the summary's window; nothing else is kept.
//!
//! A store that cannot be reached does not stop traffic: an uncounted
//! request passes (the counters are a shield, not a front door the rest of the
//! system depends on), and the host reports the store failing.

use cairn_kv::Store;
use sha2::{Digest, Sha256};

/// The store label budgets are counted in.
pub const CACHE: &str = "cache";
/// Prefix of every key the door keeps.
pub const PREFIX: &str = "door/";

/// Kinds of door keys.
pub(crate) const SUBJECT: &str = "s";
pub(crate) const ADDRESS: &str = "a";
pub(crate) const ADDRESSES: &str = "n";
pub(crate) const REASON: &str = "r";

/// Kind of key of a subject's rate state (not per minute: it holds a time).
pub(crate) const PACE: &str = "g";

/// A subject's rate: units a second and how many may be spent at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Milliseconds one unit takes to be paid off.
    pub unit_ms: u64,
    /// Units that may be spent at once (a sixth of a minute's worth, and
    /// at least one full batch of ten messages).
    pub burst: u64,
}

impl Rate {
    /// `per_minute` units a minute, a sixth of that (at least ten) at once.
    pub fn per_minute(per_minute: u64) -> Self {
        let per_minute = per_minute.max(1);
        Rate { unit_ms: (60_000 / per_minute).max(1), burst: (per_minute / 6).max(10) }
    }
}

/// Spends `n` units of the subject `id`'s budget at `now_ms`: `Ok(None)`
/// when it had them, `Ok(Some(wait_ms))` when it did not (and nothing was
/// spent) and how long until it will. With `refuse_over` false the units
/// are spent whatever the balance (work already done becomes debt). A state
/// swap lost four times running lets the call pass (the budget is a
/// shield, not a front door the rest of the system depends on).
pub fn spend(store: &dyn Store, id: &str, rate: Rate, n: u64, now_ms: u64, refuse_over: bool) -> cairn_kv::Result<Option<u64>> {
    let key = format!("{PREFIX}{PACE}/{id}");
    let tolerance = rate.burst.saturating_mul(rate.unit_ms);
    for _ in 0..4 {
        let read = store.read(CACHE, &key)?;
        let paid_off = read.value.as_deref().and_then(|v| std::str::from_utf8(v).ok()?.parse::<u64>().ok()).unwrap_or(0).max(now_ms);
        let next = paid_off.saturating_add(n.saturating_mul(rate.unit_ms));
        if refuse_over && next - now_ms > tolerance {
            return Ok(Some(next - now_ms - tolerance));
        }
        match store.swap(CACHE, &key, read.observed, next.to_string().as_bytes())? {
            cairn_kv::Swap::Done => return Ok(None),
            cairn_kv::Swap::Failed(_) => continue,
        }
    }
    Ok(None)
}

/// The key of one counter.
pub(crate) fn key(kind: &str, minute: u64, id: &str) -> String {
    format!("{PREFIX}{kind}/{minute:010}/{id}")
}

/// The minute a door key counts, read back from the key.
pub(crate) fn minute_of(key: &str) -> Option<u64> {
    key.strip_prefix(PREFIX)?.split('/').nth(1)?.parse().ok()
}

/// What names a subject in its counter: a hash of tenant and subject (the
/// key keeps neither, and its length is fixed whatever the subject).
pub fn subject_id(tenant: &str, subject: &str) -> String {
    let mut h = Sha256::new();
    h.update(tenant.as_bytes());
    h.update([0]);
    h.update(subject.as_bytes());
    h.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// The budget key of a client address: an IPv4 address as it is, an IPv6
/// address by its /64 (what one client is usually given), anything else
/// `other` (the address the host's own caps count, [`crate::peers::Address`]).
/// `addr` is `ip:port`, `[ip]:port` or a bare address.
pub fn address_id(addr: &str) -> String {
    let bare = match addr.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None if addr.matches(':').count() == 1 => addr.split(':').next().unwrap_or(""),
        None => addr,
    };
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => crate::peers::Address::of(ip).to_string(),
        Err(_) => "other".into(),
    }
}

/// Deletes the door's counters that are past use: subjects' refusal marks
/// older than the last minute, rate states already paid off, the rest
/// older than `window_minutes`. At most `budget` keys of each kind are
/// looked at; returns how many were deleted.
pub fn sweep(store: &dyn Store, now_s: u64, window_minutes: u64, budget: usize) -> cairn_kv::Result<usize> {
    let minute = now_s / 60;
    let mut deleted = 0;
    // Rate states paid off before now are the same as none.
    let prefix = format!("{PREFIX}{PACE}/");
    let page = store.list_prefix(CACHE, &prefix, None, budget)?;
    let names: Vec<&str> = page.iter().map(String::as_str).collect();
    let values = store.get_many(CACHE, &names)?;
    let paid: Vec<&str> = names
        .iter()
        .zip(values)
        .filter(|(_, v)| v.as_deref().and_then(|v| std::str::from_utf8(v).ok()?.parse::<u64>().ok()).is_none_or(|t| t < now_s * 1000))
        .map(|(k, _)| *k)
        .collect();
    store.delete_many(CACHE, &paid)?;
    deleted += paid.len();
    let mut looked = 0;
    for (kind, keep) in [(SUBJECT, 2), (ADDRESS, window_minutes), (ADDRESSES, window_minutes), (REASON, window_minutes)] {
        let prefix = format!("{PREFIX}{kind}/");
        let cutoff = minute.saturating_sub(keep);
        loop {
            let page = store.list_prefix(CACHE, &prefix, None, 256.min(budget.saturating_sub(looked)).max(1))?;
            looked += page.len();
            let old: Vec<&str> = page.iter().map(String::as_str).take_while(|k| minute_of(k).is_none_or(|m| m < cutoff)).collect();
            if !old.is_empty() {
                store.delete_many(CACHE, &old)?;
                deleted += old.len();
            }
            if old.len() < page.len() || page.is_empty() || looked >= budget {
                break;
            }
        }
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_counted_by_host_and_ipv6_by_its_64() {
        assert_eq!(address_id("203.0.113.7:51234"), "203.0.113.7");
        assert_eq!(address_id("[2001:db8:1:2:3:4:5:6]:443"), "2001:db8:1:2::/64");
        assert_eq!(address_id("2001:db8:1:2:ffff::1"), "2001:db8:1:2::/64");
        assert_eq!(address_id("[::ffff:10.0.0.1]:1"), "10.0.0.1");
        assert_eq!(address_id("not an address"), "other");
        assert_eq!(address_id(""), "other");
    }

    #[test]
    fn a_subject_id_is_fixed_length_and_keeps_tenants_apart() {
        assert_eq!(subject_id("a", "bob").len(), 32);
        assert_ne!(subject_id("a", "bob"), subject_id("b", "bob"));
        assert_ne!(subject_id("ab", "c"), subject_id("a", "bc"));
    }

    #[test]
    fn keys_read_back_their_minute() {
        assert_eq!(minute_of(&key(SUBJECT, 42, "x")), Some(42));
        assert_eq!(minute_of("door/a/x"), None);
    }
}
