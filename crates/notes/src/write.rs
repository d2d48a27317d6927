//! The write pipeline: every content write to a note (the tools' and the
//! people's) runs through [`commit`], one [`crate::head::transact`] on the
//! note head.
//!
//! Order inside one attempt (arguments were validated before): the head
//! (visibility; lapsed claims dropped) → idempotency key (a replay answers
//! even if a claim appeared since) → resolve the target → claims → version
//! (and `base_content_hash`) → apply (content blobs written first) → the
//! lines section claims hold ([`crate::section_claims`]) → bump the
//! note and tab versions, record the idempotency result, a history entry and
//! the audit records (spilled history, expired claims) → swap the head. A lost
//! swap re-runs the whole attempt from a fresh read; the caller's
//! `expected_version` alone decides conflicts.

use serde_json::{Map, Value, json};

use crate::args::VersionScope;
use crate::claim_audit::{Record, note_ended, put_record, write_ended};
use crate::claims::{blocking_claim, conflict};
use crate::env::{Env, Identity};
use crate::head::{Decision, Limit, Reader, transact};
use crate::keys;
use crate::kv::{Staged, TenantKv};
use crate::model::{Claim, Head, HistoryEntry, IdemRecord, Tab, Who, canonical_json, decode, encode, nonce, rand8, sha_hex};
use crate::quota::Charge;
use crate::refusal::{Code, Halt, Out, Refusal};
use crate::section_claims::{self, Breach};
use crate::version::{Extent, Version};
use crate::write_results::{Replayable, TabState, WriteFields, WriteResult};

/// Idempotency records kept in the head; older ones move to their own keys.
/// One: the record of the write being committed must be in the head (it
/// commits with the swap; a record spilled before a lost swap would name a
/// write that never happened), and every older one is already committed, so
/// it may live on its own key. A fresh key is looked up there anyway (a miss
/// costs the same read whatever the head keeps), and a replay of an older
/// key costs one read; every read and write of the note parses the head, and
/// three more records were a third of a small note's head.
pub(crate) const IDEM_IN_HEAD: usize = 1;
/// History entries kept in the head; older ones move to the audit keys. An
/// entry carries the tab as its commit left it (~700 bytes), and every read
/// and write of the note parses the head. One, for the reason above: the
/// entry of the commit itself goes with the swap. Each commit spills one
/// entry either way, so keeping fewer costs only `list_note_history`, a
/// rebase and an `at_version` read one more read of a spilled entry.
pub(crate) const HISTORY_IN_HEAD: usize = 1;

/// What a write asks of the transaction.
pub(crate) struct WriteSpec<'a> {
    /// The tool or REST helper, as audit records name it.
    pub tool: &'static str,
    pub note_id: &'a str,
    /// For claims: the write targets the note as a whole (create a tab, add a source,
    /// attach a file), so only a whole-note claim blocks it, whatever tab it changes.
    pub note_level: bool,
    /// The idempotency key and the fingerprint of the payload it names.
    pub idem: Option<(&'a str, Fingerprint<'a>)>,
    pub expected_version: u64,
    /// What the read `expected_version` came from returned of the tab
    /// ([`crate::version`]): a part token refuses a whole-tab write, and
    /// marks the result.
    pub base: Extent,
    /// The write replaces a whole tab (`replace_text`, `replace_tab_data`,
    /// the people's whole-tab write, restore, delete): refused on a part base.
    pub whole_tab: bool,
    pub scope: VersionScope,
    pub base_content_hash: Option<&'a str>,
    /// A patch that may be rebased: an older `expected_version` passes the
    /// version check, and the apply decides (see `edit::check_rebase`).
    pub rebase: bool,
}

/// What a write targets: the note as a whole, or one tab (by index in `head.tabs`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target {
    Note,
    Tab(usize),
}

/// Outcome of resolving a write against the current head.
pub(crate) enum Plan<R = Map<String, Value>> {
    /// Go on to the version check and apply.
    Write(Target),
    /// Answer without writing (for example a source already attached).
    Answer(WriteResult<R>),
}

/// What apply did: the history action, the tab whose version moves (or the tab it
/// removed), and the writer's own result fields.
pub(crate) struct Change<R = Map<String, Value>> {
    pub action: &'static str,
    pub tab: Option<usize>,
    pub removed_tab: Option<Tab>,
    pub result: R,
}

/// Passed to apply: the store, the injected environment, the caller and the time.
pub(crate) struct Ctx<'a, 'k> {
    pub kv: &'a TenantKv<'k>,
    pub env: &'a mut dyn Env,
    pub who: &'a Identity,
    pub now: u64,
}

