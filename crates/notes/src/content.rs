//! Tab contents in the store: immutable, content-addressed blobs written
//! before the head swap that makes them visible.
//!
//! A document (markdown text, a slides deck, an attachment list, a sheet
//! manifest) is addressed by the SHA-256 of the whole (the tab's
//! `content_hash`), hashed once per write: a document of at most
//! [`CHUNK_BYTES`] is one blob named `<hash>`; a larger one is split into
//! chunks named `<hash>.<i>`. A write stores them under its note's current
//! blob generation, `blob/<note_id>/<generation>/<name>`, so the history
//! sweep can tell what it may delete ([`crate::history_sweep`]); blobs
//! written before generations (`blob/<name>`) are never swept. The tab in the
//! head lists its blobs' full names, so a read never needs to know which
//! layout a blob has. A blob that a lost swap left behind is harmless:
//! nothing refers to it, and a retry writes the same bytes under the same key.

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

/// Stores `bytes` under its content hash; returns (content hash, blob names).
/// `field` names the argument blamed when the document is too large.
pub(crate) fn put_doc(kv: &TenantKv, bytes: &[u8], field: &str) -> Out<(String, Vec<String>)> {
    check_doc_size(bytes, field)?;
    let hash = sha_hex(bytes);
    let blobs = put_hashed(kv, bytes, &hash)?;
    Ok((hash, blobs))
}

/// Refuses a document over [`MAX_DOC_BYTES`], blaming `field`.
pub(crate) fn check_doc_size(bytes: &[u8], field: &str) -> Result<(), Refusal> {
    if bytes.len() > MAX_DOC_BYTES {
        return Err(Refusal::too_large(field, format!("content of {} bytes exceeds the limit of {MAX_DOC_BYTES} bytes", bytes.len())));
    }
    Ok(())
}

/// Stores a document whose SHA-256 (`hash`) the caller computed; the blob names.
pub(crate) fn put_hashed(kv: &TenantKv, bytes: &[u8], hash: &str) -> Result<Vec<String>, Failure> {
    if bytes.len() <= CHUNK_BYTES {
        if bytes.is_empty() {
            return Ok(Vec::new());
        }
        let name = kv.blob_name(hash);
        kv.set(&keys::blob(&name), bytes)?;
        return Ok(vec![name]);
    }
    let names: Vec<String> = (0..bytes.len().div_ceil(CHUNK_BYTES)).map(|i| kv.blob_name(&format!("{hash}.{i}"))).collect();
    let pairs: Vec<(String, &[u8])> = names.iter().map(|n| keys::blob(n)).zip(bytes.chunks(CHUNK_BYTES)).collect();
    kv.set_many(&pairs)?;
    Ok(names)
}

/// Writes one immutable blob named by its SHA-256 (in the view's note
/// generation, if it has one) and returns its name.
pub(crate) fn put_blob(kv: &TenantKv, bytes: &[u8]) -> Result<String, Failure> {
    let name = kv.blob_name(&sha_hex(bytes));
    kv.set(&keys::blob(&name), bytes)?;
    Ok(name)
}

/// Writes one immutable blob of the tenant (not of a note: never swept) at
/// `blob/<sha256>` and returns its name.
pub(crate) fn put_tenant_blob(kv: &TenantKv, bytes: &[u8]) -> Result<String, Failure> {
    let name = sha_hex(bytes);
    kv.set(&keys::blob(&name), bytes)?;
    Ok(name)
}

/// Reads one blob by name; a missing blob is corruption.
pub(crate) fn get_blob(kv: &TenantKv, name: &str) -> Result<Vec<u8>, Failure> {
    kv.get(&keys::blob(name))?.ok_or_else(|| Failure::Corrupt(format!("missing blob {name}")))
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
        Slide { title: s.title.clone(), body: s.body.clone().unwrap_or_default(), notes: s.notes.clone().unwrap_or_default() }
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

#[cfg(test)]
mod layouts {
    //! Both blob layouts read back: chunks named by the document's hash, and
    //! chunks named by their own hashes (tabs written before).
    use super::*;
    use cairn_kv::memory::MemoryStore;

    fn doc(len: usize) -> Vec<u8> {
        (0..len).map(|i| b"abcdefghij"[i % 10]).collect()
    }

    #[test]
    fn a_document_over_one_chunk_is_stored_under_its_own_hash_and_reads_back_whole() {
        let store = MemoryStore::new();
        let kv = TenantKv::new(&store, "t").unwrap();
        let bytes = doc(CHUNK_BYTES * 2 + 17);
        let (hash, blobs) = put_doc(&kv, &bytes, "text").unwrap();
        assert_eq!(hash, sha_hex(&bytes));
        assert_eq!(blobs, vec![format!("{hash}.0"), format!("{hash}.1"), format!("{hash}.2")]);
        assert_eq!(get_doc(&kv, &blobs).unwrap(), bytes);
    }

    #[test]
    fn a_document_of_one_chunk_keeps_the_key_it_always_had() {
        let store = MemoryStore::new();
        let kv = TenantKv::new(&store, "t").unwrap();
        let bytes = doc(1000);
        let (hash, blobs) = put_doc(&kv, &bytes, "text").unwrap();
        assert_eq!(blobs, vec![hash.clone()]);
        assert_eq!(kv.get(&keys::blob(&sha_hex(&bytes))).unwrap(), Some(bytes));
    }

    #[test]
    fn chunks_named_by_their_own_hashes_still_read_back() {
        let store = MemoryStore::new();
        let kv = TenantKv::new(&store, "t").unwrap();
        let bytes = doc(CHUNK_BYTES + 5);
        let names: Vec<String> = bytes.chunks(CHUNK_BYTES).map(|c| put_blob(&kv, c).unwrap()).collect();
        assert_eq!(get_doc(&kv, &names).unwrap(), bytes);
    }
}
