//! `PUT /api/v1/notes/{note}/tabs/{tab}`: a tab's whole content.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use cairn_kv::Store;

use crate::args::VersionScope;
use crate::edit::{Edit, edit_tab_with};
use crate::env::{Env, Identity};
use crate::model::sha_hex;
use crate::refusal::{Failure, Refusal};
use crate::write::{Fingerprint, WriteSpec, fingerprint};
use crate::write_results::Replayable;

use super::{Ctx, RestReply, answer_tab, parse_keyed};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteTab {
    expected_version: crate::version::Version,
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
pub fn write_tab(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, tab_id: &str, args: Value) -> Result<RestReply, Failure> {
    answer_tab(kv, who, note_id, tab_id, |kv| {
        let mut a: WriteTab = parse_keyed(args)?;
        let edit = match (a.text.take(), a.data.take()) {
            (Some(t), None) => {
                let hash = sha_hex(t.as_bytes());
                Edit::Text(t, hash)
            }
            (None, Some(d)) => Edit::Data(d),
            _ => {
                return Err(Refusal::invalid("text", "send exactly one of text (markdown tab) or data (slides or sheet tab)").into());
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
            expected_version: a.expected_version.number,
            base: a.expected_version.extent,
            whole_tab: true,
            scope: a.version_scope.unwrap_or_default(),
            base_content_hash: a.base_content_hash.as_deref(),
            rebase: false,
        };
        edit_tab_with(kv, env, who, &spec, tab_id, &edit).map(Replayable::into_value)
    })
}

/// [`write_tab`] on a routed request.
pub(super) fn serve(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let (note, tab) = (c.param("note"), c.param("tab"));
    write_tab(c.kv, c.env, c.who, note, tab, c.body)
}
