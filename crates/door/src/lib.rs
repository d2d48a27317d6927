//! `cairn-door`: the front door. Every request to Cairn passes it before
//! any of Cairn's code runs for it, in one order, whichever entry it came
//! to (the MCP router, the REST API, the editor's page, a tool's route):
//!
//! 1. the size of the header section, of each header and of the path, and
//!    the declared body size ([`limits`]), before a byte of the body is
//!    read; the host adds its budget of body bytes in flight, taken as the
//!    bytes arrive ([`limits::BodyBudget`]), and each client address's caps
//!    on connections and on bodies it is waiting for ([`peers`]);
//! 2. browser origin and DNS rebinding ([`origin`]);
//! 3. the client address's budget of refused requests ([`budget`]): an
//!    address past it is answered 429 before its token is verified (a token
//!    verified before still passes);
//! 4. the token (verified by the caller of [`Door`], who owns the keys);
//! 5. the subject's budget, one per tenant + subject across all its tokens
//!    and across MCP and REST ([`Door::charge`]): a unit per MCP message or
//!    REST call, and after the call a unit per [`WORK_UNIT`] of time it
//!    took beyond the first ([`Door::charge_work`]), so a subject's costly
//!    calls spend its budget as fast as their cost; the budget refills
//!    evenly (a rate, with a burst of a sixth of a minute's worth: see
//!    [`budget::Rate`]), so a subject's costly calls are spread out, never
//!    packed at the start of a minute;
//! 6. the scope the call needs ([`Door::require`]);
//! 7. for a stream, one of the subject's leases ([`streams`]): at most
//!    [`streams::MAX_STREAMS`] open at once, MCP and the editor alike.
//!
//! A refusal is a typed [`Refusal`] with a stable code ([`refusal::Code`]).
//! A refusal before anyone is known writes nothing durable: it is counted
//! ([`summary`]), per code and per address, in the `cache` store, within a
//! bound; everything the door keeps is swept ([`budget::sweep`]), as is
//! everything else in the `cache` store ([`cache`]).
//!
//! Pure Rust, no wasm dependencies: the components call it through
//! `cairn-guest`, the embedded host for its own limits, and it is tested
//! natively.

pub mod budget;
pub mod cache;
pub mod limits;
pub mod origin;
pub mod peers;
pub mod refusal;
pub mod streams;
pub mod summary;

pub use limits::{BodyBudget, Limits};
pub use refusal::{Code, Refusal};

use cairn_kv::Store;

/// The door's settings, from application variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Size limits.
    pub limits: Limits,
    /// Origin rules.
    pub origins: origin::Origins,
    /// MCP messages and REST calls one subject may make a minute (`rate_limit_per_minute`).
    pub subject_per_minute: u64,
    /// Refused requests one client address may send a minute before it is
    /// turned away unheard (`refused_per_minute`).
    pub refused_per_minute: u64,
    /// Client addresses counted apart per minute; the rest share one budget.
    pub addresses_per_minute: u64,
    /// Minutes the refusal summary keeps.
    pub window_minutes: u64,
}

/// Defaults of the variables the door reads.
pub mod defaults {
    /// `rate_limit_per_minute`.
    pub const SUBJECT_PER_MINUTE: u64 = 600;
    /// `refused_per_minute`.
    pub const REFUSED_PER_MINUTE: u64 = 120;
    /// Distinct client addresses counted apart per minute.
    pub const ADDRESSES_PER_MINUTE: u64 = 2000;
    /// Minutes the refusal summary keeps.
    pub const WINDOW_MINUTES: u64 = 60;
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            limits: Limits::default(),
            origins: origin::Origins::default(),
            subject_per_minute: defaults::SUBJECT_PER_MINUTE,
            refused_per_minute: defaults::REFUSED_PER_MINUTE,
            addresses_per_minute: defaults::ADDRESSES_PER_MINUTE,
            window_minutes: defaults::WINDOW_MINUTES,
        }
    }
}

