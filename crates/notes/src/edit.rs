//! Tab edits that the `edit_note_tab` tool and the people's REST writes
//! share: the operations, which tab types they apply to, and how each changes
//! a tab's content. Every edit commits through [`crate::write::commit`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::args::{SlideIn, check_slide, parse_object};
use crate::content::{Slide, SlidesDoc, check_doc_size, empty_hash, load_slides, load_text, put_hashed, store_slides};
use crate::env::{Env, Identity};
use crate::kv::TenantKv;
use crate::model::sha_hex;
use crate::model::{Head, Tab, TabKind, Who};
use crate::refusal::{Code, Out, Refusal};
use crate::sheet::{self, load_manifest, store_manifest};
use crate::write::{Change, Ctx, Plan, Target, WriteSpec, commit_as};
use crate::write_results::{Replayable, WriteFields, WriteResult};

/// Tabs per note (fixed tabs included).
pub(crate) const MAX_TABS: usize = 100;

/// The operations of `edit_note_tab`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Operation {
    ReplaceText,
    AppendText,
    ReplaceInText,
    ReplaceTabData,
    SlideAdd,
    SlidesAddOutline,
    SheetSetRange,
    ReplaceSection,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::ReplaceText => "replace_text",
            Operation::AppendText => "append_text",
            Operation::ReplaceInText => "replace_in_text",
            Operation::ReplaceTabData => "replace_tab_data",
            Operation::SlideAdd => "slide_add",
            Operation::SlidesAddOutline => "slides_add_outline",
            Operation::SheetSetRange => "sheet_set_range",
            Operation::ReplaceSection => "replace_section",
        }
    }
}

/// A change to one tab's content.
pub(crate) enum Edit {
    /// The whole markdown text and its SHA-256 (hashed once, before the commit).
    Text(String, String),
    /// A change to part of the markdown text; with `rebase`, the note
    /// version it was based on when that may have moved.
    Patch(Patch, Option<u64>),
    Data(Map<String, Value>),
    SlideAdd(SlideIn),
    Outline(Vec<SlideIn>),
    SetRange {
        sheet_id: String,
        row: u64,
        col: u64,
        values: Vec<Vec<Value>>,
    },
}

impl Edit {
    fn op(&self) -> Operation {
        match self {
            Edit::Text(..) => Operation::ReplaceText,
            Edit::Patch(Patch::Append(_), _) => Operation::AppendText,
            Edit::Patch(Patch::Replace { .. }, _) => Operation::ReplaceInText,
            Edit::Patch(Patch::Section { .. }, _) => Operation::ReplaceSection,
            Edit::Data(_) => Operation::ReplaceTabData,
            Edit::SlideAdd(_) => Operation::SlideAdd,
            Edit::Outline(_) => Operation::SlidesAddOutline,
            Edit::SetRange { .. } => Operation::SheetSetRange,
        }
    }
}

/// What an edit's result says besides the versions.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub(crate) struct EditFields {
    /// The operation that was applied.
    pub operation: Operation,
    /// Present when the patch could apply over later changes (rebase: true, or replace_section): whether it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub rebased: Option<bool>,
    /// With rebased: true, the note versions the patch was applied over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<u64>")]
    pub rebased_over: Option<Vec<u64>>,
    /// replace_section: the section's section_id now (new if its heading changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub section_id: Option<String>,
}

impl WriteFields for EditFields {
    fn rebased(&self) -> bool {
        self.rebased == Some(true)
    }
}

/// Finds the tab by exact id and checks that the operation applies to its type.
pub(crate) fn resolve_tab(head: &Head, tab_id: &str, op: Operation) -> Result<Target, Refusal> {
    let i = head.tab_index(tab_id).ok_or_else(|| Refusal::not_found("tab"))?;
    let kind = head.tabs[i].kind;
    let fits = match kind {
        TabKind::Files | TabKind::Sources => {
            return Err(Refusal::invalid("tab_id", "File and Source attachments cannot be edited with this tool"));
        }
        TabKind::Markdown => matches!(op, Operation::ReplaceText | Operation::AppendText | Operation::ReplaceInText | Operation::ReplaceSection),
        TabKind::Slides => matches!(op, Operation::ReplaceTabData | Operation::SlideAdd | Operation::SlidesAddOutline),
        TabKind::Sheet => matches!(op, Operation::ReplaceTabData | Operation::SheetSetRange),
    };
    if !fits {
        return Err(Refusal::invalid("operation", format!("{} does not apply to a {} tab", op.as_str(), kind.as_str())));
    }
    Ok(Target::Tab(i))
}

