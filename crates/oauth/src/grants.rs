//! Grants: what a person allowed a client, the code that hands it over, and
//! the refresh tokens that keep it going.
//!
//! One record per grant (`t/<tenant>/oauth/grant/<id>`), changed only by
//! compare-and-swap against the read it was checked on, so every rule below
//! holds across instances and hosts. A code or refresh token is
//! `<tenant>.<grant id>.<secret>`; the record keeps hashes only.
//!
//! **Invariants.**
//!
//! 1. *A code is exchanged at most once.* Exchanging moves the code's hash
//!    from `code` to `spent` in the same swap that stores the first refresh
//!    token; a second exchange finds it spent. A spent code presented again
//!    is taken as a stolen code: the grant is revoked (RFC 6749 §4.1.2), so
//!    what it issued stops refreshing.
//! 2. *A refresh token is used at most once, and reuse ends the family.*
//!    Refreshing moves the current hash to `spent` and stores the next in
//!    one swap; a token found in `spent` revokes the grant (every refresh
//!    token of it) and is refused. One exception keeps honest clients
//!    whole: the token rotated last, presented again within
//!    [`REUSE_GRACE_SECONDS`] while its successor is still unused, is a
//!    retry (a response lost on the way, two tabs of one browser reading
//!    storage a moment apart). It gets the same successor again, which is
//!    derived from it under the server's key rather than drawn at random,
//!    so no second branch of the family is ever made: whoever holds the old
//!    token learns nothing the holder of the new one does not already have,
//!    and the first use of either after that revokes the other.
//! 3. *A revoked grant issues nothing*: every exchange and refresh checks
//!    `revoked` on the record it swaps against.
//! 4. *Bounded*: a person keeps at most [`MAX_GRANTS`] grants to apps (the
//!    oldest are deleted first), and the editor one grant per sign-in
//!    session ([`approve_editor`]: every sign-in through that session reuses
//!    it, so the editor never multiplies grants or evicts an app's); a grant
//!    remembers its last [`MAX_SPENT`] spent hashes (older reuse is refused
//!    as unknown, still issuing nothing) and at most [`MAX_PENDING_CODES`]
//!    codes not yet exchanged. A grant revoked, never exchanged before its
//!    codes expired, or unused past its lifetime is deleted by the sweep
//!    ([`Grant::dead`], [`crate::sweep`]).
//! 5. *Nothing changed, nothing written*: a change that leaves the record as
//!    it was (revoking a revoked grant, a spent code presented again) writes
//!    nothing, so no caller can make a grant be rewritten at will.
//! 6. *A change that landed is known as such*: a store may report a swap
//!    failed that landed (Spin's Redis store reports every swap failed), and
//!    the change then runs again on a record that holds it. Each change
//!    knows itself there and answers as done, writing nothing more: an
//!    exchange by its new refresh hash beside its spent code, a refresh by
//!    invariant 2's retry, an approval by its grant id in the person's
//!    index, an editor sign-in by its code's hash.

use crate::clients::RegisteredBy;
use crate::error::{Code, Error, Result, fail};
use crate::people::BUCKET;
use crate::seal::Sealer;
use crate::wire::{b64, hash, same, secret, short_id};
use cairn_auth::{Actor, Role};
use cairn_kv::{Store, Swap};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Grants to apps kept per person (the editor's are one per session, apart).
pub const MAX_GRANTS: usize = 200;
/// Codes not yet exchanged that one grant holds (the editor's, when a
/// person's tabs sign in at once); the oldest goes first.
pub const MAX_PENDING_CODES: usize = 4;
/// Spent hashes a grant remembers.
pub const MAX_SPENT: usize = 32;
/// How long a code works, in seconds.
pub const CODE_SECONDS: u64 = 60;
/// How long the token rotated last may be presented again as a retry.
pub const REUSE_GRACE_SECONDS: u64 = 30;

/// A code not yet exchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingCode {
    hash: String,
    expires: u64,
    challenge: String,
    redirect_uri: String,
}

