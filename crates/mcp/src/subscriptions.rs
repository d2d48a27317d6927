//! `resources/subscribe` and `resources/unsubscribe` (2025-11-25) without
//! sessions: a subject's subscriptions are a [`Book`] in the `cache` store,
//! shared by every client and host the subject uses, and delivered on the
//! `GET /mcp` stream ([`crate::feed::follow`]).
//!
//! The invariant that makes a reconnecting client miss nothing: **a book
//! holds, for each subscribed URI, the stamp the subject was last told of
//! (or saw when subscribing), and a stamp is moved only after the
//! notification for it went out.** A change made while no stream was open,
//! or between two streams, differs from the book's stamp, so the next
//! stream's first look tells it. A notification whose stamp could not be
//! recorded (a concurrent change to the book, a store fault) is told again:
//! at least once, never lost.
//!
//! Bounds: at most [`MAX_SUBSCRIPTIONS`] URIs a subject, each a Cairn note
//! or tab URI; a book lapses [`KEEP`] after the subject last subscribed or
//! streamed, and the `cache` store's sweep drops it (`cairn_door::cache`).

use std::time::Duration;

use cairn_auth::Principal;
use cairn_kv::{Store, Swap};

use crate::resources::parse;
use crate::rpc::MethodError;

/// Most URIs a subject is subscribed to at once.
pub const MAX_SUBSCRIPTIONS: usize = 16;
/// How long a book is kept after its subject last subscribed or streamed.
pub const KEEP: Duration = Duration::from_secs(3600);
/// Attempts at a compare-and-swap of a book before the caller is told the
/// store is busy.
const ATTEMPTS: usize = 8;
/// The store bucket books live in.
const BUCKET: &str = "cache";

/// A subject's subscriptions: each URI with the stamp last told (`None`:
/// the subject may not read it, or it is not there).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Book {
    /// In the order they were subscribed to.
    pub entries: Vec<(String, Option<u64>)>,
}

/// The key of `who`'s book.
fn key(who: &Principal) -> String {
    cairn_door::cache::subscription_book(&cairn_door::budget::subject_id(&who.tenant, &who.subject))
}

impl Book {
    /// Reads a stored value: the lapse instant on its first line, then the
    /// entries as JSON. A lapsed book, or one that does not read, is empty.
    fn decode(value: &[u8], now_us: u64) -> Book {
        let text = std::str::from_utf8(value).unwrap_or_default();
        let Some((until, json)) = text.split_once('\n') else { return Book::default() };
        if until.parse::<u64>().map_or(true, |u| u <= now_us) {
            return Book::default();
        }
        let entries: Vec<(String, Option<u64>)> = serde_json::from_str(json).unwrap_or_default();
        Book { entries: entries.into_iter().filter(|(u, _)| parse(u).is_some()).take(MAX_SUBSCRIPTIONS).collect() }
    }

    fn encode(&self, now_us: u64) -> Vec<u8> {
        assert!(self.entries.len() <= MAX_SUBSCRIPTIONS, "a book holds at most {MAX_SUBSCRIPTIONS} URIs");
        let json = serde_json::to_string(&self.entries).unwrap_or_else(|_| "[]".into());
        format!("{}\n{json}", now_us + KEEP.as_micros() as u64).into_bytes()
    }

    /// `who`'s book as it stands at `now_us`.
    pub fn load(kv: &dyn Store, who: &Principal, now_us: u64) -> cairn_kv::Result<Book> {
        Ok(kv.get(BUCKET, &key(who))?.map(|v| Book::decode(&v, now_us)).unwrap_or_default())
    }

    /// The URIs, in order.
    pub fn uris(&self) -> Vec<String> {
        self.entries.iter().map(|(u, _)| u.clone()).collect()
    }
}

/// Changes `who`'s book with `change` under compare-and-swap, kept for
/// [`KEEP`] from `now_us`. `change` may refuse; an unchanged book is still
/// written, so its lapse moves on.
fn update(kv: &dyn Store, who: &Principal, now_us: u64, change: impl Fn(&mut Book) -> Result<(), MethodError>) -> Result<Book, MethodError> {
    let key = key(who);
    let busy = |e: cairn_kv::Error| MethodError::Unavailable(format!("the subscriptions are out of reach: {e}"));
    for _ in 0..ATTEMPTS {
        let read = kv.read(BUCKET, &key).map_err(busy)?;
        let mut book = read.value.as_deref().map(|v| Book::decode(v, now_us)).unwrap_or_default();
        change(&mut book)?;
        // The lapse instant, to the microsecond, makes the bytes this
        // update's own (see `cairn_kv::landed`).
        let value = book.encode(now_us);
        if let Swap::Done = cairn_kv::landed(kv.swap(BUCKET, &key, read.observed, &value).map_err(busy)?, &value, kv.vouched()) {
            return Ok(book);
        }
    }
    Err(MethodError::Unavailable("the subscriptions are busy (changed by another request meanwhile): nothing was changed; retry".into()))
}

/// Subscribes `who` to `uri`, whose stamp is `seen` now (what a stream
/// compares with first). Subscribing again to a URI keeps its stamp.
pub fn subscribe(kv: &dyn Store, who: &Principal, uri: &str, seen: Option<u64>, now_us: u64) -> Result<(), MethodError> {
    update(kv, who, now_us, |book| {
        if book.entries.iter().any(|(u, _)| u == uri) {
            return Ok(());
        }
        if book.entries.len() >= MAX_SUBSCRIPTIONS {
            return Err(MethodError::params(format!(
                "a subject holds at most {MAX_SUBSCRIPTIONS} subscriptions; it holds {}: unsubscribe from one first",
                book.entries.len()
            )));
        }
        book.entries.push((uri.to_string(), seen));
        Ok(())
    })
    .map(drop)
}

/// Unsubscribes `who` from `uri` (nothing to do when not subscribed).
pub fn unsubscribe(kv: &dyn Store, who: &Principal, uri: &str, now_us: u64) -> Result<(), MethodError> {
    update(kv, who, now_us, |book| {
        book.entries.retain(|(u, _)| u != uri);
        Ok(())
    })
    .map(drop)
}

/// Records that `who` was told of `told` (URI and stamp): an entry still
/// subscribed takes the stamp; the book is kept for [`KEEP`] from `now_us`.
pub fn mark(kv: &dyn Store, who: &Principal, told: &[(String, Option<u64>)], now_us: u64) -> Result<(), MethodError> {
    update(kv, who, now_us, |book| {
        for (uri, stamp) in told {
            if let Some(e) = book.entries.iter_mut().find(|(u, _)| u == uri) {
                e.1 = *stamp;
            }
        }
        Ok(())
    })
    .map(drop)
}

/// The URI of `resources/subscribe`/`unsubscribe`'s params, checked.
pub fn uri_of(params: &serde_json::Value) -> Result<&str, String> {
    let uri = params.get("uri").and_then(serde_json::Value::as_str).ok_or("params.uri is required: the resource URI to (un)subscribe")?;
    if parse(uri).is_none() {
        return Err(format!("{uri} is not a Cairn resource to subscribe to: use cairn://notes/{{note_id}} or cairn://notes/{{note_id}}/tabs/{{tab_id}}"));
    }
    Ok(uri)
}
