//! Tab edits that the `edit_note_tab` tool and the people's REST writes
//! share: the operations, which tab types they apply to, and how each changes
//! a tab's content. Every edit commits through [`crate::write::commit`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::args::{SlideIn, check_slide, parse_object};
use crate::content::{Slide, SlidesDoc, check_doc_size, empty_hash, load_slides, put_hashed, store_slides};
use crate::env::{Env, Identity};
use crate::kv::TenantKv;
use crate::model::{Head, Tab, TabKind, Who};
use crate::refusal::{Out, Refusal};
use crate::sheet::{self, load_manifest, store_manifest};
use crate::write::{Change, Ctx, Plan, Target, WriteSpec, commit};

/// Tabs per note (fixed tabs included).
pub(crate) const MAX_TABS: usize = 100;

/// The operations of `edit_note_tab`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Operation {
    ReplaceText,
    ReplaceTabData,
    SlideAdd,
    SlidesAddOutline,
    SheetSetRange,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::ReplaceText => "replace_text",
            Operation::ReplaceTabData => "replace_tab_data",
            Operation::SlideAdd => "slide_add",
            Operation::SlidesAddOutline => "slides_add_outline",
            Operation::SheetSetRange => "sheet_set_range",
        }
    }

    /// The operation fields this operation requires, then those it also allows.
    pub fn fields(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            Operation::ReplaceText => (&["text"], &[]),
            Operation::ReplaceTabData => (&["data"], &[]),
            Operation::SlideAdd => (&["title"], &["body", "notes"]),
            Operation::SlidesAddOutline => (&["slides"], &[]),
            Operation::SheetSetRange => (&["sheet_id", "start_row", "start_col", "values"], &[]),
        }
    }
}

/// Every operation field of `edit_note_tab`.
pub(crate) const OPERATION_FIELDS: [&str; 10] = [
    "text",
    "data",
    "title",
    "body",
    "notes",
    "slides",
    "sheet_id",
    "start_row",
    "start_col",
    "values",
];

/// A change to one tab's content.
pub(crate) enum Edit {
    /// The whole markdown text and its SHA-256 (hashed once, before the commit).
    Text(String, String),
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
            Edit::Data(_) => Operation::ReplaceTabData,
            Edit::SlideAdd(_) => Operation::SlideAdd,
            Edit::Outline(_) => Operation::SlidesAddOutline,
            Edit::SetRange { .. } => Operation::SheetSetRange,
        }
    }
}

/// Finds the tab by exact id and checks that the operation applies to its type.
pub(crate) fn resolve_tab(head: &Head, tab_id: &str, op: Operation) -> Result<Target, Refusal> {
    let i = head
        .tab_index(tab_id)
        .ok_or_else(|| Refusal::not_found("tab"))?;
    let kind = head.tabs[i].kind;
    let fits = match kind {
        TabKind::Files | TabKind::Sources => {
            return Err(Refusal::invalid(
                "tab_id",
                "File and Source attachments cannot be edited with this tool",
            ));
        }
        TabKind::Markdown => op == Operation::ReplaceText,
        TabKind::Slides => matches!(
            op,
            Operation::ReplaceTabData | Operation::SlideAdd | Operation::SlidesAddOutline
        ),
        TabKind::Sheet => matches!(op, Operation::ReplaceTabData | Operation::SheetSetRange),
    };
    if !fits {
        return Err(Refusal::invalid(
            "operation",
            format!("{} does not apply to a {} tab", op.as_str(), kind.as_str()),
        ));
    }
    Ok(Target::Tab(i))
}

/// Applies an edit to tab `i`: new content blobs first, then the tab's content refs.
pub(crate) fn apply_edit(
    kv: &TenantKv,
    head: &mut Head,
    i: usize,
    edit: &Edit,
) -> Out<Change> {
    let tab = &head.tabs[i];
    let (hash, blobs) = match (tab.kind, edit) {
        (TabKind::Markdown, Edit::Text(t, hash)) => {
            check_doc_size(t.as_bytes(), "text")?;
            (hash.clone(), put_hashed(kv, t.as_bytes(), hash)?)
        }
        (TabKind::Slides, Edit::Data(d)) => {
            let doc: SlidesDoc<SlideIn> = parse_object(d.clone(), "data.")?;
            for (n, s) in doc.slides.iter().enumerate() {
                check_slide(&format!("data.slides[{n}]"), s)?;
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
        (
            TabKind::Sheet,
            Edit::SetRange {
                sheet_id,
                row,
                col,
                values,
            },
        ) => {
            let mut m = load_manifest(kv, &tab.blobs)?;
            let s = m
                .sheet(sheet_id)
                .ok_or_else(|| Refusal::not_found("sheet").with("field", "sheet_id"))?;
            sheet::set_range(kv, &mut m.sheets[s], *row, *col, values)?;
            store_manifest(kv, &m)?
        }
        (kind, e) => {
            return Err(Refusal::invalid(
                "operation",
                format!(
                    "{} does not apply to a {} tab",
                    e.op().as_str(),
                    kind.as_str()
                ),
            )
            .into());
        }
    };
    let tab = &mut head.tabs[i];
    tab.content_hash = hash;
    tab.blobs = blobs;
    let mut result = Map::new();
    result.insert("operation".into(), edit.op().as_str().into());
    Ok(Change {
        action: edit.op().as_str(),
        tab: Some(i),
        removed_tab: None,
        result,
    })
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
) -> Out<Value> {
    commit(
        kv,
        env,
        who,
        spec,
        |head| Ok(Plan::Write(resolve_tab(head, tab_id, edit.op())?)),
        |head, target, ctx: &mut Ctx| match target {
            Target::Tab(i) => apply_edit(ctx.kv, head, i, edit),
            Target::Note => unreachable!("edits target a tab"),
        },
    )
}
