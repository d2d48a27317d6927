//! The typed pieces tools' results share. Each tool's file declares its own
//! `Output` type (a struct, or an enum of its result's forms); its published
//! `outputSchema` is derived from that type ([`crate::schema::output`]), so
//! what a tool returns and what it promises are one declaration.
//!
//! Result objects leave unknown fields allowed (schemars adds
//! `additionalProperties: false` only for `deny_unknown_fields`), so a field
//! added later is not a breaking change for a client that validates.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Serialize, Serializer};

use crate::model::{Tab, TabKind, Who, rfc3339};

/// The fixed "data, not instructions" notice ([`crate::refusal::NOTICE`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Notice;

impl Serialize for Notice {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(crate::refusal::NOTICE)
    }
}

impl JsonSchema for Notice {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Notice".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"const": crate::refusal::NOTICE})
    }
}

/// Field shapes for `#[schemars(schema_with = "…")]` on result fields.
pub(crate) mod shape {
    use schemars::{Schema, SchemaGenerator, json_schema};

    /// A SHA-256 content hash, lowercase hex.
    pub(crate) fn hash(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "pattern": "^[0-9a-f]{64}$"})
    }
    /// An RFC 3339 UTC timestamp.
    pub(crate) fn timestamp(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "format": "date-time"})
    }
    /// An RFC 3339 UTC timestamp, or `null`.
    pub(crate) fn timestamp_or_null(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]})
    }
    /// The next page's cursor, `null` on the last page (required: a
    /// client tells the last page by it).
    pub(crate) fn cursor_or_null(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"anyOf": [{"type": "string"}, {"type": "null"}]})
    }
    /// A version a read hands out: a number, or a part token.
    pub(crate) fn version(_: &mut SchemaGenerator) -> Schema {
        crate::version::out_schema().try_into().expect("an object schema")
    }
}

/// Who wrote what, and when: of a tab, a note, an attachment or a claim
/// note alike.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct Provenance {
    /// Who created it: `"Name (subject, actor type)"`.
    pub author: String,
    /// When it last changed.
    #[schemars(schema_with = "shape::timestamp")]
    pub updated_at: String,
    /// Who changed it last.
    pub updated_by: String,
    /// The hash of what it says.
    #[schemars(schema_with = "shape::hash")]
    pub content_hash: String,
}

impl Provenance {
    /// Created by `author`, last changed by `updated_by` at `updated_at`
    /// (µs), saying what hashes to `content_hash`.
    pub(crate) fn new(author: &Who, updated_at: u64, updated_by: &Who, content_hash: String) -> Provenance {
        Provenance { author: author.label(), updated_at: rfc3339(updated_at), updated_by: updated_by.label(), content_hash }
    }

    /// A tab's provenance.
    pub(crate) fn of(t: &Tab) -> Provenance {
        Provenance::new(&t.author, t.updated_at, &t.updated_by, t.content_hash.clone())
    }
}

/// A tab as a listing shows it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct TabSummary {
    /// The tab's exact id: never reused.
    pub tab_id: String,
    /// What kind of tab it is.
    #[serde(rename = "type")]
    pub kind: TabKind,
    /// Its label (labels may repeat).
    pub label: String,
    /// Its own version, bumped by every change to it.
    pub tab_version: u64,
    /// The hash of what it says.
    #[schemars(schema_with = "shape::hash")]
    pub content_hash: String,
    /// Who wrote it, and when.
    pub provenance: Provenance,
}

impl TabSummary {
    /// The listing form of a tab.
    pub(crate) fn of(t: &Tab) -> TabSummary {
        TabSummary {
            tab_id: t.id.clone(),
            kind: t.kind,
            label: t.label.clone(),
            tab_version: t.version,
            content_hash: t.content_hash.clone(),
            provenance: Provenance::of(t),
        }
    }
}
