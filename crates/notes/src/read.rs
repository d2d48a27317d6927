//! The read tools: `list_notes`, `list_note_tabs`, `read_note_tab`, `read_sheet_range`,
//! `list_note_attachments`. Every text written by someone else comes back with its
//! provenance and the fixed [`NOTICE`].

use serde::Deserialize;
use serde_json::{Value, json};

use crate::args::{
    AttachKind, DEFAULT_LIMIT, ListNoteAttachments, ListNoteTabs, ListNotes, ReadNoteTab,
    ReadSheetRange, check_id, parse,
};
use crate::env::Identity;
use crate::kv::{Kv, KvError, TenantKv};
use crate::model::{
    FileMeta, Head, Source, Tab, TabKind, decode, rfc3339, sha_hex, tab_provenance,
};
use crate::reply::{NOTICE, Out, Refusal};
use crate::sheet::{load_manifest, read_range};
use crate::store::{get_doc, index_slice, load_head, note_key, visible_head};

/// How many note ids one `list_notes` call looks at (agents skip unapproved notes).
const LIST_SCAN: usize = 500;

/// An opaque cursor: a tag and a position, hex-encoded.
pub(crate) fn encode_cursor(tag: &str, pos: usize) -> String {
    let raw = format!("{tag}:{pos}");
    let hex: String = raw.bytes().map(|b| format!("{b:02x}")).collect();
    format!("c1{hex}")
}

pub(crate) fn decode_cursor(tag: &str, cursor: Option<&str>) -> Result<usize, Refusal> {
    let Some(c) = cursor else { return Ok(0) };
    let bad = || Refusal::invalid("cursor", "cursor is not one this listing returned");
    let hex = c.strip_prefix("c1").ok_or_else(bad)?;
    if hex.len() % 2 != 0 || !hex.is_ascii() {
        return Err(bad());
    }
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16))
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let raw = String::from_utf8(bytes).map_err(|_| bad())?;
    let (t, pos) = raw.split_once(':').ok_or_else(bad)?;
    if t != tag {
        return Err(bad());
    }
    pos.parse().map_err(|_| bad())
}

/// Reads a JSON list document of a tab (empty when the tab has no content).
pub(crate) fn load_list<K: Kv, T: for<'de> Deserialize<'de>>(
    kv: &TenantKv<K>,
    tab: &Tab,
) -> Result<Vec<T>, KvError> {
    if tab.blobs.is_empty() {
        return Ok(Vec::new());
    }
    decode("attachment list", &get_doc(kv, &tab.blobs)?)
}

fn find_tab<'h>(head: &'h Head, tab_id: &str) -> Result<&'h Tab, Refusal> {
    head.tabs
        .iter()
        .find(|t| t.id == tab_id)
        .ok_or_else(|| Refusal::not_found("tab"))
}

pub(crate) fn list_notes<K: Kv>(kv: &TenantKv<K>, who: &Identity, args: Value) -> Out<Value> {
    let a: ListNotes = parse(args)?;
    a.check()?;
    let limit = a.limit.unwrap_or(DEFAULT_LIMIT) as usize;
    let pos = decode_cursor("notes", a.cursor.as_deref())?;
    let (ids, total) = index_slice(kv, pos, LIST_SCAN)?;
    let mut notes = Vec::new();
    let mut next = pos;
    for id in ids {
        if notes.len() == limit {
            break;
        }
        next += 1;
        let Some(bytes) = kv.get(&note_key(&id))? else {
            continue;
        };
        let Ok(head) = visible_head(&bytes, who) else {
            continue;
        };
        notes.push(json!({
            "note_id": head.note_id,
            "title": head.title,
            "version": head.version,
            "approved_for_agents": head.approved_for_agents,
            "provenance": {
                "author": head.author.label(),
                "updated_at": rfc3339(head.updated_at),
                "updated_by": head.updated_by.label(),
                "content_hash": sha_hex(head.title.as_bytes()),
            },
        }));
    }
    let next_cursor = if next < total {
        Value::from(encode_cursor("notes", next))
    } else {
        Value::Null
    };
    Ok(json!({"notes": notes, "next_cursor": next_cursor, "notice": NOTICE}))
}

/// The listing form of a tab.
pub(crate) fn tab_summary(t: &Tab) -> Value {
    json!({
        "tab_id": t.id,
        "type": t.kind.as_str(),
        "label": t.label,
        "tab_version": t.version,
        "content_hash": t.content_hash,
        "provenance": tab_provenance(t),
    })
}

pub(crate) fn list_note_tabs<K: Kv>(kv: &TenantKv<K>, who: &Identity, args: Value) -> Out<Value> {
    let a: ListNoteTabs = parse(args)?;
    check_id("note_id", &a.note_id)?;
    let head = load_head(kv, who, &a.note_id)?;
    Ok(json!({
        "note_id": head.note_id,
        "title": head.title,
        "version": head.version,
        "tabs": head.tabs.iter().map(tab_summary).collect::<Vec<_>>(),
        "notice": NOTICE,
    }))
}

