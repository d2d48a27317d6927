//! `list_note_history`: a note's committed versions, newest first.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Call, READ, READ_SCOPE, decode_cursor, encode_cursor};
use crate::args::{DEFAULT_LIMIT, check_cursor, check_id, check_limit, parse};
use crate::head::load_head;
use crate::history::{self, EntryView};
use crate::refusal::Out;
use crate::results::Notice;

tool!("list_note_history", "List a note's history", READ_SCOPE, READ);

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(schema_with = "crate::schema::shape::note_id")]
    note_id: String,
    /// Only versions that changed this tab (exact tab ID; deleted tabs included).
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::shape::id")]
    tab_id: Option<String>,
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::shape::cursor")]
    cursor: Option<String>,
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::shape::limit")]
    limit: Option<u64>,
}

fn description() -> String {
    "List a note's committed versions, newest first (of one tab with tab_id): for each, the note version, \
    the tab and its tab_version, the action (replace_text, append_text, create_tab, delete_tab, restore, …), \
    who (name, subject, actor_type) and when, and the content_hash. Read any listed version of a tab with \
    read_note_tab and at_version. At most limit (up to 50) per call; pass next_cursor back as cursor. The \
    newest 1,000 versions and the last 30 days are kept."
        .into()
}

fn input_schema() -> Value {
    crate::schema::input::<Args>()
}

/// A page of a note's committed versions, newest first.
#[derive(Debug, Serialize, JsonSchema)]
struct Output {
    note_id: String,
    /// The note's version.
    version: u64,
    /// The versions on this page, newest first.
    entries: Vec<EntryView>,
    /// Pass it back as cursor for the next page; null on the last page.
    #[schemars(schema_with = "crate::results::shape::cursor_or_null")]
    next_cursor: Option<String>,
    notice: Notice,
}

fn run(c: &mut Call, args: Value) -> Out<Output> {
    let a: Args = parse(args)?;
    check_id("note_id", &a.note_id)?;
    if let Some(t) = &a.tab_id {
        check_id("tab_id", t)?;
    }
    check_cursor(&a.cursor)?;
    check_limit(a.limit)?;
    let head = load_head(c.kv, c.who, &a.note_id)?;
    let tag = format!("history-{}", head.note_id);
    let top = match a.cursor.as_deref() {
        Some(cur) => Some(decode_cursor(&tag, Some(cur))? as u64),
        None => None,
    };
    let limit = a.limit.unwrap_or(DEFAULT_LIMIT) as usize;
    let (entries, next) = history::page(c.kv, &head, crate::head::Reader::Caller(c.who), a.tab_id.as_deref(), top, limit, history::Window::of(&*c.env))?;
    Ok(Output {
        note_id: head.note_id,
        version: head.version,
        entries: entries.iter().map(EntryView::of).collect(),
        next_cursor: next.map(|v| encode_cursor(&tag, v as usize)),
        notice: Notice,
    })
}
