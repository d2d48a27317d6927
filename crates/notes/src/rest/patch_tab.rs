//! `PATCH /api/v1/notes/{note}/tabs/{tab}`: a tab's label and its place in the tab strip.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use cairn_kv::Store;

use crate::args::{MAX_LABEL_CHARS, check_chars};
use crate::env::{Env, Identity};
use crate::model::Head;
use crate::refusal::{Failure, Out, Refusal};
use crate::write::{Change, note_scope};

use super::{Ctx, RestReply, answer_tab, check_not_fixed, commit_tab, find_tab_index, parse_keyed};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateTab {
    expected_version: crate::version::Version,
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
pub fn update_tab(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, tab_id: &str, args: Value) -> Result<RestReply, Failure> {
    answer_tab(kv, who, note_id, tab_id, |kv| {
        let a: UpdateTab = parse_keyed(args)?;
        if a.label.is_none() && a.position.is_none() {
            return Err(Refusal::invalid("label", "send a new label, a new position, or both").into());
        }
        if let Some(l) = &a.label {
            check_chars("label", l, 1, MAX_LABEL_CHARS)?;
        }
        let payload = json!({"tab_id": tab_id, "expected_version": a.expected_version, "label": a.label, "position": a.position});
        let spec = note_scope("update_tab", false, note_id, a.idempotency_key.as_deref(), a.expected_version, &payload);
        let resolve = |head: &Head| -> Out<usize> {
            let i = find_tab_index(head, tab_id)?;
            if a.label.is_some() {
                check_not_fixed(&head.tabs[i], "label", "the markdown, files and sources tabs keep their labels")?;
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
            Ok(i)
        };
        commit_tab(kv, env, who, &spec, resolve, |head, mut i, _| {
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
        })
    })
}

/// [`update_tab`] on a routed request.
pub(super) fn serve(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let (note, tab) = (c.param("note"), c.param("tab"));
    update_tab(c.kv, c.env, c.who, note, tab, c.body)
}
