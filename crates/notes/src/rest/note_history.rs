//! `GET /api/v1/notes/{note}/history`: a note's versions, newest first.

use serde_json::json;

use cairn_kv::Store;

use crate::args::check_id;
use crate::env::{Env, Identity};
use crate::head::load_head;
use crate::refusal::{Failure, NOTICE};

use super::{Ctx, RestReply, answer, query_u64};

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
        let entries: Vec<crate::history::EntryView> = entries.iter().map(crate::history::EntryView::of).collect();
        Ok(json!({"note_id": head.note_id, "version": head.version, "entries": entries, "next_before": next, "notice": NOTICE}))
    })
}

/// [`note_history`] on a routed request.
pub(super) fn serve(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let (note, tab, before, limit) = (c.param("note"), c.query("tab_id"), c.query("before"), c.query("limit"));
    note_history(c.kv, c.env, c.who, note, tab, before, limit)
}
