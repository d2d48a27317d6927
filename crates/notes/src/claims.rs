//! Claims (leases): "nobody else may write this for a while". A claim lives in the note
//! head, so claiming, the claim check of a write, its version check and its commit are
//! one CAS on the head.
//!
//! Rules:
//! - A target is the whole note (`tab_id` absent), one tab, or one section of a markdown
//!   tab (`section_id`, as `read_note_outline` names it). A whole-note claim excludes
//!   every other claim in the note; a tab claim excludes claims on its sections; claims on
//!   two tabs coexist, and so do claims on two sections of a tab whose lines do not meet
//!   (a section holds its subsections); one holder holds at most one section of a tab.
//!   The files and sources tabs cannot be claimed on their own (the writes that touch
//!   them target the note): claim the note.
//! - A note or tab claim refuses other actors' writes to its target outright; a section
//!   claim refuses any write that would change its section's lines, and fences its
//!   holder's writes in them ([`crate::section_claims`]).
//! - Claiming what you already hold (same subject, same target) is a heartbeat: the same
//!   claim_id, `renewed: true`, expiry moved to now + ttl.
//! - Only the holder (same tenant and subject) may renew, release or post on a claim;
//!   others get `forbidden`. A human admin may force a release ([`force_release`]).
//! - A claim lapses at `expires_at`: from then on no check and no read sees it, and the
//!   next commit of the head drops it (a release with reason `expired`); the sweep does
//!   the same for heads nobody touches.
//! - Claim notes are ephemeral: stored in the claim, gone with it, never in history.
//!
//! Claim ids are `clm-<note_id>-<seq>-<random>`: `seq` is the note's claim counter in
//! base 36 (only grows, so an id is never handed out twice), `random` 8 base-36
//! characters. The note id in front finds the claim's head without any scan.

use serde_json::{Value, json};

use crate::args::{ClaimRef, DEFAULT_TTL_SECONDS, parse_claim_id};
use crate::claim_audit::{Record, actor_str, note_ended, put_record};
use crate::claim_index::{index_lower, read_index};
use crate::claim_results::{AlreadyReleased, Board, BoardClaim, ClaimNoteView, ClaimView, PostedNote, Release, ReleaseReason, ReleasedNow};
use crate::env::{ActorType, Env, Identity, Role};
use crate::head::{Decision, Limit, Reader, is_busy, load_head, transact, visible_head};
use crate::keys;
use crate::kv::TenantKv;
use crate::model::{Claim, ClaimNote, Head, TabKind, Who, base36, nonce, rand8, rfc3339, sha_hex};
use crate::refusal::{Code, Out, Refusal};
use crate::results::{Notice, Provenance};
use crate::section_claims;

/// Claim notes kept per claim (older ones are dropped when a new one is posted).
pub(crate) const NOTES_PER_CLAIM: usize = 10;
/// Bytes of claim-note text one note head may hold across its claims.
pub(crate) const CLAIM_NOTE_BYTES_PER_HEAD: usize = 200_000;
/// Claims one `list_claims` call returns (`truncated: true` beyond).
pub(crate) const MAX_LISTED_CLAIMS: usize = 200;

const US: u64 = 1_000_000;

const NEXT_STEP_GONE: &str = "this claim is no longer live (released or expired): claim the \
target again with claim_note, and read before you write (someone may have written since)";
const NEXT_STEP_OWN: &str = "you already hold an overlapping claim in this note: keep using \
it, or release_claim it and claim again";

/// What a claim holds: the note (`tab: None`), a tab, or one section of a
/// markdown tab, with that section's lines in the tab's current text.
#[derive(Clone, Copy)]
struct Target<'a> {
    tab: Option<&'a str>,
    section: Option<(&'a str, Option<(usize, usize)>)>,
}

