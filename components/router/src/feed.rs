//! The change feed on HTTP: `subscriptions/listen` ([`open`]) and the
//! `GET /mcp` stream of a subject's subscriptions ([`follow`]). Each takes a
//! lease of the subject's, then runs a Server-Sent Events stream that
//! `cairn_mcp::feed` writes, looking
//! at the watched notes' heads in one batched read of the notes store (the
//! listing through the same road as a `tools/call`). The stream runs as a task of
//! this instance after the response head is out, and gives its lease back
//! when it ends.

#![allow(clippy::result_large_err, reason = "a refusal is the response itself, answered once")]

use cairn_auth::Principal;
use cairn_guest::door::Gate;
use cairn_guest::http::{Frames, Response};
use cairn_guest::kv::GuestStore;
use cairn_guest::respond;
use cairn_mcp::feed::{Filter, MAX_STREAMS, Pace, RECONNECT_IDLE, Settings, Sink, Slots, Watcher, listen, priming};
use cairn_mcp::subscriptions::Book;
use serde_json::Value;

/// The host's monotonic clock, from the stream's start.
struct HostPace(std::time::Instant);

impl Pace for HostPace {
    async fn sleep(&self, d: std::time::Duration) {
        spin_sdk::time::sleep(d).await;
    }
    fn now(&self) -> std::time::Duration {
        self.0.elapsed()
    }
}

/// The response body's frames.
struct Stream(Frames);

impl Sink for Stream {
    async fn send(&mut self, frame: String) -> bool {
        cairn_guest::http::write(&mut self.0, frame).await
    }
    fn gone(&self) -> bool {
        self.0.is_closed()
    }
}

/// The stream settings the gate's configuration names.
fn settings() -> Result<Settings, Response> {
    // The gate opened on this configuration, so it reads; its checked
    // value is the one default there is.
    let seconds = cairn_guest::config::config().map_err(cairn_guest::config::misconfigured)?.feed.stream_seconds;
    Ok(Settings { lifetime: std::time::Duration::from_secs(seconds), ..Settings::default() })
}

/// A lease of `who`'s for a stream of `settings`: 429 when the subject holds
/// all its leases, 503 when the store cannot say.
fn lease(gate: &Gate, who: &Principal, settings: &Settings) -> Result<Slots, Response> {
    match Slots::claim(gate.cache(), &who.tenant, &who.subject, cairn_guest::notes::now_us(), settings.lifetime) {
        Ok(Some(lease)) => Ok(lease),
        Ok(None) => {
            let why = format!("you have {MAX_STREAMS} streams open, as many as a subject may: close one, or listen again when one ends");
            Err(respond::error(429, "too_many_streams", &why).with_header("retry-after", "5"))
        }
        Err(e) => Err(respond::error(503, "unavailable", &format!("the stream leases are out of reach: {e}")).with_header("retry-after", "1")),
    }
}

fn event_stream(response: Response) -> Response {
    response.with_header("content-type", "text/event-stream").with_header("cache-control", "no-store")
}

/// Opens a stream for listen request `id` of `who` watching `filter`.
pub(crate) fn open(gate: &Gate, who: &Principal, id: Value, filter: Filter) -> Response {
    let settings = match settings() {
        Ok(s) => s,
        Err(r) => return r,
    };
    let lease = match lease(gate, who, &settings) {
        Ok(l) => l,
        Err(r) => return r,
    };
    let (frames, response) = Response::streamed();
    let who = who.clone();
    spin_sdk::wasip3::spawn(async move {
        let mut sink = Stream(frames);
        let road = crate::road::Road::new();
        let notes = GuestStore::new();
        let watcher = Watcher { who: &who, tools: &road, heads: Some(&notes) };
        listen(&id, &filter, &settings, &watcher, &HostPace(std::time::Instant::now()), &mut sink).await;
        drop(sink);
        let _ = lease.release(&GuestStore::cache());
    });
    event_stream(response)
}

/// `GET /mcp` for `who`: with no subscriptions, a priming event telling the
/// client to come back in [`RECONNECT_IDLE`] (no lease held, nothing
/// looked at); else a lease and the stream of `cairn_mcp::feed::follow`.
pub(crate) fn follow(gate: &Gate, who: &Principal) -> Response {
    let settings = match settings() {
        Ok(s) => s,
        Err(r) => return r,
    };
    let now_us = cairn_guest::notes::now_us();
    match Book::load(gate.cache(), who, now_us) {
        Ok(book) if book.entries.is_empty() => {
            return event_stream(Response::new(200, priming(&now_us.to_string(), RECONNECT_IDLE).into_bytes()));
        }
        Ok(_) => {}
        Err(e) => return respond::error(503, "unavailable", &format!("the subscriptions are out of reach: {e}")).with_header("retry-after", "1"),
    }
    let lease = match lease(gate, who, &settings) {
        Ok(l) => l,
        Err(r) => return r,
    };
    let (frames, response) = Response::streamed();
    let who = who.clone();
    spin_sdk::wasip3::spawn(async move {
        let mut sink = Stream(frames);
        let road = crate::road::Road::new();
        let (notes, cache) = (GuestStore::new(), GuestStore::cache());
        let watcher = Watcher { who: &who, tools: &road, heads: Some(&notes) };
        cairn_mcp::feed::follow(&settings, &watcher, &cache, now_us, &HostPace(std::time::Instant::now()), &mut sink).await;
        drop(sink);
        let _ = lease.release(&cache);
    });
    event_stream(response)
}
