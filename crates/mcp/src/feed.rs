//! The change feed: `subscriptions/listen` (2026-07-28), a stream of
//! `notifications/resources/updated` and `notifications/resources/list_changed`
//! for the notes and tabs a caller asked about.
//!
//! A stream holds no state anywhere but in itself: every
//! [`Settings::every`] it looks at what it watches through the read tools
//! ([`look`]), on the same transport as a `tools/call`, and tells what moved
//! since its last look ([`news`]). So:
//!
//! - **Visibility is the tools'.** What a look sees of a note is what
//!   `list_note_tabs` answers the caller: an agent's look at a note not
//!   approved for agents, or of another tenant, is "not there", the same as
//!   a missing note. A change it may not see moves nothing it sees, so it
//!   is never told of it; approval moves it from "not there" to a version,
//!   which it is told of, once the approval is in.
//! - **Many hosts work as one.** A look reads the shared store, so a
//!   change committed through any host reaches a stream on any other
//!   within one interval (on Redis or a Redis Cluster as on one machine).
//! - **Bounds.** A stream watches at most [`MAX_URIS`] resources, a subject
//!   has at most [`MAX_STREAMS`] streams open at once across every host
//!   ([`Slots`], leases in the `cache` store that lapse by themselves if a
//!   host dies), and a stream ends cleanly after [`Settings::lifetime`] with
//!   its result, so the client listens again (missed changes are not
//!   replayed: a client reads what it cares about after listening).
//!
//! Notifications say *that* something changed, never what: the client
//! reads the resource, with its own rights, to learn what.

use std::time::Duration;

use cairn_auth::Principal;
use cairn_kv::Store;
use cairn_notes::tools::{list_note_tabs, list_notes};
use cairn_notes::watch::Watched;
use serde_json::{Value, json};

use crate::resources::{PAGE, Target, parse, run};
use crate::rpc::MethodError;
use crate::subscriptions::{Book, mark};
use crate::transport::Tools;

/// Most resources one stream watches.
pub const MAX_URIS: usize = 16;
pub use cairn_door::streams::{MAX_STREAMS, Pace, Sink, Slots};
/// The URI whose `list_changed` a stream may ask for.
pub const LIST_URI: &str = "cairn://notes";

/// The key of a subscription's stream id in every notification it carries.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// How often a stream looks, and how long it lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Between two looks.
    pub every: Duration,
    /// From the acknowledgement to the result that ends the stream. Below
    /// the host's request timeout (30 s by default), which would end the
    /// instance serving it.
    pub lifetime: Duration,
    /// Between two comment lines on a stream with nothing to say, so
    /// proxies do not take it for dead.
    pub keepalive: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { every: Duration::from_millis(250), lifetime: Duration::from_secs(20), keepalive: Duration::from_secs(1) }
    }
}

/// What a stream watches: the notes listing, and resources by URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// `notifications/resources/list_changed` when the notes the caller may
    /// see (their ids and titles, the listing's first page) change.
    pub list: bool,
    /// `notifications/resources/updated` for each: notes and tabs.
    pub uris: Vec<String>,
}

impl Filter {
    /// The filter of a `subscriptions/listen`'s `params.notifications`.
    /// `Err` names what is wrong (a -32602 for the request). Kinds Cairn
    /// never sends (tools and prompts list changes) are left out of the
    /// acknowledgement, as the specification asks.
    pub fn of_listen(params: &Value) -> Result<Filter, String> {
        let n = params.get("notifications").ok_or("params.notifications is required: the notifications to listen for")?;
        let n = n.as_object().ok_or("params.notifications must be an object")?;
        let flag = |name: &str| match n.get(name) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(format!("params.notifications.{name} must be true or false")),
        };
        let list = flag("resourcesListChanged")?;
        flag("toolsListChanged")?;
        flag("promptsListChanged")?;
        let mut uris: Vec<String> = Vec::new();
        match n.get("resourceSubscriptions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                for item in items {
                    let uri = item.as_str().ok_or("params.notifications.resourceSubscriptions must be resource URIs (strings)")?;
                    if parse(uri).is_none() {
                        return Err(format!(
                            "{uri} is not a Cairn resource to subscribe to: use cairn://notes/{{note_id}} or cairn://notes/{{note_id}}/tabs/{{tab_id}}"
                        ));
                    }
                    if !uris.iter().any(|u| u == uri) {
                        uris.push(uri.to_string());
                    }
                }
            }
            Some(_) => return Err("params.notifications.resourceSubscriptions must be an array of resource URIs".into()),
        }
        if uris.len() > MAX_URIS {
            return Err(format!("a stream watches at most {MAX_URIS} resources; {} were asked for: open another stream or watch fewer", uris.len()));
        }
        Ok(Filter { list, uris })
    }

    /// What the acknowledgement says the stream will send.
    pub fn acknowledged(&self) -> Value {
        let mut n = json!({});
        if self.list {
            n["resourcesListChanged"] = true.into();
        }
        if !self.uris.is_empty() {
            n["resourceSubscriptions"] = self.uris.clone().into();
        }
        n
    }
}

