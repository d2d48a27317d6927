//! `list_note_tabs`: every tab of a note with its exact id, in tab-strip order.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Call, READ, READ_SCOPE};
use crate::args::{check_id, parse};
use crate::head::load_head;
use crate::model::tab_summary;
use crate::refusal::{NOTICE, Out};

tool!("list_note_tabs", "List note tabs", READ_SCOPE, READ);

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(schema_with = "crate::schema::shape::note_id")]
    note_id: String,
}

fn description() -> String {
    "List every tab instance of a note with its exact tab_id, type, label and tab_version, and the \
    note's version. A note may have several Slides or Sheet tabs and labels may repeat: use the exact \
    tab_id returned here, never a type or a label."
        .into()
}

fn input_schema() -> Value {
    crate::schema::input::<Args>()
}

/// `list_note_tabs`: the note's tabs in their order.
fn output_schema() -> Value {
    use crate::schema::*;
    let tab = result(
        &["tab_id", "type", "label", "tab_version", "content_hash", "provenance"],
        json!({"tab_id": text(), "type": tab_type(), "label": text(), "tab_version": count(), "content_hash": hash(), "provenance": provenance()}),
    );
    output(result(
        &["note_id", "title", "version", "tabs", "notice"],
        json!({"note_id": text(), "title": text(), "version": count(), "tabs": list(tab), "notice": notice()}),
    ))
}

fn run(c: &mut Call, args: Value) -> Out<Value> {
    let a: Args = parse(args)?;
    check_id("note_id", &a.note_id)?;
    let head = load_head(c.kv, c.who, &a.note_id)?;
    Ok(json!({
        "note_id": head.note_id,
        "title": head.title,
        "version": head.version,
        "tabs": head.tabs.iter().map(tab_summary).collect::<Vec<_>>(),
        "notice": NOTICE,
    }))
}
