//! The front door inside a component: [`cairn_door`] over the request as
//! spin-sdk hands it over, the `cache` store and the host's clock. Every
//! public entry runs it first:
//!
//! - [`FrontDoor::screen`] for entries that take no token (a tool's route, whose
//!   caller is a signed identity): limits, origin, the address's budget;
//!   [`FrontDoor::screen_limits`] for operators' routes: limits and origin only;
//! - [`FrontDoor::admit`] for entries that do (MCP, REST): the same, then the
//!   token, then the body's own size; [`FrontDoor::charge`] and
//!   [`FrontDoor::require`] then spend the subject's budget and check scopes.
//!
//! A refusal is the [`Response`] to send, returned as `Err`: the handler
//! answers it with `?` as it is, once per request, so it is not boxed.
#![allow(clippy::result_large_err, reason = "a refusal is the response itself, answered once per request")]

use crate::auth::{Config, Refused, audit_refusal};
use crate::http::{Request, Response};
use crate::kv::GuestStore;
use cairn_auth::Principal;
use cairn_door::{Arrival, Code, Door, Refusal, Settings};

/// What the door reads of a request: path and headers, borrowed.
pub fn arrival(req: &Request) -> Arrival<'_> {
    Arrival::new(req.uri(), req.headers())
}

/// The response of a refusal: its status, JSON body and headers.
pub fn respond(r: &Refusal) -> Response {
    let mut resp = Response::new(r.status(), r.body()).with_header("content-type", "application/json");
    for (name, value) in r.headers() {
        resp.set_header(name, &value);
    }
    resp
}

/// The door's state for one request.
pub struct FrontDoor {
    settings: &'static Settings,
    cache: GuestStore,
    now_ms: u64,
}

/// A caller the door let in.
pub struct Admitted {
    /// Who.
    pub principal: Principal,
    /// The token configuration (challenges, metadata).
    pub config: &'static Config,
}

impl FrontDoor {
    /// The door of this component's configuration (made once per
    /// instance); a variable that cannot be used is answered 500
    /// `misconfigured`, naming it.
    pub fn open() -> Result<FrontDoor, Response> {
        static SETTINGS: std::sync::OnceLock<Settings> = std::sync::OnceLock::new();
        let config = crate::config::config().map_err(crate::config::misconfigured)?;
        let settings = SETTINGS.get_or_init(|| Settings::of(&config.door));
        Ok(FrontDoor { settings, cache: GuestStore::cache(), now_ms: crate::notes::now_us() / 1000 })
    }

    /// Reads `req` whole, its body within the door's `max_body_bytes`
    /// (413 past it: the host's own cap may be larger, or absent).
    pub async fn read(&self, req: spin_sdk::http::Request) -> Result<Request, Response> {
        let max = self.settings.limits.body_bytes;
        Request::read(req, max).await.map_err(|why| match why {
            crate::http::Unread::TooLarge => respond(&Refusal::new(Code::BodyTooLarge, format!("the body passed {max} bytes"))),
            crate::http::Unread::Broken => crate::respond::error(400, "bad_body", "the request body could not be read"),
        })
    }

    /// The door itself.
    pub fn door(&self) -> Door<'_> {
        Door::new(self.settings, Some(&self.cache), self.now_ms)
    }

    /// The `cache` store (verified tokens, counters).
    pub fn cache(&self) -> &GuestStore {
        &self.cache
    }

    /// The door's settings.
    pub fn settings(&self) -> &Settings {
        self.settings
    }

    /// Step 7, for a stream: one of `who`'s stream leases for `lifetime`
    /// (`cairn_door::streams`). 429 `too_many_streams` when the subject holds
    /// them all (`meanwhile` says what to do until one is free), 503 when
    /// the store cannot say.
    pub fn stream_lease(&self, who: &Principal, lifetime: std::time::Duration, meanwhile: &str) -> Result<cairn_door::streams::Slots, Response> {
        use cairn_door::streams::{MAX_STREAMS, Slots};
        match Slots::claim(&self.cache, &who.tenant, &who.subject, crate::notes::now_us(), lifetime) {
            Ok(Some(lease)) => Ok(lease),
            Ok(None) => {
                let why = format!("you have {MAX_STREAMS} streams open, as many as a subject may: close one, or {meanwhile}");
                Err(crate::respond::error(429, "too_many_streams", &why).with_header("retry-after", "5"))
            }
            Err(e) => Err(crate::respond::error(503, "unavailable", &format!("the stream leases are out of reach: {e}")).with_header("retry-after", "1")),
        }
    }

    /// Steps 1–2 only (limits, origin), with no store call: for operators'
    /// routes, which keep nothing for anyone.
    pub fn screen_limits(&self, req: &Request) -> Result<(), Response> {
        self.door().screen_limits(&arrival(req)).map_err(|r| respond(&r))
    }

    /// Steps 1–3 for an entry that takes no token; a throttled address is
    /// refused outright.
    pub fn screen(&self, req: &Request) -> Result<(), Response> {
        let a = arrival(req);
        let door = self.door();
        match door.screen(&a) {
            Ok(s) if s.throttled => Err(respond(&door.refused(&a, door.throttled()))),
            Ok(_) => Ok(()),
            Err(r) => Err(respond(&door.refused(&a, r))),
        }
    }

    /// Steps 1–4: limits, origin, the address's budget, the token, and the
    /// size of the body as read.
    pub async fn admit(&self, req: &Request) -> Result<Admitted, Response> {
        let a = arrival(req);
        let door = self.door();
        let screened = door.screen(&a).map_err(|r| respond(&door.refused(&a, r)))?;
        let config = Config::load().map_err(|e| respond(&Refusal::new(Code::Misconfigured, e)))?;
        let principal = match config.authenticate(req, &self.cache, self.now_ms / 1000, screened.throttled).await {
            Ok(p) => p,
            Err(Refused::Throttled) => return Err(respond(&door.refused(&a, door.throttled()))),
            Err(e) => return Err(respond(&door.refused(&a, config.refusal(&e)))),
        };
        // A body sent without a declared size is measured as read.
        self.settings.limits.check_body(req.body().len()).map_err(|r| respond(&r))?;
        Ok(Admitted { principal, config })
    }

    /// Step 5: `n` messages or calls against the subject's budget. The first
    /// refusal of a minute is audited under the tenant (`api` names the entry).
    pub fn charge(&self, who: &Principal, n: usize, api: &str) -> Result<(), Response> {
        self.door().charge(&who.tenant, &who.subject, n as u64).map_err(|over| {
            if over.first {
                audit_refusal(&who.tenant, serde_json::json!({"reason": "rate", "sub": who.subject, "api": api}));
            }
            respond(&over.refusal)
        })
    }

    /// After the call: its work beyond the first unit, charged to the
    /// subject ([`cairn_door::Door::charge_work`]).
    pub fn charge_work(&self, who: &Principal, started: std::time::Instant) {
        self.door().charge_work(&who.tenant, &who.subject, started.elapsed());
    }

    /// Step 6: the scope a call needs, audited under the tenant when refused.
    pub fn require(&self, admitted: &Admitted, scope: &str, api: &str) -> Result<(), Response> {
        let who = &admitted.principal;
        self.door().require(&who.scopes, scope, &admitted.config.challenge()).map_err(|r| {
            audit_refusal(&who.tenant, serde_json::json!({"reason": "scope", "sub": who.subject, "scope": scope, "api": api}));
            respond(&r)
        })
    }
}