pub(crate) fn read_note_tab<K: Kv>(kv: &TenantKv<K>, who: &Identity, args: Value) -> Out<Value> {
    let a: ReadNoteTab = parse(args)?;
    check_id("note_id", &a.note_id)?;
    check_id("tab_id", &a.tab_id)?;
    let head = load_head(kv, who, &a.note_id)?;
    let tab = find_tab(&head, &a.tab_id)?;
    let mut out = json!({
        "note_id": head.note_id,
        "tab_id": tab.id,
        "type": tab.kind.as_str(),
        "label": tab.label,
        "version": head.version,
        "tab_version": tab.version,
        "provenance": tab_provenance(tab),
        "notice": NOTICE,
    });
    match tab.kind {
        TabKind::Markdown => {
            let bytes = get_doc(kv, &tab.blobs)?;
            let text = String::from_utf8(bytes)
                .map_err(|_| KvError::Corrupt("tab text is not UTF-8".into()))?;
            out["text"] = text.into();
        }
        TabKind::Slides => {
            let slides: Vec<Value> = crate::write::load_slides(kv, tab)?
                .into_iter()
                .enumerate()
                .map(|(i, s)| json!({"index": i, "title": s.title, "body": s.body, "notes": s.notes}))
                .collect();
            out["slides"] = slides.into();
        }
        TabKind::Sheet => {
            let m = load_manifest(kv, &tab.blobs)?;
            let sheets: Vec<Value> = m
                .sheets
                .iter()
                .map(|s| json!({"sheet_id": s.sheet_id, "name": s.name, "rows": s.rows, "cols": s.cols}))
                .collect();
            out["sheets"] = sheets.into();
            out["hint"] = "read cells with read_sheet_range (at most 100 x 100 per call)".into();
        }
        TabKind::Files | TabKind::Sources => {
            let count = match tab.kind {
                TabKind::Files => load_list::<K, FileMeta>(kv, tab)?.len(),
                _ => load_list::<K, Source>(kv, tab)?.len(),
            };
            out["count"] = count.into();
            out["hint"] = "list attachments with list_note_attachments".into();
        }
    }
    Ok(out)
}

pub(crate) fn read_sheet_range<K: Kv>(kv: &TenantKv<K>, who: &Identity, args: Value) -> Out<Value> {
    let a: ReadSheetRange = parse(args)?;
    a.check()?;
    let head = load_head(kv, who, &a.note_id)?;
    let tab = find_tab(&head, &a.tab_id)?;
    if tab.kind != TabKind::Sheet {
        return Err(Refusal::invalid(
            "tab_id",
            format!(
                "tab {} is a {} tab, not a sheet tab",
                tab.id,
                tab.kind.as_str()
            ),
        )
        .into());
    }
    let m = load_manifest(kv, &tab.blobs)?;
    let sheet = match &a.sheet_id {
        Some(id) => m
            .sheet(id)
            .map(|i| &m.sheets[i])
            .ok_or_else(|| Refusal::not_found("sheet").with("field", "sheet_id"))?,
        None => m
            .sheets
            .first()
            .ok_or_else(|| Refusal::not_found("sheet"))?,
    };
    let values = read_range(kv, sheet, a.start_row, a.start_col, a.num_rows, a.num_cols)?;
    Ok(json!({
        "note_id": head.note_id,
        "tab_id": tab.id,
        "sheet_id": sheet.sheet_id,
        "start_row": a.start_row,
        "start_col": a.start_col,
        "num_rows": values.len(),
        "num_cols": values.first().map_or(0, Vec::len),
        "values": values,
        "sheet_rows": sheet.rows,
        "sheet_cols": sheet.cols,
        "version": head.version,
        "tab_version": tab.version,
        "provenance": tab_provenance(tab),
        "notice": NOTICE,
    }))
}

fn source_item(s: &Source) -> Value {
    json!({
        "kind": "source",
        "source_id": s.source_id,
        "title": s.title,
        "url": s.url,
        "provenance": {
            "author": s.added_by.label(),
            "updated_at": rfc3339(s.added_at),
            "updated_by": s.added_by.label(),
            "content_hash": sha_hex(format!("{}\n{}", s.title, s.url).as_bytes()),
        },
    })
}

fn file_item(f: &FileMeta) -> Value {
    json!({
        "kind": "file",
        "file_id": f.file_id,
        "name": f.name,
        "media_type": f.media_type,
        "size_bytes": f.size_bytes,
        "provenance": {
            "author": f.added_by.label(),
            "updated_at": rfc3339(f.added_at),
            "updated_by": f.added_by.label(),
            "content_hash": sha_hex(format!("{}\n{}\n{}", f.name, f.media_type, f.size_bytes).as_bytes()),
        },
    })
}

pub(crate) fn list_note_attachments<K: Kv>(
    kv: &TenantKv<K>,
    who: &Identity,
    args: Value,
) -> Out<Value> {
    let a: ListNoteAttachments = parse(args)?;
    a.check()?;
    let tag = match a.kind {
        Some(AttachKind::Files) => "files",
        Some(AttachKind::Sources) => "sources",
        None => "all",
    };
    let pos = decode_cursor(tag, a.cursor.as_deref())?;
    let limit = a.limit.unwrap_or(DEFAULT_LIMIT) as usize;
    let head = load_head(kv, who, &a.note_id)?;
    let mut items = Vec::new();
    if a.kind != Some(AttachKind::Sources)
        && let Some(t) = head.tab(TabKind::Files)
    {
        items.extend(load_list::<K, FileMeta>(kv, t)?.iter().map(file_item));
    }
    if a.kind != Some(AttachKind::Files)
        && let Some(t) = head.tab(TabKind::Sources)
    {
        items.extend(load_list::<K, Source>(kv, t)?.iter().map(source_item));
    }
    let total = items.len();
    let page: Vec<Value> = items.into_iter().skip(pos).take(limit).collect();
    let next = pos + page.len();
    let next_cursor = if next < total {
        Value::from(encode_cursor(tag, next))
    } else {
        Value::Null
    };
    Ok(json!({
        "note_id": head.note_id,
        "version": head.version,
        "attachments": page,
        "total": total,
        "next_cursor": next_cursor,
        "notice": NOTICE,
    }))
}
