//! `merge_note_tab`: a proposal for a markdown tab, made on an older
//! version, merged three ways with the text now (`crate::merge`). Writes
//! nothing: the merge view (MCP Apps, `ui://cairn/merge`) and the editor's
//! merge screen show it, a person settles the conflicts, and the merged text
//! is written with `edit_note_tab` at the `version` this answer gives.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Call, READ, READ_SCOPE, find_tab};
use crate::args::{check_id, parse};
use crate::content::{check_doc_size, load_text};
use crate::head::{Reader, load_head};
use crate::merge::Merge;
use crate::model::TabKind;
use crate::refusal::{Out, Refusal};
use crate::results::{Notice, shape};

tool!("merge_note_tab", "Merge a proposal with a note tab's text now", READ_SCOPE, READ);

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(schema_with = "crate::schema::shape::note_id")]
    note_id: String,
    /// Exact tab ID of a markdown tab (default: markdown).
    #[serde(default = "super::markdown_tab")]
    #[schemars(schema_with = "crate::schema::shape::id")]
    tab_id: String,
    /// The note version the proposal was based on (the expected_version it was written with).
    #[schemars(range(min = 1))]
    base_version: u64,
    /// The proposed whole text of the tab.
    text: String,
}

fn description() -> String {
    "The three-way merge of a proposed text for a markdown tab (text), written against an older note version \
    (base_version: the version it was based on), with the tab's text now. Writes nothing. Changes apart merge; \
    the same change on both sides is no conflict; anything else is a conflict, whose region keeps the stored text \
    in merged and lists base, theirs (stored) and mine (the proposal). segments lays the merge out in order: the \
    texts of all segments joined are merged. To keep the result, write merged (conflicts settled) with \
    edit_note_tab replace_text and expected_version = the version answered here. Mostly for the merge view a \
    person uses (ui://cairn/merge); an agent on version_conflict should read the tab again and redo its change."
        .into()
}

fn input_schema() -> Value {
    crate::schema::input::<Args>()
}

/// The merge, with the versions to write it at: write merged (conflicts
/// settled) with edit_note_tab replace_text and expected_version = version.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Output {
    note_id: String,
    tab_id: String,
    /// The note's version now: the expected_version to write merged with.
    version: u64,
    /// The tab's version now.
    tab_version: u64,
    /// The hash of the tab's content now (theirs).
    #[schemars(schema_with = "shape::hash")]
    content_hash: String,
    /// The note version the proposal was based on, as sent.
    base_version: u64,
    #[serde(flatten)]
    merge: Merge,
    notice: Notice,
}

fn run(c: &mut Call, args: Value) -> Out<Output> {
    let a: Args = parse(args)?;
    check_id("note_id", &a.note_id)?;
    check_id("tab_id", &a.tab_id)?;
    check_doc_size(a.text.as_bytes(), "text")?;
    if a.base_version == 0 {
        return Err(Refusal::invalid("base_version", "base_version counts from 1: the note version the proposal was based on").into());
    }
    let head = load_head(c.kv, c.who, &a.note_id)?;
    let tab = find_tab(&head, &a.tab_id)?;
    if tab.kind != TabKind::Markdown {
        return Err(Refusal::invalid("tab_id", format!("merge works on the markdown tab, not a {} tab", tab.kind.as_str())).into());
    }
    if a.base_version > head.version {
        return Err(Refusal::invalid("base_version", format!("base_version must be between 1 and the note's version {}", head.version))
            .with_version(head.version)
            .into());
    }
    let window = crate::history::Window::of(&*c.env);
    let base_tab = crate::history::tab_at(c.kv, &head, Reader::Caller(c.who), &a.tab_id, a.base_version, window)?;
    let base = load_text(c.kv, &base_tab)?;
    let theirs = load_text(c.kv, tab)?;
    let merge = crate::merge::merge(&base, &theirs, &a.text)?;
    Ok(Output {
        note_id: head.note_id.clone(),
        tab_id: tab.id.clone(),
        version: head.version,
        tab_version: tab.version,
        content_hash: tab.content_hash.clone(),
        base_version: a.base_version,
        merge,
        notice: Notice,
    })
}
