//! The tenant's note list (`idx/notes`), kept with [`crate::head::update`].
//!
//! The note list holds ids in creation order: the newest in `tail`, full pages
//! of [`INDEX_PAGE`] ids frozen into immutable blobs. A note is added to it
//! before its head is written, so a listing may see an id whose head is not
//! there (yet) and skips it; it never misses a note that exists.

use serde::{Deserialize, Serialize};

use crate::content::{get_blob, put_tenant_blob};
use crate::head::{MAX_ATTEMPTS, update};
use crate::keys::NOTE_INDEX;
use crate::kv::TenantKv;
use crate::model::{decode, encode};
use crate::refusal::{Code, Failure, Out, Refusal};

/// Note ids per frozen index page.
const INDEX_PAGE: usize = 256;

#[derive(Debug, Default, Serialize, Deserialize)]
struct NoteIndex {
    rev: u64,
    pages: Vec<String>,
    tail: Vec<String>,
}

/// Appends a note id to the tenant's list, refused `quota_exceeded` when
/// the list holds `quota` notes already. Idempotent: a list that holds the
/// id already (its own append landed, and the store said otherwise) is
/// left as it is.
pub(crate) fn index_add(kv: &TenantKv, note_id: &str, quota: u64) -> Out<()> {
    update(kv, NOTE_INDEX, "note index", "the note list is busy; nothing was written", |idx: &mut NoteIndex| {
        if holds_recent(kv, idx, note_id)? {
            return Ok(false);
        }
        // Checked on the list this swap replaces: two creators racing for the
        // last note cannot both pass.
        let notes = idx.pages.len() * INDEX_PAGE + idx.tail.len();
        if notes as u64 >= quota {
            return Err(Refusal::new(Code::QuotaExceeded, format!("the tenant has {notes} notes, its quota (quota_notes)"))
                .with("quota", "quota_notes")
                .with("limit", quota)
                .with("used", notes as u64)
                .into());
        }
        idx.tail.push(note_id.to_string());
        if idx.tail.len() >= INDEX_PAGE {
            let page = put_tenant_blob(kv, &encode(&idx.tail))?;
            idx.pages.push(page);
            idx.tail.clear();
        }
        idx.rev += 1;
        Ok(true)
    })
}

/// Whether `note_id` was appended lately: it is in the tail, or, while the
/// tail is short (a page was frozen lately, perhaps by this very append),
/// in the newest page. An append runs again right after its own swap, so
/// it finds itself there unless [`MAX_ATTEMPTS`] other notes were listed in
/// between. Ids are unique, so an id found was appended by this creation.
fn holds_recent(kv: &TenantKv, idx: &NoteIndex, note_id: &str) -> Result<bool, Failure> {
    if idx.tail.iter().any(|id| id == note_id) {
        return Ok(true);
    }
    let Some(newest) = idx.pages.last().filter(|_| idx.tail.len() < MAX_ATTEMPTS) else { return Ok(false) };
    let page: Vec<String> = decode("index page", &get_blob(kv, newest)?)?;
    Ok(page.iter().any(|id| id == note_id))
}

/// Up to `max` note ids from position `pos`, and the total number of ids.
pub(crate) fn index_slice(kv: &TenantKv, pos: usize, max: usize) -> Result<(Vec<String>, usize), Failure> {
    let Some(raw) = kv.get(NOTE_INDEX)? else {
        return Ok((Vec::new(), 0));
    };
    let idx: NoteIndex = decode("note index", &raw)?;
    let total = idx.pages.len() * INDEX_PAGE + idx.tail.len();
    let mut out = Vec::new();
    let mut p = pos;
    while out.len() < max && p < total {
        let page_no = p / INDEX_PAGE;
        let page: Vec<String> = if page_no < idx.pages.len() { decode("index page", &get_blob(kv, &idx.pages[page_no])?)? } else { idx.tail.clone() };
        let start = p % INDEX_PAGE;
        let take = (max - out.len()).min(page.len().saturating_sub(start));
        if take == 0 {
            break;
        }
        out.extend_from_slice(&page[start..start + take]);
        p += take;
    }
    Ok((out, total))
}
