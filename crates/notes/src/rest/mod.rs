//! The people's REST API under `/api/v1`: the same rules as the tools
//! (tenant prefix, visibility, one CAS per write, versions, optional
//! idempotency keys), answered as an HTTP status and a JSON body.
//!
//! [`ROUTES`] is the one table of routes: each names its method, its path,
//! the scope it needs, whether its refusals are audited, what it does, and
//! what serves it: an operation of this module (one file each, its body and
//! its answer in its doc) or one of the agents' tools, named by its `TOOL`.
//! [`route`] finds the route of a method and a path (or says 404 or 405 with
//! the methods allowed) and [`Route::serve`] answers it; the REST component
//! is the front door around the two.
//!
//! A refusal body is the object a tool refusal carries in structuredContent
//! (`error`, `message`, `current_version`, `next_step`, …) with its code's
//! status ([`Code::http_status`]): 400 `invalid_argument`, 403 `forbidden`,
//! 404 `not_found`, 409 `version_conflict`, `content_hash_mismatch`,
//! `idempotency_key_reused`, `claim_conflict` (with `claim_id`, `held_by`,
//! `actor_type`, `since`, `expires_at`), 413 `too_large`, 503 `busy`, …
//! A route served by a tool runs it through [`crate::call_structured`]: its
//! rules are the tool's own, and its body is the tool's structuredContent.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use cairn_kv::Store;

use crate::args::{MAX_KEY_CHARS, check_chars, check_id, parse};
use crate::env::{Env, Identity};
use crate::kv::TenantKv;
use crate::model::{Head, Tab, TabKind};
use crate::refusal::{Code, Failure, Halt, Out, Refusal};
use crate::scopes::{AUDIT, DELETE, READ, WRITE};
use crate::tools::{self, Tool};
use crate::write::{Change, Ctx as WriteCtx, Plan, Target, WriteSpec, commit};

mod add_source;
mod attach_file;
mod audit_trail;
mod changes;
mod claim_note;
mod claims;
mod create_note;
mod create_tab;
mod delete_tab;
mod edit_tab;
mod get_note;
mod list_attachments;
mod list_claims;
mod list_notes;
mod merge_tab;
mod note_history;
mod patch_note;
mod patch_tab;
mod put_tab;
mod read_outline;
mod read_range;
mod read_tab;
mod restore_tab;
mod search;
mod tab_diff;
mod tab_version;

pub use add_source::add_source;
pub use attach_file::attach_file;
pub use audit_trail::audit;
pub use changes::changes;
pub use claim_note::claim_note;
pub use claims::{force_release_claim, post_claim_note, release_claim, renew_claim};
pub use create_note::create_note;
pub use create_tab::create_tab;
pub use delete_tab::delete_tab;
pub use edit_tab::edit_tab;
pub use get_note::get_note;
pub use list_attachments::list_attachments;
pub use list_claims::list_claims;
pub use list_notes::list_notes;
pub use merge_tab::merge_draft;
pub use note_history::note_history;
pub use patch_note::update_note;
pub use patch_tab::update_tab;
pub use put_tab::write_tab;
pub use read_range::read_range;
pub use read_tab::read_tab;
pub use restore_tab::restore_tab;
pub use search::search;
pub use tab_diff::tab_diff;
pub use tab_version::tab_version;

use Handler::{ByTool, Op, Stream};
use Method::{Delete, Get, Patch, Post, Put};