/// What one look saw: a stamp per watched URI (`None`: not there for the
/// caller) and of the listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    list: Option<u64>,
    uris: Vec<Option<u64>>,
}

/// Who looks, and how: the caller, the transport to the read tools, and (where
/// the caller has the notes store at hand, as the router does) the store,
/// to read every watched note's head in one batch instead of a tool call
/// per note. Both ways see exactly what the read tools show the caller
/// (`cairn_notes::watch`; a test holds them to each other).
pub struct Watcher<'a, T> {
    /// Who is watching.
    pub who: &'a Principal,
    /// The read tools.
    pub tools: &'a T,
    /// The notes store, for the batched read.
    pub heads: Option<&'a dyn Store>,
}

impl Seen {
    /// The stamp of each watched URI, in the filter's order.
    pub fn uris(&self) -> &[Option<u64>] {
        &self.uris
    }
}

/// Looks at everything `filter` watches: one stamp per URI (a note's
/// version, a tab's version; `None` when the caller may not read it) and
/// one `list_notes` page for the listing.
pub async fn look<T: Tools>(filter: &Filter, w: &Watcher<'_, T>) -> Result<Seen, MethodError> {
    let targets: Vec<Watched<'_>> = filter
        .uris
        .iter()
        .filter_map(|u| match parse(u)? {
            Target::Note(n) => Some(Watched::Note(n)),
            Target::Tab(n, t) => Some(Watched::Tab(n, t)),
        })
        .collect();
    assert_eq!(targets.len(), filter.uris.len(), "a filter holds only URIs that parse");
    let uris = match w.heads {
        // Nothing to read: no call to the store at all.
        _ if targets.is_empty() => Vec::new(),
        Some(store) => cairn_notes::watch::stamps(store, &identity(w.who), &targets).map_err(|e| match e.http_status() {
            503 => MethodError::Unavailable(e.to_string()),
            _ => MethodError::Rpc(crate::rpc::INTERNAL_ERROR, e.to_string()),
        })?,
        None => stamps_by_tools(&targets, w.tools, w.who).await?,
    };
    let list = if filter.list {
        let page = seen_or_gone(run(&list_notes::TOOL, json!({"limit": PAGE}), w.tools, w.who, LIST_URI).await)?;
        page.map(|p| listing_stamp(&p))
    } else {
        None
    };
    Ok(Seen { list, uris })
}

