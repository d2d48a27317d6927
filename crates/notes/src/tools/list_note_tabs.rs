//! `list_note_tabs`: every tab of a note with its exact id, in tab-strip order.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Call, READ, READ_SCOPE};
use crate::args::{check_id, parse};
use crate::head::load_head;
use crate::refusal::Out;
use crate::results::{Notice, TabSummary};

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

/// The note's tabs, in tab-strip order.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Output {
    note_id: String,
    title: String,
    /// The note's version.
    version: u64,
    tabs: Vec<TabSummary>,
    notice: Notice,
}

fn run(c: &mut Call, args: Value) -> Out<Output> {
    let a: Args = parse(args)?;
    check_id("note_id", &a.note_id)?;
    let head = load_head(c.kv, c.who, &a.note_id)?;
    Ok(Output { note_id: head.note_id, title: head.title, version: head.version, tabs: head.tabs.iter().map(TabSummary::of).collect(), notice: Notice })
}
