//! `subscriptions/listen` on HTTP: a lease of the subject's, then a
//! Server-Sent Events stream that `cairn_mcp::feed::listen` writes, looking
//! at the watched notes' heads in one batched read of the notes store (the
//! listing through the same road as a `tools/call`). The stream runs as a task of
//! this instance after the response head is out, and gives its lease back
//! when it ends.

use cairn_auth::Principal;
use cairn_guest::door::Gate;
use cairn_guest::http::{Frames, Response};
use cairn_guest::kv::GuestStore;
use cairn_guest::respond;
use cairn_mcp::feed::{Filter, MAX_STREAMS, Pace, Settings, Sink, Slots, Watcher, listen};
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

/// Opens a stream for listen request `id` of `who` watching `filter`: 429
/// when the subject holds all its leases, 503 when the store cannot say.
pub(crate) fn open(gate: &Gate, who: &Principal, id: Value, filter: Filter) -> Response {
    // The gate opened on this configuration, so it reads; its checked
    // value is the one default there is.
    let seconds = match cairn_guest::config::config() {
        Ok(c) => c.feed.stream_seconds,
        Err(e) => return cairn_guest::config::misconfigured(e),
    };
    let settings = Settings { lifetime: std::time::Duration::from_secs(seconds), ..Settings::default() };
    let lease = match Slots::claim(gate.cache(), who, cairn_guest::notes::now_us(), settings.lifetime) {
        Ok(Some(lease)) => lease,
        Ok(None) => {
            let why = format!("you have {MAX_STREAMS} streams open, as many as a subject may: close one, or listen again when one ends");
            return respond::error(429, "too_many_streams", &why).with_header("retry-after", "5");
        }
        Err(e) => return respond::error(503, "unavailable", &format!("the stream leases are out of reach: {e}")).with_header("retry-after", "1"),
    };
    let (frames, response) = Response::streamed();
    let who = who.clone();
    spin_sdk::wasip3::spawn(async move {
        let mut sink = Stream(frames);
        let notes = GuestStore::new();
        let watcher = Watcher { who: &who, tools: &crate::road::Road, heads: Some(&notes) };
        listen(&id, &filter, &settings, &watcher, &HostPace(std::time::Instant::now()), &mut sink).await;
        drop(sink);
        let _ = lease.release(&GuestStore::cache());
    });
    response.with_header("content-type", "text/event-stream").with_header("cache-control", "no-store")
}
