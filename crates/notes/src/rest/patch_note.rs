//! `PATCH /api/v1/notes/{note}`: the note's approval for agents and its title.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use cairn_kv::Store;

use crate::args::{MAX_NOTE_TITLE_CHARS, check_chars};
use crate::env::{ActorType, Env, Identity};
use crate::refusal::{Failure, Refusal};
use crate::write::{Change, Plan, Target, commit, note_scope};

use super::{Ctx, RestReply, answer, forbidden_approval, parse_keyed};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateNote {
    expected_version: crate::version::Version,
    #[serde(default)]
    idempotency_key: Option<String>,
    #[serde(default)]
    approved_for_agents: Option<bool>,
    #[serde(default)]
    title: Option<String>,
}

/// Approves a note for agents (or withdraws it: `approved_for_agents`) and/or renames it
/// (`title`, 1-200 characters as in [`create_note`](super::create_note)): one ordinary conditional write
/// against the note's version, keyed by an optional idempotency key, that commits a new
/// version with the history action `update_note`. A write to the note as a whole: a
/// claim on the whole note by someone else refuses it, a claim on one tab does not.
/// Approval is a person's decision: `approved_for_agents` from an agent is `forbidden`.
/// 200 with `{note_id, title, approved_for_agents, version, replayed}`.
pub fn update_note(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, args: Value) -> Result<RestReply, Failure> {
    answer(kv, who, &[("note_id", note_id)], 200, |kv| {
        let a: UpdateNote = parse_keyed(args)?;
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

/// [`update_note`] on a routed request.
pub(super) fn serve(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let note = c.param("note");
    update_note(c.kv, c.env, c.who, note, c.body)
}
