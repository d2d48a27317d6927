//! `kv-probe`: runs the sequential checks of the key-value conformance suite
//! (`cairn_kv::conformance::SEQUENTIAL`, the same named checks every backend
//! passes natively) against the host it is deployed on, through
//! `wasi:keyvalue`, and answers with a JSON report: one entry per rule, pass
//! or fail, and the verdict. The rule a lying store breaks (Spin's Redis
//! backend reporting a lost swap as written) is
//! `lost_swap_is_never_reported_as_success`.
//!
//! Operators only: every request must carry `Authorization: Bearer <token>`
//! where the token is the `kv_probe_token` variable; while that variable is
//! empty (the default) the probe answers 404 as if it did not exist.
//! Its keys live under `kv-probe/<random>/`, outside every tenant prefix, and
//! are deleted afterwards.

use cairn_guest::kv::GuestStore;
use cairn_guest::respond;
use cairn_kv::Store;
use cairn_kv::conformance::{SEQUENTIAL, Scope};
use serde_json::json;
use cairn_guest::http::Response;

#[spin_sdk::http_service]
async fn handle(req: spin_sdk::http::Request) -> Response {
    cairn_guest::config::run_as(cairn_guest::cairn_config::Reader::KvProbe);
    let gate = match cairn_guest::door::Gate::open() {
        Ok(g) => g,
        Err(r) => return r,
    };
    let req = match gate.read(req).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    if let Err(r) = gate.screen_limits(&req) {
        return r;
    }
    let Some(expected) = cairn_guest::config::config().ok().and_then(|c| c.operators.kv_probe_token.as_deref()) else {
        return respond::error(404, "not_found", "no such route");
    };
    match respond::bearer(&req) {
        Some(t) if cairn_guest::constant_time_eq(t.as_bytes(), expected.as_bytes()) => {}
        // Counted against the address's budget: a token is not guessed faster than it allows.
        _ => {
            let refusal = cairn_guest::cairn_door::Refusal::new(cairn_guest::cairn_door::Code::Unauthorized, "the probe needs the operator's kv_probe_token");
            return cairn_guest::door::respond(&gate.door().refused(&cairn_guest::door::arrival(&req), refusal));
        }
    }
    let label = req.query().strip_prefix("store=").unwrap_or("default").to_string();
    let store = match GuestStore::open(&label) {
        Ok(s) => s,
        Err(e) => return respond::error(500, "store_unavailable", &e.to_string()),
    };
    let run = format!("kv-probe/{:016x}/", cairn_guest::random_u64());
    let mut report = Vec::new();
    let mut all = true;
    for (i, check) in SEQUENTIAL.iter().enumerate() {
        let prefix = format!("{run}{i}/");
        let result = (check.run)(&store, Scope { bucket: &label, prefix: &prefix });
        all &= result.is_ok();
        report.push(json!({
            "rule": check.name,
            "promise": check.promise,
            "pass": result.is_ok(),
            "detail": result.err(),
        }));
    }
    cleanup(&store, &label, &run);
    respond::json(200, &json!({ "store": label, "keeps_cas_promise": all, "checks": report }))
}

/// Deletes whatever the checks left under this run's prefix.
fn cleanup(store: &GuestStore, label: &str, run: &str) {
    if let Ok(keys) = store.list_keys(label, Some(run), 10_000) {
        let mine: Vec<&str> = keys.iter().map(String::as_str).filter(|k| k.starts_with(run)).collect();
        let _ = store.delete_many(label, &mine);
    }
}