impl<'a> Target<'a> {
    /// What claim `c` holds; its section's lines as `sections` (the outline of
    /// tab `tab_id`) has them, if it is a section of that tab.
    fn of(c: &'a Claim, tab_id: Option<&str>, sections: &[crate::sections::Section]) -> Self {
        let lines = |s: &str| if c.tab_id.as_deref() == tab_id { section_claims::range(sections, s) } else { None };
        Target { tab: c.tab_id.as_deref(), section: c.section_id.as_deref().map(|s| (s, lines(s))) }
    }

    /// Whether two targets meet: the note meets everything, a tab meets
    /// itself and its sections, two sections of a tab meet when their lines
    /// do (a section no longer in the text holds no lines).
    fn meets(&self, other: &Target) -> bool {
        if self.tab.is_none() || other.tab.is_none() || self.tab != other.tab {
            return self.tab.is_none() || other.tab.is_none();
        }
        match (self.section, other.section) {
            (Some((_, Some((a0, a1)))), Some((_, Some((b0, b1))))) => a0 <= b1 && b0 <= a1,
            (Some(_), Some(_)) => false,
            _ => true,
        }
    }
}

/// The live claim that stops `who` from writing `tab_id` (`None`: a write to the note as a
/// whole, which only a whole-note claim blocks). The holder's own claims never block it;
/// section claims never block a write outright: [`crate::section_claims`] checks the
/// lines it changes.
pub(crate) fn blocking_claim<'h>(head: &'h Head, who: &Identity, tab_id: Option<&str>, now: u64) -> Option<&'h Claim> {
    head.claims.iter().find(|c| {
        c.live(now)
            && c.section_id.is_none()
            && c.holder.subject != who.subject
            && match (&c.tab_id, tab_id) {
                (None, _) => true,
                (Some(held), Some(t)) => held == t,
                (Some(_), None) => false,
            }
    })
}

/// The `claim_conflict` refusal naming the claim in the way.
pub(crate) fn conflict(head: &Head, c: &Claim, what: &str) -> Refusal {
    let target = match (&c.tab_id, &c.section_id) {
        (Some(t), Some(s)) => format!("section {s} of tab {t} of note {}", head.note_id),
        (Some(t), None) => format!("tab {t} of note {}", head.note_id),
        (None, _) => format!("note {}", head.note_id),
    };
    Refusal::new(
        Code::ClaimConflict,
        format!("{what}: {target} is claimed by {} ({}) until {}", c.holder.name, actor_str(c.holder.actor_type), rfc3339(c.expires_at)),
    )
    .with_version(head.version)
    .with("claim_id", c.claim_id.clone())
    .with("note_id", head.note_id.clone())
    .with("tab_id", c.tab_id.clone())
    .with("section_id", c.section_id.clone())
    .with("held_by", c.holder.name.clone())
    .with("actor_type", actor_str(c.holder.actor_type))
    .with("since", rfc3339(c.since))
    .with("expires_at", rfc3339(c.expires_at))
}

/// A claim as the tools show it.
fn view(note_id: &str, c: &Claim, renewed: bool) -> ClaimView {
    ClaimView {
        claim_id: c.claim_id.clone(),
        note_id: note_id.to_string(),
        tab_id: c.tab_id.clone(),
        section_id: c.section_id.clone(),
        held_by: c.holder.name.clone(),
        actor_type: c.holder.actor_type,
        since: rfc3339(c.since),
        expires_at: rfc3339(c.expires_at),
        ttl_seconds: c.ttl_us / US,
        renewed,
    }
}

/// What one attempt of a claim operation decided; `R` is the operation's result.
enum Step<R> {
    /// Commit the changed head; `index_due` is the expiry of a newly granted claim.
    Commit { result: R, audit: Value, index_due: Option<u64> },
    /// Answer without changing the head (lapsed claims are still dropped if any).
    Answer { result: R, audit: Value },
    /// Refuse; the record is written best effort (a refusal has no commit to join).
    Refuse { refusal: Refusal, audit: Option<Value> },
}

