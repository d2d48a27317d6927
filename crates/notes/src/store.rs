//! Key layout inside a tenant and the records around the head: content blobs (chunked,
//! content-addressed), the tenant's note index, and reading a head the caller may see.
//!
//! Keys (all under `t/<tenant>/`):
//! - `note/<note_id>`: the note head, the commit point of every write to the note.
//! - `blob/<sha256>`: immutable content chunks (text, slides, sheet manifests and row
//!   blocks, attachment lists, index pages), written before the head swap.
//! - `idem/<note_id>/<sha256(key)>`: idempotency records spilled from the head.
//! - `audit/<note_id>/<version:020>`: history entries spilled from the head (the audit log).
//! - `idx/notes`: the tenant's note list (recent ids plus hashes of full pages of ids).

use serde::{Deserialize, Serialize};

use crate::env::Identity;
use crate::kv::{Kv, KvError, TenantKv};
use crate::model::{Head, decode, encode, sha_hex};
use crate::reply::{Fail, Out, Refusal};

/// Content chunk size: every blob stays far below the store's value limit.
pub(crate) const CHUNK_BYTES: usize = 256 * 1024;
/// Largest document (text, slides, attachment list) one tab may hold, in bytes.
pub(crate) const MAX_DOC_BYTES: usize = 1_000_000;
/// Note ids per frozen index page.
const INDEX_PAGE: usize = 256;
const INDEX_KEY: &str = "idx/notes";

pub(crate) fn note_key(note_id: &str) -> String {
    format!("note/{note_id}")
}

pub(crate) fn idem_key(note_id: &str, key: &str) -> String {
    format!("idem/{note_id}/{}", sha_hex(key.as_bytes()))
}

pub(crate) fn audit_key(note_id: &str, version: u64) -> String {
    format!("audit/{note_id}/{version:020}")
}

/// Stores `bytes` as content-addressed chunks; returns (content hash, chunk hashes).
/// `field` names the argument blamed when the document is too large.
pub(crate) fn put_doc<K: Kv>(
    kv: &TenantKv<K>,
    bytes: &[u8],
    field: &str,
) -> Out<(String, Vec<String>)> {
    if bytes.len() > MAX_DOC_BYTES {
        return Err(Refusal::too_large(
            field,
            format!(
                "content of {} bytes exceeds the limit of {MAX_DOC_BYTES} bytes",
                bytes.len()
            ),
        )
        .into());
    }
    let mut blobs = Vec::new();
    for chunk in bytes.chunks(CHUNK_BYTES) {
        blobs.push(put_blob(kv, chunk)?);
    }
    Ok((sha_hex(bytes), blobs))
}

/// Writes one immutable blob and returns its hash.
pub(crate) fn put_blob<K: Kv>(kv: &TenantKv<K>, bytes: &[u8]) -> Result<String, KvError> {
    let h = sha_hex(bytes);
    kv.set(&format!("blob/{h}"), bytes)?;
    Ok(h)
}

/// Reads one blob; a missing blob is corruption.
pub(crate) fn get_blob<K: Kv>(kv: &TenantKv<K>, hash: &str) -> Result<Vec<u8>, KvError> {
    kv.get(&format!("blob/{hash}"))?
        .ok_or_else(|| KvError::Corrupt(format!("missing blob {hash}")))
}

/// Reads a document back from its chunks.
pub(crate) fn get_doc<K: Kv>(kv: &TenantKv<K>, blobs: &[String]) -> Result<Vec<u8>, KvError> {
    let mut out = Vec::new();
    for h in blobs {
        out.extend(get_blob(kv, h)?);
    }
    Ok(out)
}

/// Hash of the empty document.
pub(crate) fn empty_hash() -> String {
    sha_hex(b"")
}

/// Reads the head of a note the caller may see; anything else is the same `not_found`.
pub(crate) fn load_head<K: Kv>(kv: &TenantKv<K>, who: &Identity, note_id: &str) -> Out<Head> {
    match kv.get(&note_key(note_id))? {
        Some(bytes) => visible_head(&bytes, who),
        None => Err(Refusal::not_found("note").into()),
    }
}

/// Decodes a head and applies the visibility rule.
pub(crate) fn visible_head(bytes: &[u8], who: &Identity) -> Out<Head> {
    let head: Head = decode("note head", bytes)?;
    if head.visible_to(who) {
        Ok(head)
    } else {
        Err(Refusal::not_found("note").into())
    }
}

/// The tenant's note list: ids in creation order, full pages frozen into blobs.
#[derive(Debug, Default, Serialize, Deserialize)]
struct NoteIndex {
    rev: u64,
    pages: Vec<String>,
    tail: Vec<String>,
}

/// Appends a note id to the tenant's index (one CAS on `idx/notes`, bounded retries).
///
/// An absent index is first created with a constant empty value, so that writers racing
/// on a store that upserts absent keys write the same bytes.
pub(crate) fn index_add<K: Kv>(kv: &TenantKv<K>, note_id: &str) -> Out<()> {
    for _ in 0..64 {
        let (cas, raw) = kv.read_cas(INDEX_KEY)?;
        let Some(raw) = raw else {
            kv.swap(cas, encode(&NoteIndex::default()))?;
            continue;
        };
        let mut idx: NoteIndex = decode("note index", &raw)?;
        idx.tail.push(note_id.to_string());
        if idx.tail.len() >= INDEX_PAGE {
            let page = put_blob(kv, &encode(&idx.tail))?;
            idx.pages.push(page);
            idx.tail.clear();
        }
        idx.rev += 1;
        if kv.swap(cas, encode(&idx))? {
            return Ok(());
        }
    }
    Err(Fail::Refused(Refusal::new(
        "busy",
        "the note list is busy; nothing was written",
    )))
}

/// Up to `max` note ids from position `pos`, and the total number of ids.
pub(crate) fn index_slice<K: Kv>(
    kv: &TenantKv<K>,
    pos: usize,
    max: usize,
) -> Result<(Vec<String>, usize), KvError> {
    let Some(raw) = kv.get(INDEX_KEY)? else {
        return Ok((Vec::new(), 0));
    };
    let idx: NoteIndex = decode("note index", &raw)?;
    let total = idx.pages.len() * INDEX_PAGE + idx.tail.len();
    let mut out = Vec::new();
    let mut p = pos;
    while out.len() < max && p < total {
        let page_no = p / INDEX_PAGE;
        let page: Vec<String> = if page_no < idx.pages.len() {
            decode("index page", &get_blob(kv, &idx.pages[page_no])?)?
        } else {
            idx.tail.clone()
        };
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
