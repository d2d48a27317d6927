//! The change feed on HTTP: `subscriptions/listen` ([`open`]) and the
//! `GET /mcp` stream of a subject's subscriptions ([`follow`]). Each takes a
//! lease of the subject's, then runs a Server-Sent Events stream that
//! `cairn_mcp::feed` writes, looking
//! at the watched notes' heads in one batched read of the notes store (the
//! listing through the same transport as a `tools/call`). The stream runs as a task of
//! this instance after the response head is out, and gives its lease back
//! when it ends.

#![allow(clippy::result_large_err, reason = "a refusal is the response itself, answered once")]

use cairn_auth::Principal;
use cairn_guest::door::FrontDoor;
use cairn_guest::http::{Frames, Response};
use cairn_guest::respond;
use cairn_mcp::feed::{Filter, Pace, RECONNECT_IDLE, Settings, Sink, Slots, Watcher, listen, priming};
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

/// The stream settings the front door's configuration names.
fn settings() -> Result<Settings, Response> {
    // the front door opened on this configuration, so it reads; its checked
    // value is the one default there is.
    let seconds = cairn_guest::config::config().map_err(cairn_guest::config::misconfigured)?.feed.stream_seconds;
    Ok(Settings { lifetime: std::time::Duration::from_secs(seconds), ..Settings::default() })
}

/// What a stream runs: a listen, or the `GET /mcp` stream begun at
/// `epoch_us`.
enum Run {
    Listen(Value, Filter),
    Follow(u64),
}

/// Answers with a stream that runs `run` as `who` under `lease`: a task of
/// this instance once the response head is out, on the transport to the tools
/// and its stores; the lease goes back when the stream ends.
fn spawn(who: &Principal, settings: Settings, lease: Slots, run: Run) -> Response {
    let (frames, response) = Response::streamed();
    let who = who.clone();
    spin_sdk::wasip3::spawn(async move {
        let mut sink = Stream(frames);
        let transport = crate::transport::Transport::new();
        let watcher = Watcher { who: &who, tools: &transport, heads: Some(transport.notes()) };
        let pace = HostPace(std::time::Instant::now());
        match run {
            Run::Listen(id, filter) => {
                listen(&id, &filter, &settings, &watcher, &pace, &mut sink).await;
            }
            Run::Follow(epoch_us) => {
                cairn_mcp::feed::follow(&settings, &watcher, transport.cache(), epoch_us, &pace, &mut sink).await;
            }
        }
        drop(sink);
        let _ = lease.release(transport.cache());
    });
    response.with_header("content-type", "text/event-stream").with_header("cache-control", "no-store")
}

/// Opens a stream for listen request `id` of `who` watching `filter`.
pub(crate) fn open(front: &FrontDoor, who: &Principal, id: Value, filter: Filter) -> Response {
    let settings = match settings() {
        Ok(s) => s,
        Err(r) => return r,
    };
    match front.stream_lease(who, settings.lifetime, "listen again when one ends") {
        Ok(lease) => spawn(who, settings, lease, Run::Listen(id, filter)),
        Err(r) => r,
    }
}

/// `GET /mcp` for `who`: with no subscriptions, a priming event telling the
/// client to come back in [`RECONNECT_IDLE`] (no lease held, nothing
/// looked at); else a lease and the stream of `cairn_mcp::feed::follow`.
pub(crate) fn follow(front: &FrontDoor, who: &Principal) -> Response {
    let settings = match settings() {
        Ok(s) => s,
        Err(r) => return r,
    };
    let now_us = cairn_guest::notes::now_us();
    match Book::load(front.cache(), who, now_us) {
        Ok(book) if book.entries.is_empty() => {
            return Response::new(200, priming(&now_us.to_string(), RECONNECT_IDLE).into_bytes())
                .with_header("content-type", "text/event-stream")
                .with_header("cache-control", "no-store");
        }
        Ok(_) => {}
        Err(e) => return respond::error(503, "unavailable", &format!("the subscriptions are out of reach: {e}")).with_header("retry-after", "1"),
    }
    match front.stream_lease(who, settings.lifetime, "open the stream again when one ends") {
        Ok(lease) => spawn(who, settings, lease, Run::Follow(now_us)),
        Err(r) => r,
    }
}
