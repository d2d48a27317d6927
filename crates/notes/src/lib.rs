//! `cairn-notes`: every rule of Cairn's notes store, over the key-value
//! contract of `cairn-kv`. Pure Rust, no wasm dependencies; compiles for
//! `wasm32-wasip2` (time and randomness are injected through [`Env`]).
//!
//! Module map, bottom up (no module imports one above it):
//! - [`env`](mod@env): [`Env`] (clock, randomness), [`Identity`] of the caller, [`SimEnv`] for tests.
//! - [`keys`]: the key layout (tenant prefix, every record's key, system keys,
//!   [`list_tenants`]).
//! - [`refusal`]: refusal [`Code`]s and [`Failure`]s, the two ways a call ends badly,
//!   and the `CallToolResult` shape.
//! - [`kv`]: [`TenantKv`], the tenant's view of a store (the only way in).
//! - `model` (stored records, ids, time), `args` (the shared argument parser
//!   and checks), `schema` (shared JSON Schema pieces, and every tool's
//!   schemas derived from its types), `results` (the typed pieces tools'
//!   results share), [`url`] (source URL
//!   normalization), `content` (blobs, documents, slides), `sheet` (row blocks),
//!   `sections` (a markdown text's outline and line windows).
//! - `claim_audit`: claim audit records, and what a commit does with lapsed claims.
//! - `dirty`: the marker a commit writes for the index when it changes what
//!   a tab says (all the commit path knows of the index).
//! - `head`: **the one head transaction** ([`head`'s `transact`]) every change to a
//!   note commits through, and `update` for the other records rewritten in place.
//! - `note_index` (the tenant's note list), `claim_index`
//!   (the claim index and [`sweep_expired_claims`]).
//! - `history` (every version of a note: listing, a tab as it was at a
//!   version, retention), [`history_sweep`] (what is past retention leaves
//!   the store: [`sweep_history`]), `diff` (every line diff, bounded in lines
//!   and time), `merge` (three-way line merge of a stale draft).
//! - `index`: the full-text index (words, postings, the dictionary, what a
//!   tab says); its merges bring the postings up to the committed heads.
//! - [`quota`]: the tenant's stored bytes, exact at write time (a counter
//!   charged before each commit, refunded where a commit did not land).
//! - `claim_results` (the typed results of the claim tools and routes),
//!   `claims` (claim rules and operations), `section_claims` (the lines a
//!   section claim holds, enforced on every commit), `write` (the write
//!   pipeline: idempotency → claims → version → apply → section claims →
//!   history), `write_results` (what a write answers, typed: the shared
//!   write result, and a keyed write's replay), `edit` (tab edits, patches
//!   and their rebase check).
//! - `audit` (the audit trail people read, and refused writes recorded for it).
//! - [`search`] (queries over the index, [`search::merge`], [`search::reindex`] and [`search::check`]).
//! - [`watch`]: what a change feed sees of notes: a stamp per watched note
//!   or tab, exactly as visible as a read.
//! - [`version`]: version tokens: what a read hands back to write against,
//!   marked `part` when the read returned part of the tab.
//! - [`tools`](mod@tools): one file per tool and [`tools::TOOLS`], the one table.
//! - [`rest`]: the people's REST API over the same rules: one route table
//!   ([`rest::ROUTES`]) and one file per operation.
//!
//! Entry points: [`call_tool`] (by name) and [`call`] (one tool's
//! component, with its `TOOL`). It returns an MCP
//! `CallToolResult` as JSON: `{"content":[{"type":"text","text":…}],
//! "structuredContent":{…},"isError":bool}`. A refusal (bad argument, conflict,
//! not found, too large) is a result with `isError: true` and structuredContent
//! `{"error": code, "message", "current_version"?, "next_step", …}`; only a
//! store failure is an `Err`.
//!
//! Claims: ids are `clm-<note_id>-<seq base36>-<8 random base36>` (the note id finds the
//! head without a scan; `seq` is the note's claim counter, so ids are never reused). A
//! write refused because another actor holds its target is
//! `{"error": "claim_conflict", "message", "current_version", "claim_id", "note_id",
//! "tab_id", "section_id", "held_by", "actor_type", "since", "expires_at", "next_step"}`; a
//! section claim's holder writing outside its section is `outside_claim`; renewing,
//! releasing or posting on someone else's claim is `forbidden`; a claim that is not live
//! (or in another tenant) is `not_found`.

#![warn(missing_docs)]

pub mod env;
pub mod keys;
pub mod kv;
pub mod refusal;
pub mod rest;
pub mod tools;
pub mod url;
pub mod version;
pub mod watch;

mod args;
mod audit;
mod claim_audit;
mod claim_index;
mod claim_results;
mod claims;
mod content;
mod diff;
mod dirty;
mod edit;
mod head;
mod history;
pub mod history_sweep;
mod index;
mod merge;
mod model;
mod note_index;
pub mod quota;
mod results;
mod schema;
pub mod search;
mod section_claims;
mod sections;
mod sheet;
mod write;
mod write_results;

use serde_json::Value;

