//! The tools, one file each: its arguments (a typed struct with unknown
//! fields denied, and its checks; its published JSON Schema is derived from
//! it by `crate::schema::input`), description, annotations and OAuth scope,
//! and its handler (parse → apply → encode), as mini-redis keeps one file
//! per command.
//!
//! [`TOOLS`] is the one table that names every tool: [`crate::call_tool`]
//! dispatches through it (a tool's own component calls its `TOOL` directly
//! with [`crate::call`], so it links that tool alone), `tools/list` is drawn from it, the router takes
//! each tool's scope and component from it, and a test checks `spin.toml`
//! against it. Adding a tool is one file here and one line in the table
//! (`tool_table!`, below); `cargo run -p cairn-wiring` (or `cairn generate`)
//! writes the rest of its wiring (its component package, its `spin.toml`
//! blocks, the router's slot for it, the saved `tools/list` reply) and a
//! test names whatever is stale. `crates/wiring/tests` proves it with a
//! throwaway tool in a copy of the tree.

use serde::Serialize;
use serde_json::Value;

use crate::env::{Env, Identity};
use crate::kv::TenantKv;
use crate::refusal::Out;

/// Declares a tool file's `TOOL`: its name, title, scope and annotations,
/// with the file's own `description`, `input_schema` and `run` functions and
/// its `Output` type, from which its published output schema is derived and
/// into which `run` returns its result.
macro_rules! tool {
    ($name:literal, $title:literal, $scope:expr, $annotations:expr) => {
        /// The tool: its name, title, scope, annotations, schemas and handler.
        pub static TOOL: $crate::tools::Tool = $crate::tools::Tool {
            name: $name,
            title: $title,
            scope: $scope,
            annotations: $annotations,
            description,
            input_schema,
            output_schema: $crate::schema::output::<Output>,
            run: |c, args| run(c, args).map($crate::schema::result_value::<Output>),
        };
    };
}

pub(crate) use crate::args::{decode_cursor, encode_cursor};
pub(crate) use crate::scopes::{READ as READ_SCOPE, WRITE as WRITE_SCOPE};
pub(crate) use read_note_tab::{find_tab, read as read_tab};

/// The tool table: each line declares a tool's file as a module and puts
/// its `TOOL` in [`TOOLS`], in the order `tools/list` shows them.
macro_rules! tool_table {
    ($($tool:ident),* $(,)?) => {
        $(pub mod $tool;)*
        /// Every tool, in the order `tools/list` shows them.
        pub static TOOLS: &[&Tool] = &[$(&$tool::TOOL),*];
    };
}

tool_table! {
    list_notes,
    search_notes,
    list_note_tabs,
    read_note_tab,
    read_note_outline,
    read_sheet_range,
    list_note_attachments,
    list_note_history,
    merge_note_tab,
    edit_note_tab,
    create_note_tab,
    add_note_source,
    claim_note,
    renew_claim,
    release_claim,
    post_claim_note,
    list_claims,
}

/// The tab a markdown tool reads when no `tab_id` is sent.
pub(crate) fn markdown_tab() -> String {
    "markdown".into()
}

/// What a tool's handler is given: the caller's view of the store, the clock
/// and randomness, and who is calling.
pub(crate) struct Call<'a, 'k> {
    pub kv: &'a TenantKv<'k>,
    pub env: &'a mut dyn Env,
    pub who: &'a Identity,
}

/// One tool.
pub struct Tool {
    /// Tool name (`[a-z_]`): also, with `-` for `_`, its component's id.
    pub name: &'static str,
    /// Human-readable title.
    pub title: &'static str,
    /// The OAuth scope a caller needs ([`crate::scopes::READ`] or [`crate::scopes::WRITE`]).
    pub scope: &'static str,
    /// MCP annotations.
    pub annotations: ToolAnnotations,
    /// What the tool does and what to do on a conflict.
    pub description: fn() -> String,
    /// JSON Schema of the arguments.
    pub input_schema: fn() -> Value,
    /// JSON Schema of every structuredContent the tool returns: its result,
    /// or (with `isError: true`) a refusal.
    pub output_schema: fn() -> Value,
    pub(crate) run: fn(&mut Call, Value) -> Out<Value>,
}

