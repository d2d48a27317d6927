//! `POST /api/v1/notes/{note}/tabs/{tab}/merge`: a stale draft merged with
//! the text now; writes nothing.

use serde::Deserialize;
use serde_json::Value;

use cairn_kv::Store;

use crate::args::parse;
use crate::env::{Env, Identity};
use crate::head::load_head;
use crate::model::TabKind;
use crate::refusal::{Failure, Refusal};

use super::{Ctx, RestReply, answer_tab};

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
    answer_tab(kv, who, note_id, tab_id, |kv| {
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

/// [`merge_draft`] on a routed request.
pub(super) fn serve(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let (note, tab) = (c.param("note"), c.param("tab"));
    merge_draft(c.kv, c.env, c.who, note, tab, c.body)
}
