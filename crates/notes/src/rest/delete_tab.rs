//! `DELETE /api/v1/notes/{note}/tabs/{tab}`: a slides or sheet tab, gone.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use cairn_kv::Store;

use crate::env::{Env, Identity};
use crate::model::Head;
use crate::refusal::{Failure, Out};
use crate::write::{Change, note_scope};

use super::{Ctx, RestReply, answer_tab, check_not_fixed, commit_tab, find_tab_index, parse_keyed};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteTab {
    expected_version: crate::version::Version,
    #[serde(default)]
    idempotency_key: Option<String>,
}

/// Deletes a slides or sheet tab (the fixed tabs stay). Its id is never handed out again.
/// 200 with `{note_id, deleted_tab_id, version, replayed}`.
pub fn delete_tab(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, tab_id: &str, args: Value) -> Result<RestReply, Failure> {
    answer_tab(kv, who, note_id, tab_id, |kv| {
        let a: DeleteTab = parse_keyed(args)?;
        let payload = json!({"tab_id": tab_id, "expected_version": a.expected_version});
        let mut spec = note_scope("delete_tab", false, note_id, a.idempotency_key.as_deref(), a.expected_version, &payload);
        // It replaces the whole tab: a part token is refused.
        spec.whole_tab = true;
        let resolve = |head: &Head| -> Out<usize> {
            let i = find_tab_index(head, tab_id)?;
            check_not_fixed(&head.tabs[i], "tab_id", "the markdown, files and sources tabs cannot be deleted")?;
            Ok(i)
        };
        commit_tab(kv, env, who, &spec, resolve, |head, i, _| {
            let tab = head.tabs.remove(i);
            let mut result = Map::new();
            result.insert("deleted_tab_id".into(), tab.id.clone().into());
            Ok(Change { action: "delete_tab", tab: None, removed_tab: Some(tab), result })
        })
    })
}

/// [`delete_tab`] on a routed request.
pub(super) fn serve(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let (note, tab) = (c.param("note"), c.param("tab"));
    delete_tab(c.kv, c.env, c.who, note, tab, c.body)
}