const CLAIM_LIMIT: Limit = Limit { field: "text", message: "the note head would exceed the store's value limit; release claims or post shorter notes" };

/// Runs a claim operation on the head of `note_id` as one [`transact`], with its audit
/// record.
///
/// Time and the operation's audit key are fixed before the first attempt: a retried
/// attempt writes the same key (and, for the same outcome, the same bytes), so the record
/// left there is the operation's final outcome.
fn claim_txn<R>(kv: &TenantKv, env: &mut dyn Env, who: &Identity, note_id: &str, mut op: impl FnMut(&mut Head, u64) -> Out<Step<R>>) -> Out<R> {
    let now = env.now_us();
    let audit_key = keys::claim_audit(note_id, now, &rand8(env));
    let busy = "the note is busy with other writes; nothing changed";
    let nonce = nonce(env);
    let out = transact(kv, note_id, Reader::Caller(who), now, &nonce, &CLAIM_LIMIT, busy, |head, _| match op(head, now)? {
        Step::Refuse { refusal, audit } => {
            if let Some(a) = audit {
                let _ = put_record(kv, &audit_key, &a);
            }
            Err(refusal.into())
        }
        Step::Answer { result, audit } => {
            put_record(kv, &audit_key, &audit)?;
            Ok(Decision::Answer(result))
        }
        Step::Commit { result, audit, index_due } => {
            if let Some(due) = index_due
                && head.claims_due.is_none_or(|d| due < d)
            {
                index_lower(kv, note_id, due)?;
                head.claims_due = Some(head.claims_due.map_or(due, |d| d.min(due)));
            }
            put_record(kv, &audit_key, &audit)?;
            Ok(Decision::Commit(result))
        }
    });
    if is_busy(&out) {
        let gave_up = json!({"event": "refused", "error": "busy", "note_id": note_id, "at": rfc3339(now),
            "at_us": now, "by": {"subject": who.subject, "name": Who::of(who).name,
            "actor_type": actor_str(who.actor_type)}});
        let _ = put_record(kv, &audit_key, &gave_up);
    }
    out
}

fn record<'a>(event: &'static str, action: &'static str, at: u64, note_id: &'a str, claim: Option<&'a Claim>, who: &'a Identity) -> Record<'a> {
    Record { event, action, at, note_id, claim, by: Some(who) }
}

/// Outcome of [`claim`]: the result and whether it was a heartbeat on an existing claim.
pub(crate) struct Claimed {
    pub result: ClaimView,
    pub renewed: bool,
}

/// Claims a note (`tab_id: None`), one of its tabs, or one section of a markdown tab
/// (`section_id`, with its `tab_id`) for `ttl_seconds`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn claim(
    kv: &TenantKv,
    env: &mut dyn Env,
    who: &Identity,
    note_id: &str,
    tab_id: Option<&str>,
    section_id: Option<&str>,
    ttl_seconds: Option<u64>,
    action: &'static str,
) -> Out<Claimed> {
    let ttl = ttl_seconds.unwrap_or(DEFAULT_TTL_SECONDS) * US;
    let rand = rand8(env);
    let mut renewed = false;
    if section_id.is_some() && tab_id.is_none() {
        return Err(Refusal::invalid("tab_id", "a section_id claims a section of one markdown tab: send its tab_id too").into());
    }
    let result = claim_txn(kv, env, who, note_id, |head, now| {
        renewed = false;
        let sections = match claimable(kv, head, tab_id, section_id)? {
            Ok(sections) => sections,
            Err(refusal) => return Ok(Step::Refuse { refusal, audit: None }),
        };
        let wanted = Target { tab: tab_id, section: section_id.map(|s| (s, section_claims::range(&sections, s))) };
        // A heartbeat: the caller already holds exactly this target.
        if let Some(c) =
            head.claims.iter_mut().find(|c| c.holder.subject == who.subject && c.tab_id.as_deref() == tab_id && c.section_id.as_deref() == section_id)
        {
            c.expires_at = now + ttl;
            c.ttl_us = ttl;
            c.renewals += 1;
            renewed = true;
            return Ok(Step::Commit {
                result: view(note_id, c, true),
                audit: record("renewed", action, now, note_id, Some(&*c), who).json(json!({"heartbeat": true})),
                index_due: None,
            });
        }
        let in_the_way = head.claims.iter().find(|c| {
            let held = Target::of(c, tab_id, &sections);
            // One holder holds at most one section of a tab (its writes there are fenced in it).
            let second_section = c.holder.subject == who.subject && held.tab == wanted.tab && held.section.is_some() && wanted.section.is_some();
            held.meets(&wanted) || second_section
        });
        if let Some(c) = in_the_way {
            let mut refusal = conflict(head, c, "not claimed");
            if c.holder.subject == who.subject {
                refusal = refusal.with("held_by_you", true).with_next_step(NEXT_STEP_OWN);
            }
            let audit = record("refused", action, now, note_id, Some(c), who)
                .json(json!({"error": "claim_conflict", "requested_tab_id": tab_id, "requested_section_id": section_id}));
            return Ok(Step::Refuse { refusal, audit: Some(audit) });
        }
        Ok(grant(head, who, note_id, tab_id, section_id, &rand, now, ttl, action))
    })?;
    Ok(Claimed { result, renewed })
}