/// Every route of the people's API, by path, then method.
pub static ROUTES: &[Route] = &[
    Route {
        method: Get,
        path: "/api/v1/audit",
        scope: AUDIT,
        admin_only: false,
        audited: false,
        key_header: false,
        doc: "the audit trail, oldest first (`?note_id=&since=&cursor=&limit=`), for people",
        handler: Op(audit_trail::serve),
    },
    Route {
        method: Get,
        path: "/api/v1/claims",
        scope: READ,
        admin_only: false,
        audited: false,
        key_header: false,
        doc: "presence: the live claims of your tenant (`?note_id=`)",
        handler: Op(list_claims::serve),
    },
    Route {
        method: Delete,
        path: "/api/v1/claims/{claim}",
        scope: WRITE,
        admin_only: false,
        audited: true,
        key_header: false,
        doc: "release a claim you hold (a repeat is 200 with `already_released`)",
        handler: Op(claims::serve_release),
    },
    Route {
        method: Post,
        path: "/api/v1/claims/{claim}/force-release",
        scope: WRITE,
        admin_only: true,
        audited: true,
        key_header: false,
        doc: "release anyone's claim: people with the admin role only (a role check, not a scope)",
        handler: Op(claims::serve_force_release),
    },
    Route {
        method: Post,
        path: "/api/v1/claims/{claim}/notes",
        scope: WRITE,
        admin_only: false,
        audited: true,
        key_header: false,
        doc: "post an ephemeral note (`text` ≤ 2,000) on a claim you hold: 201",
        handler: Op(claims::serve_post_note),
    },
    Route {
        method: Post,
        path: "/api/v1/claims/{claim}/renew",
        scope: WRITE,
        admin_only: false,
        audited: true,
        key_header: false,
        doc: "extend a live claim you hold (`ttl_seconds`)",
        handler: Op(claims::serve_renew),
    },
    Route {
        method: Get,
        path: "/api/v1/notes",
        scope: READ,
        admin_only: false,
        audited: false,
        key_header: false,
        doc: "the notes you can see (`?cursor=&limit=`)",
        handler: ByTool { tool: &tools::list_notes::TOOL, args: list_notes::args, ok: 200 },
    },
    Route {
        method: Post,
        path: "/api/v1/notes",
        scope: WRITE,
        admin_only: false,
        audited: true,
        key_header: false,
        doc: "create a note (`title`, `approved_for_agents`): 201",
        handler: Op(create_note::serve),
    },
    Route {
        method: Get,
        path: "/api/v1/notes/{note}",
        scope: READ,
        admin_only: false,
        audited: false,
        key_header: false,
        doc: "the note, its tabs and versions",
        handler: Op(get_note::serve),
    },
    Route {
        method: Get,
        path: "/api/v1/notes/{note}/changes",
        scope: READ,
        admin_only: false,
        audited: false,
        key_header: false,
        doc: "what an open page polls to stay live (`?since=<etag>`): `changed: false`, or the versions, tabs and live claims",
        handler: Op(changes::serve),
    },
    Route {
        method: Get,
        path: "/api/v1/notes/{note}/events",
        scope: READ,
        admin_only: false,
        audited: false,
        key_header: false,
        doc: "the same answers as a stream (Server-Sent Events `changes`), one each time what `changes` shows moves (`?since=<etag>`)",
        handler: Stream(changes::serve),
    },
    Route {
        method: Patch,
        path: "/api/v1/notes/{note}",
        scope: WRITE,
        admin_only: false,
        audited: true,
        key_header: true,
        doc: "approve for agents (`approved_for_agents`) and/or rename (`title`) with `expected_version`",
        handler: Op(patch_note::serve),
    },
    Route {
        method: Get,
        path: "/api/v1/notes/{note}/attachments",
        scope: READ,
        admin_only: false,
        audited: false,
        key_header: false,
        doc: "files and sources, metadata only (`?kind=&cursor=&limit=`)",
        handler: ByTool { tool: &tools::list_note_attachments::TOOL, args: list_attachments::args, ok: 200 },
    },
    Route {
        method: Post,
        path: "/api/v1/notes/{note}/claims",
        scope: WRITE,
        admin_only: false,
        audited: true,
        key_header: false,
        doc: "claim the note, a tab (`tab_id`) or a section of a markdown tab (`tab_id`, `section_id`), for `ttl_seconds`: 201 granted, 200 renewed (heartbeat), 409 held by someone else",
        handler: Op(claim_note::serve),
    },
    Route {
        method: Post,
        path: "/api/v1/notes/{note}/files",
        scope: WRITE,
        admin_only: false,
        audited: true,
        key_header: true,
        doc: "attach a file's metadata: 201",
        handler: Op(attach_file::serve),
    },
    Route {
        method: Get,
        path: "/api/v1/notes/{note}/history",
        scope: READ,
        admin_only: false,
        audited: false,
        key_header: false,
        doc: "the note's versions, newest first (`?tab_id=&before=&limit=`)",
        handler: Op(note_history::serve),
    },
    Route {
        method: Post,
        path: "/api/v1/notes/{note}/sources",
        scope: WRITE,
        admin_only: false,
        audited: true,
        key_header: true,
        doc: "cite a page: 201 added, 200 already attached",
        handler: ByTool { tool: &tools::add_note_source::TOOL, args: body_with_note, ok: 201 },
    },
    Route {
        method: Post,
        path: "/api/v1/notes/{note}/tabs",
        scope: WRITE,
        admin_only: false,
        audited: true,
        key_header: true,
        doc: "a new slides or sheet tab: 201",
        handler: ByTool { tool: &tools::create_note_tab::TOOL, args: body_with_note, ok: 201 },
    },
    Route {
        method: Get,
        path: "/api/v1/notes/{note}/tabs/{tab}",
        scope: READ,
        admin_only: false,
        audited: false,
        key_header: false,
        doc: "a tab's content (`?at_version=`), or a part of it (`?start_line=&max_lines=`, `?section_id=`, `?since_version=`, slides `?start_index=&max_slides=`; `?max_chars=` caps it)",
        handler: ByTool { tool: &tools::read_note_tab::TOOL, args: read_tab::args, ok: 200 },
    },
    Route {
        method: Get,
        path: "/api/v1/notes/{note}/tabs/{tab}/outline",
        scope: READ,
        admin_only: false,
        audited: false,
        key_header: false,
        doc: "a markdown tab's sections: ids, line ranges, sizes, hashes and claims (`?heading=&max_level=&max_sections=&start_line=`)",
        handler: ByTool { tool: &tools::read_note_outline::TOOL, args: read_outline::args, ok: 200 },
    },
    Route {
        method: Put,
        path: "/api/v1/notes/{note}/tabs/{tab}",
        scope: WRITE,
        admin_only: false,
        audited: true,
        key_header: true,
        doc: "write a tab with `expected_version`; a stale save gets 409 with the current version",
        handler: Op(put_tab::serve),
    },
    Route {
        method: Patch,
        path: "/api/v1/notes/{note}/tabs/{tab}",
        scope: WRITE,
        admin_only: false,
        audited: true,
        key_header: true,
        doc: "rename a slides/sheet tab (`label`) and/or move a tab (`position`, 0-based) with `expected_version`; the tab keeps its id",
        handler: Op(patch_tab::serve),
    },
    Route {
        method: Delete,
        path: "/api/v1/notes/{note}/tabs/{tab}",
        scope: DELETE,
        admin_only: false,
        audited: true,
        key_header: true,
        doc: "delete a slides/sheet tab (`expected_version`)",
        handler: Op(delete_tab::serve),
    },
    Route {
        method: Get,
        path: "/api/v1/notes/{note}/tabs/{tab}/diff",
        scope: READ,
        admin_only: false,
        audited: false,
        key_header: false,
        doc: "a line diff of the tab between two note versions (`?from=&to=`)",
        handler: Op(tab_diff::serve),
    },
    Route {
        method: Post,
        path: "/api/v1/notes/{note}/tabs/{tab}/edit",
        scope: WRITE,
        admin_only: false,
        audited: true,
        key_header: true,
        doc: "any `edit_note_tab` operation (the tool's arguments, ids from the path)",
        handler: ByTool { tool: &tools::edit_note_tab::TOOL, args: edit_tab::args, ok: 200 },
    },
    Route {
        method: Post,
        path: "/api/v1/notes/{note}/tabs/{tab}/merge",
        scope: READ,
        admin_only: false,
        audited: false,
        key_header: false,
        doc: "the three-way merge of a person's draft of the markdown tab with the text now; writes nothing",
        handler: ByTool { tool: &tools::merge_note_tab::TOOL, args: edit_tab::args, ok: 200 },
    },
    Route {
        method: Get,
        path: "/api/v1/notes/{note}/tabs/{tab}/range",
        scope: READ,
        admin_only: false,
        audited: false,
        key_header: false,
        doc: "sheet cells (`?range=A1:C3&sheet_id=`)",
        handler: ByTool { tool: &tools::read_sheet_range::TOOL, args: read_range::args, ok: 200 },
    },
    Route {
        method: Post,
        path: "/api/v1/notes/{note}/tabs/{tab}/restore",
        scope: WRITE,
        admin_only: false,
        audited: true,
        key_header: true,
        doc: "write the tab's content at an earlier note version (`from_version`) as a new version",
        handler: Op(restore_tab::serve),
    },
    Route {
        method: Get,
        path: "/api/v1/notes/{note}/tabs/{tab}/versions/{version}",
        scope: READ,
        admin_only: false,
        audited: false,
        key_header: false,
        doc: "the tab as it was at a note version",
        handler: Op(tab_version::serve),
    },
    Route {
        method: Get,
        path: "/api/v1/search",
        scope: READ,
        admin_only: false,
        audited: false,
        key_header: false,
        doc: "full-text search (`?q=&tab_type=&limit=&cursor=`)",
        handler: ByTool { tool: &tools::search_notes::TOOL, args: search::args, ok: 200 },
    },
];