impl Settings {
    /// The door of Cairn's configuration ([`cairn_config::Door`], read and
    /// checked once by [`cairn_config::Config::read`]).
    pub fn of(door: &cairn_config::Door) -> Settings {
        let d = Settings::default();
        Settings {
            limits: Limits { body_bytes: usize::try_from(door.max_body_bytes).unwrap_or(usize::MAX), ..d.limits },
            origins: origin::Origins::new(door.audience.clone(), &door.allowed_origins.join(",")),
            subject_per_minute: door.rate_limit_per_minute,
            refused_per_minute: door.refused_per_minute,
            ..d
        }
    }
}

/// The time a call may run for one unit of its subject's budget; every
/// further unit of time counts as one more call ([`Door::charge_work`]).
pub const WORK_UNIT: std::time::Duration = std::time::Duration::from_millis(10);

/// What the door reads of a request: its path and headers (the body is
/// never read here).
#[derive(Debug, Clone, Default)]
pub struct Arrival<'a> {
    /// The path and query.
    pub path_and_query: &'a str,
    /// Every header, in order, names lower-case.
    pub headers: Vec<(&'a str, &'a [u8])>,
}

impl<'a> Arrival<'a> {
    /// A request's path and query and its headers.
    pub fn new(path_and_query: &'a str, headers: impl Iterator<Item = (&'a str, &'a [u8])>) -> Self {
        Arrival { path_and_query, headers: headers.collect() }
    }

    /// The first value of a header, as text.
    pub fn header(&self, name: &str) -> Option<&'a str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).and_then(|(_, v)| std::str::from_utf8(v).ok())
    }

    /// The client's address, as the host tells it (`spin-client-addr`,
    /// which a host sets and a client cannot).
    pub fn client(&self) -> &'a str {
        self.header("spin-client-addr").unwrap_or("")
    }

    /// The URL the request was sent to (`spin-full-url`, else `http://<Host>`).
    fn full_url(&self) -> String {
        match self.header("spin-full-url") {
            Some(u) => u.to_string(),
            None => self.header("host").map(|h| format!("http://{h}/")).unwrap_or_default(),
        }
    }
}

/// What [`Door::screen`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Screened {
    /// The client address is past its budget of refusals: only a token
    /// verified before may pass; anything else is [`Door::throttled`].
    pub throttled: bool,
}

/// A subject over its budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverBudget {
    /// What to answer.
    pub refusal: Refusal,
    /// Whether this is the subject's first refusal this minute (the one
    /// worth an audit record: later ones are only counted).
    pub first: bool,
}

/// The door for one request.
pub struct Door<'a> {
    settings: &'a Settings,
    cache: Option<&'a dyn Store>,
    now_ms: u64,
}

impl<'a> Door<'a> {
    /// The door with these settings, counting in `cache` (the `cache`
    /// store; `None`: nothing is counted), at `now_ms` (Unix milliseconds).
    pub fn new(settings: &'a Settings, cache: Option<&'a dyn Store>, now_ms: u64) -> Self {
        Door { settings, cache, now_ms }
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        self.settings
    }

    fn minute(&self) -> u64 {
        self.now_ms / 60_000
    }

    fn rest_of_minute(&self) -> u64 {
        60 - (self.now_ms / 1000) % 60
    }

