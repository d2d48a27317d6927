//! The `cache` store: what may be lost on a restart, and how each record
//! expires. Nothing here is kept forever:
//!
//! | key | what | gone |
//! |---|---|---|
//! | `door/…` | budgets and the refusal summary ([`crate::budget`]) | past their minute's use |
//! | `auth/verified/<config>/<token hash>` | a verified token's principal | at the token's `exp` |
//! | `auth/jwks/<source>` | the issuer's keys as last fetched | replaced by the next fetch (one per key source) |
//! | `auth/nonce/<minute:010>/<nonce>` | a signed identity already used (tools deployed apart) | two minutes on, when its identity has expired |
//! | `feed/lease/<subject>/<i>` | a stream's lease ([`crate::streams::Slots`]): the instant it lapses | given back when its stream ends; else past that instant (its host died) |
//! | `feed/book/<subject>` | a subject's resource subscriptions (`cairn_mcp::subscriptions`): the instant they lapse, then what they last told | past that instant (an hour after the subject last subscribed or listened) |
//! | `ratelimit/…` | counters of an earlier layout | at the first sweep |
//!
//! [`sweep`] drops what has expired, a bounded number of keys per round,
//! resuming where the last round stopped.

use crate::budget::CACHE;
use cairn_kv::Store;

/// A verified token's principal, kept until the token's `exp`; `config`
/// changes with the trusted keys, issuer and audience.
pub fn verified_token(config: &str, token_hash: &str) -> String {
    format!("{VERIFIED}{config}/{token_hash}")
}

/// The issuer's JWKS as last fetched: `source` names where it comes from (a
/// hash of the JWKS URL, or of the issuer for discovery).
pub fn fetched_jwks(source: &str) -> String {
    format!("auth/jwks/{source}")
}

/// A signed identity used once, in the minute it was first seen.
pub fn identity_nonce(minute: u64, nonce: &str) -> String {
    format!("{NONCE}{minute:010}/{nonce}")
}

/// Lease `i` of a subject's change-feed streams (`subject` as
/// [`crate::budget::subject_id`] names it); its value is the instant it
/// lapses, in microseconds since the epoch.
pub fn stream_lease(subject: &str, i: usize) -> String {
    format!("{LEASE}{subject}/{i}")
}

/// A subject's resource subscriptions (`subject` as
/// [`crate::budget::subject_id`] names it); its value starts with the
/// instant they lapse, in microseconds since the epoch, on a line of its own.
pub fn subscription_book(subject: &str) -> String {
    format!("{BOOK}{subject}")
}

const VERIFIED: &str = "auth/verified/";
const LEASE: &str = "feed/lease/";
const BOOK: &str = "feed/book/";
const NONCE: &str = "auth/nonce/";
const LEGACY_RATE: &str = "ratelimit/";
/// Where the verified-token sweep resumes.
const CURSOR: &str = "auth/sweep-cursor";

/// What a round of [`sweep`] dropped.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    /// Door counters past use.
    pub counters: usize,
    /// Verified tokens past their `exp`.
    pub tokens: usize,
    /// Identity nonces past their window, and counters of the old layout.
    pub other: usize,
}

/// Drops the `cache` store's expired records, looking at no more than
/// `budget` keys of each kind.
pub fn sweep(store: &dyn Store, now_s: u64, window_minutes: u64, budget: usize) -> cairn_kv::Result<Swept> {
    let mut out = Swept { counters: crate::budget::sweep(store, now_s, window_minutes, budget)?, ..Swept::default() };
    // Nonces: by minute, in key order.
    let cutoff = (now_s / 60).saturating_sub(2);
    let page = store.list_prefix(CACHE, NONCE, None, budget)?;
    let old: Vec<&str> = page
        .iter()
        .map(String::as_str)
        .take_while(|k| k[NONCE.len()..].split('/').next().and_then(|m| m.parse::<u64>().ok()).is_none_or(|m| m < cutoff))
        .collect();
    store.delete_many(CACHE, &old)?;
    out.other += old.len();
    let legacy = store.list_prefix(CACHE, LEGACY_RATE, None, budget)?;
    store.delete_many(CACHE, &legacy.iter().map(String::as_str).collect::<Vec<_>>())?;
    out.other += legacy.len();
    // Stream leases and subscription books past the instant they lapse (a
    // value that does not start with one has lapsed too).
    for prefix in [LEASE, BOOK] {
        out.other += drop_lapsed(store, prefix, now_s, budget)?;
    }
    // Verified tokens: by their `exp`, a page at a time from where the last
    // round stopped.
    let after = store.get(CACHE, CURSOR)?.and_then(|c| String::from_utf8(c).ok());
    let page = store.list_prefix(CACHE, VERIFIED, after.as_deref(), budget)?;
    let keys: Vec<&str> = page.iter().map(String::as_str).collect();
    let values = store.get_many(CACHE, &keys)?;
    let expired: Vec<&str> = keys
        .iter()
        .zip(values)
        .filter(|(_, v)| match v {
            Some(v) => serde_json::from_slice::<serde_json::Value>(v).ok().and_then(|p| p["exp"].as_u64()).is_none_or(|exp| exp <= now_s),
            None => false,
        })
        .map(|(k, _)| *k)
        .collect();
    store.delete_many(CACHE, &expired)?;
    out.tokens = expired.len();
    match page.last().filter(|_| page.len() >= budget) {
        Some(last) => store.set(CACHE, CURSOR, last.as_bytes())?,
        None => store.delete(CACHE, CURSOR)?,
    }
    Ok(out)
}

