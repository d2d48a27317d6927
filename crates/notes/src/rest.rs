//! Helpers for the people's REST API. Same rules as the tools (tenant prefix, visibility,
//! one CAS per write, versions, optional idempotency keys), answered as an HTTP status and
//! a JSON body. A refusal body is the same object a tool refusal carries in
//! structuredContent (`error`, `message`, `current_version`, `next_step`, …).
//!
//! | helper | body | success |
//! |---|---|---|
//! | [`create_note`] | `{title, approved_for_agents?}` | 201 |
//! | [`get_note`] | — | 200 |
//! | [`write_tab`] | `{expected_version, text \| data, idempotency_key?, version_scope?, base_content_hash?}` | 200 |
//! | [`delete_tab`] | `{expected_version, idempotency_key?}` | 200 |
//! | [`update_tab`] | `{expected_version, label?, position?, idempotency_key?}` | 200 |
//! | [`attach_file`] | `{expected_version, name, media_type, size_bytes, idempotency_key?}` | 201 |
//! | [`claim_note`] | `{tab_id?, ttl_seconds?}` | 201 granted, 200 renewed (heartbeat) |
//! | [`renew_claim`] | `{ttl_seconds?}` | 200 |
//! | [`release_claim`] | — | 200 (`already_released` on a repeat) |
//! | [`post_claim_note`] | `{text}` | 201 |
//! | [`list_claims`] | — (optional note id) | 200 (presence board) |
//! | [`force_release_claim`] | — | 200; 403 unless the caller is a human admin |
//! | [`note_history`] | — (`tab_id`, `before`, `limit` in the query) | 200, newest first |
//! | [`tab_version`] | — | 200: the tab at a note version |
//! | [`tab_diff`] | — (`from`, `to` in the query) | 200: a line diff |
//! | [`restore_tab`] | `{from_version, expected_version, idempotency_key?}` | 200: a new version |
//! | [`merge_draft`] | `{base_version, text}` | 200: the three-way merge; writes nothing |
//! | [`update_note`] | `{expected_version, approved_for_agents?, title?, idempotency_key?}` | 200: a new version |
//! | [`list_notes`] | — (`cursor`, `limit` in the query) | 200: the `list_notes` tool's result |
//! | [`read_tab`] | — (`at_version` in the query) | 200: the `read_note_tab` tool's result |
//! | [`read_range`] | — (`range` such as `A1:C3`, `sheet_id` in the query) | 200: the `read_sheet_range` tool's result |
//! | [`edit_tab`] | the `edit_note_tab` tool's arguments but `note_id`, `tab_id` | 200 |
//! | [`create_tab`] | the `create_note_tab` tool's arguments but `note_id` | 201 |
//! | [`add_source`] | the `add_note_source` tool's arguments but `note_id` | 201 added, 200 `already_attached` |
//! | [`list_attachments`] | — (`kind`, `cursor`, `limit` in the query) | 200: the `list_note_attachments` tool's result |
//!
//! Refusals: 400 `invalid_argument`, 403 `forbidden`, 404 `not_found`, 409
//! `version_conflict`, `content_hash_mismatch`, `idempotency_key_reused`, `claim_conflict`
//! (with `claim_id`, `held_by`, `actor_type`, `since`, `expires_at`), 413 `too_large`,
//! 503 `busy`. The helpers from [`list_notes`] on run the agents' tools through
//! [`crate::call_tool_value`], so their rules are the tools' own; a tool's refusal comes
//! back with its code's status and the same body (`tool_reply`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use cairn_kv::Store;

use crate::args::{
    ClaimRef, MAX_CLAIM_NOTE_CHARS, MAX_KEY_CHARS, MAX_LABEL_CHARS, MAX_NOTE_TITLE_CHARS, VersionScope, check_chars,
    check_id, check_ttl, parse, parse_claim_id,
};
use crate::claims;
use crate::content::{load_list, put_doc};
use crate::edit::{Edit, edit_tab_with, new_tab};
use crate::env::{ActorType, Env, Identity};
use crate::head::load_head;
use crate::keys;
use crate::kv::TenantKv;
use crate::model::{FileMeta, Head, HistoryEntry, TabKind, Who, encode, new_note_id, rand8, rfc3339, sha_hex, tab_provenance, tab_summary};
use crate::note_index::index_add;
use crate::dirty;
use crate::refusal::{Code, Fail, Failure, NOTICE, Out, Refusal};
use crate::write::{Change, Fingerprint, Plan, Target, WriteSpec, commit, fingerprint, note_scope};

/// An HTTP status and a JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct RestReply {
    /// HTTP status code.
    pub status: u16,
    /// JSON body.
    pub body: Value,
}

fn reply(out: Out<Value>, ok_status: u16) -> Result<RestReply, Failure> {
    match out {
        Ok(body) => Ok(RestReply {
            status: ok_status,
            body,
        }),
        Err(Fail::Refused(r)) => Ok(refused(&r)),
        Err(Fail::Failed(e)) => Err(e),
    }
}

/// A refusal as a REST reply: its code's status and its body.
fn refused(r: &Refusal) -> RestReply {
    RestReply { status: r.code.http_status(), body: r.body() }
}

/// Every REST helper's frame: the caller's tenant view and the ids checked,
/// then `f`, answered with its status (a refusal with its code's status).
fn answer_with(
    store: &dyn Store,
    who: &Identity,
    ids: &[(&str, &str)],
    f: impl FnOnce(&TenantKv) -> Out<(u16, Value)>,
) -> Result<RestReply, Failure> {
    let out = (|| {
        let kv = crate::tenant_kv(store, who)?;
        for (field, id) in ids {
            check_id(field, id)?;
        }
        f(&kv)
    })();
    match out {
        Ok((status, body)) => Ok(RestReply { status, body }),
        Err(e) => reply(Err(e), 0),
    }
}

/// [`answer_with`] for helpers that answer one status on success.
fn answer(
    store: &dyn Store,
    who: &Identity,
    ids: &[(&str, &str)],
    ok: u16,
    f: impl FnOnce(&TenantKv) -> Out<Value>,
) -> Result<RestReply, Failure> {
    answer_with(store, who, ids, |kv| Ok((ok, f(kv)?)))
}

