//! `POST /api/v1/notes`: a new note.

use serde::Deserialize;
use serde_json::{Value, json};

use cairn_kv::Store;

use crate::args::{MAX_NOTE_TITLE_CHARS, check_chars, parse};
use crate::dirty;
use crate::edit::new_tab;
use crate::env::{ActorType, Env, Identity};
use crate::keys;
use crate::model::{Head, HistoryEntry, TabKind, Who, encode, new_note_id, tab_summary};
use crate::note_index::index_add;
use crate::refusal::Failure;

use super::{Ctx, RestReply, answer, forbidden_approval};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateNote {
    title: String,
    #[serde(default)]
    approved_for_agents: bool,
}

/// Creates a note with its fixed tabs `markdown`, `files` and `sources` (version 1).
/// Body: `{"title": 1-200 chars, "approved_for_agents": bool (default false)}`.
/// Approval is a person's decision, here as in [`update_note`](super::update_note):
/// `approved_for_agents: true` from an agent is `forbidden`.
/// 201 with `{note_id, title, approved_for_agents, version, tabs}`.
pub fn create_note(kv: &dyn Store, env: &mut dyn Env, who: &Identity, args: Value) -> Result<RestReply, Failure> {
    answer(kv, who, &[], 201, |kv| {
        let a: CreateNote = parse(args)?;
        check_chars("title", &a.title, 1, MAX_NOTE_TITLE_CHARS)?;
        if a.approved_for_agents && who.actor_type != ActorType::Human {
            return Err(forbidden_approval());
        }
        let now = env.now_us();
        let note_id = new_note_id(env);
        let head = first_head(&note_id, a, who, now);
        // The id is unique, so no other writer creates this key; the index entry goes
        // first, and listings skip an entry whose head is not there (yet).
        index_add(kv, &note_id, env.quotas().notes)?;
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

/// A new note's head at version 1: its fixed tabs and its first history entry.
fn first_head(note_id: &str, a: CreateNote, who: &Identity, now: u64) -> Head {
    let by = Who::of(who);
    let tabs = [("markdown", TabKind::Markdown, "Note"), ("files", TabKind::Files, "Files"), ("sources", TabKind::Sources, "Sources")]
        .into_iter()
        .map(|(id, kind, label)| {
            let mut t = new_tab(id.into(), kind, label.into(), who, now);
            t.version = 1;
            t
        })
        .collect();
    let created = HistoryEntry {
        version: 1,
        at: now,
        by: by.clone(),
        action: "create_note".into(),
        tab_id: None,
        content_hash: None,
        bytes: 0,
        tab: None,
        deleted: false,
    };
    Head {
        note_id: note_id.to_string(),
        title: a.title,
        approved_for_agents: a.approved_for_agents,
        agents_since: a.approved_for_agents.then_some(1),
        version: 1,
        created_at: now,
        author: by.clone(),
        updated_at: now,
        updated_by: by,
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
        history: vec![created],
        history_floor: 0,
        history_bases: Default::default(),
        blob_gen: 0,
        stored_bytes: 0,
        commits: Vec::new(),
    }
}

/// [`create_note`] on a routed request.
pub(super) fn serve(c: Ctx<'_>) -> Result<RestReply, Failure> {
    create_note(c.kv, c.env, c.who, c.body)
}