/// The fingerprint of a payload: SHA-256 of the tool name and the canonical JSON.
pub(crate) fn fingerprint(tool: &str, payload: &Value) -> String {
    sha_hex(format!("{tool}\n{}", canonical_json(payload)).as_bytes())
}

/// What an idempotency key is compared with: the fingerprint of the payload,
/// and, for a payload whose fingerprint changed form, the old form, computed
/// only when a record written before the change is found.
///
/// The forms: a plain [`fingerprint`] of the payload; or, for a payload
/// carrying a whole text (`edit_note_tab`'s `replace_text`, the people's
/// tab write), `2:` and the fingerprint of the payload with the text replaced
/// by its SHA-256, the content hash the write computes anyway, so a write
/// hashes its text once. Records keep the form they were written with.
pub(crate) struct Fingerprint<'a> {
    current: String,
    legacy: Option<Box<dyn Fn() -> String + 'a>>,
}

impl<'a> Fingerprint<'a> {
    /// A plain fingerprint of `payload`.
    pub fn of(tool: &str, payload: &Value) -> Self {
        Fingerprint { current: fingerprint(tool, payload), legacy: None }
    }

    /// The `2:` form (see the type), with the plain form of records written before it.
    pub fn hashed_text(tool: &str, payload_with_hash: &Value, legacy: impl Fn() -> String + 'a) -> Self {
        Fingerprint { current: format!("2:{}", fingerprint(tool, payload_with_hash)), legacy: Some(Box::new(legacy)) }
    }

    /// Whether a stored record's fingerprint names this payload.
    fn matches(&self, stored: &str) -> bool {
        stored == self.current || (!stored.starts_with("2:") && self.legacy.as_ref().is_some_and(|old| old() == stored))
    }
}

/// A note-scope write spec keyed by the fingerprint of `payload` when a key was sent.
pub(crate) fn note_scope<'a>(
    tool: &'static str,
    note_level: bool,
    note_id: &'a str,
    key: Option<&'a str>,
    expected: Version,
    payload: &Value,
) -> WriteSpec<'a> {
    WriteSpec {
        tool,
        note_level,
        note_id,
        idem: key.map(|k| (k, Fingerprint::of(tool, payload))),
        expected_version: expected.number,
        base: expected.extent,
        whole_tab: false,
        scope: VersionScope::Note,
        base_content_hash: None,
        rebase: false,
    }
}

/// Claims: refuses a write whose target another actor (a different subject) holds with a
/// live claim. A tab write is blocked by a claim on that tab or on the whole note; a
/// note-level write (`spec.note_level`) only by a whole-note claim. The holder's own
/// writes pass. A refusal is audited best effort (it has no commit to join).
fn check_claims(kv: &TenantKv, env: &mut dyn Env, who: &Identity, head: &Head, spec: &WriteSpec, target: Target, now: u64) -> Result<(), Refusal> {
    let tab_id = match target {
        Target::Tab(i) if !spec.note_level => Some(head.tabs[i].id.as_str()),
        _ => None,
    };
    let Some(c) = blocking_claim(head, who, tab_id, now) else {
        return Ok(());
    };
    Err(refused_by_claim(kv, env, who, head, spec, c, tab_id, now))
}

/// The `claim_conflict` of a write stopped by claim `c`, audited best effort.
#[allow(clippy::too_many_arguments)]
fn refused_by_claim(kv: &TenantKv, env: &mut dyn Env, who: &Identity, head: &Head, spec: &WriteSpec, c: &Claim, tab_id: Option<&str>, now: u64) -> Refusal {
    let rec = Record { event: "refused", action: spec.tool, at: now, note_id: &head.note_id, claim: Some(c), by: Some(who) }
        .json(json!({"error": "claim_conflict", "write_tab_id": tab_id}));
    let key = keys::claim_audit(&head.note_id, now, &rand8(env));
    let _ = put_record(kv, &key, &rec);
    conflict(head, c, "nothing was written")
}

/// Refuses a whole-tab write based on a part token (see [`crate::version`]):
/// nothing is written, and the refusal names the `max_chars` a whole read
/// of the tab needs.
fn check_base(head: &Head, spec: &WriteSpec, target: Target) -> Result<(), Refusal> {
    if !(spec.whole_tab && spec.base == Extent::Part) {
        return Ok(());
    }
    let tab = match target {
        Target::Tab(i) => &head.tabs[i],
        Target::Note => return Ok(()),
    };
    let read_max_chars = tab.size.clamp(1, crate::env::MAX_READ_CHARS as u64);
    Err(Refusal::new(
        Code::PartialBase,
        format!(
            "expected_version {}:part comes from a read that returned part of tab {}: a whole-tab write on it would delete what you did not read",
            spec.expected_version, tab.id
        ),
    )
    .with_version(head.version)
    .with("field", "expected_version")
    .with("tab_id", tab.id.clone())
    .with("read_max_chars", read_max_chars))
}