/// The methods the routes use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`: reads.
    Get,
    /// `POST`: creates, and actions on a resource.
    Post,
    /// `PUT`: a tab's whole content.
    Put,
    /// `PATCH`: a note's or a tab's attributes.
    Patch,
    /// `DELETE`.
    Delete,
}

impl Method {
    /// The method as HTTP names it (`GET`).
    pub fn as_str(self) -> &'static str {
        match self {
            Get => "GET",
            Post => "POST",
            Put => "PUT",
            Patch => "PATCH",
            Delete => "DELETE",
        }
    }
}

/// One route of the people's API (a row of [`ROUTES`]).
pub struct Route {
    /// The method.
    pub method: Method,
    /// The path; a segment `{name}` is a parameter standing for any one segment.
    pub path: &'static str,
    /// The scope the caller's token needs ([`crate::scopes`]).
    pub scope: &'static str,
    /// Only for a person with the admin role, on top of the scope: a role
    /// check of the operation itself (no scope grants it).
    pub admin_only: bool,
    /// Refusals go into the audit trail: under the tool's name when a tool
    /// serves the route (the tool call records them), else under
    /// `METHOD path` (`PUT /api/v1/notes/{note}/tabs/{tab}`).
    pub audited: bool,
    /// An `Idempotency-Key` header fills in the body's `idempotency_key` when
    /// the body has none.
    pub key_header: bool,
    /// What the route does, in one line.
    pub doc: &'static str,
    handler: Handler,
}