/// Applies an edit to tab `i`: new content blobs first, then the tab's content refs.
pub(crate) fn apply_edit(kv: &TenantKv, head: &mut Head, i: usize, edit: &Edit, env: &dyn Env, who: &Identity) -> Out<Change<EditFields>> {
    let tab = &head.tabs[i];
    let mut size = None;
    let mut fields = EditFields { operation: edit.op(), rebased: None, rebased_over: None, section_id: None };
    let (hash, blobs) = match (tab.kind, edit) {
        (TabKind::Markdown, Edit::Text(t, hash)) => {
            check_doc_size(t.as_bytes(), "text")?;
            size = Some(t.len() as u64);
            (hash.clone(), put_hashed(kv, t.as_bytes(), hash)?)
        }
        (TabKind::Markdown, Edit::Patch(patch, base)) => {
            let (text, hash, blobs) = patch_text(kv, head, tab, patch, *base, env, who, &mut fields)?;
            size = Some(text.len() as u64);
            (hash, blobs)
        }
        (TabKind::Slides, Edit::Data(d)) => {
            let doc: SlidesDoc<SlideIn> = parse_object(d.clone(), "data.")?;
            for (n, s) in doc.slides.iter().enumerate() {
                check_slide(&format!("data.slides[{n}]."), s)?;
            }
            store_slides(kv, doc.slides.iter().map(Slide::from).collect(), "data")?
        }
        (TabKind::Slides, Edit::SlideAdd(s)) => {
            let mut slides = load_slides(kv, tab)?;
            slides.push(Slide::from(s));
            store_slides(kv, slides, "title")?
        }
        (TabKind::Slides, Edit::Outline(list)) => {
            let mut slides = load_slides(kv, tab)?;
            slides.extend(list.iter().map(Slide::from));
            store_slides(kv, slides, "slides")?
        }
        (TabKind::Sheet, Edit::Data(d)) => {
            let old = load_manifest(kv, &tab.blobs)?;
            store_manifest(kv, &sheet::replace(kv, &old, d.clone())?)?
        }
        (TabKind::Sheet, Edit::SetRange { sheet_id, row, col, values }) => {
            let mut m = load_manifest(kv, &tab.blobs)?;
            let s = m.sheet(sheet_id).ok_or_else(|| Refusal::not_found("sheet").with("field", "sheet_id"))?;
            sheet::set_range(kv, &mut m.sheets[s], *row, *col, values)?;
            store_manifest(kv, &m)?
        }
        (kind, e) => {
            return Err(Refusal::invalid("operation", format!("{} does not apply to a {} tab", e.op().as_str(), kind.as_str())).into());
        }
    };
    let tab = &mut head.tabs[i];
    tab.content_hash = hash;
    tab.blobs = blobs;
    tab.size = size.unwrap_or(0);
    Ok(Change { action: edit.op().as_str(), tab: Some(i), removed_tab: None, result: fields })
}

/// The markdown text `patch` leaves, checked and stored: the text, its
/// hash and its blobs. With `base` (a rebase or a section edit on an older
/// version), the patch applies over the changes since only as
/// [`check_rebase`] allows; `fields` get what the result says of it.
#[allow(clippy::too_many_arguments)]
fn patch_text(
    kv: &TenantKv,
    head: &Head,
    tab: &Tab,
    patch: &Patch,
    base: Option<u64>,
    env: &dyn Env,
    who: &Identity,
    fields: &mut EditFields,
) -> Out<(String, String, Vec<String>)> {
    let current = load_text(kv, tab)?;
    let rebased = match (base, patch) {
        // A section edit is guarded by the section's hash, not by the lines around it.
        (Some(v), Patch::Section { .. }) if v > head.version => {
            return Err(Refusal::new(Code::VersionConflict, format!("version {v} does not exist yet: the note is at version {}", head.version))
                .with_version(head.version)
                .into());
        }
        (Some(v), Patch::Section { .. }) if v != head.version => Some(((v + 1)..=head.version).collect::<Vec<u64>>()),
        (Some(v), _) if v != head.version => Some(check_rebase(kv, head, who, tab, patch, v, &current, crate::history::Window::of(env))?),
        _ => None,
    };
    let text = match patch {
        Patch::Section { id, hash, text: with } => {
            let (text, start) = replace_section(&current, id, hash, with)?;
            // A new heading renames the section: name it as it is now.
            let now = crate::sections::outline(&text).into_iter().find(|s| s.start_line == start).map_or_else(String::new, |s| s.id);
            fields.section_id = Some(now);
            text
        }
        _ => patch.apply(&current)?,
    };
    check_doc_size(text.as_bytes(), "text")?;
    if let Some(over) = rebased {
        fields.rebased = Some(true);
        fields.rebased_over = Some(over);
    } else if base.is_some() {
        fields.rebased = Some(false);
    }
    let hash = sha_hex(text.as_bytes());
    let blobs = put_hashed(kv, text.as_bytes(), &hash)?;
    Ok((text, hash, blobs))
}