/// Whether the target may be claimed: the tab exists and is not an
/// attachment tab; a section is one of a markdown tab's. The tab's outline
/// when a section is asked for (empty otherwise), or the refusal.
fn claimable(kv: &TenantKv, head: &Head, tab_id: Option<&str>, section_id: Option<&str>) -> Out<Result<Vec<crate::sections::Section>, Refusal>> {
    let Some(t) = tab_id else { return Ok(Ok(Vec::new())) };
    let Some(i) = head.tab_index(t) else { return Ok(Err(Refusal::not_found("tab"))) };
    let kind = head.tabs[i].kind;
    if matches!(kind, TabKind::Files | TabKind::Sources) {
        return Ok(Err(Refusal::invalid("tab_id", "the files and sources tabs cannot be claimed on their own: claim the whole note (leave tab_id out)")));
    }
    let Some(s) = section_id else { return Ok(Ok(Vec::new())) };
    if kind != TabKind::Markdown {
        return Ok(Err(Refusal::invalid("section_id", format!("tab {t} is a {} tab: sections are claimed in markdown tabs", kind.as_str()))));
    }
    let sections = section_claims::tab_outline(kv, &head.tabs[i])?;
    if section_claims::range(&sections, s).is_none() {
        return Ok(Err(Refusal::new(Code::NotFound, format!("no section {s:?} in tab {t}"))
            .with("field", "section_id")
            .with_next_step("read the outline again (read_note_outline) and use a section_id from it")));
    }
    Ok(Ok(sections))
}

/// A new claim on the target, granted: the head's next claim id, held by `who` for `ttl`.
#[allow(clippy::too_many_arguments)]
fn grant(
    head: &mut Head,
    who: &Identity,
    note_id: &str,
    tab_id: Option<&str>,
    section_id: Option<&str>,
    rand: &str,
    now: u64,
    ttl: u64,
    action: &'static str,
) -> Step<ClaimView> {
    head.claim_seq += 1;
    let c = Claim {
        claim_id: format!("clm-{note_id}-{}-{rand}", base36(head.claim_seq)),
        tab_id: tab_id.map(str::to_string),
        section_id: section_id.map(str::to_string),
        holder: Who::of(who),
        since: now,
        expires_at: now + ttl,
        ttl_us: ttl,
        renewals: 0,
        notes: Vec::new(),
    };
    let step = Step::Commit {
        result: view(note_id, &c, false),
        audit: record("granted", action, now, note_id, Some(&c), who).json(json!({})),
        index_due: Some(c.expires_at),
    };
    head.claims.push(c);
    step
}

