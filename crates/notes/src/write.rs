//! The write tools: `edit_note_tab`, `create_note_tab`, `add_note_source`, and the tab
//! edits they share with the REST helpers. Each runs as one [`crate::txn::commit`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::args::{
    AddNoteSource, CreateNoteTab, EditNoteTab, NewTabType, Operation, SlideIn, VersionScope,
    check_slide, parse, parse_object,
};
use crate::env::{Env, Identity};
use crate::kv::{Kv, KvError, TenantKv};
use crate::model::{
    Head, Source, Tab, TabKind, Who, canonical_json, decode, encode, rand8, sha_hex,
};
use crate::read::load_list;
use crate::reply::{Out, Refusal};
use crate::sheet::{self, Manifest, load_manifest, store_manifest};
use crate::store::{empty_hash, get_doc, put_doc};
use crate::txn::{Change, Ctx, Plan, Target, WriteSpec, commit};
use crate::url::normalize_url;

/// Tabs per note (fixed tabs included).
pub(crate) const MAX_TABS: usize = 100;
/// Slides per slides tab.
pub(crate) const MAX_SLIDES: usize = 200;

/// A stored slide.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Slide {
    pub title: String,
    pub body: String,
    pub notes: String,
}

impl From<&SlideIn> for Slide {
    fn from(s: &SlideIn) -> Self {
        Slide {
            title: s.title.clone(),
            body: s.body.clone().unwrap_or_default(),
            notes: s.notes.clone().unwrap_or_default(),
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SlidesDoc<T> {
    slides: Vec<T>,
}

pub(crate) fn load_slides<K: Kv>(kv: &TenantKv<K>, tab: &Tab) -> Result<Vec<Slide>, KvError> {
    if tab.blobs.is_empty() {
        return Ok(Vec::new());
    }
    let doc: SlidesDoc<Slide> = decode("slides", &get_doc(kv, &tab.blobs)?)?;
    Ok(doc.slides)
}

fn store_slides<K: Kv>(
    kv: &TenantKv<K>,
    slides: Vec<Slide>,
    field: &str,
) -> Out<(String, Vec<String>)> {
    if slides.len() > MAX_SLIDES {
        return Err(Refusal::too_large(
            field,
            format!("a slides tab holds at most {MAX_SLIDES} slides"),
        )
        .into());
    }
    put_doc(kv, &encode(&SlidesDoc { slides }), field)
}

/// A change to one tab's content.
pub(crate) enum Edit {
    Text(String),
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
            Edit::Text(_) => Operation::ReplaceText,
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
pub(crate) fn apply_edit<K: Kv>(
    kv: &TenantKv<K>,
    head: &mut Head,
    i: usize,
    edit: &Edit,
) -> Out<Change> {
    let tab = &head.tabs[i];
    let (hash, blobs) = match (tab.kind, edit) {
        (TabKind::Markdown, Edit::Text(t)) => put_doc(kv, t.as_bytes(), "text")?,
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

/// The fingerprint of a payload: SHA-256 of the tool name and the canonical JSON.
pub(crate) fn fingerprint(tool: &str, payload: &Value) -> String {
    sha_hex(format!("{tool}\n{}", canonical_json(payload)).as_bytes())
}

pub(crate) fn edit_note_tab<K: Kv, E: Env>(
    kv: &TenantKv<K>,
    env: &mut E,
    who: &Identity,
    args: Value,
) -> Out<Value> {
    let mut a: EditNoteTab = parse(args)?;
    a.check()?;
    a.version_scope = Some(a.scope());
    let mut payload = serde_json::to_value(&a).expect("arguments serialize");
    payload
        .as_object_mut()
        .expect("object")
        .remove("idempotency_key");
    let fp = fingerprint("edit_note_tab", &payload);
    let edit = match a.operation {
        Operation::ReplaceText => Edit::Text(a.text.clone().unwrap_or_default()),
        Operation::ReplaceTabData => Edit::Data(a.data.clone().unwrap_or_default()),
        Operation::SlideAdd => Edit::SlideAdd(SlideIn {
            title: a.title.clone().unwrap_or_default(),
            body: a.body.clone(),
            notes: a.notes.clone(),
        }),
        Operation::SlidesAddOutline => Edit::Outline(a.slides.clone().unwrap_or_default()),
        Operation::SheetSetRange => Edit::SetRange {
            sheet_id: a.sheet_id.clone().unwrap_or_default(),
            row: a.start_row.unwrap_or_default(),
            col: a.start_col.unwrap_or_default(),
            values: a.values.clone().unwrap_or_default(),
        },
    };
    let spec = WriteSpec {
        tool: "edit_note_tab",
        note_level: false,
        note_id: &a.note_id,
        idem: Some((&a.idempotency_key, fp)),
        expected_version: a.expected_version,
        scope: a.scope(),
        base_content_hash: a.base_content_hash.as_deref(),
    };
    edit_tab_with(kv, env, who, &spec, &a.tab_id, &edit)
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

pub(crate) fn create_note_tab<K: Kv, E: Env>(
    kv: &TenantKv<K>,
    env: &mut E,
    who: &Identity,
    args: Value,
) -> Out<Value> {
    let a: CreateNoteTab = parse(args)?;
    a.check()?;
    let mut payload = serde_json::to_value(&a).expect("arguments serialize");
    payload
        .as_object_mut()
        .expect("object")
        .remove("idempotency_key");
    let fp = fingerprint("create_note_tab", &payload);
    let spec = WriteSpec {
        tool: "create_note_tab",
        note_level: true,
        note_id: &a.note_id,
        idem: Some((&a.idempotency_key, fp)),
        expected_version: a.expected_version,
        scope: VersionScope::Note,
        base_content_hash: None,
    };
    commit(
        kv,
        env,
        who,
        &spec,
        |_| Ok(Plan::Write(Target::Note)),
        |head, _, ctx| {
            if head.tabs.len() >= MAX_TABS {
                return Err(Refusal::too_large(
                    "tab_type",
                    format!("a note holds at most {MAX_TABS} tabs"),
                )
                .into());
            }
            let (kind, default_label) = match a.tab_type {
                NewTabType::Slides => (TabKind::Slides, "Slides"),
                NewTabType::Sheet => (TabKind::Sheet, "Sheet"),
            };
            head.tab_seq += 1;
            let id = format!("{}-{}-{}", kind.as_str(), head.tab_seq, rand8(ctx.env));
            let label = a.label.clone().unwrap_or_else(|| default_label.to_string());
            let mut tab = new_tab(id, kind, label.clone(), ctx.who, ctx.now);
            let content = match (kind, &a.slides) {
                (TabKind::Slides, Some(list)) => Some(store_slides(
                    ctx.kv,
                    list.iter().map(Slide::from).collect(),
                    "slides",
                )?),
                (TabKind::Sheet, _) => Some(store_manifest(ctx.kv, &Manifest::new())?),
                _ => None,
            };
            if let Some((hash, blobs)) = content {
                tab.content_hash = hash;
                tab.blobs = blobs;
            }
            head.tabs.push(tab);
            let mut result = Map::new();
            result.insert("tab_type".into(), kind.as_str().into());
            result.insert("label".into(), label.into());
            Ok(Change {
                action: "create_tab",
                tab: Some(head.tabs.len() - 1),
                removed_tab: None,
                result,
            })
        },
    )
}

pub(crate) fn add_note_source<K: Kv, E: Env>(
    kv: &TenantKv<K>,
    env: &mut E,
    who: &Identity,
    args: Value,
) -> Out<Value> {
    let a: AddNoteSource = parse(args)?;
    a.check()?;
    let url = normalize_url(&a.url).map_err(|m| Refusal::invalid("url", m))?;
    // The intent is "this page is a source of this note": the key names the normalized URL.
    let fp = fingerprint("add_note_source", &json!({ "url": url }));
    let spec = WriteSpec {
        tool: "add_note_source",
        note_level: true,
        note_id: &a.note_id,
        idem: Some((&a.idempotency_key, fp)),
        expected_version: a.expected_version,
        scope: VersionScope::Note,
        base_content_hash: None,
    };
    commit(
        kv,
        env,
        who,
        &spec,
        |head| {
            let i = head
                .tabs
                .iter()
                .position(|t| t.kind == TabKind::Sources)
                .ok_or_else(|| Refusal::not_found("sources tab"))?;
            let list: Vec<Source> = load_list(kv, &head.tabs[i])?;
            match list.iter().find(|s| s.url == url) {
                Some(s) => Ok(Plan::Answer(json!({
                    "note_id": head.note_id,
                    "source_id": s.source_id,
                    "title": s.title,
                    "url": s.url,
                    "version": head.version,
                    "already_attached": true,
                    "replayed": false,
                }))),
                None => Ok(Plan::Write(Target::Tab(i))),
            }
        },
        |head, target, ctx| {
            let Target::Tab(i) = target else {
                unreachable!("sources live in a tab")
            };
            let mut list: Vec<Source> = load_list(ctx.kv, &head.tabs[i])?;
            head.attach_seq += 1;
            let source = Source {
                source_id: format!("src-{}-{}", head.attach_seq, rand8(ctx.env)),
                title: a.title.clone(),
                url: url.clone(),
                added_at: ctx.now,
                added_by: Who::of(ctx.who),
            };
            let mut result = Map::new();
            result.insert("source_id".into(), source.source_id.clone().into());
            result.insert("title".into(), source.title.clone().into());
            result.insert("url".into(), url.clone().into());
            result.insert("already_attached".into(), false.into());
            list.push(source);
            let (hash, blobs) = put_doc(ctx.kv, &encode(&list), "url")?;
            head.tabs[i].content_hash = hash;
            head.tabs[i].blobs = blobs;
            Ok(Change {
                action: "add_source",
                tab: Some(i),
                removed_tab: None,
                result,
            })
        },
    )
}

/// Runs one tab edit as a commit (shared by `edit_note_tab` and the REST helpers).
pub(crate) fn edit_tab_with<K: Kv, E: Env>(
    kv: &TenantKv<K>,
    env: &mut E,
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
        |head, target, ctx: &mut Ctx<K, E>| match target {
            Target::Tab(i) => apply_edit(ctx.kv, head, i, edit),
            Target::Note => unreachable!("edits target a tab"),
        },
    )
}