/// A grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// Its id.
    pub id: String,
    /// The tenant its tokens act in.
    pub tenant: String,
    /// The person who allowed it (or signed in, for the editor).
    pub person: String,
    /// The client.
    pub client_id: String,
    /// The client's name when allowed.
    pub client_name: String,
    /// How the client was known.
    pub registered_by: RegisteredBy,
    /// Where its code went.
    pub redirect_uri: String,
    /// Scopes granted.
    pub scopes: Vec<String>,
    /// Whom its tokens name: an agent for apps, the person for the editor.
    pub actor: Actor,
    /// Role in the tenant.
    pub role: Role,
    /// `sub` of its tokens.
    pub subject: String,
    /// `name` of its tokens.
    pub name: String,
    /// When allowed (seconds since the epoch).
    pub created: u64,
    /// When a token was last issued from it.
    pub last_used: u64,
    #[serde(default, deserialize_with = "one_or_many")]
    code: Vec<PendingCode>,
    refresh: Option<String>,
    spent: Vec<String>,
    /// The refresh token rotated last (its hash) and when: a retry within
    /// [`REUSE_GRACE_SECONDS`] gets the same successor.
    #[serde(default)]
    rotated: Option<(String, u64)>,
    /// When it was revoked.
    pub revoked: Option<u64>,
    /// How long it may go unused, in seconds, as set when it was last used
    /// (0 in records from before: [`crate::REFRESH_DAYS`]).
    #[serde(default)]
    pub idle: u64,
}

impl Grant {
    /// Whether nothing can ever be issued from it again, so the sweep may
    /// delete it: revoked, never exchanged and its codes expired, or unused
    /// past its lifetime.
    pub fn dead(&self, now: u64) -> bool {
        let idle = if self.idle == 0 { crate::REFRESH_DAYS * 86_400 } else { self.idle };
        self.revoked.is_some() || (self.refresh.is_none() && self.code.iter().all(|c| c.expires <= now)) || self.last_used.saturating_add(idle) <= now
    }
}

/// Pending codes as stored: a list, or one code (records from before).
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Vec<PendingCode>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Codes {
        Many(Vec<PendingCode>),
        One(PendingCode),
    }
    Ok(match Option::<Codes>::deserialize(d)? {
        None => Vec::new(),
        Some(Codes::One(c)) => vec![c],
        Some(Codes::Many(v)) => v,
    })
}

/// What a new grant is for.
#[derive(Debug, Clone)]
pub struct NewGrant {
    /// Tenant.
    pub tenant: String,
    /// The person allowing it.
    pub person: String,
    /// Client id.
    pub client_id: String,
    /// Client name.
    pub client_name: String,
    /// How the client was known.
    pub registered_by: RegisteredBy,
    /// Scopes granted.
    pub scopes: Vec<String>,
    /// Agent or human.
    pub actor: Actor,
    /// Role.
    pub role: Role,
    /// Token subject.
    pub subject: String,
    /// Token display name.
    pub name: String,
}

fn grant_key(tenant: &str, id: &str) -> String {
    format!("t/{tenant}/oauth/grant/{id}")
}

/// The index of a person's grants to apps.
pub(crate) fn index_key(tenant: &str, person: &str) -> String {
    format!("t/{tenant}/oauth/grants/{person}")
}

/// The prefix of a tenant's grant records.
pub(crate) fn grants_prefix(tenant: &str) -> String {
    format!("t/{tenant}/oauth/grant/")
}

/// The prefix of a tenant's indexes of people's grants.
pub(crate) fn indexes_prefix(tenant: &str) -> String {
    format!("t/{tenant}/oauth/grants/")
}

/// The id of the editor's grant for one sign-in session (`session`: the
/// hash the session is stored under): the same for every sign-in through
/// that session, and telling nothing of the session's secret.
fn editor_grant_id(session: &str) -> String {
    cairn_notes::hex(&Sha256::digest(format!("cairn-editor\n{session}").as_bytes())[..8])
}

