//! JSON Schema pieces the tools' published input schemas share (every
//! object is `additionalProperties: false`). Each tool's file builds its own
//! schema from these.

use serde_json::{Value, json};

use crate::args::{
    MAX_CLAIM_ID_CHARS, MAX_CURSOR_CHARS, MAX_KEY_CHARS, MAX_LIMIT, MAX_OUTLINE, MAX_SLIDE_TEXT_CHARS, MAX_SLIDE_TITLE_CHARS, MAX_TTL_SECONDS, MIN_TTL_SECONDS,
};

/// The JSON Schema schemars derives for `T`, every subschema inline (a
/// tool's schema is read by agents, who do not follow `$ref`s), without the
/// integer widths (`format: uint64`) that say nothing the bounds do not, and
/// without `default: null` on optional fields (an explicit `null` is
/// refused: an optional field is left out).
pub(crate) fn derived<T: schemars::JsonSchema>() -> Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut schema = settings.into_generator().into_root_schema_for::<T>().to_value();
    drop_widths(&mut schema);
    schema
}

fn drop_widths(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if m.get("format").and_then(Value::as_str).is_some_and(|f| f.starts_with("uint") || f.starts_with("int")) {
                m.remove("format");
            }
            if m.get("default") == Some(&Value::Null) {
                m.remove("default");
            }
            m.values_mut().for_each(drop_widths);
        }
        Value::Array(a) => a.iter_mut().for_each(drop_widths),
        _ => {}
    }
}

/// A tool's input schema, derived from its argument struct: one object of
/// its fields (unknown fields refused, the ones without a default required),
/// each field's schema from its type and attributes, its description from
/// its doc comment.
pub(crate) fn input<T: schemars::JsonSchema>() -> Value {
    let mut schema = derived::<T>();
    let obj = schema.as_object_mut().expect("arguments are an object");
    obj.remove("title");
    obj.remove("description");
    obj.entry("required").or_insert_with(|| json!([]));
    assert_eq!(obj.get("additionalProperties"), Some(&json!(false)), "arguments deny unknown fields");
    schema
}

/// Field shapes shared by the tools' argument structs, for
/// `#[schemars(schema_with = "…")]`: the shape, and a description only
/// where every tool says the same (else the field's doc comment says it).
pub(crate) mod shape {
    use schemars::{Schema, SchemaGenerator};
    use serde_json::Value;

    fn of(v: Value) -> Schema {
        v.try_into().expect("an object schema")
    }

    fn bare(mut v: Value) -> Schema {
        v.as_object_mut().expect("an object schema").remove("description");
        of(v)
    }

    /// `note_id`, described.
    pub(crate) fn note_id(_: &mut SchemaGenerator) -> Schema {
        of(super::note_id())
    }
    /// An exact id from a listing.
    pub(crate) fn id(_: &mut SchemaGenerator) -> Schema {
        bare(super::id(""))
    }
    /// An idempotency key.
    pub(crate) fn key(_: &mut SchemaGenerator) -> Schema {
        bare(super::key(""))
    }
    /// A version read earlier.
    pub(crate) fn version(_: &mut SchemaGenerator) -> Schema {
        bare(super::version(""))
    }
    /// A listing's cursor, described.
    pub(crate) fn cursor(_: &mut SchemaGenerator) -> Schema {
        of(super::cursor())
    }
    /// A listing's page size, described.
    pub(crate) fn limit(_: &mut SchemaGenerator) -> Schema {
        of(super::limit())
    }
    /// A claim id, described.
    pub(crate) fn claim_id(_: &mut SchemaGenerator) -> Schema {
        of(super::claim_id())
    }
    /// A claim's time to live.
    pub(crate) fn ttl(_: &mut SchemaGenerator) -> Schema {
        bare(super::ttl(""))
    }
    /// A `section_id`.
    pub(crate) fn section_id(_: &mut SchemaGenerator) -> Schema {
        bare(super::section_id(""))
    }
    /// A read's character cap.
    pub(crate) fn max_chars(_: &mut SchemaGenerator) -> Schema {
        bare(super::max_chars(""))
    }
    /// Slides to append, described.
    pub(crate) fn outline(_: &mut SchemaGenerator) -> Schema {
        of(super::outline())
    }
}