/// A new tab with empty content of its kind (version 0: the commit makes it 1).
pub(crate) fn new_tab(id: String, kind: TabKind, label: String, who: &Identity, now: u64) -> Tab {
    Tab {
        id,
        kind,
        label,
        version: 0,
        content_hash: empty_hash(),
        blobs: Vec::new(),
        size: 0,
        created_at: now,
        author: Who::of(who),
        updated_at: now,
        updated_by: Who::of(who),
    }
}

/// Runs one tab edit as a commit (shared by `edit_note_tab` and the REST helpers).
pub(crate) fn edit_tab_with(
    kv: &TenantKv,
    env: &mut dyn Env,
    who: &Identity,
    spec: &WriteSpec,
    tab_id: &str,
    edit: &Edit,
) -> Out<Replayable<WriteResult<EditFields>>> {
    commit_as(
        kv,
        env,
        who,
        spec,
        |head| Ok(Plan::Write(resolve_tab(head, tab_id, edit.op())?)),
        |head, target, ctx: &mut Ctx| match target {
            Target::Tab(i) => apply_edit(ctx.kv, head, i, edit, &*ctx.env, ctx.who),
            Target::Note => unreachable!("edits target a tab"),
        },
    )
}

/// A change to part of a markdown text, carrying its intent.
#[derive(Debug, Clone)]
pub(crate) enum Patch {
    /// Add `text` at the end, on its own line(s).
    Append(String),
    /// Replace the one occurrence of `old` with `new`.
    Replace { old: String, new: String },
    /// Replace the section `id` (heading included) with `text`, if its
    /// hash is still `hash`.
    Section { id: String, hash: String, text: String },
}

impl Patch {
    /// The text with the patch applied; `replace_in_text` needs `old` to
    /// occur exactly once.
    pub fn apply(&self, text: &str) -> Out<String> {
        match self {
            Patch::Append(add) => {
                let mut out = String::with_capacity(text.len() + add.len() + 2);
                out.push_str(text);
                if !text.is_empty() && !text.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(add);
                if !add.ends_with('\n') {
                    out.push('\n');
                }
                Ok(out)
            }
            Patch::Replace { old, new } => {
                let at = once(text, old, "")?;
                Ok(format!("{}{new}{}", &text[..at], &text[at + old.len()..]))
            }
            Patch::Section { id, hash, text: with } => replace_section(text, id, hash, with).map(|(t, _)| t),
        }
    }

    /// The lines of `base` the patch changes, half-open (`[n, n)` for an
    /// append after the `n` lines of `base`).
    fn lines(&self, base: &str) -> Out<(usize, usize)> {
        let line_of = |byte: usize| base[..byte].matches('\n').count();
        match self {
            Patch::Append(_) => Ok({
                let n = base.lines().count();
                (n, n)
            }),
            Patch::Section { id, .. } => {
                let s = section(base, id)?;
                Ok((s.start_line - 1, s.end_line))
            }
            Patch::Replace { old, .. } => {
                let at = once(base, old, " in the version you based the patch on")?;
                let end = at + old.len();
                Ok((line_of(at), line_of(end.saturating_sub(1).max(at)) + 1))
            }
        }
    }
}

