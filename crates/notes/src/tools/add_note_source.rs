//! `add_note_source`: cite a page in a note's Sources tab, at most once per
//! normalized URL.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ADDS, Call, WRITE_SCOPE};
use crate::args::{MAX_SOURCE_TITLE_CHARS, MAX_URL_CHARS, check_chars, check_id, check_key, parse};
use crate::content::{load_list, put_doc};
use crate::model::{Source, TabKind, Who, encode, rand8};
use crate::refusal::{Out, Refusal};
use crate::url::normalize_url;
use crate::version::Version;
use crate::write::{Change, Plan, Target, commit_as, note_scope};
use crate::write_results::{Replayable, WriteFields, WriteResult};

tool!("add_note_source", "Add a note source", WRITE_SCOPE, ADDS);

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(schema_with = "crate::schema::shape::note_id")]
    note_id: String,
    /// The note version from list_note_tabs or read_note_tab.
    #[schemars(schema_with = "crate::schema::shape::version")]
    expected_version: crate::version::Version,
    /// Derived from note_id and the normalized URL.
    #[schemars(schema_with = "crate::schema::shape::key")]
    idempotency_key: String,
    #[schemars(length(min = 1, max = MAX_SOURCE_TITLE_CHARS))]
    title: String,
    /// An http or https URL.
    #[schemars(length(min = 1, max = MAX_URL_CHARS))]
    url: String,
}

impl Args {
    fn check(&self) -> Result<(), Refusal> {
        check_id("note_id", &self.note_id)?;
        check_key(&self.idempotency_key)?;
        check_chars("title", &self.title, 1, MAX_SOURCE_TITLE_CHARS)?;
        check_chars("url", &self.url, 1, MAX_URL_CHARS)
    }
}

fn description() -> String {
    "Add an http or https citation to a note's Sources tab; returns the source_id. The URL is \
                normalized (https, lower-case host without www., no fragment, no utm_* parameters, no trailing \
                slash) and a note holds each normalized URL once: adding it again returns the existing source with \
                already_attached: true. The idempotency key should name the intent \"this page is a source of this \
                note\": derive it from the note_id and the normalized URL, not a fresh random value. On \
                version_conflict nothing was written: list the note's attachments again and add with the new \
                version."
        .into()
}

fn input_schema() -> Value {
    crate::schema::input::<Args>()
}

/// The source as the note's Sources tab holds it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Attached {
    /// The source's exact id.
    source_id: String,
    /// Its title.
    title: String,
    /// Its URL, normalized.
    url: String,
    /// true when the normalized URL was already attached: this is that source, and nothing was written.
    already_attached: bool,
}

impl WriteFields for Attached {}

/// The source as attached: now (with the Sources tab's new tab_version and
/// content hash), or already (without them; nothing was written). A call
/// resent with the same idempotency key answers its first result again,
/// with replayed: true.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(transparent)]
struct Output(Replayable<WriteResult<Attached>>);

fn run(c: &mut Call, args: Value) -> Out<Output> {
    let a: Args = parse(args)?;
    a.check()?;
    let url = normalize_url(&a.url).map_err(|m| Refusal::invalid("url", m))?;
    // The intent is "this page is a source of this note": the key names the normalized URL.
    let spec = note_scope("add_note_source", true, &a.note_id, Some(&a.idempotency_key), a.expected_version, &json!({ "url": url }));
    let kv = c.kv;
    let answer = commit_as(
        kv,
        c.env,
        c.who,
        &spec,
        |head| {
            let i = head.tabs.iter().position(|t| t.kind == TabKind::Sources).ok_or_else(|| Refusal::not_found("sources tab"))?;
            let list: Vec<Source> = load_list(kv, &head.tabs[i])?;
            match list.iter().find(|s| s.url == url) {
                Some(s) => Ok(Plan::Answer(WriteResult {
                    fields: Attached { source_id: s.source_id.clone(), title: s.title.clone(), url: s.url.clone(), already_attached: true },
                    note_id: head.note_id.clone(),
                    version: Version::whole(head.version),
                    tab: None,
                    replayed: false,
                })),
                None => Ok(Plan::Write(Target::Tab(i))),
            }
        },
        |head, target, ctx| {
            let Target::Tab(i) = target else { unreachable!("sources live in a tab") };
            let mut list: Vec<Source> = load_list(ctx.kv, &head.tabs[i])?;
            head.attach_seq += 1;
            let source = Source {
                source_id: format!("src-{}-{}", head.attach_seq, rand8(ctx.env)),
                title: a.title.clone(),
                url: url.clone(),
                added_at: ctx.now,
                added_by: Who::of(ctx.who),
            };
            let result = Attached { source_id: source.source_id.clone(), title: source.title.clone(), url: url.clone(), already_attached: false };
            list.push(source);
            let (hash, blobs) = put_doc(ctx.kv, &encode(&list), "url")?;
            head.tabs[i].content_hash = hash;
            head.tabs[i].blobs = blobs;
            Ok(Change { action: "add_source", tab: Some(i), removed_tab: None, result })
        },
    )?;
    Ok(Output(answer))
}
