//! Prometheus metrics of the embedded host, from the `metrics` facade and
//! its Prometheus exporter, served at `GET /metrics` (text exposition) to a
//! bearer of the `metrics_token` variable; the route is 404 while that is
//! empty, like kv-probe.
//!
//! | metric | labels | what |
//! |---|---|---|
//! | `cairn_http_requests_total` | component, route, status | every request the host answered (route: the manifest's route, so ids in paths do not make new series) |
//! | `cairn_http_request_duration_seconds` | component, route | its latency (histogram) |
//! | `cairn_tool_calls_total` | tool, road, outcome | every tool call, composed into the router or over HTTP: `ok`, the refusal's code (`version_conflict`, `not_found`, …), or `unavailable` / `bad_request` / `failed` |
//! | `cairn_store_operations_total` | store, op, outcome | key-value operations components made (`ok` or `error`) |
//! | `cairn_store_operation_duration_seconds` | store, op | their latency (histogram) |
//! | `cairn_cas_swaps_total` | store, outcome | compare-and-swaps: `written`, `conflict` (the writer re-reads and retries) or `error` (refused: nothing written) |
//! | `cairn_instances_in_use` | — | component instances running now |
//!
//! A swap a store acknowledges without applying it ("lost") cannot be seen
//! from here: the components' commit check catches those (see the README on
//! stores that lie); Cairn's own stores pass the conformance suite.

use cairn_kv::{Observed, Read, Result as KvResult, Store, Swap};
use metrics::{counter, gauge, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Latency buckets, in seconds: 50 µs to 10 s.
const BUCKETS: &[f64] = &[0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The process's recorder, installed on first use.
fn handle() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS)
            .expect("the buckets are not empty")
            .build_recorder();
        let handle = recorder.handle();
        // Another recorder may already be installed (a test binary): then
        // this one renders only what is recorded through it, which is none.
        let _ = metrics::set_global_recorder(recorder);
        handle
    })
}

/// Installs the recorder (so metrics recorded from now on are kept).
pub fn install() {
    handle();
}

/// The text exposition of every metric.
pub fn render() -> String {
    handle().render()
}

/// One answered request.
pub fn request(component: &str, route: &str, status: u16, took: Duration) {
    let (c, r) = (component.to_string(), route.to_string());
    counter!("cairn_http_requests_total", "component" => c.clone(), "route" => r.clone(), "status" => status.to_string()).increment(1);
    histogram!("cairn_http_request_duration_seconds", "component" => c, "route" => r).record(took.as_secs_f64());
}

/// What a tool's answer (the status and body of `cairn:platform/tool`'s
/// `call`, or of `POST /tools/<name>`) says happened.
pub fn tool_outcome(status: u16, body: &str) -> String {
    match status {
        200 => {
            // `isError` closes the result object, so look from the end; only
            // a refusal (small) is parsed, for its code.
            let refused = body.rfind("\"isError\":").is_some_and(|i| body[i + 10..].trim_start().starts_with("true"));
            if !refused {
                return "ok".into();
            }
            serde_json::from_str::<serde_json::Value>(body)
                .ok()
                .and_then(|v| v["structuredContent"]["error"].as_str().map(str::to_string))
                .unwrap_or_else(|| "refused".into())
        }
        503 => "unavailable".into(),
        400 => "bad_request".into(),
        _ => "failed".into(),
    }
}

/// One tool call; `road` is `composed` or `http`.
pub fn tool_call(tool: &str, road: &'static str, status: u16, body: &str) {
    counter!("cairn_tool_calls_total", "tool" => tool.to_string(), "road" => road, "outcome" => tool_outcome(status, body)).increment(1);
}

/// One round of the search merge: transitions made, notes left dirty.
pub fn search_merge(r: &cairn_notes::search::MergeReport) {
    counter!("cairn_search_merge_transitions_total").increment(r.transitions);
    counter!("cairn_search_markers_cleared_total").increment(r.markers_cleared);
    counter!("cairn_search_fences_total").increment(r.fenced);
    gauge!("cairn_search_dirty_notes").set(r.still_dirty as f64);
}

/// One key-value operation of a component.
pub fn store_op(store: &str, op: &'static str, ok: bool, took: Duration) {
    let s = store.to_string();
    counter!("cairn_store_operations_total", "store" => s.clone(), "op" => op, "outcome" => if ok { "ok" } else { "error" }).increment(1);
    histogram!("cairn_store_operation_duration_seconds", "store" => s, "op" => op).record(took.as_secs_f64());
}

/// One compare-and-swap: `written`, `conflict` or `error`.
pub fn swap(store: &str, outcome: &'static str) {
    counter!("cairn_cas_swaps_total", "store" => store.to_string(), "outcome" => outcome).increment(1);
}