/// What answers a route.
enum Handler {
    /// An operation of this module.
    Op(fn(Ctx<'_>) -> Result<RestReply, Failure>),
    /// One of the agents' tools: `args` draws its arguments from the request;
    /// `ok` is the status of its result.
    ByTool { tool: &'static Tool, args: fn(Ctx<'_>) -> Result<Value, Refusal>, ok: u16 },
    /// An operation whose answer is followed: the host answers with a
    /// stream and sends the operation's answer again each time it moves
    /// (see [`Route::streams`]).
    Stream(fn(Ctx<'_>) -> Result<RestReply, Failure>),
}

/// What a route's handler is given: the store, the clock, the caller, and the
/// request (the path's parameters, the query, the body as a JSON object).
struct Ctx<'a> {
    kv: &'a dyn Store,
    env: &'a mut dyn Env,
    who: &'a Identity,
    params: &'a Params<'a>,
    query: &'a Query,
    body: Value,
}

impl<'a> Ctx<'a> {
    /// The path parameter `name` (every handler asks only for its route's).
    fn param(&self, name: &str) -> &'a str {
        self.params.get(name).unwrap_or_default()
    }

    /// The query parameter `name`, if sent.
    fn query(&self, name: &str) -> Option<&'a str> {
        self.query.get(name).map(String::as_str)
    }
}

/// A query string's parameters, percent-decoded (the last of a repeated name).
pub type Query = BTreeMap<String, String>;

/// The values a path gave its route's parameters, in path order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params<'p>(Vec<(&'static str, &'p str)>);