/// The OAuth scopes, and what each one lets a caller do. Which scope a tool
/// needs is in its [`Tool`] entry; which a REST route needs, in its [`rest::Route`] entry.
pub mod scopes {
    /// Read notes and tabs (every read tool).
    pub const READ: &str = "notes:read";
    /// Write notes and tabs, claim (every write tool).
    pub const WRITE: &str = "notes:write";
    /// Delete tabs (REST only).
    pub const DELETE: &str = "notes:delete";
    /// Read the audit log (REST only).
    pub const AUDIT: &str = "audit:read";
    /// Every scope, as advertised in the protected-resource metadata.
    pub const ALL: [&str; 4] = [READ, WRITE, DELETE, AUDIT];
}

pub use cairn_kv::Store;
pub use claim_index::sweep_expired_claims;
pub use env::{ActorType, Env, Identity, Role, SimEnv};
pub use head::DELIVERY_BOUND;
pub use history_sweep::{HistorySweep, sweep_history};
pub use keys::list_tenants;
pub use kv::TenantKv;
pub use model::{hex, rfc3339};
pub use refusal::{Answer, Code, Failure, NEXT_STEP_CLAIM, NEXT_STEP_REREAD, NOTICE};
pub use tools::{Tool, ToolAnnotations, ToolSpec, tools};

use refusal::{Out, Refusal, finish};

/// The store view of the caller's tenant; refuses an identity the router should never send.
pub(crate) fn tenant_kv<'a>(store: &'a dyn Store, who: &Identity) -> Result<TenantKv<'a>, Refusal> {
    if who.subject.is_empty() || who.subject.len() > 200 {
        return Err(Refusal::invalid("identity.subject", "the caller's subject must have 1-200 bytes"));
    }
    TenantKv::new(store, &who.tenant).ok_or_else(|| Refusal::invalid("identity.tenant", "tenant ids are [a-z0-9_-]{1,64}"))
}

/// Runs one tool for `who` and returns its MCP `CallToolResult` as JSON text
/// (what a tool component answers, built without a second serialization).
///
/// Unknown tools and bad arguments are `invalid_argument` results; `Err` only for a
/// store failure. A `_meta` member of the arguments (MCP's request metadata)
/// is not an argument and is dropped.
pub fn call_tool(store: &dyn Store, env: &mut dyn Env, who: &Identity, tool: &str, args: Value) -> Result<String, Failure> {
    match tools::find(tool) {
        Some(t) => call(store, env, who, t, args),
        // The tenant is checked first, as for a known tool.
        None => finish(tenant_kv(store, who).and_then(|_| Err::<Value, _>(Refusal::invalid("name", format!("unknown tool {tool:?}")))).map_err(Into::into)),
    }
}

/// [`call_tool`] of one tool given by its `TOOL` (`tools::read_note_tab::TOOL`):
/// what a tool's own component calls, so that it links that tool and no other.
pub fn call(store: &dyn Store, env: &mut dyn Env, who: &Identity, t: &Tool, args: Value) -> Result<String, Failure> {
    answer(store, env, who, t, args).map(|a| a.json)
}

/// [`call`] with the refusal's code beside the result: what a tool's
/// component answers through `cairn:platform/tool`.
pub fn answer(store: &dyn Store, env: &mut dyn Env, who: &Identity, t: &Tool, args: Value) -> Result<Answer, Failure> {
    let (structured, code) = call_structured(store, env, who, t, args)?;
    Ok(Answer { json: refusal::tool_result(&structured, code.is_some()), refusal: code })
}

/// [`answer`] before its result is serialized: the structuredContent, and the
/// refusal's code when it is one (`isError: true`), for callers that answer in
/// another shape (the REST routes a tool serves). The same rules, the same
/// audit records.
pub fn call_structured(store: &dyn Store, env: &mut dyn Env, who: &Identity, t: &Tool, mut args: Value) -> Result<(Value, Option<Code>), Failure> {
    if let Some(obj) = args.as_object_mut() {
        obj.remove("_meta");
    }
    let tool = t.name;
    let out = (|| -> Out<Value> {
        let kv = tenant_kv(store, who)?;
        if t.annotations.read_only_hint {
            return (t.run)(&mut tools::Call { kv: &kv, env, who }, args);
        }
        // A refused write is recorded for the audit trail.
        let note = args.get("note_id").and_then(Value::as_str).map(str::to_string);
        let out = (t.run)(&mut tools::Call { kv: &kv, env, who }, args);
        if let Err(refusal::Halt::Refused(r)) = &out {
            audit::record_refused_write(&kv, env, who, tool, note.as_deref(), &r.body());
        }
        out
    })();
    match out {
        Ok(v) => Ok((v, None)),
        Err(refusal::Halt::Refused(r)) => Ok((r.body(), Some(r.code))),
        Err(refusal::Halt::Failed(e)) => Err(e),
    }
}

/// [`call_tool`] with the result parsed, for callers that inspect it.
pub fn call_tool_value(store: &dyn Store, env: &mut dyn Env, who: &Identity, tool: &str, args: Value) -> Result<Value, Failure> {
    let text = call_tool(store, env, who, tool, args)?;
    Ok(serde_json::from_str(&text).expect("a tool result is JSON"))
}