impl Tool {
    /// The id of the component serving this tool (`list_note_tabs` → `list-note-tabs`).
    pub fn component(&self) -> String {
        self.name.replace('_', "-")
    }

    /// The tool as `tools/list` publishes it.
    pub fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name,
            title: self.title,
            description: (self.description)(),
            input_schema: (self.input_schema)(),
            output_schema: (self.output_schema)(),
            annotations: self.annotations,
            scope: self.scope,
        }
    }
}

/// The tool called `name`.
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().copied().find(|t| t.name == name)
}

/// Every tool as published, in listing order.
pub fn tools() -> Vec<ToolSpec> {
    TOOLS.iter().map(|t| t.spec()).collect()
}

/// MCP tool annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// The tool does not change anything.
    pub read_only_hint: bool,
    /// The tool may replace or remove existing content.
    pub destructive_hint: bool,
    /// Repeating the call with the same arguments has no further effect.
    pub idempotent_hint: bool,
    /// The tool reaches beyond Cairn's own store. Always false: no tool
    /// fetches anything (a source's URL is stored, never visited).
    pub open_world_hint: bool,
}

/// One tool as published in `tools/list`, plus the OAuth scope it needs.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    /// Tool name (`[a-z_]`).
    pub name: &'static str,
    /// Human-readable title.
    pub title: &'static str,
    /// What the tool does and what to do on a conflict.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of the structuredContent of every result.
    pub output_schema: Value,
    /// MCP annotations.
    pub annotations: ToolAnnotations,
    /// `notes:read` or `notes:write` (not part of the MCP listing).
    #[serde(skip)]
    pub scope: &'static str,
}

/// The annotations of every read tool.
pub(crate) const READ: ToolAnnotations = ToolAnnotations { read_only_hint: true, destructive_hint: false, idempotent_hint: true, open_world_hint: false };
/// A write that may replace existing content; repeating it (same key) changes nothing more.
pub(crate) const REPLACES: ToolAnnotations = ToolAnnotations { read_only_hint: false, destructive_hint: true, idempotent_hint: true, open_world_hint: false };
/// A write that only adds or holds; repeating it changes nothing more.
pub(crate) const ADDS: ToolAnnotations = ToolAnnotations { read_only_hint: false, destructive_hint: false, idempotent_hint: true, open_world_hint: false };
/// A write that adds something new every time it is called.
pub(crate) const APPENDS: ToolAnnotations = ToolAnnotations { read_only_hint: false, destructive_hint: false, idempotent_hint: false, open_world_hint: false };

/// What every content write tool says about conflicts.
pub(crate) const ON_CONFLICT: &str = "On version_conflict or content_hash_mismatch nothing was written: read the tab again, \
redo your change on the content that is there now, and write with the new version and a new idempotency key. \
Never resend the old content with a refreshed version: that overwrites the other writer.";

/// What every keyed write tool says about idempotency keys.
pub(crate) const KEY_RULE: &str = "The idempotency key names one intended change on one base version: after a lost reply, \
resend the same call with the same key and you get the first result (replayed: true), even if the note moved on. \
A key reused for a different payload is refused (idempotency_key_reused).";

/// What every claim tool says about claims in the way.
pub(crate) const ON_CLAIM: &str = "On claim_conflict nothing changed: the result names claim_id, held_by, actor_type, since \
and expires_at of the claim in the way. Wait until expires_at (or until list_claims no longer shows it) or work on \
another target. Never improvise around a claim: do not write the same change into another tab, a copy or a new \
note, and do not ask the holder's tools to release it.";