/// `<tenant>.<id>.<secret>` taken apart.
fn parse(token: &str) -> Option<(&str, &str, &str)> {
    let mut parts = token.splitn(3, '.');
    let (tenant, id, secret) = (parts.next()?, parts.next()?, parts.next()?);
    let tenant_ok = !tenant.is_empty() && tenant.len() <= 64 && tenant.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    let id_ok = id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit());
    (tenant_ok && id_ok && !secret.is_empty() && secret.len() <= 64).then_some((tenant, id, secret))
}

/// Whether `verifier` is an RFC 7636 verifier whose S256 challenge is `challenge`.
pub fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len()) && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
    well_formed && same(&b64(&Sha256::digest(verifier.as_bytes())), challenge)
}

/// What a change to a grant decided.
enum Step<T> {
    /// Write the changed record, then answer `T`.
    Write(T),
    /// Write the changed record (a revocation), then refuse.
    WriteThenFail(Error),
    /// Write nothing and refuse.
    Fail(Error),
}

/// Reads the grant, lets `change` decide on a copy, and swaps the result in
/// against that read; a lost swap reads again and decides again.
fn update<T>(store: &dyn Store, tenant: &str, id: &str, mut change: impl FnMut(&mut Grant) -> Step<T>) -> Result<T> {
    let key = grant_key(tenant, id);
    let unknown = || Error::new(Code::InvalidGrant, "this code or refresh token was never issued, or its grant is gone");
    for _ in 0..16 {
        let read = store.read(BUCKET, &key)?;
        let Some(mut g) = read.value.as_deref().and_then(|v| serde_json::from_slice::<Grant>(v).ok()) else { return Err(unknown()) };
        let before = g.clone();
        let (answer, refusal) = match change(&mut g) {
            Step::Fail(e) => return Err(e),
            Step::Write(t) => (Some(t), None),
            Step::WriteThenFail(e) => (None, Some(e)),
        };
        let done = || answer.ok_or_else(|| refusal.expect("one of the two"));
        // Invariant 5: a change that changed nothing writes nothing.
        if g == before {
            return done();
        }
        match store.swap(BUCKET, &key, read.observed, &serde_json::to_vec(&g).expect("grants serialize"))? {
            Swap::Done => return done(),
            Swap::Failed(_) => continue,
        }
    }
    fail(Code::TemporarilyUnavailable, "this grant is changing too fast; try again")
}

fn spend(g: &mut Grant, h: String) {
    g.spent.push(h);
    let over = g.spent.len().saturating_sub(MAX_SPENT);
    g.spent.drain(..over);
}

fn revoke(g: &mut Grant, now: u64) {
    g.revoked.get_or_insert(now);
    g.code.clear();
    g.refresh = None;
}

/// A code for `redirect_uri` bound to the PKCE `challenge`: its text and what the grant keeps of it.
fn new_code(tenant: &str, id: &str, challenge: &str, redirect_uri: &str, now: u64, random: &dyn Fn() -> u64) -> (String, PendingCode) {
    let code_secret = secret(random);
    let pending = PendingCode { hash: hash(&code_secret), expires: now + CODE_SECONDS, challenge: challenge.into(), redirect_uri: redirect_uri.into() };
    (format!("{tenant}.{id}.{code_secret}"), pending)
}

/// A grant allowed now, holding nothing yet.
fn fresh(new: &NewGrant, id: &str, redirect_uri: &str, now: u64, idle: u64) -> Grant {
    Grant {
        id: id.to_string(),
        tenant: new.tenant.clone(),
        person: new.person.clone(),
        client_id: new.client_id.clone(),
        client_name: new.client_name.clone(),
        registered_by: new.registered_by,
        redirect_uri: redirect_uri.to_string(),
        scopes: new.scopes.clone(),
        actor: new.actor,
        role: new.role,
        subject: new.subject.clone(),
        name: new.name.clone(),
        created: now,
        last_used: now,
        code: Vec::new(),
        refresh: None,
        spent: Vec::new(),
        rotated: None,
        revoked: None,
        idle,
    }
}

