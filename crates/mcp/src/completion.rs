//! `completion/complete`: the arguments of the resource templates
//! ([`crate::resources`]) completed from what the caller may see.
//!
//! - `note_id` of either template: the notes `list_notes` shows the caller,
//!   matched against the typed value by id prefix, then title prefix, then
//!   anywhere in the title (case folded), the value being the note's id.
//! - `tab_id` of `cairn://notes/{note_id}/tabs/{tab_id}`: the tabs of the
//!   note named in `context.arguments.note_id`, by id or label the same way.
//!
//! Everything is read through the read tools on the caller's own transport, so a
//! completion never names a note the caller could not list (another
//! tenant's, or one not approved for agents). Cost is bounded: at most
//! [`SCANNED`] notes ([`PAGES`] `list_notes` calls) or one `list_note_tabs`
//! per completion, and at most [`MAX_VALUES`] values back, with `hasMore`
//! when there were more. Cairn has no prompts: a `ref/prompt` is refused.

use cairn_auth::Principal;
use cairn_notes::tools::{list_note_tabs, list_notes};
use serde_json::{Value, json};

use crate::resources::{NOTE_TEMPLATE as NOTE, PAGE, TAB_TEMPLATE as TAB, run};
use crate::rpc::INVALID_PARAMS;
use crate::rpc::MethodError;
use crate::transport::Tools;

/// Values one completion answers at most (the spec's bound).
pub const MAX_VALUES: usize = 100;
/// `list_notes` pages one completion reads at most.
pub const PAGES: usize = 4;
/// Notes one completion looks at, at most.
pub const SCANNED: usize = PAGES * PAGE;
/// Longest typed value taken, in bytes (ids are at most 64).
const MAX_TYPED: usize = 256;

fn invalid(message: impl Into<String>) -> MethodError {
    MethodError::Rpc(INVALID_PARAMS, message.into())
}

/// The result of `completion/complete` for `params`.
pub async fn complete(params: &Value, tools: &impl Tools, who: &Principal) -> Result<Value, MethodError> {
    let reference = params.get("ref").filter(|r| r.is_object()).ok_or_else(|| invalid("params.ref must be an object naming a resource template"))?;
    let uri = match reference.get("type").and_then(Value::as_str) {
        Some("ref/resource") => reference.get("uri").and_then(Value::as_str).ok_or_else(|| invalid("params.ref.uri must be a resource template"))?,
        Some("ref/prompt") => {
            let name = reference.get("name").and_then(Value::as_str).unwrap_or_default();
            return Err(invalid(format!("no prompt named {name:?}: Cairn has no prompts; complete the arguments of {NOTE} or {TAB}")));
        }
        _ => return Err(invalid("params.ref.type must be \"ref/resource\"")),
    };
    let argument = params.get("argument").ok_or_else(|| invalid("params.argument must be {name, value}"))?;
    let name = argument.get("name").and_then(Value::as_str).ok_or_else(|| invalid("params.argument.name must be a string"))?;
    let typed = argument.get("value").and_then(Value::as_str).ok_or_else(|| invalid("params.argument.value must be a string"))?;
    if typed.len() > MAX_TYPED {
        return Err(invalid(format!("params.argument.value is longer than {MAX_TYPED} bytes")));
    }
    let typed = &typed.to_lowercase();
    let (matches, more) = match (uri, name) {
        (NOTE | TAB, "note_id") => notes(typed, tools, who).await?,
        (TAB, "tab_id") => {
            let note = params.pointer("/context/arguments/note_id").and_then(Value::as_str);
            let note = note.ok_or_else(|| invalid("completing tab_id needs the note: send context.arguments.note_id"))?;
            tabs(note, typed, tools, who).await?
        }
        (NOTE | TAB, other) => return Err(invalid(format!("{uri} has no argument {other:?}"))),
        (other, _) => return Err(invalid(format!("{other} is not a Cairn resource template: use {NOTE} or {TAB}"))),
    };
    Ok(answer(matches, more))
}

/// The completion object: the best [`MAX_VALUES`] in rank order.
fn answer(mut ranked: Vec<(u8, String)>, more: bool) -> Value {
    ranked.sort_by_key(|r| r.0);
    let total = ranked.len();
    let values: Vec<String> = ranked.into_iter().take(MAX_VALUES).map(|(_, v)| v).collect();
    json!({"completion": {"values": values, "total": total, "hasMore": more || total > MAX_VALUES}})
}

/// How well `id` or `label` matches `typed` (lower cased; lower is
/// better), if at all.
fn rank(typed: &str, id: &str, label: &str) -> Option<u8> {
    let label = label.to_lowercase();
    if id.to_lowercase().starts_with(typed) {
        Some(0)
    } else if label.starts_with(typed) {
        Some(1)
    } else if label.contains(typed) {
        Some(2)
    } else {
        None
    }
}

/// Notes the caller may see that match, and whether notes were left unread.
async fn notes(typed: &str, tools: &impl Tools, who: &Principal) -> Result<(Vec<(u8, String)>, bool), MethodError> {
    let (mut out, mut cursor) = (Vec::new(), None::<String>);
    for _ in 0..PAGES {
        let mut args = json!({"limit": PAGE});
        if let Some(c) = &cursor {
            args["cursor"] = c.clone().into();
        }
        let page = run(&list_notes::TOOL, args, tools, who, "cairn://notes").await?;
        for n in page["notes"].as_array().into_iter().flatten() {
            let id = n["note_id"].as_str().unwrap_or_default();
            if let Some(r) = rank(typed, id, n["title"].as_str().unwrap_or_default()) {
                out.push((r, id.to_string()));
            }
        }
        cursor = page["next_cursor"].as_str().map(str::to_string);
        if cursor.is_none() {
            return Ok((out, false));
        }
    }
    Ok((out, true))
}

/// Tabs of `note` that match.
async fn tabs(note: &str, typed: &str, tools: &impl Tools, who: &Principal) -> Result<(Vec<(u8, String)>, bool), MethodError> {
    let uri = format!("cairn://notes/{note}");
    let listing = run(&list_note_tabs::TOOL, json!({"note_id": note}), tools, who, &uri).await?;
    let out = listing["tabs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            let id = t["tab_id"].as_str().unwrap_or_default();
            rank(typed, id, t["label"].as_str().unwrap_or_default()).map(|r| (r, id.to_string()))
        })
        .collect();
    Ok((out, false))
}
