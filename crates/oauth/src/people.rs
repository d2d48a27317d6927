//! People, their one-time sign-in links and their sessions.
//!
//! People have no passwords. A person is created by a one-time link: the
//! first person's link comes from the host at start ([`first_link`]), the
//! others' from an admin ([`invite`]). A link is a secret the store keeps
//! only as a hash; [`use_link`] turns it into a session, once.
//!
//! **Invariant: a link signs in at most once.** Using a link swaps its
//! record from live to spent with a compare-and-swap against the read that
//! found it live; of two uses racing, the store lets exactly one swap land
//! (its promise 1), and only the winner creates a session. A spent or
//! expired link is refused `invalid_link` and creates nothing. The spent
//! record names the session it started (a hash of its secret), so a use
//! whose swap landed but was reported failed (Spin's Redis store reports
//! every swap failed) knows itself in the fresh read and goes on; any other
//! use finds the link spent by someone else.
//!
//! A session is the cookie `cairn_session=<tenant>.<secret>`, read only by
//! `/oauth/authorize` ([`session`]); it lasts [`SESSION_SECONDS`].
//!
//! **Bounded.** A tenant holds at most [`MAX_OPEN_INVITES`] invitations not
//! yet used and not expired (an index per tenant, reserved before the link
//! is written, so a crash between the two can only overcount) and at most
//! [`MAX_PEOPLE`] people an invitation made. Each invitation makes one
//! person, and a link starts at most one session, so sessions are bounded
//! by the links used. Spent and expired links and expired sessions are
//! deleted by the sweep ([`crate::sweep`]).

use crate::error::{Code, Result, fail};
use crate::wire::{hash, secret, short_id};
use cairn_auth::{Actor, Role};
use cairn_kv::{Store, Swap};
use serde::{Deserialize, Serialize};

/// The store bucket of everything here.
pub const BUCKET: &str = "default";
/// How long the first person's link works, in seconds.
pub const FIRST_LINK_SECONDS: u64 = 3600;
/// How long an invitation works, in seconds.
pub const INVITE_SECONDS: u64 = 72 * 3600;
/// How long a session lasts, in seconds.
pub const SESSION_SECONDS: u64 = 30 * 86_400;
/// The session cookie's name.
pub const COOKIE: &str = "cairn_session";
/// The first person's tenant and subject.
pub const FIRST_PERSON: (&str, &str, &str) = ("local", "local-person", "Local person");
/// Longest person name, in characters.
pub const MAX_NAME_CHARS: usize = 80;
/// Invitations a tenant may have open (made, not used, not expired).
pub const MAX_OPEN_INVITES: usize = 50;
/// People a tenant may have (each invitation used makes one).
pub const MAX_PEOPLE: usize = 1_000;

const FIRST_MARKER: &str = "oauth/first-person";

fn person_key(tenant: &str, sub: &str) -> String {
    format!("t/{tenant}/oauth/person/{sub}")
}

/// The prefix of every one-time link's record.
pub(crate) const LINKS: &str = "oauth/link/";

fn link_key(secret: &str) -> String {
    format!("{LINKS}{}", hash(secret))
}

fn session_key(tenant: &str, secret: &str) -> String {
    format!("{}{}", sessions_prefix(tenant), hash(secret))
}

/// The prefix of a tenant's sessions.
pub(crate) fn sessions_prefix(tenant: &str) -> String {
    format!("t/{tenant}/oauth/session/")
}

fn people_prefix(tenant: &str) -> String {
    format!("t/{tenant}/oauth/person/")
}

/// The index of a tenant's open invitations: `[link hash, expires]` pairs.
fn invites_key(tenant: &str) -> String {
    format!("t/{tenant}/oauth/invites")
}

/// A person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Person {
    /// Tenant.
    pub tenant: String,
    /// Subject of the person's tokens.
    pub sub: String,
    /// Display name.
    pub name: String,
    /// Admin or member.
    pub role: Role,
}

/// A one-time link's record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Link {
    person: Person,
    pub(crate) expires: u64,
    first: bool,
    pub(crate) spent: Option<u64>,
    /// The hash of the session secret the use that spent it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spent_by: Option<String>,
}

/// A session's record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Session {
    sub: String,
    pub(crate) expires: u64,
}

/// A one-time link made: its secret (the part after `#/sign-in/`) and when it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadeLink {
    /// The secret.
    pub secret: String,
    /// Seconds since the epoch.
    pub expires: u64,
}

fn make_link(store: &dyn Store, person: Person, first: bool, ttl: u64, now: u64, random: &dyn Fn() -> u64) -> Result<MadeLink> {
    let secret = secret(random);
    let expires = now + ttl;
    let record = Link { person, expires, first, spent: None, spent_by: None };
    store.set(BUCKET, &link_key(&secret), &serde_json::to_vec(&record).expect("links serialize"))?;
    Ok(MadeLink { secret, expires })
}