impl<'p> Params<'p> {
    /// The value of the parameter `name` (`note` for `{note}`).
    pub fn get(&self, name: &str) -> Option<&'p str> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    /// Every parameter's name and value, in path order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &'p str)> + '_ {
        self.0.iter().copied()
    }
}

/// Why a method and a path have no route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoRoute {
    /// No route has this path: 404.
    NotFound,
    /// Routes have this path, none with this method: 405, with their
    /// methods in `Allow`.
    MethodNotAllowed {
        /// The methods of the routes with this path, in table order.
        allow: Vec<&'static str>,
    },
}

/// The route of `method` on `path` (`/api/v1/notes/n1/tabs/markdown`, slashes
/// at either end ignored), with the values of its parameters.
pub fn route<'p>(method: &str, path: &'p str) -> Result<(&'static Route, Params<'p>), NoRoute> {
    let segments: Vec<&'p str> = path.trim_end_matches('/').trim_start_matches('/').split('/').collect();
    let mut allow = Vec::new();
    for r in ROUTES {
        let Some(params) = r.matches(&segments) else { continue };
        if r.method.as_str() == method {
            return Ok((r, params));
        }
        if !allow.contains(&r.method.as_str()) {
            allow.push(r.method.as_str());
        }
    }
    Err(if allow.is_empty() { NoRoute::NotFound } else { NoRoute::MethodNotAllowed { allow } })
}

/// A routed request as the REST component hands it over.
pub struct Incoming<'a> {
    /// The path's parameters, from [`route`].
    pub params: Params<'a>,
    /// The query's parameters.
    pub query: &'a Query,
    /// The body as sent (none, or a JSON object).
    pub body: &'a [u8],
    /// The `Idempotency-Key` header, if sent.
    pub idempotency_key: Option<&'a str>,
}

impl Route {
    /// The tool serving this route, if a tool does.
    pub fn tool(&self) -> Option<&'static Tool> {
        match self.handler {
            ByTool { tool, .. } => Some(tool),
            Op(_) | Stream(_) => None,
        }
    }

    /// Answers `req` on this route for `who`. A body that is not a JSON object
    /// is 400 `invalid_body`; a refusal of an audited route goes into the
    /// audit trail.
    pub fn serve(&self, kv: &dyn Store, env: &mut dyn Env, who: &Identity, req: Incoming<'_>) -> Result<RestReply, Failure> {
        let mut body = match body(req.body) {
            Ok(b) => b,
            Err(reply) => return Ok(reply),
        };
        if let Some(key) = req.idempotency_key
            && self.key_header
            && body.get("idempotency_key").is_none()
        {
            body["idempotency_key"] = key.into();
        }
        let note = req.params.get("note");
        let ctx = Ctx { kv, env: &mut *env, who, params: &req.params, query: req.query, body };
        match self.handler {
            Op(op) => {
                let reply = op(ctx);
                if self.audited
                    && let Ok(r) = &reply
                {
                    record_refusal(kv, env, who, &format!("{} {}", self.method.as_str(), self.path), note, r);
                }
                reply
            }
            ByTool { tool, args, ok } => {
                let args = args(ctx);
                via_tool(kv, env, who, tool, note, args, ok)
            }
            Stream(op) => op(ctx),
        }
    }

    /// Whether this route answers with a stream: the host serves it again
    /// and again (a look every quarter second), with `since` set to the last
    /// answer's `etag`, and sends each answer whose `changed` is true as a
    /// Server-Sent Event `changes`, until the stream's lifetime is up. Each
    /// answer alone is what [`Route::serve`] gives.
    pub fn streams(&self) -> bool {
        matches!(self.handler, Stream(_))
    }

    /// The values of this route's parameters in `segments`, if its path matches.
    fn matches<'p>(&self, segments: &[&'p str]) -> Option<Params<'p>> {
        let pattern = self.path.trim_start_matches('/');
        if pattern.split('/').count() != segments.len() {
            return None;
        }
        let mut params = Vec::new();
        for (p, s) in pattern.split('/').zip(segments) {
            match p.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                Some(name) => params.push((name, *s)),
                None if p == *s => {}
                None => return None,
            }
        }
        Some(Params(params))
    }
}