/// The stamps through `list_note_tabs`, one call per distinct note.
async fn stamps_by_tools(targets: &[Watched<'_>], tools: &impl Tools, who: &Principal) -> Result<Vec<Option<u64>>, MethodError> {
    let mut notes: Vec<(&str, Option<Value>)> = Vec::new();
    let mut out = Vec::with_capacity(targets.len());
    for t in targets {
        let (note, tab) = match t {
            Watched::Note(n) => (*n, None),
            Watched::Tab(n, t) => (*n, Some(*t)),
        };
        let listing = match notes.iter().find(|(n, _)| *n == note) {
            Some((_, l)) => l.clone(),
            None => {
                let uri = format!("cairn://notes/{note}");
                let l = seen_or_gone(run(&list_note_tabs::TOOL, json!({"note_id": note}), tools, who, &uri).await)?;
                notes.push((note, l.clone()));
                l
            }
        };
        out.push(listing.and_then(|l| match tab {
            None => l["version"].as_u64(),
            Some(t) => l["tabs"].as_array()?.iter().find(|x| x["tab_id"] == t)?["tab_version"].as_u64(),
        }));
    }
    Ok(out)
}

/// The notes core's view of a verified principal.
fn identity(p: &Principal) -> cairn_notes::Identity {
    cairn_notes::Identity { tenant: p.tenant.clone(), subject: p.subject.clone(), display_name: p.name.clone(), actor_type: p.actor, role: p.role }
}

/// A refusal (not found, not visible) is "not there"; a tool or store out
/// of reach ends the look.
fn seen_or_gone(r: Result<Value, MethodError>) -> Result<Option<Value>, MethodError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(MethodError::Rpc(..)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A stamp of a listing page: its notes' ids and titles, in order.
fn listing_stamp(page: &Value) -> u64 {
    let mut h = Fnv::new();
    for n in page["notes"].as_array().into_iter().flatten() {
        h.write(n["note_id"].as_str().unwrap_or_default().as_bytes());
        h.write(&[0]);
        h.write(n["title"].as_str().unwrap_or_default().as_bytes());
        h.write(&[1]);
    }
    h.0
}

/// The notifications of what moved between two looks of `filter`, in the
/// filter's order (the listing first).
pub fn news(filter: &Filter, before: &Seen, after: &Seen, id: &Value) -> Vec<Value> {
    let meta = json!({ SUBSCRIPTION_ID: id });
    let mut out = Vec::new();
    if filter.list && before.list != after.list {
        out.push(json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed", "params": {"_meta": meta}}));
    }
    for (i, uri) in filter.uris.iter().enumerate() {
        if before.uris.get(i) != after.uris.get(i) {
            out.push(json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri, "_meta": meta}}));
        }
    }
    out
}

/// One Server-Sent Events frame carrying `message`.
pub fn frame(message: &Value) -> String {
    format!("event: message\ndata: {message}\n\n")
}

/// How a stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Its lifetime was up: the result went out.
    Lifetime,
    /// The client went away.
    ClientGone,
    /// A tool or the store was out of reach: an error response went out,
    /// telling the client to listen again.
    Unavailable(String),
}

/// Runs one stream of `subscriptions/listen` request `id` watching
/// `filter` as the watcher's caller: the acknowledgement first (nothing goes out before
/// it), then what moved, look after look, then the result at the end of
/// its lifetime.
pub async fn listen<T: Tools>(id: &Value, filter: &Filter, settings: &Settings, watcher: &Watcher<'_, T>, pace: &impl Pace, sink: &mut impl Sink) -> Ended {
    let meta = json!({ SUBSCRIPTION_ID: id });
    let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                     "params": {"notifications": filter.acknowledged(), "_meta": meta}});
    let mut seen = match look(filter, watcher).await {
        Ok(s) => s,
        Err(e) => return give_up(id, e, sink).await,
    };
    if !sink.send(frame(&ack)).await {
        return Ended::ClientGone;
    }
    // The lifetime is kept by the clock, looks included: the last wait is
    // cut to what is left, so a stream ends at its lifetime (and its last
    // look), on a slow store as on a quick one.
    let began = pace.now();
    let mut said = began;
    while let Some(left) = settings.lifetime.checked_sub(pace.now().saturating_sub(began)).filter(|l| !l.is_zero()) {
        pace.sleep(settings.every.min(left)).await;
        if sink.gone() {
            return Ended::ClientGone;
        }
        let now = match look(filter, watcher).await {
            Ok(s) => s,
            Err(e) => return give_up(id, e, sink).await,
        };
        let moved = news(filter, &seen, &now, id);
        seen = now;
        for n in &moved {
            if !sink.send(frame(n)).await {
                return Ended::ClientGone;
            }
            said = pace.now();
        }
        if pace.now().saturating_sub(said) >= settings.keepalive {
            said = pace.now();
            if !sink.send(": still listening\n\n".into()).await {
                return Ended::ClientGone;
            }
        }
    }
    let done = json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete", "_meta": meta}});
    if !sink.send(frame(&done)).await {
        return Ended::ClientGone;
    }
    Ended::Lifetime
}

async fn give_up(id: &Value, e: MethodError, sink: &mut impl Sink) -> Ended {
    let why = match e {
        MethodError::Unavailable(m) | MethodError::Rpc(_, m) => m,
    };
    let msg = format!("the feed lost sight of the notes ({why}); listen again shortly, then read what you watch");
    sink.send(frame(&crate::rpc::error(id.clone(), crate::rpc::INTERNAL_ERROR, &msg))).await;
    Ended::Unavailable(why)
}