/// Records a grant to an app allowed now, with a code for `redirect_uri`
/// bound to the PKCE `challenge`; answers the code. `idle`: how long it may
/// go unused (`refresh_token_days`).
pub fn approve(store: &dyn Store, new: NewGrant, challenge: &str, redirect_uri: &str, now: u64, idle: u64, random: &dyn Fn() -> u64) -> Result<String> {
    let id = short_id(random);
    let (code, pending) = new_code(&new.tenant, &id, challenge, redirect_uri, now, random);
    let mut g = fresh(&new, &id, redirect_uri, now, idle);
    g.code.push(pending);
    store.set(BUCKET, &grant_key(&new.tenant, &id), &serde_json::to_vec(&g).expect("grants serialize"))?;
    // The person's index, bounded: the oldest grants go.
    let key = index_key(&new.tenant, &new.person);
    for _ in 0..16 {
        let read = store.read(BUCKET, &key)?;
        let mut ids: Vec<String> = read.value.as_deref().and_then(|v| serde_json::from_slice(v).ok()).unwrap_or_default();
        // Listed by this very approval (its swap landed, reported failed).
        if ids.contains(&id) {
            return Ok(code);
        }
        ids.push(id.clone());
        let dropped: Vec<String> = ids.drain(..ids.len().saturating_sub(MAX_GRANTS)).collect();
        if let Swap::Done = store.swap(BUCKET, &key, read.observed, &serde_json::to_vec(&ids).expect("ids serialize"))? {
            let keys: Vec<String> = dropped.iter().map(|d| grant_key(&new.tenant, d)).collect();
            store.delete_many(BUCKET, &keys.iter().map(String::as_str).collect::<Vec<_>>())?;
            return Ok(code);
        }
    }
    fail(Code::TemporarilyUnavailable, "this person's grants are changing too fast; try again")
}

/// The editor's sign-in through the session stored under `session`: a code
/// on the one grant of that session (invariant 4), made when there is none
/// or it was revoked, else reused with the person's current name and role.
/// Its refresh token lives on until the code is exchanged; the exchange
/// replaces it.
#[allow(clippy::too_many_arguments)]
pub fn approve_editor(
    store: &dyn Store,
    new: NewGrant,
    session: &str,
    challenge: &str,
    redirect_uri: &str,
    now: u64,
    idle: u64,
    random: &dyn Fn() -> u64,
) -> Result<String> {
    let id = editor_grant_id(session);
    let (code, pending) = new_code(&new.tenant, &id, challenge, redirect_uri, now, random);
    let key = grant_key(&new.tenant, &id);
    for _ in 0..16 {
        let read = store.read(BUCKET, &key)?;
        let live = read.value.as_deref().and_then(|v| serde_json::from_slice::<Grant>(v).ok()).filter(|g| g.revoked.is_none());
        // Holding this very code (its swap landed, reported failed).
        if live.as_ref().is_some_and(|g| g.code.iter().any(|c| c.hash == pending.hash)) {
            return Ok(code);
        }
        let mut g = live.unwrap_or_else(|| fresh(&new, &id, redirect_uri, now, idle));
        (g.name, g.role, g.scopes) = (new.name.clone(), new.role, new.scopes.clone());
        g.code.retain(|c| c.expires > now);
        g.code.push(pending.clone());
        let over = g.code.len().saturating_sub(MAX_PENDING_CODES);
        g.code.drain(..over);
        (g.last_used, g.idle) = (now, idle);
        if let Swap::Done = store.swap(BUCKET, &key, read.observed, &serde_json::to_vec(&g).expect("grants serialize"))? {
            return Ok(code);
        }
    }
    fail(Code::TemporarilyUnavailable, "this sign-in is changing too fast; try again")
}

