//! JSON Schema pieces the tools' published input schemas share (every
//! object is `additionalProperties: false`). Each tool's file builds its own
//! schema from these.

use serde_json::{Value, json};

use crate::args::{
    MAX_CLAIM_ID_CHARS, MAX_CURSOR_CHARS, MAX_KEY_CHARS, MAX_LIMIT, MAX_OUTLINE, MAX_SLIDE_TEXT_CHARS,
    MAX_SLIDE_TITLE_CHARS, MAX_TTL_SECONDS, MIN_TTL_SECONDS,
};

/// An object with exactly these properties, `required` among them.
pub(crate) fn object(required: &[&str], properties: Value) -> Value {
    json!({"type": "object", "additionalProperties": false, "required": required, "properties": properties})
}

/// An exact id from a listing.
pub(crate) fn id(desc: &str) -> Value {
    json!({"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$", "description": desc})
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
    json!({"type": "integer", "minimum": 0, "description": desc})
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
