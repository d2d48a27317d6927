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
use crate::sections::{lines, outline};
use crate::version::{Extent, Version};

tool!(untyped "read_note_outline", "Read a note tab's outline", READ_SCOPE, READ);

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(schema_with = "crate::schema::shape::note_id")]
    note_id: String,
    /// Exact tab ID of a markdown tab (default: markdown).
    #[serde(default = "super::markdown_tab")]
    #[schemars(schema_with = "crate::schema::shape::id")]
    tab_id: String,
    /// Optional: list only the sections that start on this line or later (a next from a truncated outline).
    #[serde(default)]
    #[schemars(with = "u64", range(min = 1))]
    start_line: Option<u64>,
    /// Optional: list only sections whose heading contains this text (any case).
    #[serde(default)]
    #[schemars(with = "String", length(min = 1, max = MAX_FILTER_CHARS))]
    heading: Option<String>,
    /// Optional: list only headings of this level or higher (1 = # only).
    #[serde(default)]
    #[schemars(with = "u64", range(min = 1, max = 6))]
    max_level: Option<u64>,
    /// Optional: list at most this many sections (default 500).
    #[serde(default)]
    #[schemars(with = "u64", range(min = 1, max = MAX_OUTLINE_SECTIONS))]
    max_sections: Option<u64>,
    /// Optional: the most characters of answer to fill with sections (default 24,000, as every read).
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::shape::max_chars")]
    max_chars: Option<u64>,
}

/// The most characters of a `heading` filter.
const MAX_FILTER_CHARS: usize = 200;

/// The most sections one outline read lists: a tab of nothing but headings
/// (up to half a million of them in 1 MB) is read in pages of this many.
pub const MAX_OUTLINE_SECTIONS: usize = 500;

fn description() -> String {
    "The outline of a note's markdown tab: every heading with its level, text, a stable section_id, \
    its line range (start_line..end_line, from 1, inclusive; a section holds its subsections), its size \
    in characters, its section_hash, and who holds a claim on it (claimed_by), with the note and tab \
    versions. Read this first on a big note, then read only the part you need with read_note_tab \
    (section_id, or start_line and max_lines). Looking for one section? heading (text it contains, any \
    case) and max_level (1-6) list only the matching sections, which keeps the answer small on a note \
    of many sections. A read lists whole sections up to max_sections (default and most 500) and the \
    read cap (max_chars, default 24,000 characters, about 120 sections): a longer outline says \
    truncated, and next is the start_line to send for the rest."
        .into()
}

fn input_schema() -> Value {
    crate::schema::input::<Args>()
}

/// `read_note_outline`: the sections with the versions.
fn output_schema() -> Value {
    use crate::schema::*;
    let claimed_by = result(
        &["claim_id", "held_by", "actor_type", "expires_at"],
        json!({"claim_id": text(), "held_by": text(), "actor_type": {"type": "string", "enum": ["agent", "human"]}, "expires_at": timestamp()}),
    );
    let section = result(
        &["section_id", "level", "heading", "start_line", "end_line", "chars", "section_hash"],
        json!({"section_id": text(), "level": count(), "heading": text(), "start_line": count(), "end_line": count(),
               "chars": count(), "section_hash": hash(), "claimed_by": claimed_by}),
    );
    output_of(result(
        &["note_id", "tab_id", "version", "tab_version", "total_lines", "sections", "truncated", "notice"],
        json!({"note_id": text(), "tab_id": text(), "version": crate::version::out_schema(), "tab_version": crate::version::out_schema(), "total_lines": count(),
               "sections": list(section), "truncated": flag(), "next": count(), "notice": notice()}),
    ))
}

/// Which sections a call asks for, checked.
struct Filters {
    /// The first line a section may start on (from 1).
    from: usize,
    /// The deepest heading level.
    level: u8,
    /// The most sections a page holds.
    most: usize,
    /// Lower-case text the heading must contain.
    wanted: Option<String>,
}

impl Args {
    fn filters(&self) -> Result<Filters, Refusal> {
        let from = match self.start_line {
            Some(0) => return Err(Refusal::invalid("start_line", "start_line counts from 1")),
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
            None => 1,
        };
        let level = match self.max_level {
            None => 6,
            Some(l @ 1..=6) => l as u8,
            Some(_) => return Err(Refusal::invalid("max_level", "max_level is a heading level, 1 to 6")),
        };
        let most = match self.max_sections {
            None => MAX_OUTLINE_SECTIONS,
            Some(n) if (1..=MAX_OUTLINE_SECTIONS as u64).contains(&n) => n as usize,
            Some(_) => return Err(Refusal::invalid("max_sections", format!("max_sections must be between 1 and {MAX_OUTLINE_SECTIONS}"))),
        };
        let wanted = match self.heading.as_deref() {
            Some(h) if h.trim().is_empty() || h.chars().count() > MAX_FILTER_CHARS => {
                return Err(Refusal::invalid("heading", format!("heading must be 1-{MAX_FILTER_CHARS} characters of the heading text to look for")));
            }
            h => h.map(str::to_lowercase),
        };
        Ok(Filters { from, level, most, wanted })
    }
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
    let Filters { from, level, most, wanted } = a.filters()?;
    let now = c.env.now_us();
    let text = load_text(c.kv, tab)?;
    let rest = outline(&text)
        .into_iter()
        .filter(|s| s.start_line >= from && s.level <= level && wanted.as_ref().is_none_or(|w| s.heading.to_lowercase().contains(w.as_str())));
    let cap = crate::args::read_cap(&*c.env, a.max_chars)?;
    // Whole sections while the page holds at most `most` of them and `cap`
    // characters of JSON (always at least one).
    let (mut sections, mut chars, mut next) = (Vec::new(), 0usize, None);
    for s in rest {
        let mut v = json!({"section_id": s.id, "level": s.level, "heading": s.heading, "start_line": s.start_line,
               "end_line": s.end_line, "chars": s.chars, "section_hash": s.hash(&text)});
        let held = head.claims.iter().find(|c| c.live(now) && c.tab_id.as_deref() == Some(tab.id.as_str()) && c.section_id.as_deref() == Some(s.id.as_str()));
        if let Some(c) = held {
            v["claimed_by"] = json!({"claim_id": c.claim_id, "held_by": c.holder.name, "actor_type": crate::claim_audit::actor_str(c.holder.actor_type),
                                     "expires_at": crate::model::rfc3339(c.expires_at)});
        }
        let size = v.to_string().chars().count() + 1;
        if sections.len() == most || (!sections.is_empty() && chars + size > cap) {
            next = Some(s.start_line);
            break;
        }
        chars += size;
        sections.push(v);
    }
    let mut out = json!({
        "note_id": head.note_id,
        "tab_id": tab.id,
        // An outline holds no text: a whole-tab write on it is refused.
        "version": Version::of(head.version, Extent::Part),
        "tab_version": Version::of(tab.version, Extent::Part),
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