/// A refresh token issued: its text and the grant as it stands.
pub struct Issued {
    /// The grant after the change.
    pub grant: Grant,
    /// The new refresh token.
    pub refresh_token: String,
    /// Scopes of the access token to issue.
    pub scopes: Vec<String>,
}

/// Exchanges a code (invariant 1): the client, redirect URI and PKCE
/// verifier must be the ones the code was made for.
pub fn exchange_code(
    store: &dyn Store,
    code: &str,
    client_id: &str,
    redirect_uri: Option<&str>,
    verifier: &str,
    now: u64,
    random: &dyn Fn() -> u64,
) -> Result<Issued> {
    let Some((tenant, id, code_secret)) = parse(code) else { return fail(Code::InvalidGrant, "this code was never issued") };
    let h = hash(code_secret);
    let next = secret(random);
    let refresh_token = format!("{tenant}.{id}.{next}");
    let grant = update(store, tenant, id, |g| {
        // This very exchange, landed (its swap reported failed): done.
        if g.refresh.as_deref().is_some_and(|r| same(r, &hash(&next))) && g.spent.iter().any(|s| same(s, &h)) {
            return Step::Write(g.clone());
        }
        if g.spent.iter().any(|s| same(s, &h)) {
            revoke(g, now);
            return Step::WriteThenFail(Error::new(Code::InvalidGrant, "this code was used already; everything issued with it is revoked"));
        }
        if g.revoked.is_some() {
            return Step::Fail(Error::new(Code::InvalidGrant, "this grant was revoked"));
        }
        let Some(at) = g.code.iter().position(|c| same(&c.hash, &h)) else {
            return Step::Fail(Error::new(Code::InvalidGrant, "this code was never issued"));
        };
        let c = g.code[at].clone();
        if c.expires <= now {
            return Step::Fail(Error::new(Code::InvalidGrant, format!("this code expired; a code works for {CODE_SECONDS} seconds")));
        }
        if g.client_id != client_id {
            return Step::Fail(Error::new(Code::InvalidGrant, "this code was issued to another client"));
        }
        if redirect_uri.is_some_and(|r| r != c.redirect_uri) {
            return Step::Fail(Error::new(Code::InvalidGrant, "redirect_uri is not the one the code was sent to"));
        }
        if !pkce_matches(verifier, &c.challenge) {
            return Step::Fail(Error::new(Code::InvalidGrant, "code_verifier does not match the code_challenge (PKCE S256)"));
        }
        g.code.remove(at);
        spend(g, h.clone());
        // The editor's grant may hold an earlier refresh token: the new one replaces it.
        g.refresh = Some(hash(&next));
        g.rotated = None;
        g.last_used = now;
        Step::Write(g.clone())
    })?;
    let scopes = grant.scopes.clone();
    Ok(Issued { grant, refresh_token, scopes })
}