/// Drops the records under `prefix` whose value's first line, the instant
/// they lapse in microseconds, is past `now_s` (or does not read as one).
fn drop_lapsed(store: &dyn Store, prefix: &str, now_s: u64, budget: usize) -> cairn_kv::Result<usize> {
    let page = store.list_prefix(CACHE, prefix, None, budget)?;
    let keys: Vec<&str> = page.iter().map(String::as_str).collect();
    let values = store.get_many(CACHE, &keys)?;
    let until = |v: &[u8]| std::str::from_utf8(v.split(|b| *b == b'\n').next()?).ok()?.parse::<u64>().ok();
    let lapsed: Vec<&str> =
        keys.iter().zip(values).filter(|(_, v)| v.as_deref().and_then(until).is_none_or(|until_us| until_us / 1_000_000 < now_s)).map(|(k, _)| *k).collect();
    store.delete_many(CACHE, &lapsed)?;
    Ok(lapsed.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_kv::memory::MemoryStore;

    #[test]
    fn expired_tokens_old_nonces_and_old_counters_go_and_the_rest_stays() {
        let s = MemoryStore::new();
        let now = 10_000;
        s.set(CACHE, &verified_token("c", "live"), br#"{"exp":10001}"#).unwrap();
        s.set(CACHE, &verified_token("c", "dead"), br#"{"exp":9999}"#).unwrap();
        s.set(CACHE, &verified_token("c", "junk"), b"not json").unwrap();
        s.set(CACHE, &identity_nonce(now / 60, "fresh"), b"1").unwrap();
        s.set(CACHE, &identity_nonce(now / 60 - 5, "stale"), b"1").unwrap();
        s.set(CACHE, "ratelimit/abc/1", b"1").unwrap();
        s.set(CACHE, &fetched_jwks("x"), b"{}").unwrap();
        let swept = sweep(&s, now, 60, 100).unwrap();
        assert_eq!((swept.tokens, swept.other), (2, 2));
        let left = s.list_keys(CACHE, None, 100).unwrap();
        assert_eq!(left, vec![fetched_jwks("x"), identity_nonce(now / 60, "fresh"), verified_token("c", "live")]);
    }

    #[test]
    fn a_lapsed_stream_lease_goes_and_a_held_one_stays() {
        let s = MemoryStore::new();
        let now = 10_000;
        s.set(CACHE, &stream_lease("a", 0), (now * 1_000_000 + 1).to_string().as_bytes()).unwrap();
        s.set(CACHE, &stream_lease("a", 1), ((now - 1) * 1_000_000).to_string().as_bytes()).unwrap();
        s.set(CACHE, &stream_lease("b", 0), b"not an instant").unwrap();
        assert_eq!(sweep(&s, now, 60, 100).unwrap().other, 2);
        assert_eq!(s.list_prefix(CACHE, LEASE, None, 100).unwrap(), vec![stream_lease("a", 0)]);
    }

    #[test]
    fn a_lapsed_subscription_book_goes_and_a_kept_one_stays() {
        let s = MemoryStore::new();
        let now = 10_000;
        s.set(CACHE, &subscription_book("kept"), format!("{}\n{{}}", now * 1_000_000 + 1).as_bytes()).unwrap();
        s.set(CACHE, &subscription_book("lapsed"), format!("{}\n{{}}", (now - 1) * 1_000_000).as_bytes()).unwrap();
        s.set(CACHE, &subscription_book("junk"), b"{}").unwrap();
        assert_eq!(sweep(&s, now, 60, 100).unwrap().other, 2);
        assert_eq!(s.list_prefix(CACHE, BOOK, None, 100).unwrap(), vec![subscription_book("kept")]);
    }

    #[test]
    fn a_small_budget_resumes_where_it_stopped() {
        let s = MemoryStore::new();
        for i in 0..10 {
            s.set(CACHE, &verified_token("c", &format!("{i:02}")), br#"{"exp":1}"#).unwrap();
        }
        let mut total = 0;
        for _ in 0..10 {
            total += sweep(&s, 100, 60, 3).unwrap().tokens;
        }
        assert_eq!(total, 10);
        assert!(s.list_prefix(CACHE, VERIFIED, None, 100).unwrap().is_empty());
    }
}