/// How long a client whose subject holds no subscriptions waits before it
/// opens `GET /mcp` again (the `retry` its short answer carries).
pub const RECONNECT_IDLE: Duration = Duration::from_secs(5);
/// How long a client waits before it opens `GET /mcp` again after a
/// stream's lifetime.
pub const RECONNECT: Duration = Duration::from_millis(500);

/// The priming event of a `GET /mcp` stream: an event id to resume from,
/// and how long the client waits before it reconnects once the stream ends.
pub fn priming(event_id: &str, retry: Duration) -> String {
    format!("id: {event_id}\nretry: {}\ndata: \n\n", retry.as_millis())
}

/// Runs the `GET /mcp` stream (2025-11-25) of the watcher's caller, whose
/// subscriptions are the [`Book`] in `cache`: each look reads the book and
/// the subscribed resources' stamps, tells `notifications/resources/updated`
/// for each that differs from the stamp last told, then records the new
/// stamps (so a change is told once, and one made while no stream was open
/// is told by the next: [`crate::subscriptions`]). The stream opens with
/// [`priming`] (`epoch_us`, the wall clock now, names its events) and ends
/// after its lifetime; the client opens the next within [`RECONNECT`]. A
/// store out of reach ends it early, and the client reconnects the same way.
pub async fn follow<T: Tools>(
    settings: &Settings,
    watcher: &Watcher<'_, T>,
    cache: &dyn Store,
    epoch_us: u64,
    pace: &impl Pace,
    sink: &mut impl Sink,
) -> Ended {
    let now_us = || epoch_us + pace.now().as_micros() as u64;
    if !sink.send(priming(&epoch_us.to_string(), RECONNECT)).await {
        return Ended::ClientGone;
    }
    let began = pace.now();
    let (mut said, mut told, mut looks) = (began, 0u64, 0u64);
    while let Some(left) = settings.lifetime.checked_sub(pace.now().saturating_sub(began)).filter(|l| !l.is_zero()) {
        if looks > 0 {
            pace.sleep(settings.every.min(left)).await;
        }
        if sink.gone() {
            return Ended::ClientGone;
        }
        let moved = match moved_in_book(watcher, cache, now_us()).await {
            Ok(m) => m,
            Err(why) => return Ended::Unavailable(why),
        };
        for (uri, _) in &moved {
            told += 1;
            let n = json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}});
            if !sink.send(format!("id: {epoch_us}-{told}\n{}", frame(&n))).await {
                return Ended::ClientGone;
            }
            said = pace.now();
        }
        // Recorded after the notifications went out: a stamp that fails to
        // be recorded is told again, never lost (and a store out of reach
        // ends the stream at the next look). The first look records even
        // nothing, so a book in use is kept.
        if !moved.is_empty() || looks == 0 {
            let _ = mark(cache, watcher.who, &moved, now_us());
        }
        looks += 1;
        if pace.now().saturating_sub(said) >= settings.keepalive {
            said = pace.now();
            if !sink.send(": still listening\n\n".into()).await {
                return Ended::ClientGone;
            }
        }
    }
    Ended::Lifetime
}

/// The subscribed resources whose stamp differs from the one last told,
/// with their stamp now.
async fn moved_in_book<T: Tools>(watcher: &Watcher<'_, T>, cache: &dyn Store, now_us: u64) -> Result<Vec<(String, Option<u64>)>, String> {
    let book = Book::load(cache, watcher.who, now_us).map_err(|e| format!("the subscriptions are out of reach: {e}"))?;
    if book.entries.is_empty() {
        return Ok(Vec::new());
    }
    let filter = Filter { list: false, uris: book.uris() };
    let seen = look(&filter, watcher).await.map_err(|e| match e {
        MethodError::Unavailable(m) | MethodError::Rpc(_, m) => m,
    })?;
    Ok(book.entries.into_iter().zip(seen.uris).filter(|((_, was), now)| was != now).map(|((uri, _), now)| (uri, now)).collect())
}

/// FNV-1a, 64 bits: the listing's stamp (a change detector over what the
/// caller may see, not a key anyone else's data shares).
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}