/// Refreshes (invariant 2): a new refresh token for the current one,
/// derived from it with `keys` (so a retry gets the same); a spent one
/// revokes the grant. `scopes`, when asked, must be within the grant's; a
/// grant unused for `idle_seconds` has ended.
pub fn refresh(store: &dyn Store, keys: &Sealer, token: &str, client_id: &str, scopes: Option<Vec<String>>, idle_seconds: u64, now: u64) -> Result<Issued> {
    let Some((tenant, id, old)) = parse(token) else { return fail(Code::InvalidGrant, "this refresh token was never issued") };
    let h = hash(old);
    let next = keys.derive(&format!("{id}/{h}"));
    let refresh_token = format!("{tenant}.{id}.{next}");
    let grant = update(store, tenant, id, |g| {
        if g.revoked.is_some() {
            return Step::Fail(Error::new(Code::InvalidGrant, "this grant was revoked; ask the person to connect again"));
        }
        let current = g.refresh.as_deref().is_some_and(|r| same(r, &h));
        let retry = g.rotated.as_ref().is_some_and(|(r, at)| same(r, &h) && now.saturating_sub(*at) <= REUSE_GRACE_SECONDS)
            && g.refresh.as_deref().is_some_and(|r| same(r, &hash(&next)));
        if !current && !retry {
            if g.spent.iter().any(|s| same(s, &h)) {
                revoke(g, now);
                return Step::WriteThenFail(Error::new(
                    Code::InvalidGrant,
                    "this refresh token was used already, so it may have been stolen: every token of this grant is revoked; ask the person to connect again",
                ));
            }
            return Step::Fail(Error::new(Code::InvalidGrant, "this refresh token was never issued"));
        }
        if g.client_id != client_id {
            return Step::Fail(Error::new(Code::InvalidGrant, "this refresh token was issued to another client"));
        }
        if g.last_used + idle_seconds <= now {
            return Step::Fail(Error::new(Code::InvalidGrant, "this grant went unused too long and has ended; ask the person to connect again"));
        }
        if let Some(asked) = &scopes
            && let Some(extra) = asked.iter().find(|s| !g.scopes.contains(s))
        {
            return Step::Fail(Error::new(Code::InvalidScope, format!("{extra} was not granted; a refresh may only narrow the scopes")));
        }
        if current {
            spend(g, h.clone());
            g.refresh = Some(hash(&next));
            g.rotated = Some((h.clone(), now));
        }
        (g.last_used, g.idle) = (now, idle_seconds);
        Step::Write(g.clone())
    })?;
    let scopes = scopes.unwrap_or_else(|| grant.scopes.clone());
    Ok(Issued { grant, refresh_token, scopes })
}

/// RFC 7009 for a code or refresh token: revokes its grant if the token is
/// one of it (current or spent). Anything else is ignored, as the RFC asks;
/// a grant revoked already is not written again (invariant 5).
pub fn revoke_token(store: &dyn Store, token: &str, now: u64) -> Result<bool> {
    let Some((tenant, id, s)) = parse(token) else { return Ok(false) };
    let h = hash(s);
    match update(store, tenant, id, |g| {
        let ours = g.refresh.as_deref().is_some_and(|r| same(r, &h)) || g.code.iter().any(|c| same(&c.hash, &h)) || g.spent.iter().any(|x| same(x, &h));
        if !ours {
            return Step::Fail(Error::new(Code::InvalidGrant, "not ours"));
        }
        revoke(g, now);
        Step::Write(())
    }) {
        Ok(()) => Ok(true),
        Err(e) if e.code == Code::InvalidGrant => Ok(false),
        Err(e) => Err(e),
    }
}

/// Revokes grant `id` of `tenant` (an access token's `grant` claim).
pub fn revoke_grant(store: &dyn Store, tenant: &str, id: &str, now: u64) -> Result<()> {
    match update(store, tenant, id, |g| {
        revoke(g, now);
        Step::Write(())
    }) {
        Err(e) if e.code == Code::InvalidGrant => Ok(()),
        other => other,
    }
}

/// Every grant a person holds, oldest first.
pub fn of_person(store: &dyn Store, tenant: &str, person: &str) -> Result<Vec<Grant>> {
    let ids: Vec<String> = store.get(BUCKET, &index_key(tenant, person))?.and_then(|v| serde_json::from_slice(&v).ok()).unwrap_or_default();
    let keys: Vec<String> = ids.iter().map(|id| grant_key(tenant, id)).collect();
    let values = store.get_many(BUCKET, &keys.iter().map(String::as_str).collect::<Vec<_>>())?;
    Ok(values.into_iter().flatten().filter_map(|v| serde_json::from_slice(&v).ok()).collect())
}

/// Revokes every live grant `person` gave `client_id`; answers how many.
pub fn revoke_client(store: &dyn Store, tenant: &str, person: &str, client_id: &str, now: u64) -> Result<usize> {
    let live: Vec<Grant> = of_person(store, tenant, person)?.into_iter().filter(|g| g.client_id == client_id && g.revoked.is_none()).collect();
    for g in &live {
        revoke_grant(store, tenant, &g.id, now)?;
    }
    Ok(live.len())
}
