//! `GET /api/v1/notes/{note}/tabs/{tab}/versions/{version}`: a tab as it was.

use cairn_kv::Store;

use crate::env::{Env, Identity};
use crate::refusal::Failure;

use super::{Ctx, RestReply, answer, query_u64};

/// One past version of a tab (`GET …/tabs/{tab}/versions/{v}`, `v` a note
/// version): what `read_note_tab` answers with `at_version`.
pub fn tab_version(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, tab_id: &str, version: &str) -> Result<RestReply, Failure> {
    answer(kv, who, &[], 200, |kv| {
        let v = query_u64("version", Some(version))?;
        crate::tools::read_tab(&mut crate::tools::Call { kv, env, who }, note_id, tab_id, v).map(crate::schema::result_value)
    })
}

/// [`tab_version`] on a routed request.
pub(super) fn serve(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let (note, tab, version) = (c.param("note"), c.param("tab"), c.param("version"));
    tab_version(c.kv, c.env, c.who, note, tab, version)
}
