//! A whole request to `POST /mcp`: read ([`Request::read`]), what it needs
//! before any of it runs (its messages to count, [`Request::scopes`] to
//! check), and its [`Answer`] ([`Request::run`]).

use cairn_auth::Principal;
use serde_json::Value;

use crate::feed::Filter;
use crate::headers;
use crate::message::{Message, split};
use crate::methods::handle_message;
use crate::rpc::{INVALID_PARAMS, PARSE_ERROR, error};
use crate::transport::{Tools, Unavailable};

/// The messages of one request, framed and checked, borrowed from its body.
#[derive(Debug)]
pub struct Request<'a> {
    messages: Vec<Message<'a>>,
    batch: bool,
}

/// The answer to a request that ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// 200, `application/json`: the one reply, or a batch's replies as an
    /// array in the order of their messages.
    Reply(String),
    /// 202 and no body: no message needed a reply (notifications, client
    /// responses).
    Accepted,
    /// 503 with `Retry-After`: a tool or its store is out of reach, so no
    /// result can be trusted to have happened or not; the message tells the
    /// caller to retry the request (with the same idempotency keys).
    Unavailable(String),
}

impl Answer {
    /// The HTTP status of this answer.
    pub fn status(&self) -> u16 {
        match self {
            Answer::Reply(_) => 200,
            Answer::Accepted => 202,
            Answer::Unavailable(_) => 503,
        }
    }
}

impl<'a> Request<'a> {
    /// Reads a body: UTF-8, JSON, one message or a batch of 1 to
    /// [`crate::message::MAX_BATCH`], and the headers of
    /// [`crate::headers`] (`header` gives a header's value by its lowercase
    /// name). `Err` is the JSON-RPC error that answers the whole request
    /// (status 400), and nothing runs.
    pub fn read(body: &'a [u8], header: impl Fn(&str) -> Option<String>) -> Result<Self, Value> {
        let body = std::str::from_utf8(body).map_err(|e| error(Value::Null, PARSE_ERROR, &format!("parse error: the body is not UTF-8: {e}")))?;
        let (messages, batch) = split(body)?;
        headers::check(header, &messages)?;
        Ok(Request { messages, batch })
    }

    /// The messages, in order (the subject's budget counts each one).
    pub fn messages(&self) -> &[Message<'a>] {
        &self.messages
    }

    /// The scope each message needs, in message order, for the caller to
    /// check before anything runs.
    pub fn scopes(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.messages.iter().filter_map(Message::needed_scope)
    }

    /// A `subscriptions/listen` sent alone: its id and what it watches
    /// (`Err`: the JSON-RPC error that answers it, status 400). `None` for
    /// any other request (a listen in a batch is refused by [`Request::run`]).
    pub fn listen(&self) -> Option<Result<(Value, Filter), Value>> {
        let [m] = &self.messages[..] else { return None };
        if self.batch || m.method() != Some("subscriptions/listen") || m.id.is_none() {
            return None;
        }
        let id = m.id_value();
        let params: Value = m.params.and_then(|p| serde_json::from_str(p.get()).ok()).unwrap_or(Value::Null);
        Some(Filter::of_listen(&params).map(|f| (id.clone(), f)).map_err(|msg| error(id, INVALID_PARAMS, &msg)))
    }

    /// Runs every message in order as `who`, reaching tools through `tools`.
    /// The first tool or store out of reach stops the request: the messages
    /// after it do not run.
    pub async fn run(&self, tools: &impl Tools, who: &Principal) -> Answer {
        let mut replies = Vec::new();
        for m in &self.messages {
            match handle_message(m, tools, who).await {
                Ok(Some(reply)) => replies.push(reply),
                Ok(None) => {}
                Err(Unavailable(why)) => return Answer::Unavailable(format!("{why}; retry the request (same idempotency keys) shortly")),
            }
        }
        if replies.is_empty() {
            return Answer::Accepted;
        }
        Answer::Reply(if self.batch { format!("[{}]", replies.join(",")) } else { replies.pop().unwrap_or_default() })
    }
}