/// Whether the note ever handed out this claim id's sequence number.
/// The index of live claim `claim_id` when the caller holds it; else the refusal to
/// answer (gone, or someone else's, for `verb`) with its audit record.
fn held_by_caller<R>(head: &Head, r: &ClaimRef, claim_id: &str, who: &Identity, action: &'static str, verb: &str, now: u64) -> Result<usize, Step<R>> {
    let Some(i) = head.claims.iter().position(|c| c.claim_id == claim_id) else {
        return Err(Step::Refuse {
            refusal: gone(head, r),
            audit: issued(head, r).then(|| refused(action, now, &r.note_id, who, None, json!({"error": "not_found", "claim_id": claim_id}))),
        });
    };
    let c = &head.claims[i];
    if c.holder.subject != who.subject {
        return Err(Step::Refuse {
            refusal: not_yours(head, c, verb),
            audit: Some(refused(action, now, &r.note_id, who, Some(c), json!({"error": "forbidden"}))),
        });
    }
    Ok(i)
}

/// A claim operation on a live claim the caller holds: `op` gets the claim's index; a
/// claim that is gone or someone else's is refused (and audited) before `op` runs.
#[allow(clippy::too_many_arguments)]
fn on_held<R>(
    kv: &TenantKv,
    env: &mut dyn Env,
    who: &Identity,
    claim_id: &str,
    r: &ClaimRef,
    action: &'static str,
    verb: &str,
    mut op: impl FnMut(&mut Head, usize, u64) -> Out<Step<R>>,
) -> Out<R> {
    claim_txn(kv, env, who, &r.note_id, |head, now| match held_by_caller(head, r, claim_id, who, action, verb, now) {
        Ok(i) => op(head, i, now),
        Err(refuse) => Ok(refuse),
    })
}

fn issued(head: &Head, r: &ClaimRef) -> bool {
    r.seq.is_some_and(|s| s >= 1 && s <= head.claim_seq)
}

/// The not_found of a claim that is not live (never issued, released or lapsed).
fn gone(head: &Head, r: &ClaimRef) -> Refusal {
    let refusal = Refusal::new(Code::NotFound, "claim not found: it is not live in this note");
    if issued(head, r) { refusal.with_next_step(NEXT_STEP_GONE) } else { refusal }
}

/// The `forbidden` refusal for a claim someone else holds.
fn not_yours(head: &Head, c: &Claim, what: &str) -> Refusal {
    Refusal::new(
        Code::Forbidden,
        format!(
            "only the holder may {what} claim {}; it is held by {} ({}) until {}",
            c.claim_id,
            c.holder.name,
            actor_str(c.holder.actor_type),
            rfc3339(c.expires_at)
        ),
    )
    .with("claim_id", c.claim_id.clone())
    .with("note_id", head.note_id.clone())
    .with("held_by", c.holder.name.clone())
    .with("actor_type", actor_str(c.holder.actor_type))
    .with("expires_at", rfc3339(c.expires_at))
}

/// Extends a live claim the caller holds to now + ttl (default: the claim's own ttl).
pub(crate) fn renew(
    kv: &TenantKv,
    env: &mut dyn Env,
    who: &Identity,
    claim_id: &str,
    r: &ClaimRef,
    ttl_seconds: Option<u64>,
    action: &'static str,
) -> Out<ClaimView> {
    on_held(kv, env, who, claim_id, r, action, "renew", |head, i, now| {
        let c = &mut head.claims[i];
        let ttl = ttl_seconds.map_or(c.ttl_us, |s| s * US);
        c.expires_at = now + ttl;
        c.ttl_us = ttl;
        c.renewals += 1;
        let audit = Record { event: "renewed", action, at: now, note_id: &r.note_id, claim: Some(c), by: Some(who) }.json(json!({}));
        Ok(Step::Commit { result: view(&r.note_id, c, true), audit, index_due: None })
    })
}

