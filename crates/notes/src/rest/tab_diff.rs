//! `GET /api/v1/notes/{note}/tabs/{tab}/diff`: a line diff between two versions.

use serde_json::{Value, json};

use cairn_kv::Store;

use crate::env::{Env, Identity};
use crate::head::load_head;
use crate::kv::TenantKv;
use crate::model::TabKind;
use crate::refusal::{Failure, NOTICE, Out, Refusal};

use super::{Ctx, RestReply, answer_tab, query_u64};

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
    answer_tab(kv, who, note_id, tab_id, |kv| {
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

/// [`tab_diff`] on a routed request.
pub(super) fn serve(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let (note, tab, from, to) = (c.param("note"), c.param("tab"), c.query("from"), c.query("to"));
    tab_diff(c.kv, c.env, c.who, note, tab, from, to)
}
