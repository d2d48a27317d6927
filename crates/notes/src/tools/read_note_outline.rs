//! `read_note_outline`: a markdown tab's sections, what an agent reads first
//! on a big note (see `crate::sections` for what a section is).

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Call, READ, READ_SCOPE, find_tab};
use crate::args::{check_id, parse};
use crate::content::load_text;
use crate::head::load_head;
use crate::model::TabKind;
use crate::refusal::{NOTICE, Out, Refusal};
use crate::schema::{id, note_id, object};
use crate::sections::{lines, outline};

tool!("read_note_outline", "Read a note tab's outline", READ_SCOPE, READ);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    note_id: String,
    #[serde(default = "markdown")]
    tab_id: String,
    #[serde(default)]
    start_line: Option<u64>,
}

/// The most sections one outline read lists: a tab of nothing but headings
/// (up to half a million of them in 1 MB) is read in pages of this many.
pub const MAX_OUTLINE_SECTIONS: usize = 500;

fn markdown() -> String {
    "markdown".into()
}

fn description() -> String {
    "The outline of a note's markdown tab: every heading with its level, text, a stable section_id, \
    its line range (start_line..end_line, from 1, inclusive; a section holds its subsections), its size \
    in characters and its section_hash, with the note and tab versions. Read this first on a big note, \
    then read only the part you need with read_note_tab (section_id, or start_line and max_lines). \
    At most 500 sections a read: a longer outline says truncated, and next is the start_line to send for \
    the rest."
        .into()
}

fn input_schema() -> Value {
    object(
        &["note_id"],
        json!({
            "note_id": note_id(),
            "tab_id": id("Exact tab ID of a markdown tab (default: markdown)."),
            "start_line": {"type": "integer", "minimum": 1, "description": "Optional: list only the sections that start on this line or later (a next from a truncated outline)."},
        }),
    )
}

/// `read_note_outline`: the sections with the versions.
fn output_schema() -> Value {
    use crate::schema::*;
    let section = result(
        &["section_id", "level", "heading", "start_line", "end_line", "chars", "section_hash"],
        json!({"section_id": text(), "level": count(), "heading": text(), "start_line": count(), "end_line": count(),
               "chars": count(), "section_hash": hash()}),
    );
    output(result(
        &["note_id", "tab_id", "version", "tab_version", "total_lines", "sections", "truncated", "notice"],
        json!({"note_id": text(), "tab_id": text(), "version": count(), "tab_version": count(), "total_lines": count(),
               "sections": list(section), "truncated": flag(), "next": count(), "notice": notice()}),
    ))
}

fn run(c: &mut Call, args: Value) -> Out<Value> {
    let a: Args = parse(args)?;
    check_id("note_id", &a.note_id)?;
    check_id("tab_id", &a.tab_id)?;
    let head = load_head(c.kv, c.who, &a.note_id)?;
    let tab = find_tab(&head, &a.tab_id)?;
    if tab.kind != TabKind::Markdown {
        return Err(Refusal::invalid("tab_id", format!("tab {} is a {} tab; only markdown tabs have an outline", tab.id, tab.kind.as_str())).into());
    }
    let from = match a.start_line {
        Some(0) => return Err(Refusal::invalid("start_line", "start_line counts from 1").into()),
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        None => 1,
    };
    let text = load_text(c.kv, tab)?;
    let mut rest = outline(&text).into_iter().filter(|s| s.start_line >= from);
    let page: Vec<_> = rest.by_ref().take(MAX_OUTLINE_SECTIONS).collect();
    let next = rest.next().map(|s| s.start_line);
    let sections: Vec<Value> = page
        .into_iter()
        .map(|s| {
            json!({"section_id": s.id, "level": s.level, "heading": s.heading, "start_line": s.start_line,
                   "end_line": s.end_line, "chars": s.chars, "section_hash": s.hash})
        })
        .collect();
    let mut out = json!({
        "note_id": head.note_id,
        "tab_id": tab.id,
        "version": head.version,
        "tab_version": tab.version,
        "total_lines": lines(&text).len(),
        "sections": sections,
        "truncated": next.is_some(),
        "notice": NOTICE,
    });
    if let Some(n) = next {
        out["next"] = n.into();
    }
    Ok(out)
}
