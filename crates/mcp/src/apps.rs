//! MCP Apps (the `io.modelcontextprotocol/ui` extension): the one view
//! Cairn serves, the three-way merge of an agent's proposal with a note's
//! text now, so a person settles a `version_conflict` inside the chat.
//!
//! - [`MERGE_URI`] reads as one HTML document (`text/html;profile=mcp-app`),
//!   self-contained: its script and style are inline and it loads nothing
//!   (its own CSP says `default-src 'none'`, and its `_meta.ui.csp` asks
//!   the host for no outside origin at all).
//! - `edit_note_tab` links it (`_meta.ui.resourceUri` in `tools/list`), so
//!   a host that renders apps shows it beside every edit: a written edit is
//!   shown as written; a `version_conflict` of a whole-text proposal opens
//!   the merge (`merge_note_tab`), the person picks each conflict's side or
//!   edits the text, and the view writes it with `edit_note_tab` at the
//!   version the merge was made on, under a key derived from the text and
//!   that version (a resend is a replay); a write that is stale again is
//!   merged again. Every call goes through the host's bridge, so it runs
//!   with the chat's own token and the host's consent.
//! - The extension is declared ([`declared`]) only to a client that says it
//!   renders apps; the link in `tools/list` is metadata others ignore.

use serde_json::{Value, json};

/// The merge view's URI.
pub const MERGE_URI: &str = "ui://cairn/merge";
/// The MIME type of an MCP Apps HTML view.
pub const MIME: &str = "text/html;profile=mcp-app";
/// The extension's identifier in capabilities.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The view itself.
const MERGE_HTML: &str = include_str!("apps/merge.html");

/// Whether a client's capabilities (of `initialize`, or a 2026-07-28
/// request's `_meta`) say it renders MCP Apps views of [`MIME`].
pub fn client_renders(capabilities: Option<&Value>) -> bool {
    let Some(ui) = capabilities.and_then(|c| c.get("extensions")).and_then(|e| e.get(EXTENSION)) else { return false };
    match ui.get("mimeTypes").and_then(Value::as_array) {
        Some(types) => types.iter().any(|t| t.as_str() == Some(MIME)),
        None => ui.is_object(),
    }
}

/// What the server declares of the extension to a client that renders apps.
pub fn declared() -> Value {
    json!({ EXTENSION: {} })
}

/// The `resources/read` result for `uri`, when it is the merge view.
pub fn read(uri: &str) -> Option<Value> {
    (uri == MERGE_URI).then(|| {
        json!({"contents": [{
            "uri": MERGE_URI,
            "mimeType": MIME,
            "text": MERGE_HTML,
            "_meta": {"ui": {"csp": {"connectDomains": [], "resourceDomains": []}, "prefersBorder": true}},
        }]})
    })
}

/// The view a tool links in `tools/list`, if any.
pub fn linked(tool: &str) -> Option<Value> {
    (tool == "edit_note_tab").then(|| json!({"ui": {"resourceUri": MERGE_URI}}))
}