fn check_version(head: &Head, spec: &WriteSpec, target: Target) -> Result<(), Refusal> {
    let tab = match target {
        Target::Tab(i) => Some(&head.tabs[i]),
        Target::Note => None,
    };
    let current = match (spec.scope, tab) {
        (VersionScope::Note, _) => head.version,
        (VersionScope::Tab, Some(t)) => t.version,
        (VersionScope::Tab, None) => {
            return Err(Refusal::invalid("version_scope", "version_scope tab needs a tab target"));
        }
    };
    if spec.expected_version != current && !(spec.rebase && spec.expected_version < current) {
        let scope = if spec.scope == VersionScope::Tab { "tab" } else { "note" };
        return Err(Refusal::new(
            Code::VersionConflict,
            format!("the {scope} is at version {current}, not {}: someone wrote since your read", spec.expected_version),
        )
        .with_version(current)
        .with("version_scope", scope));
    }
    if let (Some(base), Some(t)) = (spec.base_content_hash, tab)
        && base != t.content_hash
    {
        return Err(Refusal::new(Code::ContentHashMismatch, "the tab's content changed since the read you based this write on")
            .with_version(current)
            .with("current_content_hash", t.content_hash.clone()));
    }
    Ok(())
}

/// Finds the record of an idempotency key: in the head, or spilled to its own key.
fn find_idem(kv: &TenantKv, head: &Head, key: &str) -> Out<Option<IdemRecord>> {
    if let Some(r) = head.idem.iter().find(|r| r.key == key) {
        return Ok(Some(r.clone()));
    }
    if head.idem_spilled == 0 {
        return Ok(None);
    }
    match kv.get(&keys::idem(&head.note_id, key))? {
        Some(bytes) => Ok(Some(decode("idempotency record", &bytes)?)),
        None => Ok(None),
    }
}

const NOTE_LIMIT: Limit = Limit { field: "note", message: "the note head would exceed the store's value limit" };

/// Runs one write as a transaction on the note head (see the module docs):
/// [`commit_as`] with untyped result fields, answered as JSON.
pub(crate) fn commit(
    kv: &TenantKv,
    env: &mut dyn Env,
    who: &Identity,
    spec: &WriteSpec,
    resolve: impl Fn(&Head) -> Out<Plan>,
    apply: impl FnMut(&mut Head, Target, &mut Ctx) -> Out<Change>,
) -> Out<Value> {
    commit_as(kv, env, who, spec, resolve, apply).map(Replayable::into_value)
}

/// Runs one write as a transaction on the note head (see the module docs),
/// its result fields typed `R`: the committed write's result, or the first
/// result of its idempotency key replayed.
pub(crate) fn commit_as<R: WriteFields>(
    kv: &TenantKv,
    env: &mut dyn Env,
    who: &Identity,
    spec: &WriteSpec,
    resolve: impl Fn(&Head) -> Out<Plan<R>>,
    mut apply: impl FnMut(&mut Head, Target, &mut Ctx) -> Out<Change<R>>,
) -> Out<Replayable<WriteResult<R>>> {
    let now = env.now_us();
    let busy = "the note is busy with other writes; nothing was written";
    let nonce = nonce(env);
    // What the attempt in flight charged to the tenant's stored bytes: taken
    // back when the attempt runs again (its swap did not land) or the write
    // ends refused; kept after a store failure, whose outcome is unknown.
    let charge = Charge::default();
    let out = transact(kv, spec.note_id, Reader::Caller(who), now, &nonce, &NOTE_LIMIT, busy, |head, _expired| {
        charge.refund(kv)?;
        if let Some(replay) = replay(kv, head, spec)? {
            return Ok(Decision::Leave(Replayable::Replayed(replay)));
        }
        let target = match resolve(head)? {
            Plan::Write(t) => t,
            Plan::Answer(v) => {
                check_claims(kv, env, who, head, spec, Target::Note, now)?;
                return Ok(Decision::Leave(Replayable::Fresh(v)));
            }
        };
        check_base(head, spec, target)?;
        check_claims(kv, env, who, head, spec, target, now)?;
        check_version(head, spec, target)?;

        // Content written by this attempt goes under the note's current blob
        // generation: the one the head it commits carries. It is gathered,
        // and goes out in one batch right before the swap.
        let staged = Staged::default();
        let staging = kv.staging(&staged);
        let blobs = staging.for_note_blobs(&head.note_id, head.blob_gen);
        let guards = section_claims::guards(head, now);
        let change = apply(head, target, &mut Ctx { kv: &blobs, env, who, now })?;
        match section_claims::enforce(kv, &blobs, head, &guards, who, now)? {
            Ok(()) => {}
            Err(Breach::Outside(refusal)) => return Err(refusal.into()),
            Err(Breach::Claimed(i)) => {
                let c = head.claims[i].clone();
                return Err(refused_by_claim(kv, env, who, head, spec, &c, c.tab_id.as_deref(), now).into());
            }
        }
        if let Some(gone) = change.removed_tab.as_ref().map(|t| t.id.clone()) {
            end_claims_on(kv, head, &gone, spec, who, now)?;
        }
        let result = record(&staging, head, spec, change, who, now)?;
        drop((blobs, staging));
        let staged = staged.into_inner();
        let stored: u64 = staged.iter().filter(|(k, _)| k.starts_with(keys::BLOBS)).map(|(_, v)| v.len() as u64).sum();
        if stored > 0 {
            charge.take(kv, env.quotas().bytes, stored, head.version - 1)?;
            head.stored_bytes = head.stored_bytes.saturating_add(stored);
            if let Some(e) = head.history.last_mut() {
                e.bytes = stored;
            }
        }
        Ok(Decision::CommitWith(Replayable::Fresh(result), staged))
    });
    if matches!(out, Err(Halt::Refused(_))) {
        charge.refund(kv)?;
    }
    out
}