/// A request's body: none is `{}`; anything but a JSON object is 400 `invalid_body`.
fn body(bytes: &[u8]) -> Result<Value, RestReply> {
    if bytes.is_empty() {
        return Ok(json!({}));
    }
    match serde_json::from_slice(bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        _ => Err(RestReply { status: 400, body: json!({"error": "invalid_body", "message": "the body must be a JSON object"}) }),
    }
}

/// An HTTP status and a JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct RestReply {
    /// HTTP status code.
    pub status: u16,
    /// JSON body.
    pub body: Value,
}

/// A refusal as a REST reply: its code's status and its body.
fn refused(r: &Refusal) -> RestReply {
    RestReply { status: r.code.http_status(), body: r.body() }
}

/// Every operation's frame: the caller's tenant view and the ids checked,
/// then `f`, answered with its status (a refusal with its code's status).
fn answer_with(store: &dyn Store, who: &Identity, ids: &[(&str, &str)], f: impl FnOnce(&TenantKv) -> Out<(u16, Value)>) -> Result<RestReply, Failure> {
    let out = (|| {
        let kv = crate::tenant_kv(store, who)?;
        for (field, id) in ids {
            check_id(field, id)?;
        }
        f(&kv)
    })();
    match out {
        Ok((status, body)) => Ok(RestReply { status, body }),
        Err(Halt::Refused(r)) => Ok(refused(&r)),
        Err(Halt::Failed(e)) => Err(e),
    }
}

/// [`answer_with`] for operations that answer one status on success.
fn answer(store: &dyn Store, who: &Identity, ids: &[(&str, &str)], ok: u16, f: impl FnOnce(&TenantKv) -> Out<Value>) -> Result<RestReply, Failure> {
    answer_with(store, who, ids, |kv| Ok((ok, f(kv)?)))
}

/// [`answer`] for operations on one tab: the note's and the tab's ids checked, 200 on success.
fn answer_tab(store: &dyn Store, who: &Identity, note_id: &str, tab_id: &str, f: impl FnOnce(&TenantKv) -> Out<Value>) -> Result<RestReply, Failure> {
    answer(store, who, &[("note_id", note_id), ("tab_id", tab_id)], 200, f)
}

/// [`commit`] of a write to one tab: `resolve` finds the tab's index in the head (or
/// refuses), `apply` changes the head at that index.
fn commit_tab(
    kv: &TenantKv,
    env: &mut dyn Env,
    who: &Identity,
    spec: &WriteSpec,
    resolve: impl Fn(&Head) -> Out<usize>,
    mut apply: impl FnMut(&mut Head, usize, &mut WriteCtx) -> Out<Change>,
) -> Out<Value> {
    commit(
        kv,
        env,
        who,
        spec,
        |head| Ok(Plan::Write(Target::Tab(resolve(head)?))),
        |head, target, ctx| {
            let Target::Tab(i) = target else { unreachable!("a tab target") };
            apply(head, i, ctx)
        },
    )
}

/// The index of the tab `tab_id` in `head`: 404 `not_found` when the note has none.
fn find_tab_index(head: &Head, tab_id: &str) -> Result<usize, Refusal> {
    head.tab_index(tab_id).ok_or_else(|| Refusal::not_found("tab"))
}

/// Refuses, naming `field`, what only a slides or sheet tab takes when `tab` is one of
/// the fixed tabs (markdown, files, sources).
fn check_not_fixed(tab: &Tab, field: &str, message: &str) -> Result<(), Refusal> {
    match tab.kind {
        TabKind::Slides | TabKind::Sheet => Ok(()),
        _ => Err(Refusal::invalid(field, message)),
    }
}

/// An agent asking to approve a note (or withdraw an approval).
fn forbidden_approval() -> Halt {
    Refusal::new(Code::Forbidden, "only a person approves a note for agents or withdraws the approval")
        .with("field", "approved_for_agents")
        .with_next_step("leave approved_for_agents out; ask a person to change it")
        .into()
}

