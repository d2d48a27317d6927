//! The notes core's guarantees, natively, over the in-memory store behind
//! the fault-injecting wrapper: one module per behaviour, each test named
//! for the guarantee it checks. `common` holds the shared world (a store,
//! a simulated clock, callers) and the check every tool result passes (its
//! published output schema).

mod common;

mod agent_visibility;
mod audit;
mod batch_reads_refused;
mod claims_audit;
mod claims_concurrency;
mod claims_ephemeral_notes;
mod claims_expiry;
mod claims_forced_release;
mod claims_heartbeat;
mod claims_holder_only;
mod claims_holder_writes;
mod claims_release;
mod claims_sweep;
mod claims_sweep_interleavings;
mod claims_targets;
mod claims_tenancy;
mod claims_tool_descriptions;
mod claims_write_refusals;
mod concurrency;
mod content_hash;
mod fuzz_arguments;
mod fuzz_sheets;
mod fuzz_urls;
mod head_checks;
mod history;
mod history_sweep;
mod idempotency;
mod live_changes;
mod lying_store;
mod model_check;
mod output_schemas;
mod paging;
mod partial_base;
mod parts;
mod patches;
mod provenance;
mod quotas;
mod rest_api;
mod rest_people_routes;
mod rest_routes;
mod retries;
mod schema_agreement;
mod search_finds;
mod search_index;
mod search_never_leaks;
mod section_claims;
mod sheets;
mod slides;
mod sources;
mod swaps_reported_failed;
mod tab_ids;
mod tab_moves;
mod tenancy;
mod text_limits;
mod tools_registry;
mod versions;