/// The first result of this write, marked replayed, when its idempotency
/// key was used before for the same payload; `idempotency_key_reused` when
/// it names a different one. Checked first, before anything else of the write.
fn replay(kv: &TenantKv, head: &Head, spec: &WriteSpec) -> Out<Option<Value>> {
    let Some((k, fp)) = &spec.idem else { return Ok(None) };
    let Some(rec) = find_idem(kv, head, k)? else { return Ok(None) };
    if fp.matches(&rec.fp) {
        let mut result = rec.result()?;
        result["replayed"] = true.into();
        return Ok(Some(result));
    }
    Err(Refusal::new(Code::IdempotencyKeyReused, "this idempotency key already names a different write in this note")
        .with_version(head.version)
        .with("field", "idempotency_key")
        .into())
}

/// Claims on a deleted tab end with it (only its holder could delete it).
fn end_claims_on(kv: &TenantKv, head: &mut Head, gone: &str, spec: &WriteSpec, who: &Identity, now: u64) -> Out<()> {
    let (ended, kept): (Vec<Claim>, Vec<Claim>) = std::mem::take(&mut head.claims).into_iter().partition(|c| c.tab_id.as_deref() == Some(gone));
    head.claims = kept;
    for c in &ended {
        note_ended(head, &c.claim_id, "tab_deleted", now);
        write_ended(kv, &head.note_id, c, "tab_deleted", spec.tool, who, now)?;
    }
    Ok(())
}

/// How a write's result hands out its versions: as part tokens when the
/// writer cannot know the whole tab it leaves: its base was a part token, or
/// it was rebased over changes the writer never read (the mark's rule 3 in
/// [`crate::version`]).
fn result_extent(spec: &WriteSpec, fields: &impl WriteFields) -> Extent {
    if spec.base == Extent::Part || fields.rebased() { Extent::Part } else { Extent::Whole }
}

