//! `read_note_outline`: a markdown tab's sections, what an agent reads first
//! on a big note (see `crate::sections` for what a section is).

use schemars::{Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Call, READ, READ_SCOPE, find_tab};
use crate::args::{check_id, parse};
use crate::content::load_text;
use crate::env::ActorType;
use crate::head::load_head;
use crate::model::TabKind;
use crate::refusal::{Out, Refusal};
use crate::results::{Notice, shape};
use crate::sections::{lines, outline};
use crate::version::{Extent, Version};

tool!("read_note_outline", "Read a note tab's outline", READ_SCOPE, READ);

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

/// A markdown tab's sections, with the versions (part tokens: an outline holds no text).
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Output {
    note_id: String,
    tab_id: String,
    /// The note's version, as a part token.
    #[schemars(schema_with = "shape::version")]
    version: Version,
    /// The tab's version, as a part token.
    #[schemars(schema_with = "shape::version")]
    tab_version: Version,
    /// Lines in the tab's text.
    total_lines: usize,
    /// The sections listed, in text order.
    sections: Vec<OutlineSection>,
    /// Whether more sections follow this page.
    truncated: bool,
    /// Where the rest starts: the start_line to send for the next page (only when truncated).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(default, with = "usize")]
    next: Option<usize>,
    notice: Notice,
}

/// One section: a heading and the lines up to the next heading of its level or higher.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct OutlineSection {
    /// Its stable id, for read_note_tab and replace_section.
    section_id: String,
    /// The heading level: 1 (#) to 6.
    #[schemars(range(min = 1, max = 6))]
    level: u8,
    /// The heading's text, without the #s.
    heading: String,
    /// Its first line, the heading (from 1).
    start_line: usize,
    /// Its last line, inclusive; a section holds its subsections.
    end_line: usize,
    /// Characters in its lines.
    chars: usize,
    /// The hash of its lines: replace_section's expected_section_hash.
    #[schemars(schema_with = "shape::hash")]
    section_hash: String,
    /// The live claim on it, when someone holds one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(default, with = "ClaimedBy")]
    claimed_by: Option<ClaimedBy>,
}

/// A live claim on a section.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct ClaimedBy {
    /// The claim's id.
    claim_id: String,
    /// The holder's name.
    held_by: String,
    /// Whether the holder is an agent or a person.
    #[schemars(schema_with = "actor_type")]
    actor_type: ActorType,
    /// When the claim lapses unless renewed.
    #[schemars(schema_with = "shape::timestamp")]
    expires_at: String,
}

/// `agent` or `human`.
fn actor_type(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "enum": ["agent", "human"]})
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

fn run(c: &mut Call, args: Value) -> Out<Output> {
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
        let held = head.claims.iter().find(|c| c.live(now) && c.tab_id.as_deref() == Some(tab.id.as_str()) && c.section_id.as_deref() == Some(s.id.as_str()));
        let claimed_by = held.map(|c| ClaimedBy {
            claim_id: c.claim_id.clone(),
            held_by: c.holder.name.clone(),
            actor_type: c.holder.actor_type,
            expires_at: crate::model::rfc3339(c.expires_at),
        });
        let section_hash = s.hash(&text);
        let v = OutlineSection {
            section_id: s.id,
            level: s.level,
            heading: s.heading,
            start_line: s.start_line,
            end_line: s.end_line,
            chars: s.chars,
            section_hash,
            claimed_by,
        };
        let size = serde_json::to_string(&v).expect("a section serializes").chars().count() + 1;
        if sections.len() == most || (!sections.is_empty() && chars + size > cap) {
            next = Some(v.start_line);
            break;
        }
        chars += size;
        sections.push(v);
    }
    Ok(Output {
        note_id: head.note_id.clone(),
        tab_id: tab.id.clone(),
        // An outline holds no text: a whole-tab write on it is refused.
        version: Version::of(head.version, Extent::Part),
        tab_version: Version::of(tab.version, Extent::Part),
        total_lines: lines(&text).len(),
        sections,
        truncated: next.is_some(),
        next,
        notice: Notice,
    })
}