/// `text` with its section `id` replaced by `with`, if the section's hash
/// is still `hash` (else `version_conflict` naming `expected_section_hash`,
/// with the section's hash and size now); and the line the section started on.
fn replace_section(text: &str, id: &str, hash: &str, with: &str) -> Out<(String, usize)> {
    let s = section(text, id)?;
    let now = s.hash(text);
    if now != hash {
        return Err(Refusal::new(
            Code::VersionConflict,
            format!("section {id} changed since you read it: its hash is now {now}, not {hash}"),
        )
        .with("field", "expected_section_hash")
        .with("section_id", id)
        .with("section_hash", now)
        .with("chars", s.chars as u64)
        .with_next_step("read the section again (read_note_tab with its section_id), redo your change on it, and send it with its new section_hash and a new idempotency key")
        .into());
    }
    let lines = crate::sections::lines(text);
    let mut out = String::with_capacity(text.len() + with.len());
    for l in &lines[..s.start_line - 1] {
        out.push_str(l);
        out.push('\n');
    }
    out.push_str(with);
    let rest = &lines[s.end_line..];
    if !rest.is_empty() {
        if !with.is_empty() && !with.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&rest.join("\n"));
        if text.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok((out, s.start_line))
}

/// The section `id` of `text`, or `not_found` naming `section_id`.
fn section(text: &str, id: &str) -> Out<crate::sections::Section> {
    crate::sections::outline(text).into_iter().find(|s| s.id == id).ok_or_else(|| {
        Refusal::new(Code::NotFound, format!("no section {id:?} in the tab"))
            .with("field", "section_id")
            .with_next_step("read the outline again (read_note_outline) and use a section_id from it")
            .into()
    })
}

/// The byte offset of the one occurrence of `needle`, or `invalid_argument`
/// saying how many times it occurs (`context` says in which text).
fn once(text: &str, needle: &str, context: &str) -> Out<usize> {
    let mut hits = text.match_indices(needle);
    match (hits.next(), hits.next()) {
        (Some((at, _)), None) => Ok(at),
        (None, _) => Err(Refusal::invalid("old_text", format!("old_text occurs 0 times in the text{context}; it must occur exactly once")).into()),
        (Some(_), Some(_)) => {
            let n = 2 + hits.count();
            Err(Refusal::invalid(
                "old_text",
                format!("old_text occurs {n} times in the text{context}; it must occur exactly once: include more of the surrounding text"),
            )
            .into())
        }
    }
}

/// Whether a patch based on note version `base` may be applied to the text
/// as it is now: only if no change between `base` and now touches or
/// borders the lines the patch changes (compared line by line with the text
/// at `base`, read from history). Returns the versions it is rebased over;
/// anything else is `version_conflict`.
#[allow(clippy::too_many_arguments)]
fn check_rebase(kv: &TenantKv, head: &Head, who: &Identity, tab: &Tab, patch: &Patch, base: u64, current: &str, now: crate::history::Window) -> Out<Vec<u64>> {
    let conflict = |why: String| -> crate::refusal::Halt {
        Refusal::new(Code::VersionConflict, format!("the note is at version {}, not {base}, and the patch cannot be rebased: {why}", head.version))
            .with_version(head.version)
            .with("version_scope", "note")
            .with("rebase_refused", why)
            .into()
    };
    if base > head.version {
        return Err(conflict(format!("version {base} does not exist yet")));
    }
    // An agent cannot rebase over versions it may not see.
    let then = match crate::history::tab_at(kv, head, crate::head::Reader::Caller(who), &tab.id, base, now) {
        Ok(t) => t,
        Err(crate::refusal::Halt::Refused(r)) => return Err(conflict(format!("the version you read is not readable: {}", r.message))),
        Err(e) => return Err(e),
    };
    let base_text = load_text(kv, &then)?;
    let (ps, pe) = patch.lines(&base_text).map_err(|_| conflict("old_text does not occur exactly once in the version you read".into()))?;
    let diff = crate::diff::lines(base_text.as_str(), current, crate::diff::Purpose::Rebase)?;
    for (r, _) in crate::merge::line_changes(diff.ops()) {
        if r.start <= pe && r.end >= ps {
            return Err(conflict(format!("a change since version {base} touches or borders lines {}-{} that the patch changes", ps + 1, pe.max(ps + 1))));
        }
    }
    if let Patch::Replace { old, .. } = patch {
        once(current, old, "").map_err(|_| conflict("old_text no longer occurs exactly once".into()))?;
    }
    Ok(((base + 1)..=head.version).collect())
}