/// Whether nobody has signed in with a first-person link yet.
pub fn first_person_pending(store: &dyn Store) -> Result<bool> {
    Ok(!store.exists(BUCKET, FIRST_MARKER)?)
}

/// A link for the first person of a fresh install (an admin of tenant
/// `local`), valid [`FIRST_LINK_SECONDS`]; `None` once someone has signed in
/// with one.
pub fn first_link(store: &dyn Store, now: u64, random: &dyn Fn() -> u64) -> Result<Option<MadeLink>> {
    if !first_person_pending(store)? {
        return Ok(None);
    }
    admin_link(store, now, random).map(Some)
}

/// A link for the first person whether or not someone signed in with one
/// already: the operator's way back in (`cairn up --sign-in-link`).
pub fn admin_link(store: &dyn Store, now: u64, random: &dyn Fn() -> u64) -> Result<MadeLink> {
    let (tenant, sub, name) = FIRST_PERSON;
    let person = Person { tenant: tenant.into(), sub: sub.into(), name: name.into(), role: Role::Admin };
    make_link(store, person, true, FIRST_LINK_SECONDS, now, random)
}

/// An admin's invitation of a new person named `name` with `role` into the
/// admin's tenant, valid [`INVITE_SECONDS`]. Refused `limit_reached`, with
/// nothing written, when the tenant has [`MAX_OPEN_INVITES`] open or
/// [`MAX_PEOPLE`] people.
pub fn invite(store: &dyn Store, admin: &cairn_auth::Principal, name: &str, role: Role, now: u64, random: &dyn Fn() -> u64) -> Result<(Person, MadeLink)> {
    if admin.actor != Actor::Human || admin.role != Role::Admin {
        return fail(Code::Forbidden, "only an admin (a person) can invite someone");
    }
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return fail(Code::InvalidRequest, format!("name must be 1 to {MAX_NAME_CHARS} characters"));
    }
    if store.list_prefix(BUCKET, &people_prefix(&admin.tenant), None, MAX_PEOPLE)?.len() >= MAX_PEOPLE {
        return fail(Code::LimitReached, format!("tenant {} has {MAX_PEOPLE} people, the most it may have; nobody more can be invited", admin.tenant));
    }
    let person = Person { tenant: admin.tenant.clone(), sub: format!("p-{}", short_id(random)), name: name.into(), role };
    let secret = secret(random);
    let expires = now + INVITE_SECONDS;
    reserve_invite(store, &admin.tenant, &hash(&secret), expires, now)?;
    let record = Link { person: person.clone(), expires, first: false, spent: None, spent_by: None };
    store.set(BUCKET, &link_key(&secret), &serde_json::to_vec(&record).expect("links serialize"))?;
    Ok((person, MadeLink { secret, expires }))
}

/// Changes the tenant's index of open invitations with `change` (on the
/// entries still open at `now`), swapped against the read it changed. A
/// change that changes nothing writes nothing, so `change` run again on an
/// index that holds it already (its swap landed, and the store said
/// otherwise) ends the loop.
fn change_invites(store: &dyn Store, tenant: &str, now: u64, mut change: impl FnMut(&mut Vec<(String, u64)>) -> Result<()>) -> Result<()> {
    let key = invites_key(tenant);
    for _ in 0..16 {
        let read = store.read(BUCKET, &key)?;
        let before: Vec<(String, u64)> = read.value.as_deref().and_then(|v| serde_json::from_slice(v).ok()).unwrap_or_default();
        let mut open = before.clone();
        open.retain(|(_, expires)| *expires > now);
        change(&mut open)?;
        if open == before && read.value.is_some() {
            return Ok(());
        }
        if let Swap::Done = store.swap(BUCKET, &key, read.observed, &serde_json::to_vec(&open).expect("invites serialize"))? {
            return Ok(());
        }
    }
    fail(Code::TemporarilyUnavailable, "this tenant's invitations are changing too fast; try again")
}

/// Counts an invitation as open, unless [`MAX_OPEN_INVITES`] are.
fn reserve_invite(store: &dyn Store, tenant: &str, link: &str, expires: u64, now: u64) -> Result<()> {
    change_invites(store, tenant, now, |open| {
        if open.iter().any(|(h, _)| h == link) {
            return Ok(());
        }
        if open.len() >= MAX_OPEN_INVITES {
            return fail(
                Code::LimitReached,
                format!(
                    "tenant {tenant} has {MAX_OPEN_INVITES} invitations open (not used, within their {} hours); wait until one is used or expires",
                    INVITE_SECONDS / 3600
                ),
            );
        }
        open.push((link.to_string(), expires));
        Ok(())
    })
}