/// An agent asking to approve a note (or withdraw an approval).
fn forbidden_approval() -> crate::refusal::Fail {
    Refusal::new(Code::Forbidden, "only a person approves a note for agents or withdraws the approval")
        .with("field", "approved_for_agents")
        .with_next_step("leave approved_for_agents out; ask a person to change it")
        .into()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateNote {
    title: String,
    #[serde(default)]
    approved_for_agents: bool,
}

/// Creates a note with its fixed tabs `markdown`, `files` and `sources` (version 1).
/// Body: `{"title": 1-200 chars, "approved_for_agents": bool (default false)}`.
/// Approval is a person's decision, here as in [`update_note`]:
/// `approved_for_agents: true` from an agent is `forbidden`.
/// 201 with `{note_id, title, approved_for_agents, version, tabs}`.
pub fn create_note(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    args: Value,
) -> Result<RestReply, Failure> {
    answer(kv, who, &[], 201, |kv| {
        let a: CreateNote = parse(args)?;
        check_chars("title", &a.title, 1, MAX_NOTE_TITLE_CHARS)?;
        if a.approved_for_agents && who.actor_type != ActorType::Human {
            return Err(forbidden_approval());
        }
        let quota = env.quotas().notes;
        let (_, notes) = crate::note_index::index_slice(kv, 0, 0)?;
        if notes as u64 >= quota {
            return Err(Refusal::new(Code::QuotaExceeded, format!("the tenant has {notes} notes, its quota (quota_notes)"))
                .with("quota", "quota_notes")
                .with("limit", quota)
                .with("used", notes as u64)
                .into());
        }
        let now = env.now_us();
        let note_id = new_note_id(env);
        let by = Who::of(who);
        let tabs = [
            ("markdown", TabKind::Markdown, "Note"),
            ("files", TabKind::Files, "Files"),
            ("sources", TabKind::Sources, "Sources"),
        ]
        .into_iter()
        .map(|(id, kind, label)| {
            let mut t = new_tab(id.into(), kind, label.into(), who, now);
            t.version = 1;
            t
        })
        .collect();
        let head = Head {
            note_id: note_id.clone(),
            title: a.title,
            approved_for_agents: a.approved_for_agents,
            agents_since: a.approved_for_agents.then_some(1),
            version: 1,
            created_at: now,
            author: by.clone(),
            updated_at: now,
            updated_by: by.clone(),
            tab_seq: 0,
            attach_seq: 0,
            tabs,
            claims: Vec::new(),
            claim_seq: 0,
            ended: Vec::new(),
            claims_due: None,
            rev: 1,
            idem: Vec::new(),
            idem_spilled: 0,
            history: vec![HistoryEntry {
                version: 1,
                at: now,
                by,
                action: "create_note".into(),
                tab_id: None,
                content_hash: None,
                bytes: 0,
                tab: None,
                deleted: false,
            }],
            history_floor: 0,
            history_bases: Default::default(),
            blob_gen: 0,
            stored_bytes: 0,
            commits: Vec::new(),
        };
        // The id is unique, so no other writer creates this key; the index entry goes
        // first, and listings skip an entry whose head is not there (yet).
        index_add(kv, &note_id)?;
        if let Some((marker_key, at)) = dirty::marker(&dirty::Before::nothing(), &head, now) {
            kv.set(&marker_key, &at)?;
        }
        kv.set(&keys::note(&note_id), &encode(&head))?;
        Ok(json!({
            "note_id": head.note_id,
            "title": head.title,
            "approved_for_agents": head.approved_for_agents,
            "version": head.version,
            "tabs": head.tabs.iter().map(tab_summary).collect::<Vec<_>>(),
        }))
    })
}

/// Reads a note with its tabs and their versions (contents: the `read_note_tab` tool).
/// 200 with `{note_id, title, approved_for_agents, version, provenance, tabs, notice}`.
pub fn get_note(kv: &dyn Store, who: &Identity, note_id: &str) -> Result<RestReply, Failure> {
    answer(kv, who, &[("note_id", note_id)], 200, |kv| {
        let head = load_head(kv, who, note_id)?;
        Ok(json!({
            "note_id": head.note_id,
            "title": head.title,
            "approved_for_agents": head.approved_for_agents,
            "version": head.version,
            "created_at": rfc3339(head.created_at),
            "provenance": {
                "author": head.author.label(),
                "updated_at": rfc3339(head.updated_at),
                "updated_by": head.updated_by.label(),
                "content_hash": sha_hex(head.title.as_bytes()),
            },
            "tabs": head.tabs.iter().map(|t| {
                let mut s = tab_summary(t);
                s["provenance"] = tab_provenance(t);
                s
            }).collect::<Vec<_>>(),
            "notice": NOTICE,
        }))
    })
}

fn check_opt_key(k: &Option<String>) -> Result<(), Refusal> {
    k.as_deref().map_or(Ok(()), |k| {
        check_chars("idempotency_key", k, 1, MAX_KEY_CHARS)
    })
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteTab {
    expected_version: u64,
    #[serde(default)]
    idempotency_key: Option<String>,
    #[serde(default)]
    version_scope: Option<VersionScope>,
    #[serde(default)]
    base_content_hash: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    data: Option<Map<String, Value>>,
}

/// Replaces a tab's whole content: `text` for the markdown tab, `data` for a slides or
/// sheet tab (the shapes of `edit_note_tab`'s `replace_tab_data`).
/// 200 with `{note_id, tab_id, version, tab_version, content_hash, replayed}`.
pub fn write_tab(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    note_id: &str,
    tab_id: &str,
    args: Value,
) -> Result<RestReply, Failure> {
    answer(kv, who, &[("note_id", note_id), ("tab_id", tab_id)], 200, |kv| {
        let mut a: WriteTab = parse(args)?;
        check_opt_key(&a.idempotency_key)?;
        let edit = match (a.text.take(), a.data.take()) {
            (Some(t), None) => {
                let hash = sha_hex(t.as_bytes());
                Edit::Text(t, hash)
            }
            (None, Some(d)) => Edit::Data(d),
            _ => {
                return Err(Refusal::invalid(
                    "text",
                    "send exactly one of text (markdown tab) or data (slides or sheet tab)",
                )
                .into());
            }
        };
        let args = serde_json::to_value(&a).expect("serializes");
        let payload = |edit: Value| json!({"tab_id": tab_id, "args": args, "edit": edit});
        let fp = match &edit {
            Edit::Text(t, hash) => {
                let current = payload(json!({"text": hash}));
                Fingerprint::hashed_text("write_tab", &current, move || fingerprint("write_tab", &payload(json!({"text": t}))))
            }
            Edit::Data(d) => Fingerprint::of("write_tab", &payload(json!({"data": d}))),
            _ => Fingerprint::of("write_tab", &payload(Value::Null)),
        };
        let spec = WriteSpec {
            tool: "write_tab",
            note_level: false,
            note_id,
            idem: a.idempotency_key.as_deref().map(|k| (k, fp)),
            expected_version: a.expected_version,
            scope: a.version_scope.unwrap_or_default(),
            base_content_hash: a.base_content_hash.as_deref(),
            rebase: false,
        };
        edit_tab_with(kv, env, who, &spec, tab_id, &edit)
    })
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteTab {
    expected_version: u64,
    #[serde(default)]
    idempotency_key: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateTab {
    expected_version: u64,
    #[serde(default)]
    idempotency_key: Option<String>,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    position: Option<usize>,
}

/// Renames a slides or sheet tab (`label`) and/or moves any tab to `position` (0-based,
/// in the note's tab strip), checked against the note's version. The tab keeps its id and
/// its content version: a handle by ID still finds it, and a tab-scope edit of its
/// content does not conflict with a rename or a move. Claim-aware on that tab.
/// 200 with `{note_id, tab_id, label, position, version, replayed}`.
pub fn update_tab(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    note_id: &str,
    tab_id: &str,
    args: Value,
) -> Result<RestReply, Failure> {
    answer(kv, who, &[("note_id", note_id), ("tab_id", tab_id)], 200, |kv| {
        let a: UpdateTab = parse(args)?;
        check_opt_key(&a.idempotency_key)?;
        if a.label.is_none() && a.position.is_none() {
            return Err(Refusal::invalid("label", "send a new label, a new position, or both").into());
        }
        if let Some(l) = &a.label {
            check_chars("label", l, 1, MAX_LABEL_CHARS)?;
        }
        let payload = json!({"tab_id": tab_id, "expected_version": a.expected_version, "label": a.label, "position": a.position});
        let spec = note_scope("update_tab", false, note_id, a.idempotency_key.as_deref(), a.expected_version, &payload);
        commit(
            kv,
            env,
            who,
            &spec,
            |head| {
                let i = head.tab_index(tab_id).ok_or_else(|| Refusal::not_found("tab"))?;
                if a.label.is_some() && !matches!(head.tabs[i].kind, TabKind::Slides | TabKind::Sheet) {
                    return Err(Refusal::invalid("label", "the markdown, files and sources tabs keep their labels").into());
                }
                if let Some(p) = a.position
                    && p >= head.tabs.len()
                {
                    return Err(Refusal::invalid(
                        "position",
                        format!("position is 0-based and this note has {} tabs: 0 to {}", head.tabs.len(), head.tabs.len() - 1),
                    )
                    .into());
                }
                Ok(Plan::Write(Target::Tab(i)))
            },
            |head, target, _| {
                let Target::Tab(mut i) = target else {
                    unreachable!("a tab target")
                };
                if let Some(l) = &a.label {
                    head.tabs[i].label = l.clone();
                }
                if let Some(p) = a.position {
                    let tab = head.tabs.remove(i);
                    head.tabs.insert(p, tab);
                    i = p;
                }
                let mut result = Map::new();
                result.insert("tab_id".into(), head.tabs[i].id.clone().into());
                result.insert("label".into(), head.tabs[i].label.clone().into());
                result.insert("position".into(), i.into());
                Ok(Change { action: "update_tab", tab: None, removed_tab: None, result })
            },
        )
    })
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateNote {
    expected_version: u64,
    #[serde(default)]
    idempotency_key: Option<String>,
    #[serde(default)]
    approved_for_agents: Option<bool>,
    #[serde(default)]
    title: Option<String>,
}

/// Approves a note for agents (or withdraws it: `approved_for_agents`) and/or renames it
/// (`title`, 1-200 characters as in [`create_note`]): one ordinary conditional write
/// against the note's version, keyed by an optional idempotency key, that commits a new
/// version with the history action `update_note`. A write to the note as a whole: a
/// claim on the whole note by someone else refuses it, a claim on one tab does not.
/// Approval is a person's decision: `approved_for_agents` from an agent is `forbidden`.
/// 200 with `{note_id, title, approved_for_agents, version, replayed}`.
pub fn update_note(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, args: Value) -> Result<RestReply, Failure> {
    answer(kv, who, &[("note_id", note_id)], 200, |kv| {
        let a: UpdateNote = parse(args)?;
        check_opt_key(&a.idempotency_key)?;
        if a.approved_for_agents.is_none() && a.title.is_none() {
            return Err(Refusal::invalid("approved_for_agents", "send approved_for_agents, a new title, or both").into());
        }
        if let Some(t) = &a.title {
            check_chars("title", t, 1, MAX_NOTE_TITLE_CHARS)?;
        }
        if a.approved_for_agents.is_some() && who.actor_type != ActorType::Human {
            return Err(forbidden_approval());
        }
        let payload = json!({"expected_version": a.expected_version, "approved_for_agents": a.approved_for_agents, "title": a.title});
        let spec = note_scope("update_note", true, note_id, a.idempotency_key.as_deref(), a.expected_version, &payload);
        commit(
            kv,
            env,
            who,
            &spec,
            |_| Ok(Plan::Write(Target::Note)),
            |head, _, _| {
                if let Some(t) = &a.title {
                    head.title = t.clone();
                }
                if let Some(approved) = a.approved_for_agents {
                    if approved && !head.approved_for_agents {
                        // Agents see the note from the version this commit makes.
                        head.agents_since = Some(head.version + 1);
                    }
                    head.approved_for_agents = approved;
                }
                let mut result = Map::new();
                result.insert("title".into(), head.title.clone().into());
                result.insert("approved_for_agents".into(), head.approved_for_agents.into());
                Ok(Change { action: "update_note", tab: None, removed_tab: None, result })
            },
        )
    })
}

/// Deletes a slides or sheet tab (the fixed tabs stay). Its id is never handed out again.
/// 200 with `{note_id, deleted_tab_id, version, replayed}`.
pub fn delete_tab(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    note_id: &str,
    tab_id: &str,
    args: Value,
) -> Result<RestReply, Failure> {
    answer(kv, who, &[("note_id", note_id), ("tab_id", tab_id)], 200, |kv| {
        let a: DeleteTab = parse(args)?;
        check_opt_key(&a.idempotency_key)?;
        let payload = json!({"tab_id": tab_id, "expected_version": a.expected_version});
        let spec = note_scope("delete_tab", false, note_id, a.idempotency_key.as_deref(), a.expected_version, &payload);
        commit(
            kv,
            env,
            who,
            &spec,
            |head| {
                let i = head
                    .tab_index(tab_id)
                    .ok_or_else(|| Refusal::not_found("tab"))?;
                if !matches!(head.tabs[i].kind, TabKind::Slides | TabKind::Sheet) {
                    return Err(Refusal::invalid(
                        "tab_id",
                        "the markdown, files and sources tabs cannot be deleted",
                    )
                    .into());
                }
                Ok(Plan::Write(Target::Tab(i)))
            },
            |head, target, _| {
                let Target::Tab(i) = target else {
                    unreachable!("a tab target")
                };
                let tab = head.tabs.remove(i);
                let mut result = Map::new();
                result.insert("deleted_tab_id".into(), tab.id.clone().into());
                Ok(Change {
                    action: "delete_tab",
                    tab: None,
                    removed_tab: Some(tab),
                    result,
                })
            },
        )
    })
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AttachFile {
    expected_version: u64,
    #[serde(default)]
    idempotency_key: Option<String>,
    name: String,
    media_type: String,
    size_bytes: u64,
}

/// Records a file attachment's metadata (the bytes live elsewhere; agents only ever see
/// this metadata). 201 with `{note_id, file_id, version, tab_version, replayed}`.
pub fn attach_file(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    note_id: &str,
    args: Value,
) -> Result<RestReply, Failure> {
    answer(kv, who, &[("note_id", note_id)], 201, |kv| {
        let a: AttachFile = parse(args)?;
        check_opt_key(&a.idempotency_key)?;
        check_chars("name", &a.name, 1, 255)?;
        check_chars("media_type", &a.media_type, 1, 100)?;
        let mut payload = serde_json::to_value(&a).expect("serializes");
        payload
            .as_object_mut()
            .expect("object")
            .remove("idempotency_key");
        let spec = note_scope("attach_file", true, note_id, a.idempotency_key.as_deref(), a.expected_version, &payload);
        commit(
            kv,
            env,
            who,
            &spec,
            |head| {
                let i = head
                    .tabs
                    .iter()
                    .position(|t| t.kind == TabKind::Files)
                    .ok_or_else(|| Refusal::not_found("files tab"))?;
                Ok(Plan::Write(Target::Tab(i)))
            },
            |head, target, ctx| {
                let Target::Tab(i) = target else {
                    unreachable!("a tab target")
                };
                let mut list: Vec<FileMeta> = load_list(ctx.kv, &head.tabs[i])?;
                head.attach_seq += 1;
                let file_id = format!("file-{}-{}", head.attach_seq, rand8(ctx.env));
                list.push(FileMeta {
                    file_id: file_id.clone(),
                    name: a.name.clone(),
                    media_type: a.media_type.clone(),
                    size_bytes: a.size_bytes,
                    added_at: ctx.now,
                    added_by: Who::of(ctx.who),
                });
                let (hash, blobs) = put_doc(ctx.kv, &encode(&list), "name")?;
                head.tabs[i].content_hash = hash;
                head.tabs[i].blobs = blobs;
                let mut result = Map::new();
                result.insert("file_id".into(), file_id.into());
                Ok(Change {
                    action: "attach_file",
                    tab: Some(i),
                    removed_tab: None,
                    result,
                })
            },
        )
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimBody {
    #[serde(default)]
    tab_id: Option<String>,
    #[serde(default)]
    ttl_seconds: Option<u64>,
}

/// Claims a note (or one tab with `tab_id`) for `ttl_seconds` (1-3600, default 600).
/// 201 with `{claim_id, note_id, tab_id, held_by, actor_type, since, expires_at,
/// ttl_seconds, renewed: false}` when granted; 200 with the same claim and `renewed: true`
/// when the caller already held it (a heartbeat); 409 `claim_conflict` naming the holder.
pub fn claim_note(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    note_id: &str,
    args: Value,
) -> Result<RestReply, Failure> {
    answer_with(kv, who, &[("note_id", note_id)], |kv| {
        let a: ClaimBody = parse(args)?;
        if let Some(t) = &a.tab_id {
            check_id("tab_id", t)?;
        }
        check_ttl(a.ttl_seconds)?;
        let c = claims::claim(kv, env, who, note_id, a.tab_id.as_deref(), a.ttl_seconds, "rest_claim_note")?;
        Ok((if c.renewed { 200 } else { 201 }, c.result))
    })
}

/// A REST helper on one claim: the caller's tenant view and the parsed claim id, then
/// `f`, answered with `ok` on success.
fn on_claim(
    kv: &dyn Store,
    who: &Identity,
    claim_id: &str,
    ok: u16,
    f: impl FnOnce(&TenantKv, &ClaimRef) -> Out<Value>,
) -> Result<RestReply, Failure> {
    answer(kv, who, &[], ok, |kv| f(kv, &parse_claim_id(claim_id)?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RenewBody {
    #[serde(default)]
    ttl_seconds: Option<u64>,
}

/// Extends a live claim the caller holds (`{ttl_seconds?}`, default: the claim's ttl).
/// 200 with the claim; 403 `forbidden` for someone else's; 404 when it is not live.
pub fn renew_claim(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    claim_id: &str,
    args: Value,
) -> Result<RestReply, Failure> {
    on_claim(kv, who, claim_id, 200, |kv, r| {
        let a: RenewBody = parse(args)?;
        check_ttl(a.ttl_seconds)?;
        claims::renew(kv, env, who, claim_id, r, a.ttl_seconds, "rest_renew_claim")
    })
}

/// Releases a claim the caller holds. 200 with `{claim_id, note_id, tab_id, released,
/// already_released, reason}`; a repeat is 200 with `already_released: true`; 403 for
/// someone else's claim.
pub fn release_claim(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    claim_id: &str,
) -> Result<RestReply, Failure> {
    on_claim(kv, who, claim_id, 200, |kv, r| claims::release(kv, env, who, claim_id, r, false, "rest_release_claim"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoteBody {
    text: String,
}

/// Posts an ephemeral note (`{text}`, 1-2000 characters) on a live claim the caller holds.
/// 201 with `{claim_id, note_id, tab_id, posted_at, content_hash, notes_on_claim,
/// dropped_oldest, expires_at}`.
pub fn post_claim_note(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    claim_id: &str,
    args: Value,
) -> Result<RestReply, Failure> {
    on_claim(kv, who, claim_id, 201, |kv, r| {
        let a: NoteBody = parse(args)?;
        check_chars("text", &a.text, 1, MAX_CLAIM_NOTE_CHARS)?;
        claims::post_note(kv, env, who, claim_id, r, &a.text, "rest_post_claim_note")
    })
}

/// The presence board: live claims of the caller's tenant, of one note or of every note
/// the caller may see. 200 with `{claims: [{claim_id, note_id, note_title, tab_id,
/// tab_label, held_by, actor_type, since, expires_at, ttl_seconds, renewed, yours, notes:
/// [{text, posted_at, provenance}]}], truncated, as_of, notice}`.
pub fn list_claims(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    note_id: Option<&str>,
) -> Result<RestReply, Failure> {
    let ids: Vec<(&str, &str)> = note_id.map(|n| ("note_id", n)).into_iter().collect();
    answer(kv, who, &ids, 200, |kv| claims::board(kv, who, env.now_us(), note_id))
}

/// Force-releases anyone's claim: only for a caller with role Admin AND actor type Human
/// (a role check; no token scope grants it). Audited with who did it (event `forced`).
/// 200 with the release result (`forced: true`, `forced_by`); 403 `forbidden` otherwise.
pub fn force_release_claim(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    claim_id: &str,
) -> Result<RestReply, Failure> {
    answer(kv, who, &[], 200, |kv| {
        claims::force_release(kv, env, who, claim_id)
    })
}

/// A tab's content as lines of text, for diffs: the markdown text itself;
/// slides, sheets and attachment lists as their stored JSON, one item per line.
fn tab_text(kv: &TenantKv, tab: &crate::model::Tab) -> Out<String> {
    Ok(match tab.kind {
        TabKind::Markdown => crate::content::load_text(kv, tab)?,
        _ => {
            let doc = crate::content::get_doc(kv, &tab.blobs)?;
            match serde_json::from_slice::<Value>(&doc) {
                Ok(v) => serde_json::to_string_pretty(&v).unwrap_or_default() + "\n",
                Err(_) => String::from_utf8_lossy(&doc).into_owned(),
            }
        }
    })
}

/// Parses an optional positive integer query parameter.
fn query_u64(field: &str, v: Option<&str>) -> Result<Option<u64>, Refusal> {
    match v {
        None => Ok(None),
        Some(s) => s.parse::<u64>().ok().filter(|n| *n >= 1).map(Some).ok_or_else(|| {
            Refusal::invalid(field, format!("{field} must be a positive whole number, not {s:?}"))
        }),
    }
}

/// A note's history, newest first (`GET /api/v1/notes/{note}/history?tab_id=&before=&limit=`):
/// 200 with `{note_id, version, entries, next_before}`; pass `next_before` back as `before`.
pub fn note_history(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    note_id: &str,
    tab_id: Option<&str>,
    before: Option<&str>,
    limit: Option<&str>,
) -> Result<RestReply, Failure> {
    let now = crate::history::Window::of(&*env);
    answer(kv, who, &[("note_id", note_id)], 200, |kv| {
        if let Some(t) = tab_id {
            check_id("tab_id", t)?;
        }
        let before = query_u64("before", before)?;
        let limit = query_u64("limit", limit)?.unwrap_or(crate::args::DEFAULT_LIMIT);
        crate::args::check_limit(Some(limit))?;
        let head = load_head(kv, who, note_id)?;
        let (entries, next) = crate::history::page(kv, &head, crate::head::Reader::Caller(who), tab_id, before, limit as usize, now)?;
        let entries: Vec<Value> = entries.iter().map(crate::history::entry_json).collect();
        Ok(json!({"note_id": head.note_id, "version": head.version, "entries": entries, "next_before": next, "notice": NOTICE}))
    })
}

/// One past version of a tab (`GET …/tabs/{tab}/versions/{v}`, `v` a note
/// version): what `read_note_tab` answers with `at_version`.
pub fn tab_version(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, tab_id: &str, version: &str) -> Result<RestReply, Failure> {
    answer(kv, who, &[], 200, |kv| {
        let v = query_u64("version", Some(version))?;
        crate::tools::read_tab(&mut crate::tools::Call { kv, env, who }, note_id, tab_id, v)
    })
}

/// A line diff of a tab between two note versions
/// (`GET …/tabs/{tab}/diff?from=&to=`, `to` default the current version):
/// 200 with `{from, to, unified, hunks: [{old_start, old_lines, new_start, new_lines, lines: [{op, text}]}]}`.
pub fn tab_diff(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    note_id: &str,
    tab_id: &str,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<RestReply, Failure> {
    let now = crate::history::Window::of(&*env);
    answer(kv, who, &[("note_id", note_id), ("tab_id", tab_id)], 200, |kv| {
        let from = query_u64("from", from)?.ok_or_else(|| Refusal::invalid("from", "from (a note version) is required"))?;
        let head = load_head(kv, who, note_id)?;
        let to = query_u64("to", to)?.unwrap_or(head.version);
        if from > to {
            return Err(Refusal::invalid("from", format!("a diff goes forward: from ({from}) must not be after to ({to})")).into());
        }
        let old = crate::history::tab_at(kv, &head, crate::head::Reader::Caller(who), tab_id, from, now)?;
        let new = crate::history::tab_at(kv, &head, crate::head::Reader::Caller(who), tab_id, to, now)?;
        let (a, b) = (tab_text(kv, &old)?, tab_text(kv, &new)?);
        let diff = crate::diff::lines(a.as_str(), b.as_str(), crate::diff::Purpose::Compare)?;
        let hunks: Vec<Value> = diff
            .unified_diff()
            .context_radius(3)
            .iter_hunks()
            .map(|h| {
                let ops = h.ops();
                let (first, last) = (ops.first(), ops.last());
                let old_start = first.map_or(0, |o| o.old_range().start);
                let new_start = first.map_or(0, |o| o.new_range().start);
                let old_end = last.map_or(0, |o| o.old_range().end);
                let new_end = last.map_or(0, |o| o.new_range().end);
                let lines: Vec<Value> = h
                    .iter_changes()
                    .map(|c| {
                        let op = match c.tag() {
                            similar::ChangeTag::Equal => "equal",
                            similar::ChangeTag::Delete => "delete",
                            similar::ChangeTag::Insert => "insert",
                        };
                        json!({"op": op, "text": c.value().trim_end_matches('\n')})
                    })
                    .collect();
                json!({"old_start": old_start + 1, "old_lines": old_end - old_start, "new_start": new_start + 1,
                    "new_lines": new_end - new_start, "lines": lines})
            })
            .collect();
        let unified = diff.unified_diff().context_radius(3).header(&format!("version {from}"), &format!("version {to}")).to_string();
        Ok(json!({"note_id": head.note_id, "tab_id": tab_id, "from": from, "to": to,
            "from_content_hash": old.content_hash, "to_content_hash": new.content_hash,
            "unified": unified, "hunks": hunks, "notice": NOTICE}))
    })
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Restore {
    from_version: u64,
    expected_version: u64,
    #[serde(default)]
    idempotency_key: Option<String>,
}

/// Restores a tab to its content at note version `from_version`
/// (`POST …/tabs/{tab}/restore`): an ordinary conditional, keyed,
/// claim-aware write that commits a new version (history is never
/// rewritten); a deleted tab comes back under its old id, at the end of the
/// tab strip. 200 with `{note_id, tab_id, version, tab_version, content_hash, restored_from, replayed}`.
pub fn restore_tab(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, tab_id: &str, args: Value) -> Result<RestReply, Failure> {
    let now = crate::history::Window::of(&*env);
    answer(kv, who, &[("note_id", note_id), ("tab_id", tab_id)], 200, |kv| {
        let a: Restore = parse(args)?;
        check_opt_key(&a.idempotency_key)?;
        if a.from_version == 0 {
            return Err(Refusal::invalid("from_version", "from_version must be a note version from the history (1 or more)").into());
        }
        let payload = json!({"tab_id": tab_id, "from_version": a.from_version, "expected_version": a.expected_version});
        let spec = note_scope("restore_tab", false, note_id, a.idempotency_key.as_deref(), a.expected_version, &payload);
        commit(
            kv,
            env,
            who,
            &spec,
            |head| {
                if a.from_version > head.version {
                    return Err(Refusal::invalid("from_version", format!("from_version {} is after the note's version {}", a.from_version, head.version))
                        .with_version(head.version)
                        .into());
                }
                Ok(Plan::Write(head.tab_index(tab_id).map_or(Target::Note, Target::Tab)))
            },
            |head, target, ctx| {
                let then = crate::history::tab_at(ctx.kv, head, crate::head::Reader::Caller(who), tab_id, a.from_version, now)?;
                let i = match target {
                    Target::Tab(i) => {
                        let t = &mut head.tabs[i];
                        t.content_hash = then.content_hash.clone();
                        t.blobs = then.blobs.clone();
                        t.size = then.size;
                        i
                    }
                    Target::Note => {
                        if head.tabs.len() >= crate::edit::MAX_TABS {
                            return Err(Refusal::too_large("tab_id", "the note already has the most tabs it may have").into());
                        }
                        head.tabs.push(then.clone());
                        head.tabs.len() - 1
                    }
                };
                let mut result = Map::new();
                result.insert("restored_from".into(), a.from_version.into());
                if matches!(target, Target::Note) {
                    result.insert("undeleted".into(), true.into());
                }
                Ok(Change { action: "restore", tab: Some(i), removed_tab: None, result })
            },
        )
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MergeDraft {
    base_version: u64,
    text: String,
}

/// The three-way merge of a person's draft of the markdown tab (`text`,
/// started from note version `base_version`) with the text now
/// (`POST …/tabs/{tab}/merge`). Writes nothing. 200 with `{merged, clean,
/// conflicts: [{base_start, base, theirs, mine}], version, tab_version,
/// content_hash}`: save `merged` (after resolving any conflicts) with the
/// `version` returned here as `expected_version`.
pub fn merge_draft(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, tab_id: &str, args: Value) -> Result<RestReply, Failure> {
    let now = crate::history::Window::of(&*env);
    answer(kv, who, &[("note_id", note_id), ("tab_id", tab_id)], 200, |kv| {
        let a: MergeDraft = parse(args)?;
        crate::content::check_doc_size(a.text.as_bytes(), "text")?;
        let head = load_head(kv, who, note_id)?;
        let tab = crate::tools::find_tab(&head, tab_id)?;
        if tab.kind != TabKind::Markdown {
            return Err(Refusal::invalid("tab_id", format!("merge works on the markdown tab, not a {} tab", tab.kind.as_str())).into());
        }
        if a.base_version == 0 || a.base_version > head.version {
            return Err(Refusal::invalid("base_version", format!("base_version must be between 1 and the note's version {}", head.version))
                .with_version(head.version)
                .into());
        }
        let base_tab = crate::history::tab_at(kv, &head, crate::head::Reader::Caller(who), tab_id, a.base_version, now)?;
        let base = crate::content::load_text(kv, &base_tab)?;
        let theirs = crate::content::load_text(kv, tab)?;
        let mut out = crate::merge::merge3(&base, &theirs, &a.text)?;
        out["note_id"] = head.note_id.clone().into();
        out["tab_id"] = tab.id.clone().into();
        out["version"] = head.version.into();
        out["tab_version"] = tab.version.into();
        out["content_hash"] = tab.content_hash.clone().into();
        out["base_version"] = a.base_version.into();
        Ok(out)
    })
}

/// A tool's `CallToolResult` (from [`crate::call_tool_value`]) as a REST reply: its
/// structuredContent, with `ok` on success; a refusal (`isError: true`) with the HTTP
/// status of its code, so it answers as every other route's refusal does.
fn tool_reply(mut result: Value, ok: u16) -> RestReply {
    let body = result["structuredContent"].take();
    let status = if result["isError"] == true {
        Code::ALL.iter().find(|c| body["error"] == c.as_str()).map_or(500, |c| c.http_status())
    } else {
        ok
    };
    RestReply { status, body }
}

/// Runs `tool` for a REST route with `args` (drawn from the path, the query and the body),
/// answered by [`tool_reply`]. A write tool records its refusals for the audit trail under
/// its own name ([`crate::call_tool`]); arguments refused before the tool runs are
/// recorded the same way, so the component does not record these routes again.
fn via_tool(store: &dyn Store, env: &mut dyn Env, who: &Identity, tool: &str, note_id: Option<&str>, args: Result<Value, Refusal>, ok: u16) -> Result<RestReply, Failure> {
    match args {
        Ok(args) => Ok(tool_reply(crate::call_tool_value(store, env, who, tool, args)?, ok)),
        Err(r) => {
            let reply = refused(&r);
            if crate::tools::find(tool).is_some_and(|t| !t.annotations.read_only_hint) {
                record_refusal(store, env, who, tool, note_id, &reply);
            }
            Ok(reply)
        }
    }
}

/// Tool arguments from a route's parameters, the absent ones left out (tools refuse `null`).
fn tool_args<const N: usize>(params: [(&str, Option<Value>); N]) -> Value {
    Value::Object(params.into_iter().filter_map(|(k, v)| Some((k.to_string(), v?))).collect())
}

/// A write tool's arguments: the body with the path's ids put in. A body field that names
/// another note or tab than the path is refused, naming the field.
fn with_path_ids(mut body: Value, ids: &[(&str, &str)]) -> Result<Value, Refusal> {
    if body.is_null() {
        body = json!({});
    }
    let Some(obj) = body.as_object_mut() else {
        return Err(Refusal::invalid("arguments", "the body must be a JSON object"));
    };
    for (field, id) in ids {
        if obj.get(*field).is_some_and(|v| v.as_str() != Some(id)) {
            return Err(Refusal::invalid(
                field,
                format!("{field} in the body is not the {field} of the path ({id}): leave it out or send the same id"),
            ));
        }
        obj.insert(field.to_string(), (*id).into());
    }
    Ok(body)
}

/// The notes the caller can see (`GET /api/v1/notes?cursor=&limit=`): the `list_notes`
/// tool's result, 200 with `{notes: [{note_id, title, version, approved_for_agents,
/// provenance}], next_cursor, notice}`; pass `next_cursor` back as `cursor`.
pub fn list_notes(kv: &dyn Store, env: &mut dyn Env, who: &Identity, cursor: Option<&str>, limit: Option<&str>) -> Result<RestReply, Failure> {
    let args = query_u64("limit", limit).map(|limit| tool_args([("cursor", cursor.map(Value::from)), ("limit", limit.map(Value::from))]));
    via_tool(kv, env, who, "list_notes", None, args, 200)
}

/// Full-text search (`GET /api/v1/search?q=…&tab_type=&limit=&cursor=`): the
/// `search_notes` tool's result, 200 with `{query, hits, next_cursor, notice}`.
pub fn search(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    q: Option<&str>,
    tab_type: Option<&str>,
    limit: Option<&str>,
    cursor: Option<&str>,
) -> Result<RestReply, Failure> {
    let args = match q {
        None => Err(Refusal::invalid("q", "q (what to search for) is required")),
        Some(q) => query_u64("limit", limit).map(|limit| {
            tool_args([
                ("query", Some(q.into())),
                ("tab_type", tab_type.map(Value::from)),
                ("limit", limit.map(Value::from)),
                ("cursor", cursor.map(Value::from)),
            ])
        }),
    };
    via_tool(kv, env, who, "search_notes", None, args, 200)
}

/// One tab (`GET …/tabs/{tab}[?at_version=N]`): the `read_note_tab` tool's result, 200 with
/// `{note_id, tab_id, type, label, version, tab_version, provenance, notice, at_version?}`
/// and, by type, `text` (markdown), `slides: [{index, title, body, notes}]` (slides),
/// `sheets: [{sheet_id, name, rows, cols}]` and `hint` (sheet: cells via [`read_range`]),
/// `count` and `hint` (files, sources: items via [`list_attachments`]).
pub fn read_tab(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, tab_id: &str, at_version: Option<&str>) -> Result<RestReply, Failure> {
    let args = query_u64("at_version", at_version).map(|v| {
        tool_args([("note_id", Some(note_id.into())), ("tab_id", Some(tab_id.into())), ("at_version", v.map(Value::from))])
    });
    via_tool(kv, env, who, "read_note_tab", Some(note_id), args, 200)
}

/// A range in A1 notation (`A1:C3`, or one cell `B2`: letters name the column from `A`,
/// digits the row from 1) as the zero-based `(start_row, start_col, num_rows, num_cols)`
/// of `read_sheet_range`, whose own checks bound it.
fn a1_range(range: Option<&str>) -> Result<(u64, u64, u64, u64), Refusal> {
    let range = range.ok_or_else(|| Refusal::invalid("range", "range (cells such as A1:C3) is required"))?;
    let bad = || Refusal::invalid("range", format!("range must be cells in A1 notation such as A1:C3 or B2, not {range:?}"));
    let cell = |c: &str| -> Option<(u64, u64)> {
        let (letters, digits) = c.split_at(c.find(|ch: char| ch.is_ascii_digit())?);
        let letters_ok = (1..=3).contains(&letters.len()) && letters.bytes().all(|b| b.is_ascii_alphabetic());
        if !letters_ok || digits.len() > 9 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let col = letters.bytes().fold(0, |n, b| n * 26 + u64::from(b.to_ascii_uppercase() - b'A') + 1);
        let row: u64 = digits.parse().ok().filter(|r| *r >= 1)?;
        Some((row - 1, col - 1))
    };
    let (from, to) = range.split_once(':').unwrap_or((range, range));
    let ((r1, c1), (r2, c2)) = (cell(from).ok_or_else(bad)?, cell(to).ok_or_else(bad)?);
    if r2 < r1 || c2 < c1 {
        return Err(Refusal::invalid("range", format!("range {range} must go from its top-left cell to its bottom-right cell")));
    }
    Ok((r1, c1, r2 - r1 + 1, c2 - c1 + 1))
}

/// Cells of a sheet tab (`GET …/tabs/{tab}/range?range=A1:C3[&sheet_id=]`, at most 100 × 100):
/// the `read_sheet_range` tool's result, 200 with `{note_id, tab_id, sheet_id, start_row,
/// start_col, num_rows, num_cols, values, sheet_rows, sheet_cols, version, tab_version,
/// provenance, notice}` (zero-based; empty cells are null).
pub fn read_range(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, tab_id: &str, range: Option<&str>, sheet_id: Option<&str>) -> Result<RestReply, Failure> {
    let args = a1_range(range).map(|(row, col, rows, cols)| {
        tool_args([
            ("note_id", Some(note_id.into())),
            ("tab_id", Some(tab_id.into())),
            ("start_row", Some(row.into())),
            ("start_col", Some(col.into())),
            ("num_rows", Some(rows.into())),
            ("num_cols", Some(cols.into())),
            ("sheet_id", sheet_id.map(Value::from)),
        ])
    });
    via_tool(kv, env, who, "read_sheet_range", Some(note_id), args, 200)
}

/// Edits a tab (`POST …/tabs/{tab}/edit`) with every operation of the `edit_note_tab`
/// tool and its rules (conditional, keyed, claim-aware): the body is the tool's arguments
/// (`expected_version`, `idempotency_key`, `operation` and its fields, `version_scope`,
/// `base_content_hash`, `rebase`); `note_id` and `tab_id` come from the path. 200 with the
/// tool's result (`note_id, tab_id, version, tab_version, content_hash, replayed`, …).
pub fn edit_tab(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, tab_id: &str, args: Value) -> Result<RestReply, Failure> {
    let args = with_path_ids(args, &[("note_id", note_id), ("tab_id", tab_id)]);
    via_tool(kv, env, who, "edit_note_tab", Some(note_id), args, 200)
}

/// Creates a slides or sheet tab (`POST …/tabs`): the body is the `create_note_tab` tool's
/// arguments (`expected_version`, `idempotency_key`, `tab_type`, `label?`, `slides?`),
/// `note_id` from the path. 201 with `{note_id, tab_id, tab_type, label, version,
/// tab_version, content_hash, replayed}`.
pub fn create_tab(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, args: Value) -> Result<RestReply, Failure> {
    let args = with_path_ids(args, &[("note_id", note_id)]);
    via_tool(kv, env, who, "create_note_tab", Some(note_id), args, 201)
}

/// Cites a page in the note's Sources tab (`POST …/sources`): the body is the
/// `add_note_source` tool's arguments (`expected_version`, `idempotency_key`, `title`,
/// `url`), `note_id` from the path. 201 with `{note_id, source_id, title, url,
/// already_attached: false, version, tab_id, tab_version, content_hash, replayed}`; 200 with
/// `{note_id, source_id, title, url, version, already_attached: true, replayed: false}`
/// (the source that was there; nothing written) when the normalized URL is already attached.
pub fn add_source(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, args: Value) -> Result<RestReply, Failure> {
    let args = with_path_ids(args, &[("note_id", note_id)]);
    let mut r = via_tool(kv, env, who, "add_note_source", Some(note_id), args, 201)?;
    if r.status == 201 && r.body["already_attached"] == true {
        r.status = 200;
    }
    Ok(r)
}

/// A note's files and sources as metadata (`GET …/attachments[?kind=files|sources&cursor=&limit=]`):
/// the `list_note_attachments` tool's result, 200 with `{note_id, version, attachments,
/// total, next_cursor, notice}`; an attachment is `{kind: "file", file_id, name,
/// media_type, size_bytes, provenance}` or `{kind: "source", source_id, title, url,
/// provenance}`.
pub fn list_attachments(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, kind: Option<&str>, cursor: Option<&str>, limit: Option<&str>) -> Result<RestReply, Failure> {
    let args = query_u64("limit", limit).map(|limit| {
        tool_args([
            ("note_id", Some(note_id.into())),
            ("kind", kind.map(Value::from)),
            ("cursor", cursor.map(Value::from)),
            ("limit", limit.map(Value::from)),
        ])
    });
    via_tool(kv, env, who, "list_note_attachments", Some(note_id), args, 200)
}

/// The audit trail (`GET /api/v1/audit?note_id=&since=&cursor=&limit=`,
/// scope `audit:read`, people only): committed writes, refused writes,
/// claim events and refused calls, oldest first from `since` (µs since the
/// epoch). 200 with `{events, next_cursor}`; see `crate::audit`.
pub fn audit(
    kv: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    note_id: Option<&str>,
    since: Option<&str>,
    cursor: Option<&str>,
    limit: Option<&str>,
) -> Result<RestReply, Failure> {
    let now = crate::history::Window::of(&*env);
    let ids: Vec<(&str, &str)> = note_id.map(|n| ("note_id", n)).into_iter().collect();
    answer(kv, who, &ids, 200, |kv| {
        let since = match since {
            None => 0,
            Some(s) => s.parse::<u64>().map_err(|_| Refusal::invalid("since", format!("since must be microseconds since the epoch, not {s:?}")))?,
        };
        if let Some(c) = cursor {
            check_chars("cursor", c, 1, 400)?;
        }
        let limit = query_u64("limit", limit)?.unwrap_or(crate::args::DEFAULT_LIMIT);
        crate::args::check_limit(Some(limit))?;
        crate::audit::list(kv, who, note_id, since, cursor, limit as usize, now)
    })
}

/// Records a refused people's write (`route`: method and route pattern) for
/// the audit trail, when `reply` is a refusal. Best effort.
pub fn record_refusal(store: &dyn Store, env: &mut dyn Env, who: &Identity, route: &str, note_id: Option<&str>, reply: &RestReply) {
    if reply.status < 400 || !reply.body["error"].is_string() {
        return;
    }
    if let Ok(kv) = crate::tenant_kv(store, who) {
        crate::audit::record_refused_write(&kv, env, who, route, note_id, &reply.body);
    }
}