/// The audit record of a refused claim operation: on `claim` when it is live, else
/// naming the claim id that is not.
fn refused(action: &'static str, now: u64, note_id: &str, who: &Identity, claim: Option<&Claim>, extra: Value) -> Value {
    Record { event: "refused", action, at: now, note_id, claim, by: Some(who) }.json(extra)
}

/// Releases a claim: by its holder, or `forced` by a human admin (checked by the caller).
/// Releasing a claim that already ended answers `already_released: true`.
pub(crate) fn release(kv: &TenantKv, env: &mut dyn Env, who: &Identity, claim_id: &str, r: &ClaimRef, forced: bool, action: &'static str) -> Out<Release> {
    let reason = if forced { ReleaseReason::Forced } else { ReleaseReason::Released };
    claim_txn(kv, env, who, &r.note_id, |head, now| {
        let Some(i) = head.claims.iter().position(|c| c.claim_id == claim_id) else {
            if !issued(head, r) {
                return Ok(Step::Refuse { refusal: Refusal::not_found("claim"), audit: None });
            }
            let ended = head.ended.iter().rev().find(|e| e.claim_id == claim_id);
            let result = Release::Already(AlreadyReleased {
                claim_id: claim_id.to_string(),
                note_id: r.note_id.clone(),
                released: false,
                already_released: true,
                reason: ended.map(|e| e.reason.clone()),
                ended_at: ended.map(|e| rfc3339(e.at)),
                forced: forced.then_some(true),
            });
            let audit = Record { event: reason.as_str(), action, at: now, note_id: &r.note_id, claim: None, by: Some(who) }
                .json(json!({"claim_id": claim_id, "already_released": true}));
            return Ok(Step::Answer { result, audit });
        };
        if !forced && head.claims[i].holder.subject != who.subject {
            let c = &head.claims[i];
            return Ok(Step::Refuse {
                refusal: not_yours(head, c, "release"),
                audit: Some(refused(action, now, &r.note_id, who, Some(c), json!({"error": "forbidden"}))),
            });
        }
        let c = head.claims.remove(i);
        note_ended(head, &c.claim_id, reason.as_str(), now);
        let audit = Record { event: reason.as_str(), action, at: now, note_id: &r.note_id, claim: Some(&c), by: Some(who) }
            .json(json!({"reason": reason.as_str(), "notes_dropped": c.notes.len()}));
        let result = Release::Now(ReleasedNow {
            claim_id: c.claim_id,
            note_id: r.note_id.clone(),
            tab_id: c.tab_id,
            released: true,
            already_released: false,
            reason,
            held_by: c.holder.name,
            actor_type: c.holder.actor_type,
            forced: forced.then_some(true),
            forced_by: forced.then(|| Who::of(who).name),
        });
        Ok(Step::Commit { result, audit, index_due: None })
    })
}

/// Posts an ephemeral note on a live claim the caller holds.
pub(crate) fn post_note(kv: &TenantKv, env: &mut dyn Env, who: &Identity, claim_id: &str, r: &ClaimRef, text: &str, action: &'static str) -> Out<PostedNote> {
    on_held(kv, env, who, claim_id, r, action, "post notes on", |head, i, now| {
        let c = &mut head.claims[i];
        c.notes.push(ClaimNote { at: now, text: text.to_string() });
        let dropped = c.notes.len().saturating_sub(NOTES_PER_CLAIM);
        c.notes.drain(..dropped);
        let total: usize = head.claims.iter().flat_map(|c| c.notes.iter()).map(|n| n.text.len()).sum();
        if total > CLAIM_NOTE_BYTES_PER_HEAD {
            return Ok(Step::Refuse {
                refusal: Refusal::too_large(
                    "text",
                    format!(
                        "the claims of this note hold at most {CLAIM_NOTE_BYTES_PER_HEAD} bytes of notes; \
                         post a shorter note"
                    ),
                ),
                audit: None,
            });
        }
        let c = &head.claims[i];
        // The record keeps the note's size and hash, never its text: claim notes are ephemeral.
        let audit = Record { event: "noted", action, at: now, note_id: &r.note_id, claim: Some(c), by: Some(who) }
            .json(json!({"note_chars": text.chars().count(), "note_hash": sha_hex(text.as_bytes())}));
        Ok(Step::Commit {
            result: PostedNote {
                claim_id: c.claim_id.clone(),
                note_id: r.note_id.clone(),
                tab_id: c.tab_id.clone(),
                posted_at: rfc3339(now),
                content_hash: sha_hex(text.as_bytes()),
                notes_on_claim: c.notes.len(),
                dropped_oldest: dropped,
                expires_at: rfc3339(c.expires_at),
            },
            audit,
            index_due: None,
        })
    })
}