/// An exact id from a listing.
pub(crate) fn id(desc: &str) -> Value {
    json!({"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$", "description": desc})
}

/// `max_chars`: a read's character cap.
pub(crate) fn max_chars(desc: &str) -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": crate::env::MAX_READ_CHARS, "description": desc})
}

/// A `section_id` from `read_note_outline`.
pub(crate) fn section_id(desc: &str) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": crate::args::MAX_SECTION_ID_BYTES, "description": desc})
}

/// `note_id`.
pub(crate) fn note_id() -> Value {
    id("Exact note ID from list_notes.")
}

/// An idempotency key.
pub(crate) fn key(desc: &str) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS, "description": desc})
}

/// A version read earlier.
pub(crate) fn version(desc: &str) -> Value {
    crate::version::schema(desc)
}

/// Page size of a listing.
pub(crate) fn limit() -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Items per page (default 20)."})
}

/// An opaque cursor from the previous page.
pub(crate) fn cursor() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": MAX_CURSOR_CHARS, "description": "next_cursor from the previous page (opaque)."})
}

/// A claim id from `claim_note`.
pub(crate) fn claim_id() -> Value {
    json!({"type": "string", "maxLength": MAX_CLAIM_ID_CHARS,
           "pattern": "^clm-[A-Za-z0-9_-]{1,64}-[0-9a-z]{1,13}-[0-9a-z]{8}$",
           "description": "Exact claim_id returned by claim_note."})
}

/// A claim's time to live.
pub(crate) fn ttl(desc: &str) -> Value {
    json!({"type": "integer", "minimum": MIN_TTL_SECONDS, "maximum": MAX_TTL_SECONDS, "description": desc})
}

/// One slide: title, body, notes and nothing else.
pub(crate) fn slide_item() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["title"],
        "properties": {
            "title": {"type": "string", "maxLength": MAX_SLIDE_TITLE_CHARS},
            "body": {"type": "string", "maxLength": MAX_SLIDE_TEXT_CHARS},
            "notes": {"type": "string", "maxLength": MAX_SLIDE_TEXT_CHARS},
        },
    })
}

/// 1–20 slides to append.
pub(crate) fn outline() -> Value {
    json!({"type": "array", "minItems": 1, "maxItems": MAX_OUTLINE, "items": slide_item(),
           "description": "Slides to append, each only title, body, notes."})
}

// ---- Output schemas -------------------------------------------------------
//
// Every tool publishes an `outputSchema` that each structuredContent it
// returns validates against: its own result type's, derived (see
// `crate::results`), or, with `isError: true`, the one refusal shape all
// tools share. Objects leave `additionalProperties` open, so a field added
// later is not a breaking change for a client that validates.

/// A tool's published output schema, derived from its result type `T`:
/// that result, or a refusal.
pub(crate) fn output<T: schemars::JsonSchema>() -> Value {
    let mut success = derived::<T>();
    if let Some(obj) = success.as_object_mut() {
        obj.remove("title");
    }
    json!({"type": "object", "anyOf": [success, refusal()]})
}

/// A result as the structuredContent it is sent as.
pub(crate) fn result_value<T: serde::Serialize>(result: T) -> Value {
    serde_json::to_value(result).expect("a tool's result serializes to JSON")
}

/// An object result with these properties, `required` among them.
pub(crate) fn result(required: &[&str], properties: Value) -> Value {
    json!({"type": "object", "required": required, "properties": properties})
}

/// The structuredContent of every refusal (`isError: true`).
pub(crate) fn refusal() -> Value {
    let codes: Vec<&str> = crate::refusal::Code::ALL.iter().map(|c| c.as_str()).collect();
    result(
        &["error", "message", "next_step"],
        json!({
            "error": {"type": "string", "enum": codes, "description": "Stable snake_case refusal code."},
            "message": {"type": "string"},
            "next_step": {"type": "string", "description": "What to do next."},
            "field": {"type": "string", "description": "The argument that was wrong."},
            "current_version": {"type": "integer", "minimum": 0},
        }),
    )
}
