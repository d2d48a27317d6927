//! Cairn's own OAuth authorization server (`/.well-known/oauth-authorization-server`,
//! `/oauth/…`): the adapter around [`cairn_oauth`], which holds every rule.
//!
//! On only while the `signing_key` variable holds a key (the embedded host
//! fills it when no issuer is configured); otherwise every route answers
//! 404 and Cairn is a pure resource server. Each request passes the front
//! door first; the editor's routes take a person's bearer token; a client
//! metadata document is fetched here, bounded in size and time, and counted
//! against the asking address like registrations are. Every refusal counts
//! against the address's budget of refused requests.
//!
//! Every route that can write is charged before it runs: the editor's
//! routes (consent, connected apps, invitations) to the person's subject
//! budget, shared with their REST and MCP calls; the token endpoint,
//! revocation and the editor's sign-in (`authorize` for `cairn-editor`) to
//! the address, `WRITES_PER_MINUTE`. What each may leave behind is
//! bounded in `cairn_oauth` (see `docs/oauth.md`, Limits).

use cairn_door::budget::{self, Rate};
use cairn_door::{Code, Refusal};
use cairn_guest::door::{FrontDoor, arrival, respond};
use cairn_guest::http::{Request, Response};
use cairn_guest::kv::GuestStore;
use cairn_oauth::clients::MAX_DOCUMENT_BYTES;
use cairn_oauth::{Reply, Request as OAuthRequest, Route, Server, Settings};
use std::time::Duration;

/// Registrations, and metadata documents fetched, a minute per client address.
const REGISTRATIONS_PER_MINUTE: u64 = 20;
const DOCUMENTS_PER_MINUTE: u64 = 30;
/// Token requests, revocations and editor sign-ins a minute per client
/// address (a burst of 20, then one every half second).
const WRITES_PER_MINUTE: u64 = 120;
/// The whole fetch of a metadata document.
const DOCUMENT_TIME: Duration = Duration::from_secs(5);

fn answer(reply: Reply) -> Response {
    let mut r = Response::new(reply.status, reply.body).with_header("content-type", reply.content_type);
    for (name, value) in &reply.headers {
        r.set_header(name, value);
    }
    r
}

/// Spends one unit of the address's budget of `kind`; the refusal when spent.
#[allow(clippy::result_large_err, reason = "the refusal is the response itself, answered once")]
fn spend(front: &FrontDoor, req: &Request, kind: &str, per_minute: u64) -> Result<(), Response> {
    let id = format!("oauth-{kind}-{}", budget::address_id(arrival(req).client()));
    match budget::spend(front.cache(), &id, Rate::per_minute(per_minute), 1, cairn_guest::notes::now_us() / 1000, true) {
        Ok(Some(wait_ms)) => {
            let refusal = Refusal::new(Code::RateLimited, format!("at most {per_minute} {kind} a minute from one address; retry later"))
                .retry_after(wait_ms.div_ceil(1000));
            Err(respond(&refusal))
        }
        _ => Ok(()),
    }
}

#[spin_sdk::http_service]
async fn handle(req: spin_sdk::http::Request) -> Response {
    cairn_guest::config::run_as(cairn_guest::cairn_config::Reader::Authz);
    let off = || cairn_guest::respond::error(404, "not_found", "Cairn's own authorization server is off: this server trusts an external issuer");
    let front = match FrontDoor::open() {
        Ok(g) => g,
        Err(r) => return r,
    };
    let req = match front.read(req).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    // The door's limits and origin rules hold on every route, on or off.
    if let Err(r) = front.screen_limits(&req) {
        return r;
    }
    let signing_key = cairn_guest::config::config().ok().and_then(|c| c.oauth.signing_key.as_deref());
    let Some(key) = signing_key.and_then(cairn_auth::mint::LocalKey::from_hex) else { return off() };
    let route = match Route::of(req.method().as_ref(), req.path()) {
        Ok(r) => r,
        Err(true) => return cairn_guest::respond::error(405, "method_not_allowed", "see docs/oauth.md for each route's method"),
        Err(false) => return cairn_guest::respond::error(404, "not_found", "no such route; see docs/oauth.md"),
    };
    if let Err(r) = front.screen(&req) {
        return r;
    }
    let settings = match cairn_guest::config::config().map_err(ToString::to_string).and_then(Settings::of) {
        Ok(s) => s,
        Err(e) => return respond(&Refusal::new(Code::Misconfigured, e)),
    };
    let person = if route.needs_person() {
        match front.admit(&req).await {
            Ok(a) => Some(a.principal),
            Err(r) => return r,
        }
    } else {
        None
    };
    if let Some(p) = &person
        && let Err(r) = front.charge(p, 1, "oauth")
    {
        return r;
    }
    if let Err(r) = spend_for(&front, &req, route) {
        return r;
    }
    let document = match (route, Server::document_to_fetch(&settings, req.query())) {
        (Route::Authorize, Some(url)) => {
            if let Err(r) = spend(&front, &req, "metadata documents", DOCUMENTS_PER_MINUTE) {
                return r;
            }
            Some(fetch_document(&url).await)
        }
        _ => None,
    };
    let store = GuestStore::new();
    let server = Server { store: &store, settings: &settings, key: &key, now: cairn_guest::notes::now_us() / 1_000_000, random: &cairn_guest::random_u64 };
    let incoming = OAuthRequest { query: req.query(), cookie: req.header("cookie"), content_type: req.header("content-type"), body: req.body() };
    let reply = server.serve(route, &incoming, person.as_ref(), document);
    if reply.refused() && person.is_none() {
        let door = front.door();
        let _ = door.refused(&arrival(&req), Refusal::new(Code::Unauthorized, "an OAuth request was refused"));
    }
    answer(reply)
}

/// What a route costs the caller's address beyond the door's budget:
/// registrations, and token requests and sign-ins, each have a budget of
/// their own.
#[allow(clippy::result_large_err, reason = "the refusal is the response itself, answered once")]
fn spend_for(front: &FrontDoor, req: &Request, route: Route) -> Result<(), Response> {
    let charged = match route {
        Route::Register => Some(("registrations", REGISTRATIONS_PER_MINUTE)),
        Route::Token | Route::Revoke => Some(("token requests and sign-ins", WRITES_PER_MINUTE)),
        Route::Authorize if Server::is_editor_sign_in(req.query()) => Some(("token requests and sign-ins", WRITES_PER_MINUTE)),
        _ => None,
    };
    match charged {
        Some((kind, per_minute)) => spend(front, req, kind, per_minute),
        None => Ok(()),
    }
}

/// A client's metadata document: `application/json`, 200, within the limits.
async fn fetch_document(url: &str) -> Result<Vec<u8>, String> {
    let got = cairn_guest::fetch::get(url, "application/json", MAX_DOCUMENT_BYTES, DOCUMENT_TIME).await?;
    if got.status != 200 {
        return Err(format!("it answered {} (redirects are not followed)", got.status));
    }
    if !got.content_type.as_deref().is_some_and(|t| t.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))) {
        return Err(format!("it is {}, not application/json", got.content_type.as_deref().unwrap_or("untyped")));
    }
    Ok(got.body)
}