/// A store whose every operation is counted and timed, under its label.
pub struct Metered {
    label: String,
    inner: Arc<dyn Store>,
}

impl Metered {
    /// Meters `inner`, the store behind `label`.
    pub fn wrap(label: &str, inner: Arc<dyn Store>) -> Arc<dyn Store> {
        Arc::new(Metered { label: label.to_string(), inner })
    }

    fn timed<T>(&self, op: &'static str, f: impl FnOnce() -> KvResult<T>) -> KvResult<T> {
        let started = Instant::now();
        let out = f();
        store_op(&self.label, op, out.is_ok(), started.elapsed());
        out
    }
}

impl Store for Metered {
    fn read(&self, bucket: &str, key: &str) -> KvResult<Read> {
        self.timed("read", || self.inner.read(bucket, key))
    }
    fn swap(&self, bucket: &str, key: &str, observed: Observed, value: &[u8]) -> KvResult<Swap> {
        let out = self.timed("swap", || self.inner.swap(bucket, key, observed, value));
        swap(&self.label, match &out {
            Ok(Swap::Done) => "written",
            Ok(Swap::Failed(_)) => "conflict",
            Err(_) => "error",
        });
        out
    }
    fn read_many(&self, bucket: &str, keys: &[&str]) -> KvResult<Vec<Read>> {
        self.timed("read_many", || self.inner.read_many(bucket, keys))
    }
    fn swap_each(&self, bucket: &str, swaps: &[(&str, Observed, &[u8])]) -> KvResult<Vec<Swap>> {
        let out = self.timed("swap_each", || self.inner.swap_each(bucket, swaps));
        if let Ok(all) = &out {
            for s in all {
                swap(&self.label, if matches!(s, Swap::Done) { "written" } else { "conflict" });
            }
        }
        out
    }
    fn list_prefix(&self, bucket: &str, prefix: &str, after: Option<&str>, limit: usize) -> KvResult<Vec<String>> {
        self.timed("list_prefix", || self.inner.list_prefix(bucket, prefix, after, limit))
    }
    fn set(&self, bucket: &str, key: &str, value: &[u8]) -> KvResult<()> {
        self.timed("set", || self.inner.set(bucket, key, value))
    }
    fn set_many(&self, bucket: &str, pairs: &[(&str, &[u8])]) -> KvResult<()> {
        self.timed("set_many", || self.inner.set_many(bucket, pairs))
    }
    fn get_many(&self, bucket: &str, keys: &[&str]) -> KvResult<Vec<Option<Vec<u8>>>> {
        self.timed("get_many", || self.inner.get_many(bucket, keys))
    }
    fn delete_many(&self, bucket: &str, keys: &[&str]) -> KvResult<()> {
        self.timed("delete_many", || self.inner.delete_many(bucket, keys))
    }
    fn delete(&self, bucket: &str, key: &str) -> KvResult<()> {
        self.timed("delete", || self.inner.delete(bucket, key))
    }
    fn increment(&self, bucket: &str, key: &str, delta: i64) -> KvResult<i64> {
        self.timed("increment", || self.inner.increment(bucket, key, delta))
    }
    fn list_keys(&self, bucket: &str, after: Option<&str>, limit: usize) -> KvResult<Vec<String>> {
        self.timed("list_keys", || self.inner.list_keys(bucket, after, limit))
    }
    fn sweep(&self, older_than_ms: u64) -> KvResult<usize> {
        self.timed("sweep", || self.inner.sweep(older_than_ms))
    }
    fn close(&self) -> KvResult<()> {
        self.inner.close()
    }
    fn vouched(&self) -> bool {
        self.inner.vouched()
    }
    fn get(&self, bucket: &str, key: &str) -> KvResult<Option<Vec<u8>>> {
        self.timed("get", || self.inner.get(bucket, key))
    }
    fn exists(&self, bucket: &str, key: &str) -> KvResult<bool> {
        self.timed("exists", || self.inner.exists(bucket, key))
    }
}

/// Counts a running instance while it lives.
pub struct InUse(());

impl InUse {
    /// An instance starts.
    pub fn start() -> Self {
        gauge!("cairn_instances_in_use").increment(1.0);
        InUse(())
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        gauge!("cairn_instances_in_use").decrement(1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::tool_outcome;

    #[test]
    fn a_tool_answer_names_its_outcome() {
        assert_eq!(tool_outcome(200, r#"{"content":[],"structuredContent":{"x":1},"isError":false}"#), "ok");
        let refused = r#"{"content":[],"structuredContent":{"error":"version_conflict","isError":true},"isError": true}"#;
        assert_eq!(tool_outcome(200, refused), "version_conflict");
        assert_eq!(tool_outcome(503, "{}"), "unavailable");
        assert_eq!(tool_outcome(400, "{}"), "bad_request");
        assert_eq!(tool_outcome(500, "{}"), "failed");
    }
}
