//! `kv-probe`: runs the sequential checks of the key-value conformance suite
//! (`cairn_kv::conformance::SEQUENTIAL`, the same named checks every backend
//! passes natively) against the host it is deployed on, through
//! `wasi:keyvalue`, and answers with a JSON report: one entry per rule, pass
//! or fail, and the verdict. The rule a lying store breaks (Spin's Redis
//! backend reporting a lost swap as written) is
//! `lost_swap_is_never_reported_as_success`.
//!
//! **The probe never harms the store it probes.** A check that could (its
//! [`Check::hazard`]: an increment of a value that is not a counter, which
//! panics Spin's SQLite store and leaves it failing every call until Spin
//! restarts) runs only on a store someone vouches for (the `commit_check`
//! variable set to `off`); elsewhere it is reported `"run": false` with the
//! reason, and the verdict `keeps_cas_promise` is `null` (not known) unless
//! a check that ran failed.
//!
//! Operators only: every request must carry `Authorization: Bearer <token>`
//! where the token is the `kv_probe_token` variable; while that variable is
//! empty (the default) the probe answers 404 as if it did not exist.
//! Its keys live under `kv-probe/<random>/`, outside every tenant prefix, and
//! are deleted afterwards.

use cairn_guest::http::Response;
use cairn_guest::kv::GuestStore;
use cairn_guest::respond;
use cairn_kv::Store;
#[cfg(doc)]
use cairn_kv::conformance::Check;
use cairn_kv::conformance::{SEQUENTIAL, Scope};
use serde_json::json;

#[spin_sdk::http_service]
async fn handle(req: spin_sdk::http::Request) -> Response {
    cairn_guest::config::run_as(cairn_guest::cairn_config::Reader::KvProbe);
    let front = match cairn_guest::door::FrontDoor::open() {
        Ok(g) => g,
        Err(r) => return r,
    };
    let req = match front.read(req).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    if let Err(r) = front.screen_limits(&req) {
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
            return cairn_guest::door::respond(&front.door().refused(&cairn_guest::door::arrival(&req), refusal));
        }
    }
    let label = req.query().strip_prefix("store=").unwrap_or("default").to_string();
    let store = match GuestStore::open(&label) {
        Ok(s) => s,
        Err(e) => return respond::error(500, "store_unavailable", &e.to_string()),
    };
    let run = format!("kv-probe/{:016x}/", cairn_guest::random_u64());
    let (report, verdict) = probe(&store, &label, &run);
    cleanup(&store, &label, &run);
    respond::json(200, &json!({ "store": label, "vouched": store.vouched(), "keeps_cas_promise": verdict, "checks": report }))
}

/// Runs every check that may run on `store` under `run`'s prefix: the
/// report, and the verdict (`false` when a check failed, `true` when every
/// check ran and passed, `null` otherwise).
fn probe(store: &GuestStore, label: &str, run: &str) -> (Vec<serde_json::Value>, serde_json::Value) {
    let (mut report, mut failed, mut skipped) = (Vec::new(), false, false);
    for (i, check) in SEQUENTIAL.iter().enumerate() {
        if !check.may_run_on(store) {
            skipped = true;
            report.push(json!({ "rule": check.name, "promise": check.promise, "run": false, "pass": null, "detail": check.hazard }));
            continue;
        }
        let prefix = format!("{run}{i}/");
        let result = (check.run)(store, Scope { bucket: label, prefix: &prefix });
        failed |= result.is_err();
        report.push(json!({ "rule": check.name, "promise": check.promise, "run": true, "pass": result.is_ok(), "detail": result.err() }));
    }
    let verdict = if failed {
        json!(false)
    } else if skipped {
        json!(null)
    } else {
        json!(true)
    };
    (report, verdict)
}

/// Deletes whatever the checks left under this run's prefix.
fn cleanup(store: &GuestStore, label: &str, run: &str) {
    if let Ok(keys) = store.list_keys(label, Some(run), 10_000) {
        let mine: Vec<&str> = keys.iter().map(String::as_str).filter(|k| k.starts_with(run)).collect();
        let _ = store.delete_many(label, &mine);
    }
}