/// A keyed write's body as `T` ([`parse`]), then the length of the optional
/// `idempotency_key` it sent.
fn parse_keyed<T: DeserializeOwned>(args: Value) -> Result<T, Refusal> {
    let key = args.get("idempotency_key").and_then(Value::as_str).map(str::to_owned);
    let a = parse(args)?;
    key.map_or(Ok(()), |k| check_chars("idempotency_key", &k, 1, MAX_KEY_CHARS))?;
    Ok(a)
}

/// Parses an optional positive integer query parameter.
fn query_u64(field: &str, v: Option<&str>) -> Result<Option<u64>, Refusal> {
    match v {
        None => Ok(None),
        Some(s) => s
            .parse::<u64>()
            .ok()
            .filter(|n| *n >= 1)
            .map(Some)
            .ok_or_else(|| Refusal::invalid(field, format!("{field} must be a positive whole number, not {s:?}"))),
    }
}

/// Runs `tool` for a route with `args` (drawn from the path, the query and the
/// body): its structuredContent, with `ok` on success (201 becomes 200 when
/// the result says the thing was there already, `already_attached`); a
/// refusal with its code's status, as every other route's. A write tool
/// records its refusals for the audit trail under its own name
/// ([`crate::call_structured`]); arguments refused before the tool runs are
/// recorded the same way.
fn via_tool(
    store: &dyn Store,
    env: &mut dyn Env,
    who: &Identity,
    tool: &Tool,
    note_id: Option<&str>,
    args: Result<Value, Refusal>,
    ok: u16,
) -> Result<RestReply, Failure> {
    match args {
        Ok(args) => {
            let (body, refusal) = crate::call_structured(store, env, who, tool, args)?;
            let status = match refusal {
                Some(code) => code.http_status(),
                None if ok == 201 && body["already_attached"] == true => 200,
                None => ok,
            };
            Ok(RestReply { status, body })
        }
        Err(r) => {
            let reply = refused(&r);
            if !tool.annotations.read_only_hint {
                record_refusal(store, env, who, tool.name, note_id, &reply);
            }
            Ok(reply)
        }
    }
}

/// Tool arguments from a route's parameters, the absent ones left out (tools refuse `null`).
fn tool_args<'k>(params: impl IntoIterator<Item = (&'k str, Option<Value>)>) -> Value {
    Value::Object(params.into_iter().filter_map(|(k, v)| Some((k.to_string(), v?))).collect())
}

/// The page a listing's query asks for, as tool arguments: `cursor` as sent, `limit` a
/// positive whole number.
fn page(cursor: Option<&str>, limit: Option<&str>) -> Result<[(&'static str, Option<Value>); 2], Refusal> {
    Ok([("cursor", cursor.map(Value::from)), ("limit", query_u64("limit", limit)?.map(Value::from))])
}

/// A write tool's arguments from a routed request: the body, the note from the path.
fn body_with_note(c: Ctx<'_>) -> Result<Value, Refusal> {
    let note = c.param("note");
    with_path_ids(c.body, &[("note_id", note)])
}

/// A write tool's arguments: the body with the path's ids put in. A body field that names
/// another note or tab than the path is refused, naming the field.
fn with_path_ids(mut body: Value, ids: &[(&str, &str)]) -> Result<Value, Refusal> {
    if body.is_null() {
        body = json!({});
    }
    let Some(obj) = body.as_object_mut() else {
        return Err(Refusal::invalid("arguments", "the body must be a JSON object"));
    };
    for (field, id) in ids {
        if obj.get(*field).is_some_and(|v| v.as_str() != Some(id)) {
            return Err(Refusal::invalid(field, format!("{field} in the body is not the {field} of the path ({id}): leave it out or send the same id")));
        }
        obj.insert(field.to_string(), (*id).into());
    }
    Ok(body)
}

/// Records a refused people's write (`route`: method and route pattern) for
/// the audit trail, when `reply` is a refusal. Best effort.
pub fn record_refusal(store: &dyn Store, env: &mut dyn Env, who: &Identity, route: &str, note_id: Option<&str>, reply: &RestReply) {
    if reply.status < 400 || !reply.body["error"].is_string() {
        return;
    }
    if let Ok(kv) = crate::tenant_kv(store, who) {
        crate::audit::record_refused_write(&kv, env, who, route, note_id, &reply.body);
    }
}