/// Bumps the versions and records the write in the head: the result, the history
/// entry and the idempotency record. Records leaving the head go to their own
/// immutable keys, in one batch, before the swap that drops them from the head.
fn record<R: WriteFields>(kv: &TenantKv, head: &mut Head, spec: &WriteSpec, change: Change<R>, who: &Identity, now: u64) -> Out<WriteResult<R>> {
    let by = Who::of(who);
    if head.approved_for_agents && head.agents_since.is_none() {
        // A head from before approvals were recorded: agents have seen it
        // from this version on, as `Head::visible_from` read it.
        head.agents_since = Some(head.version);
    }
    head.version += 1;
    assert!(!head.approved_for_agents || head.agents_since.is_some_and(|v| v <= head.version), "an approved note records since when");
    head.updated_at = now;
    head.updated_by = by.clone();
    let extent = result_extent(spec, &change.result);
    let tab = change.tab.map(|i| {
        let t = &mut head.tabs[i];
        t.version += 1;
        t.updated_at = now;
        t.updated_by = by.clone();
        TabState { tab_id: t.id.clone(), tab_version: Version::of(t.version, extent), content_hash: t.content_hash.clone() }
    });
    let result = WriteResult { fields: change.result, note_id: head.note_id.clone(), version: Version::of(head.version, extent), tab, replayed: false };

    let deleted = change.removed_tab.is_some();
    let snapshot = change.tab.map(|i| head.tabs[i].clone()).or(change.removed_tab);
    head.history.push(HistoryEntry {
        version: head.version,
        at: now,
        by,
        action: change.action.to_string(),
        tab_id: snapshot.as_ref().map(|t| t.id.clone()),
        content_hash: snapshot.as_ref().map(|t| t.content_hash.clone()),
        tab: snapshot,
        deleted,
        bytes: 0,
    });
    let mut spilled = Vec::new();
    while head.history.len() > HISTORY_IN_HEAD {
        let old = head.history.remove(0);
        spilled.push((keys::history(&head.note_id, old.version), encode(&old)));
    }
    if let Some((k, fp)) = &spec.idem {
        // Stored as the JSON object it serializes to (keys sorted), as it always was.
        let stored = serde_json::to_value(&result).expect("a result always serializes");
        let raw = serde_json::value::to_raw_value(&stored).expect("a result always serializes");
        head.idem.push(IdemRecord { key: k.to_string(), fp: fp.current.clone(), at: now, result: raw });
        while head.idem.len() > IDEM_IN_HEAD {
            let old = head.idem.remove(0);
            spilled.push((keys::idem(&head.note_id, &old.key), encode(&old)));
            head.idem_spilled += 1;
        }
    }
    if !spilled.is_empty() {
        kv.set_many(&spilled)?;
    }
    Ok(result)
}

#[cfg(test)]
mod stored_before {
    //! Records written before the `2:` fingerprint form still name their payload.
    use super::*;
    use crate::env::{ActorType, Role, SimEnv};
    use crate::{call_tool_value, rest};
    use cairn_kv::memory::MemoryStore;

    fn agent() -> Identity {
        Identity { tenant: "t".into(), subject: "a".into(), display_name: "A".into(), actor_type: ActorType::Agent, role: Role::Member }
    }

    fn edit_args(note: &str, text: &str) -> Value {
        json!({"note_id": note, "tab_id": "markdown", "expected_version": 1, "idempotency_key": "k1",
            "operation": "replace_text", "text": text})
    }

    /// Rewrites the stored head's records of key `k1` to the fingerprint form
    /// a store kept before `2:` (the payload with its whole text).
    fn downgrade_record(store: &MemoryStore, note: &str, text: &str) {
        let kv = TenantKv::new(store, "t").unwrap();
        let mut head: Head = decode("head", &kv.get(&keys::note(note)).unwrap().unwrap()).unwrap();
        let legacy = fingerprint(
            "edit_note_tab",
            &json!({"note_id": note, "tab_id": "markdown", "expected_version": 1, "operation": "replace_text",
                "version_scope": "note", "base_content_hash": null, "text": text, "data": null, "title": null, "body": null,
                "notes": null, "slides": null, "sheet_id": null, "start_row": null, "start_col": null, "values": null}),
        );
        let rec = head.idem.iter_mut().find(|r| r.key == "k1").unwrap();
        assert!(rec.fp.starts_with("2:"), "new records carry the hashed-text form");
        rec.fp = legacy;
        kv.set(&keys::note(note), &encode(&head)).unwrap();
    }

    #[test]
    fn a_key_recorded_with_the_old_fingerprint_form_still_replays_and_still_refuses_another_payload() {
        let store = MemoryStore::new();
        let mut env = SimEnv::new(7);
        let who = Identity { actor_type: ActorType::Human, ..agent() };
        let note = rest::create_note(&store, &mut env, &who, json!({"title": "n", "approved_for_agents": true})).unwrap().body["note_id"]
            .as_str()
            .unwrap()
            .to_string();
        let first = call_tool_value(&store, &mut env, &agent(), "edit_note_tab", edit_args(&note, "hello")).unwrap();
        assert_eq!(first["isError"], false, "{first}");
        downgrade_record(&store, &note, "hello");
        let again = call_tool_value(&store, &mut env, &agent(), "edit_note_tab", edit_args(&note, "hello")).unwrap();
        assert_eq!(again["structuredContent"]["replayed"], true, "{again}");
        assert_eq!(again["structuredContent"]["version"], first["structuredContent"]["version"]);
        let other = call_tool_value(&store, &mut env, &agent(), "edit_note_tab", edit_args(&note, "goodbye")).unwrap();
        assert_eq!(other["structuredContent"]["error"], "idempotency_key_reused", "{other}");
    }
}