/// Force-releases someone's claim: human admins only (a role check, never a scope).
pub(crate) fn force_release(kv: &TenantKv, env: &mut dyn Env, who: &Identity, claim_id: &str) -> Out<Release> {
    let r = parse_claim_id(claim_id)?;
    if who.role != Role::Admin || who.actor_type != ActorType::Human {
        // Best effort, and only under a note that exists in the caller's tenant.
        if let Ok(Some(_)) = kv.get(&keys::note(&r.note_id)) {
            let now = env.now_us();
            let rec = Record { event: "refused", action: "force_release_claim", at: now, note_id: &r.note_id, claim: None, by: Some(who) }
                .json(json!({"error": "forbidden", "claim_id": claim_id}));
            let _ = put_record(kv, &keys::claim_audit(&r.note_id, now, &rand8(env)), &rec);
        }
        return Err(Refusal::new(Code::Forbidden, "only a human with the admin role may force-release a claim")
            .with_next_step("leave the claim alone: wait until its expires_at or work on another target")
            .into());
    }
    release(kv, env, who, claim_id, &r, true, "force_release_claim")
}

/// A live claim on the presence board.
fn board_item(head: &Head, c: &Claim, who: &Identity) -> BoardClaim {
    let tab_label = c.tab_id.as_deref().and_then(|t| head.tab_index(t)).map(|i| head.tabs[i].label.clone());
    let notes = c
        .notes
        .iter()
        .map(|n| ClaimNoteView {
            text: n.text.clone(),
            posted_at: rfc3339(n.at),
            provenance: Provenance::new(&c.holder, n.at, &c.holder, sha_hex(n.text.as_bytes())),
        })
        .collect();
    BoardClaim { claim: view(&head.note_id, c, c.renewals > 0), note_title: head.title.clone(), tab_label, yours: c.holder.subject == who.subject, notes }
}

/// The presence board: live claims of the caller's tenant (of one note, or of every note
/// the caller may see), never a lapsed one.
pub(crate) fn board(kv: &TenantKv, who: &Identity, now: u64, note_id: Option<&str>) -> Out<Board> {
    // Adds a head's live claims; false once the board is full.
    fn add(head: &Head, who: &Identity, now: u64, items: &mut Vec<BoardClaim>) -> bool {
        for c in head.claims.iter().filter(|c| c.live(now)) {
            if items.len() == MAX_LISTED_CLAIMS {
                return false;
            }
            items.push(board_item(head, c, who));
        }
        true
    }
    let mut items = Vec::new();
    let mut truncated = false;
    match note_id {
        Some(n) => {
            let head = load_head(kv, who, n)?;
            truncated = !add(&head, who, now, &mut items);
        }
        None => {
            for n in read_index(kv)?.notes.keys() {
                let Some(raw) = kv.get(&keys::note(n))? else {
                    continue;
                };
                let Ok(head) = visible_head(&raw, Reader::Caller(who)) else {
                    continue;
                };
                if !add(&head, who, now, &mut items) {
                    truncated = true;
                    break;
                }
            }
        }
    }
    Ok(Board { claims: items, truncated, as_of: rfc3339(now), notice: Notice })
}
