//! `POST /api/v1/notes/{note}/files`: a file's metadata in the Files tab.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use cairn_kv::Store;

use crate::args::check_chars;
use crate::content::{load_list, put_doc};
use crate::env::{Env, Identity};
use crate::model::{FileMeta, Head, TabKind, Who, encode, rand8};
use crate::refusal::{Failure, Out, Refusal};
use crate::write::{Change, note_scope};

use super::{Ctx, RestReply, answer, commit_tab, parse_keyed};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AttachFile {
    expected_version: crate::version::Version,
    #[serde(default)]
    idempotency_key: Option<String>,
    name: String,
    media_type: String,
    size_bytes: u64,
}

/// Records a file attachment's metadata (the bytes live elsewhere; agents only ever see
/// this metadata). 201 with `{note_id, file_id, version, tab_version, replayed}`.
pub fn attach_file(kv: &dyn Store, env: &mut dyn Env, who: &Identity, note_id: &str, args: Value) -> Result<RestReply, Failure> {
    answer(kv, who, &[("note_id", note_id)], 201, |kv| {
        let a: AttachFile = parse_keyed(args)?;
        check_chars("name", &a.name, 1, 255)?;
        check_chars("media_type", &a.media_type, 1, 100)?;
        let mut payload = serde_json::to_value(&a).expect("serializes");
        payload.as_object_mut().expect("object").remove("idempotency_key");
        let spec = note_scope("attach_file", true, note_id, a.idempotency_key.as_deref(), a.expected_version, &payload);
        let files_tab =
            |head: &Head| -> Out<usize> { head.tabs.iter().position(|t| t.kind == TabKind::Files).ok_or_else(|| Refusal::not_found("files tab").into()) };
        commit_tab(kv, env, who, &spec, files_tab, |head, i, ctx| {
            let mut list: Vec<FileMeta> = load_list(ctx.kv, &head.tabs[i])?;
            head.attach_seq += 1;
            let file_id = format!("file-{}-{}", head.attach_seq, rand8(ctx.env));
            list.push(FileMeta {
                file_id: file_id.clone(),
                name: a.name.clone(),
                media_type: a.media_type.clone(),
                size_bytes: a.size_bytes,
                added_at: ctx.now,
                added_by: Who::of(ctx.who),
            });
            let (hash, blobs) = put_doc(ctx.kv, &encode(&list), "name")?;
            head.tabs[i].content_hash = hash;
            head.tabs[i].blobs = blobs;
            let mut result = Map::new();
            result.insert("file_id".into(), file_id.into());
            Ok(Change { action: "attach_file", tab: Some(i), removed_tab: None, result })
        })
    })
}

/// [`attach_file`] on a routed request.
pub(super) fn serve(c: Ctx<'_>) -> Result<RestReply, Failure> {
    let note = c.param("note");
    attach_file(c.kv, c.env, c.who, note, c.body)
}
