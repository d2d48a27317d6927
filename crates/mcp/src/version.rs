//! Protocol revisions: which are spoken, which one `initialize` settles
//! on, and what the revision a request names in its `_meta` asks for.
//!
//! The revisions up to 2025-11-25 open with the `initialize` handshake.
//! 2026-07-28 is stateless: no handshake (`server/discover` instead), each
//! request names the revision in `params._meta`, and every result is
//! marked `"resultType": "complete"`.

use serde_json::Value;

/// Protocol revisions spoken here, newest first.
pub const VERSIONS: [&str; 4] = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"];
/// The stateless revision.
pub const STATELESS: &str = "2026-07-28";
/// The newest revision that uses the `initialize` handshake.
pub const LATEST_HANDSHAKE: &str = "2025-11-25";
/// The `_meta` member that names a request's revision.
pub const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// Whether revision `v` is spoken here.
pub fn supported(v: &str) -> bool {
    VERSIONS.contains(&v)
}

/// The supported revisions, as error messages list them.
pub fn supported_list() -> String {
    VERSIONS.join(", ")
}

/// The revision `initialize` answers: the one asked for when it is a
/// handshake revision spoken here, else [`LATEST_HANDSHAKE`].
pub fn negotiate(asked: Option<&str>) -> &'static str {
    VERSIONS[1..].iter().copied().find(|v| Some(*v) == asked).unwrap_or(LATEST_HANDSHAKE)
}

/// Whether a request is on the stateless revision, from its `params._meta`:
/// `false` when it names no revision (or not as a string) or an older one;
/// `Err` with the message for a revision not spoken here.
pub fn stateless(meta: Option<&Value>) -> Result<bool, String> {
    match meta.and_then(|m| m.get(META_VERSION)).and_then(Value::as_str) {
        Some(v) if supported(v) => Ok(v == STATELESS),
        Some(v) => Err(format!("unsupported protocol version {v}; supported: {}", supported_list())),
        None => Ok(false),
    }
}
