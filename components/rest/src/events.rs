//! A route that streams (`Route::streams`, today `GET
//! /api/v1/notes/{note}/events`): a lease of the subject's stream leases
//! (`cairn_door::streams`, shared with the MCP feed), then Server-Sent
//! Events until `feed_stream_seconds` is up. Every look serves the route
//! again with `since` set to the last answer's `etag` and sends an answer
//! that `changed` as an event `changes`; a refusal (the note deleted, or no
//! longer visible) is sent as an event `refused` and ends the stream, as
//! does a store out of reach (`unavailable`). A comment line goes out each
//! second while nothing moves, which is also how a client that left is
//! seen: the stream ends and gives its lease back.

use std::time::{Duration, Instant};

use cairn_auth::Principal;
use cairn_guest::door::FrontDoor;
use cairn_guest::http::{Frames, Response};
use cairn_guest::kv::GuestStore;
use cairn_guest::notes::{HostEnv, identity};
use cairn_notes::rest::{self, Incoming, Query, RestReply};
use serde_json::{Value, json};

/// Between two looks.
const EVERY: Duration = Duration::from_millis(250);
/// Between two comment lines on a quiet stream.
const KEEPALIVE: Duration = Duration::from_secs(1);

/// Opens the stream of the route at `path` for `who`, from the query's `since`.
pub(crate) fn open(front: &FrontDoor, who: &Principal, path: &str, query: Query) -> Response {
    let lifetime = match cairn_guest::config::config() {
        Ok(c) => Duration::from_secs(c.feed.stream_seconds),
        Err(e) => return cairn_guest::config::misconfigured(e),
    };
    let lease = match front.stream_lease(who, lifetime, "poll the changes route meanwhile") {
        Ok(lease) => lease,
        Err(r) => return r,
    };
    let (frames, response) = Response::streamed();
    let (who, path) = (who.clone(), path.to_string());
    spin_sdk::wasip3::spawn(async move {
        follow(frames, &who, &path, query, lifetime).await;
        let _ = lease.release(&GuestStore::cache());
    });
    response.with_header("content-type", "text/event-stream").with_header("cache-control", "no-store")
}

/// The stream's loop (see the module docs).
async fn follow(mut frames: Frames, who: &Principal, path: &str, mut query: Query, lifetime: Duration) {
    let Ok((route, _)) = rest::route("GET", path) else { return };
    let (kv, began) = (GuestStore::new(), Instant::now());
    let mut said = began;
    loop {
        if frames.is_closed() {
            return;
        }
        let (_, params) = rest::route("GET", path).expect("the route matched when the stream opened");
        let incoming = Incoming { params, query: &query, body: b"", idempotency_key: None };
        let frame = match route.serve(&kv, &mut HostEnv, &identity(who), incoming) {
            Ok(RestReply { status: 200, body }) if body["changed"] == false => None,
            Ok(RestReply { status: 200, body }) => {
                query.insert("since".into(), body["etag"].as_str().unwrap_or_default().to_string());
                Some(event("changes", &body))
            }
            Ok(RestReply { body, .. }) => return end(&mut frames, event("refused", &body)).await,
            Err(e) => return end(&mut frames, event("unavailable", &json!({"error": "unavailable", "message": e.to_string()}))).await,
        };
        let frame = frame.or_else(|| (said.elapsed() >= KEEPALIVE).then(|| ": still following\n\n".to_string()));
        if let Some(f) = frame {
            said = Instant::now();
            if !cairn_guest::http::write(&mut frames, f).await {
                return;
            }
        }
        let Some(left) = lifetime.checked_sub(began.elapsed()).filter(|l| !l.is_zero()) else { return };
        spin_sdk::time::sleep(EVERY.min(left)).await;
    }
}

fn event(name: &str, body: &Value) -> String {
    format!("event: {name}\ndata: {body}\n\n")
}

async fn end(frames: &mut Frames, last: String) {
    cairn_guest::http::write(frames, last).await;
}