    /// Steps 1–2 only (limits and origin), with no store call: for entries
    /// that serve the same few bytes to anyone (health, the editor's page).
    pub fn screen_limits(&self, req: &Arrival) -> Result<(), Refusal> {
        let l = &self.settings.limits;
        l.check_uri(req.path_and_query)?;
        l.check_headers(req.headers.iter().copied())?;
        l.check_declared(req.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("content-length")).map(|(_, v)| *v))?;
        self.settings.origins.check(&req.full_url(), req.header("origin"))
    }

    /// Steps 1–3: limits, origin, the address's budget. A refusal here
    /// still has to be passed to [`Door::refused`] to be counted.
    pub fn screen(&self, req: &Arrival) -> Result<Screened, Refusal> {
        self.screen_limits(req)?;
        Ok(Screened { throttled: self.address_throttled(req) })
    }

    /// Step 3 alone: whether the client address is past its budget of
    /// refusals this minute (for an entry whose other checks the host made).
    pub fn address_throttled(&self, req: &Arrival) -> bool {
        self.cache.is_some_and(|c| {
            summary::refusals_of(c, self.minute(), &budget::address_id(req.client()), self.settings.addresses_per_minute)
                >= self.settings.refused_per_minute as i64
        })
    }

    /// The answer to a throttled address whose token was not verified before.
    pub fn throttled(&self) -> Refusal {
        Refusal::new(
            Code::TooManyRefusals,
            format!(
                "this address sent more than {} refused requests this minute; fix the request (token, origin, size) and retry later",
                self.settings.refused_per_minute
            ),
        )
        .retry_after(self.rest_of_minute())
    }

    /// Counts a refusal and hands it back. A refusal before anyone is known
    /// is counted by code and address (see [`summary`]): nothing durable.
    pub fn refused(&self, req: &Arrival, refusal: Refusal) -> Refusal {
        if let (Some(c), true) = (self.cache, refusal.code.anonymous()) {
            let _ = summary::record(c, self.minute(), refusal.code, &budget::address_id(req.client()), self.settings.addresses_per_minute);
        }
        refusal
    }

    /// Step 5: counts `n` messages or calls against the subject's budget
    /// (tenant + subject, whatever token). Past it: 429 until the minute ends.
    pub fn charge(&self, tenant: &str, subject: &str, n: u64) -> Result<(), OverBudget> {
        let Some(c) = self.cache else { return Ok(()) };
        let id = budget::subject_id(tenant, subject);
        let rate = budget::Rate::per_minute(self.settings.subject_per_minute);
        match budget::spend(c, &id, rate, n, self.now_ms, true) {
            Ok(None) | Err(_) => Ok(()),
            Ok(Some(wait_ms)) => {
                // Only the subject's first refusal of a minute is worth an audit record.
                let first = c.increment(budget::CACHE, &budget::key(budget::SUBJECT, self.minute(), &id), 1).is_ok_and(|n| n == 1);
                Err(OverBudget {
                    refusal: Refusal::new(
                        Code::RateLimited,
                        format!(
                            "at most {} MCP messages and REST calls a minute per subject ({} at once), across all its tokens; a call that takes longer counts once per {} ms; retry after the wait",
                            self.settings.subject_per_minute,
                            rate.burst,
                            WORK_UNIT.as_millis()
                        ),
                    )
                    .retry_after(wait_ms.div_ceil(1000)),
                    first,
                })
            }
        }
    }

    /// After the call: the work it took beyond its first unit, one unit
    /// per [`WORK_UNIT`] (so the subject's budget bounds the host's time it
    /// can take, not only its number of calls). The call already ran; a
    /// subject past its budget is refused from its next call on.
    pub fn charge_work(&self, tenant: &str, subject: &str, took: std::time::Duration) {
        let units = (took.as_micros() / WORK_UNIT.as_micros()) as u64;
        if let (Some(c), true) = (self.cache, units > 0) {
            let rate = budget::Rate::per_minute(self.settings.subject_per_minute);
            let _ = budget::spend(c, &budget::subject_id(tenant, subject), rate, units, self.now_ms, false);
        }
    }

    /// Step 6: the scope a call needs; `challenge` is the bearer challenge
    /// prefix naming the resource metadata (`Bearer resource_metadata="…"`).
    pub fn require(&self, granted: &[String], scope: &str, challenge: &str) -> Result<(), Refusal> {
        if granted.iter().any(|s| s == scope) {
            return Ok(());
        }
        Err(Refusal::new(Code::InsufficientScope, format!("this call needs the {scope} scope"))
            .challenge(format!("{challenge}, error=\"insufficient_scope\", scope=\"{scope}\", error_description=\"the token lacks {scope}\"")))
    }

    /// Sweeps the door's counters (see [`budget::sweep`]).
    pub fn sweep(&self, budget_keys: usize) -> cairn_kv::Result<usize> {
        match self.cache {
            Some(c) => budget::sweep(c, self.now_ms / 1000, self.settings.window_minutes, budget_keys),
            None => Ok(0),
        }
    }
}
