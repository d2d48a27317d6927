//! Tab contents in the store: immutable, content-addressed blobs written
//! before the head swap that makes them visible.
//!
//! A document (markdown text, a slides deck, an attachment list, a sheet
//! manifest) is split into chunks of at most [`CHUNK_BYTES`], each stored at
//! `blob/<sha256>`; the tab in the head lists the chunk hashes and the hash of
//! the whole. A blob that a lost swap left behind is harmless: nothing refers
//! to it, and a retry writes the same bytes under the same key.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::args::SlideIn;
use crate::keys;
use crate::kv::TenantKv;
use crate::model::{Tab, decode, encode, sha_hex};
use crate::refusal::{Failure, Out, Refusal};

/// Content chunk size: every blob stays far below the store's value limit.
pub(crate) const CHUNK_BYTES: usize = 256 * 1024;
/// Largest document (text, slides, attachment list) one tab may hold, in bytes.
pub(crate) const MAX_DOC_BYTES: usize = 1_000_000;
/// Slides per slides tab.
pub(crate) const MAX_SLIDES: usize = 200;

/// Stores `bytes` as content-addressed chunks; returns (content hash, chunk hashes).
/// `field` names the argument blamed when the document is too large.
pub(crate) fn put_doc(kv: &TenantKv, bytes: &[u8], field: &str) -> Out<(String, Vec<String>)> {
    if bytes.len() > MAX_DOC_BYTES {
        return Err(Refusal::too_large(
            field,
            format!("content of {} bytes exceeds the limit of {MAX_DOC_BYTES} bytes", bytes.len()),
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
pub(crate) fn put_blob(kv: &TenantKv, bytes: &[u8]) -> Result<String, Failure> {
    let h = sha_hex(bytes);
    kv.set(&keys::blob(&h), bytes)?;
    Ok(h)
}

/// Reads one blob; a missing blob is corruption.
pub(crate) fn get_blob(kv: &TenantKv, hash: &str) -> Result<Vec<u8>, Failure> {
    kv.get(&keys::blob(hash))?.ok_or_else(|| Failure::Corrupt(format!("missing blob {hash}")))
}

/// Reads a document back from its chunks (one batch read when there are several).
pub(crate) fn get_doc(kv: &TenantKv, blobs: &[String]) -> Result<Vec<u8>, Failure> {
    match blobs {
        [] => Ok(Vec::new()),
        [one] => get_blob(kv, one),
        many => {
            let keys: Vec<String> = many.iter().map(|h| keys::blob(h)).collect();
            let mut out = Vec::new();
            for (h, v) in many.iter().zip(kv.get_many(&keys)?) {
                out.extend(v.ok_or_else(|| Failure::Corrupt(format!("missing blob {h}")))?);
            }
            Ok(out)
        }
    }
}

/// Hash of the empty document.
pub(crate) fn empty_hash() -> String {
    sha_hex(b"")
}

/// The markdown text of a tab.
pub(crate) fn load_text(kv: &TenantKv, tab: &Tab) -> Result<String, Failure> {
    String::from_utf8(get_doc(kv, &tab.blobs)?).map_err(|_| Failure::Corrupt("tab text is not UTF-8".into()))
}

/// Reads a JSON list document of a tab (empty when the tab has no content).
pub(crate) fn load_list<T: DeserializeOwned>(kv: &TenantKv, tab: &Tab) -> Result<Vec<T>, Failure> {
    if tab.blobs.is_empty() {
        return Ok(Vec::new());
    }
    decode("attachment list", &get_doc(kv, &tab.blobs)?)
}

/// A stored slide.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Slide {
    pub title: String,
    pub body: String,
    pub notes: String,
}

impl From<&SlideIn> for Slide {
    fn from(s: &SlideIn) -> Self {
        Slide {
            title: s.title.clone(),
            body: s.body.clone().unwrap_or_default(),
            notes: s.notes.clone().unwrap_or_default(),
        }
    }
}

/// A slides document: `{"slides": [...]}` (also the shape of `replace_tab_data`).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SlidesDoc<T> {
    pub slides: Vec<T>,
}

/// The slides of a slides tab.
pub(crate) fn load_slides(kv: &TenantKv, tab: &Tab) -> Result<Vec<Slide>, Failure> {
    if tab.blobs.is_empty() {
        return Ok(Vec::new());
    }
    let doc: SlidesDoc<Slide> = decode("slides", &get_doc(kv, &tab.blobs)?)?;
    Ok(doc.slides)
}

/// Stores a slides deck (at most [`MAX_SLIDES`]); `field` is blamed when it is too large.
pub(crate) fn store_slides(kv: &TenantKv, slides: Vec<Slide>, field: &str) -> Out<(String, Vec<String>)> {
    if slides.len() > MAX_SLIDES {
        return Err(Refusal::too_large(field, format!("a slides tab holds at most {MAX_SLIDES} slides")).into());
    }
    put_doc(kv, &encode(&SlidesDoc { slides }), field)
}