/// A session started: the cookie's value and the person.
#[derive(Debug, Clone)]
pub struct Started {
    /// `<tenant>.<secret>`.
    pub cookie: String,
    /// Who.
    pub person: Person,
}

/// Uses a one-time link: at most once, before it expires (the module's
/// invariant). Creates the person on first use of an invitation and starts
/// a session.
pub fn use_link(store: &dyn Store, link: &str, now: u64, random: &dyn Fn() -> u64) -> Result<Started> {
    let refused = || fail(Code::InvalidLink, "this sign-in link was used already, has expired, or was never issued; ask for a new one");
    if link.is_empty() || link.len() > 128 {
        return refused();
    }
    let key = link_key(link);
    let read = store.read(BUCKET, &key)?;
    let Some(mut record) = read.value.as_deref().and_then(|v| serde_json::from_slice::<Link>(v).ok()) else { return refused() };
    if record.spent.is_some() || record.expires <= now {
        return refused();
    }
    let secret = secret(random);
    record.spent = Some(now);
    record.spent_by = Some(hash(&secret));
    match store.swap(BUCKET, &key, read.observed, &serde_json::to_vec(&record).expect("links serialize"))? {
        Swap::Done => {}
        // Spent by this very use: the swap landed, whatever the store said.
        Swap::Failed(fresh) if fresh.value.as_deref().and_then(|v| serde_json::from_slice::<Link>(v).ok()).is_some_and(|l| l.spent_by == record.spent_by) => {}
        Swap::Failed(_) => return refused(),
    }
    let p = &record.person;
    if !record.first {
        // Used: no longer open (best effort; an entry left over only overcounts until it expires).
        let used = key.trim_start_matches(LINKS);
        let _ = change_invites(store, &p.tenant, now, |open| {
            open.retain(|(h, _)| h != used);
            Ok(())
        });
    }
    let pkey = person_key(&p.tenant, &p.sub);
    if !store.exists(BUCKET, &pkey)? {
        store.set(BUCKET, &pkey, &serde_json::to_vec(p).expect("people serialize"))?;
    }
    if record.first {
        store.set(BUCKET, FIRST_MARKER, format!("{}/{}", p.tenant, p.sub).as_bytes())?;
    }
    let session = Session { sub: p.sub.clone(), expires: now + SESSION_SECONDS };
    store.set(BUCKET, &session_key(&p.tenant, &secret), &serde_json::to_vec(&session).expect("sessions serialize"))?;
    Ok(Started { cookie: format!("{}.{secret}", p.tenant), person: p.clone() })
}

/// The value of the session cookie in a `Cookie` header.
pub fn cookie_value(header: Option<&str>) -> Option<&str> {
    header?.split(';').map(str::trim).find_map(|c| c.strip_prefix(COOKIE)?.strip_prefix('='))
}

/// A live session: who, and the hash it is stored under (what names it
/// without its secret).
#[derive(Debug, Clone)]
pub struct SignedIn {
    /// Who.
    pub person: Person,
    /// The hash of the session's secret.
    pub session: String,
}

/// The person of a live session cookie.
pub fn session(store: &dyn Store, cookie: Option<&str>, now: u64) -> Result<Option<SignedIn>> {
    let Some((tenant, secret)) = cookie.and_then(|c| c.split_once('.')) else { return Ok(None) };
    if tenant.is_empty()
        || tenant.len() > 64
        || !tenant.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        || secret.len() > 64
    {
        return Ok(None);
    }
    let Some(s) = store.get(BUCKET, &session_key(tenant, secret))?.and_then(|v| serde_json::from_slice::<Session>(&v).ok()) else { return Ok(None) };
    if s.expires <= now {
        return Ok(None);
    }
    Ok(person(store, tenant, &s.sub)?.map(|person| SignedIn { person, session: hash(secret) }))
}

/// A person's record.
pub fn person(store: &dyn Store, tenant: &str, sub: &str) -> Result<Option<Person>> {
    Ok(store.get(BUCKET, &person_key(tenant, sub))?.and_then(|v| serde_json::from_slice(&v).ok()))
}

/// Ends the session of a cookie (nothing to end is fine).
pub fn end_session(store: &dyn Store, cookie: Option<&str>) -> Result<()> {
    if let Some((tenant, secret)) = cookie.and_then(|c| c.split_once('.'))
        && tenant.len() <= 64
        && !tenant.contains('/')
        && secret.len() <= 64
    {
        store.delete(BUCKET, &session_key(tenant, secret))?;
    }
    Ok(())
}
