//! `POST /api/v1/notes/{note}/tabs/{tab}/restore`: an earlier content as a new version.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use cairn_kv::Store;

use crate::env::{Env, Identity};
use crate::refusal::{Failure, Refusal};
use crate::write::{Change, Plan, Target, commit, note_scope};

use super::{Ctx, RestReply, answer_tab, parse_keyed};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Restore {
    from_version: u64,
    expected_version: crate::version::Version,
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
    answer_tab(kv, who, note_id, tab_id, |kv| {
        let a: Restore = parse_keyed(args)?;
        if a.from_version == 0 {
            return Err(Refusal::invalid("from_version", "from_version must be a note version from the history (1 or more)").into());
        }
        let payload = json!({"tab_id": tab_id, "from_version": a.from_version, "expected_version": a.expected_version});
        let mut spec = note_scope("restore_tab", false, note_id, a.idempotency_key.as_deref(), a.expected_version, &payload);
        // It replaces the whole tab: a part token is refused.
        spec.whole_tab = true;
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

/// [`restore_tab`] on a routed request.
pub(super) fn serve(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let (note, tab) = (c.param("note"), c.param("tab"));
    restore_tab(c.kv, c.env, c.who, note, tab, c.body)
}
