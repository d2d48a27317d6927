//! One JSON-RPC message, borrowed from the body, and the framing of a body
//! into messages: one object, or a batch of 1 to [`MAX_BATCH`].

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::rpc::{INVALID_REQUEST, PARSE_ERROR, error};

/// Most messages in one batch.
pub const MAX_BATCH: usize = 10;

/// One JSON-RPC message of a request, borrowed from the body: each member
/// present (even `null`) is its raw JSON. The method and the params are read
/// once, when the message is parsed (a tool call's params may hold a
/// megabyte of arguments, which stay raw).
#[derive(Debug, Default, Deserialize)]
pub struct Message<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    pub(crate) jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub(crate) id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub(crate) params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub(crate) result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub(crate) error: Option<&'a RawValue>,
    /// The message is not a JSON object.
    #[serde(skip)]
    pub(crate) not_object: bool,
    /// `method`, when it is a string.
    #[serde(skip)]
    method_name: Option<String>,
    /// `params` read as an object (`None`: absent or not an object).
    #[serde(skip)]
    pub(crate) parsed: Option<Result<Params<'a>, String>>,
}

/// A member that is present, `null` included (plain `Option` would read `null` as absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// What the protocol reads of `params`: `_meta`, for `tools/call` the
/// tool's name and its arguments (kept raw), for `resources/read` the URI.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Params<'a> {
    #[serde(rename = "_meta", default)]
    pub(crate) meta: Option<Value>,
    #[serde(default)]
    pub(crate) name: Option<Value>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub(crate) arguments: Option<&'a RawValue>,
    #[serde(default)]
    uri: Option<Value>,
}

impl<'a> Message<'a> {
    fn parse(raw: &'a RawValue) -> Result<Self, String> {
        if !raw.get().starts_with('{') {
            return Ok(Message { not_object: true, ..Default::default() });
        }
        let mut m: Message = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
        m.method_name = m.method.and_then(|r| serde_json::from_str(r.get()).ok());
        m.parsed = m.params.filter(|p| p.get().starts_with('{')).map(|p| serde_json::from_str(p.get()).map_err(|e| e.to_string()));
        Ok(m)
    }

    /// The method, when it is a string.
    pub fn method(&self) -> Option<&str> {
        self.method_name.as_deref()
    }

    /// `params.name`, when it is a string.
    fn tool_name(&self) -> Option<&str> {
        self.parsed.as_ref()?.as_ref().ok()?.name.as_ref()?.as_str()
    }

    /// `params.uri`, when it is a string.
    fn uri(&self) -> Option<&str> {
        self.parsed.as_ref()?.as_ref().ok()?.uri.as_ref()?.as_str()
    }

    /// What `Mcp-Name` must match: the tool of a `tools/call`, the URI of a `resources/read`.
    pub(crate) fn name_for_header(&self) -> Option<&str> {
        match self.method()? {
            "resources/read" => self.uri(),
            _ => self.tool_name(),
        }
    }

    /// The scope this message needs before anything runs: a known tool's
    /// for `tools/call`, reading for the resources that hold notes.
    pub fn needed_scope(&self) -> Option<&'static str> {
        match self.method()? {
            "tools/call" => cairn_notes::tools::find(self.tool_name()?).map(|t| t.scope),
            "resources/list" | "resources/read" | "resources/subscribe" | "resources/unsubscribe" | "completion/complete" | "subscriptions/listen" => {
                Some(cairn_notes::scopes::READ)
            }
            _ => None,
        }
    }

    /// The `id`, `null` when absent or not JSON-RPC's.
    pub(crate) fn id_value(&self) -> Value {
        self.id.and_then(|r| serde_json::from_str(r.get()).ok()).unwrap_or(Value::Null)
    }
}

/// The messages of a body and whether it was a batch: one object, or a
/// batch of 1 to [`MAX_BATCH`]; otherwise the error reply for the whole
/// request, and nothing runs.
pub fn split(body: &str) -> Result<(Vec<Message<'_>>, bool), Value> {
    let raw: &RawValue = serde_json::from_str(body).map_err(|e| error(Value::Null, PARSE_ERROR, &format!("parse error: {e}")))?;
    let text = raw.get();
    let (items, batch): (Vec<&RawValue>, bool) = if text.starts_with('[') {
        let items: Vec<&RawValue> = serde_json::from_str(text).map_err(|e| error(Value::Null, PARSE_ERROR, &format!("parse error: {e}")))?;
        if items.is_empty() || items.len() > MAX_BATCH {
            return Err(error(
                Value::Null,
                INVALID_REQUEST,
                &format!("a batch holds 1 to {MAX_BATCH} messages; this one has {}: nothing was run", items.len()),
            ));
        }
        (items, true)
    } else if text.starts_with('{') {
        (vec![raw], false)
    } else {
        return Err(error(Value::Null, INVALID_REQUEST, "a request is a JSON-RPC object or an array of them"));
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        out.push(Message::parse(item).map_err(|e| error(Value::Null, INVALID_REQUEST, &format!("invalid JSON-RPC message: {e}")))?);
    }
    Ok((out, batch))
}
