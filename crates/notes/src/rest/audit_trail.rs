//! `GET /api/v1/audit`: the audit trail, for people.

use cairn_kv::Store;

use crate::args::check_chars;
use crate::env::{Env, Identity};
use crate::refusal::{Failure, Refusal};

use super::{Ctx, RestReply, answer, query_u64};

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

/// [`audit`] on a routed request.
pub(super) fn serve(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let (note, since, cursor, limit) = (c.query("note_id"), c.query("since"), c.query("cursor"), c.query("limit"));
    audit(c.kv, c.env, c.who, note, since, cursor, limit)
}
