//! A subject's open streams: the MCP change feed (`subscriptions/listen`,
//! the `GET /mcp` stream) and the editor's `events` route alike hold a
//! lease while they run, so a subject has at most [`MAX_STREAMS`] open at
//! once across every host, whichever door they came through. Also the two
//! seams a stream runs on, so its loop is tested natively: [`Pace`] (how it
//! waits, its clock) and [`Sink`] (where its frames go).
//!
//! A lease is a record in the `cache` store holding the instant it lapses:
//! taken by compare-and-swap for the stream's lifetime and a margin
//! ([`MARGIN`]), given back when the stream ends. One whose host died
//! lapses by itself, and the store's sweep drops it ([`crate::cache`]).

use std::future::Future;
use std::time::Duration;

use cairn_kv::{Store, Swap};

use crate::budget::CACHE;

/// Most streams one subject (tenant and subject) has open at once.
pub const MAX_STREAMS: usize = 2;
/// How long past its stream's lifetime a lease is held, for a host that
/// died without giving it back.
pub const MARGIN: Duration = Duration::from_secs(5);

/// How a stream waits, and its clock.
pub trait Pace {
    /// Waits `d`.
    fn sleep(&self, d: Duration) -> impl Future<Output = ()>;
    /// A monotonic instant, as time since any fixed origin.
    fn now(&self) -> Duration;
}

/// Where a stream's frames go.
pub trait Sink {
    /// Sends one frame; `false` when the client is gone (the stream ends).
    fn send(&mut self, frame: String) -> impl Future<Output = bool>;
    /// Whether the client is gone (asked between looks, so a stream whose
    /// client left ends within one interval, its lease given back).
    fn gone(&self) -> bool;
}

/// A lease on one of a subject's [`MAX_STREAMS`] streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slots {
    key: String,
    until_us: u64,
}

impl Slots {
    /// Takes a free lease of the subject's (`tenant` and `subject`) for a
    /// stream lasting `lifetime` from `now_us`; `Ok(None)` when all are held.
    pub fn claim(kv: &dyn Store, tenant: &str, subject: &str, now_us: u64, lifetime: Duration) -> cairn_kv::Result<Option<Slots>> {
        let subject = crate::budget::subject_id(tenant, subject);
        let until_us = now_us + (lifetime + MARGIN).as_micros() as u64;
        for i in 0..MAX_STREAMS {
            let key = crate::cache::stream_lease(&subject, i);
            let read = kv.read(CACHE, &key)?;
            let held = read.value.as_deref().and_then(|v| std::str::from_utf8(v).ok()?.parse::<u64>().ok()).is_some_and(|until| until > now_us);
            if held {
                continue;
            }
            // The instant, to the microsecond, is this claim's own: a swap
            // reported failed that left it there was this claim's.
            let value = until_us.to_string();
            if let Swap::Done = cairn_kv::landed(kv.swap(CACHE, &key, read.observed, value.as_bytes())?, value.as_bytes(), kv.vouched()) {
                return Ok(Some(Slots { key, until_us }));
            }
        }
        Ok(None)
    }

    /// Gives the lease back (unless another stream took it since it lapsed).
    pub fn release(&self, kv: &dyn Store) -> cairn_kv::Result<()> {
        // A plain read: no swap follows, so no host handle is taken for one.
        if kv.get(CACHE, &self.key)?.as_deref() == Some(self.until_us.to_string().as_bytes()) {
            kv.delete(CACHE, &self.key)?;
        }
        Ok(())
    }
}
