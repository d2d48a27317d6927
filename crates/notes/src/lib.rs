//! `cairn-notes`: every rule of Cairn's notes store, over an abstract key-value store.
//! Pure Rust, no wasm dependencies; compiles for `wasm32-wasip2` (time and randomness are
//! injected through [`Env`]).
//!
//! Module map:
//! - [`kv`]: the [`Kv`] trait, [`KvError`], the in-memory [`MemKv`], and [`TenantKv`]
//!   (the `t/<tenant>/` prefix every key gets).
//! - [`env`](mod@env): [`Env`] (clock, randomness), [`Identity`] of the caller, [`SimEnv`] for tests.
//! - [`tools`](mod@tools): the tool registry ([`tools()`], [`ToolSpec`]) with the published JSON Schemas.
//! - [`rest`]: helpers for the people's REST API (create, read, write, delete tabs, files;
//!   claims: claim, renew, release, post a claim note, presence, force release).
//! - [`sweep_expired_claims`]: the periodic sweep of lapsed claims (one read when nothing
//!   is due).
//! - [`url`]: source URL normalization.
//! - internal: `args` (typed arguments), `txn` (the one-CAS write transaction and its
//!   claim check), `claims` (the claim rules and the claim tools), `claim_store` (claim
//!   audit records, the tenant's claim index, the sweep), `store` (key layout, blobs, note
//!   index), `model` (stored records), `sheet` (row blocks), `read` / `write` (the tools),
//!   `reply` (results and refusals).
//!
//! Key layout (all under `t/<tenant>/`, applied by [`TenantKv`]):
//! - `note/<note_id>`: the note head (title, approval, note version, head rev, tabs with
//!   their versions and content refs, tab/attachment/claim counters, live claims with
//!   their ephemeral notes, recently ended claim ids, the 8 newest idempotency records
//!   and history entries). One CAS on it commits every write and every claim change.
//! - `blob/<sha256>`: immutable content chunks (≤ 256 KiB text/slides/attachment-list
//!   chunks, sheet manifests, 100-row sheet blocks, note-index pages), written before the
//!   head CAS.
//! - `idem/<note_id>/<sha256(key)>`, `audit/<note_id>/<version:020>`: idempotency
//!   records and history entries moved out of the head (immutable, written before the CAS).
//! - `audit/claims/<note_id>/<time µs:020>-<tag>`: claim audit records (granted, renewed,
//!   released, expired, forced, noted, refused), one immutable key per event.
//! - `idx/notes`: the tenant's note list (newest ids plus hashes of full pages of ids).
//! - `claims/index`: the notes of the tenant that hold claims, each with a due time no
//!   later than its earliest claim expiry (presence board and sweep start here).
//!
//! Claims: ids are `clm-<note_id>-<seq base36>-<8 random base36>` (the note id finds the
//! head without a scan; `seq` is the note's claim counter, so ids are never reused). A
//! write refused because another actor holds its target is
//! `{"error": "claim_conflict", "message", "current_version", "claim_id", "note_id",
//! "tab_id", "held_by", "actor_type", "since", "expires_at", "next_step"}`; renewing,
//! releasing or posting on someone else's claim is `forbidden`; a claim that is not live
//! (or in another tenant) is `not_found`.
//!
//! Entry point for tool components: [`call_tool`]. It returns an MCP `CallToolResult` as
//! JSON: `{"content":[{"type":"text","text":…}],"structuredContent":{…},"isError":bool}`.
//! A refusal (bad argument, conflict, not found, too large) is a result with
//! `isError: true` and structuredContent `{"error": code, "message", "current_version"?,
//! "next_step", …}`; only a store failure is an `Err`.

#![warn(missing_docs)]

pub mod env;
pub mod kv;
pub mod rest;
pub mod tools;
pub mod url;

mod args;
mod claim_store;
mod claims;
mod model;
mod read;
mod reply;
mod sheet;
mod store;
mod txn;
mod write;

use serde_json::Value;

pub use claim_store::sweep_expired_claims;
pub use env::{ActorType, Env, Identity, Role, SimEnv};
pub use kv::{Kv, KvError, MemKv, TenantKv};
pub use reply::{NEXT_STEP_CLAIM, NEXT_STEP_REREAD, NOTICE};
pub use tools::{ToolAnnotations, ToolSpec, tools};

use reply::{Out, Refusal, finish};

/// The store view of the caller's tenant; refuses an identity the router should never send.
pub(crate) fn tenant_kv<'a, K: Kv>(kv: &'a K, who: &Identity) -> Result<TenantKv<'a, K>, Refusal> {
    if who.subject.is_empty() || who.subject.len() > 200 {
        return Err(Refusal::invalid(
            "identity.subject",
            "the caller's subject must have 1-200 bytes",
        ));
    }
    TenantKv::new(kv, &who.tenant)
        .ok_or_else(|| Refusal::invalid("identity.tenant", "tenant ids are [a-z0-9_-]{1,64}"))
}

/// Runs one tool for `who` and returns its MCP `CallToolResult`.
///
/// Unknown tools and bad arguments are `invalid_argument` results; `Err` only for a
/// host or store failure.
pub fn call_tool<K: Kv>(
    kv: &K,
    env: &mut impl Env,
    who: &Identity,
    tool: &str,
    args: Value,
) -> Result<Value, KvError> {
    let out = (|| -> Out<Value> {
        let kv = tenant_kv(kv, who)?;
        match tool {
            "list_notes" => read::list_notes(&kv, who, args),
            "list_note_tabs" => read::list_note_tabs(&kv, who, args),
            "read_note_tab" => read::read_note_tab(&kv, who, args),
            "read_sheet_range" => read::read_sheet_range(&kv, who, args),
            "list_note_attachments" => read::list_note_attachments(&kv, who, args),
            "edit_note_tab" => write::edit_note_tab(&kv, env, who, args),
            "create_note_tab" => write::create_note_tab(&kv, env, who, args),
            "add_note_source" => write::add_note_source(&kv, env, who, args),
            "claim_note" => claims::claim_note(&kv, env, who, args),
            "renew_claim" => claims::renew_claim(&kv, env, who, args),
            "release_claim" => claims::release_claim(&kv, env, who, args),
            "post_claim_note" => claims::post_claim_note(&kv, env, who, args),
            "list_claims" => claims::list_claims(&kv, who, env.now_us(), args),
            other => Err(Refusal::invalid("name", format!("unknown tool {other:?}")).into()),
        }
    })();
    finish(out)
}
