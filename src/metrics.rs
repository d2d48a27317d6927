//! Prometheus metrics of the embedded host, served at `GET /metrics` (text
//! exposition, version 0.0.4) to a bearer of the `metrics_token` variable;
//! the route is 404 while that is empty, like kv-probe.
//!
//! | metric | labels | what |
//! |---|---|---|
//! | `cairn_http_requests_total` | component, route, status | every request the host answered (route: the manifest's route, so ids in paths do not make new series) |
//! | `cairn_http_request_duration_seconds` | component, route | its latency (histogram) |
//! | `cairn_tool_calls_total` | tool, transport, outcome | every tool call, composed into the router or over HTTP: `ok`, the refusal's code (`version_conflict`, `not_found`, …), or `unavailable` / `bad_request` / `failed` |
//! | `cairn_store_operations_total` | store, op, outcome | key-value operations components made (`ok` or `error`) |
//! | `cairn_store_operation_duration_seconds` | store, op | their latency (histogram) |
//! | `cairn_cas_swaps_total` | store, outcome | compare-and-swaps: `written`, `conflict` (the writer re-reads and retries) or `error` (refused: nothing written) |
//! | `cairn_instances_in_use` | — | component instances alive now (serving, or idle until their next request or their idle timeout) |
//! | `cairn_refusals_total` | code | requests the front door refused (`cairn_door::Code`), in a component or in the host |
//! | `cairn_stored_bytes`, `cairn_tenants` | — | content stored (every retained version) and tenants, as of the last sweep; a quota refusal is a tool outcome `quota_exceeded` |
//! | `cairn_redis_node_calls_total` | namespace, node, outcome | calls to each Redis node (a cluster's primaries, or the one server): `ok`, `error`, `redirected` (`MOVED`/`ASK`), `refused` (`TRYAGAIN`, `CLUSTERDOWN`…: nothing ran) or `unconfirmed` (written, not confirmed by enough replicas: refused) |
//! | `cairn_redis_node_slots`, `cairn_redis_node_replicas` | namespace, node | hash slots each primary serves and replicas that follow it |
//! | `cairn_redis_cross_slot_refusals_total` | namespace | batches refused before sending because their keys spanned cluster slots (0: Cairn keeps each batch in one slot) |
//!
//! A swap a store acknowledges without applying it ("lost") cannot be seen
//! from here: the components' commit check catches those (see docs/key-value.md on
//! stores that lie); Cairn's own stores pass the conformance suite.
//!
//! # Memory: fixed per series, whatever the load
//!
//! Every series is a few atomics, made the first time its labels are seen:
//! a counter is one `u64`, a histogram one `u64` per bucket plus its count
//! and sum. Recording is a lookup (under a read lock, with the labels joined
//! into a reused per-thread buffer) and atomic adds; it allocates nothing
//! once the series exists (`recording_allocates_nothing_once_a_series_exists`
//! counts). So the memory of the metrics is bounded by the number of series
//! (fixed by the manifest's components, routes, tools and stores), never by
//! the number of requests, whether or not anyone scrapes. Every label comes
//! from a closed set: component ids and route templates from the manifest,
//! tool names from the tool table, refusal codes from the core's and the
//! door's enums, standard statuses; anything else is `other`
//! (`series_stay_bounded_whatever_labels_callers_send`). (The `metrics`
//! crate's Prometheus exporter this replaces kept every histogram sample
//! until a scrape or an upkeep pass drained it: a host under load that no one
//! scraped grew by ~10 MB per 100,000 requests.)

use cairn_kv::{Observed, Read, Result as KvResult, Store, Swap};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// Latency buckets (upper bounds), in nanoseconds: 50 µs to 10 s. The
/// exposition writes them in seconds.
const BUCKETS_NS: [u64; 16] = [
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    10_000_000_000,
];

/// What kind of series a family holds.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// One series: the atomics behind one set of label values.
#[derive(Default)]
struct Series {
    /// A counter's or gauge's value; a histogram's count.
    value: AtomicI64,
    /// A histogram's observations per bucket (not cumulative), the last
    /// slot for those above every bound.
    buckets: [AtomicU64; BUCKETS_NS.len() + 1],
    /// A histogram's sum, in nanoseconds.
    sum_ns: AtomicU64,
}

/// One metric: its name, help, kind, label names and series by label values.
struct Family {
    name: &'static str,
    help: &'static str,
    kind: Kind,
    labels: &'static [&'static str],
    series: RwLock<BTreeMap<Box<str>, Series>>,
}

/// Separates label values in a series key (no label value holds it).
const SEP: char = '\u{1f}';

thread_local! {
    static KEY: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

impl Family {
    const fn new(name: &'static str, help: &'static str, kind: Kind, labels: &'static [&'static str]) -> Self {
        Family { name, help, kind, labels, series: RwLock::new(BTreeMap::new()) }
    }

    /// Run `f` on the series of `values` (in the order of `self.labels`),
    /// made on first use.
    fn with(&self, values: &[&str], f: impl FnOnce(&Series)) {
        assert_eq!(values.len(), self.labels.len(), "{}", self.name);
        KEY.with_borrow_mut(|key| {
            key.clear();
            for (i, v) in values.iter().enumerate() {
                if i > 0 {
                    key.push(SEP);
                }
                key.extend(v.chars().map(|c| if c == SEP { ' ' } else { c }));
            }
            if let Some(s) = self.series.read().unwrap_or_else(|p| p.into_inner()).get(key.as_str()) {
                return f(s);
            }
            let mut all = self.series.write().unwrap_or_else(|p| p.into_inner());
            f(all.entry(key.as_str().into()).or_default())
        })
    }

    /// Add `n` to a counter.
    fn add(&self, values: &[&str], n: u64) {
        self.with(values, |s| {
            s.value.fetch_add(n as i64, Relaxed);
        })
    }

    /// Move a gauge by `delta`.
    fn shift(&self, values: &[&str], delta: i64) {
        self.with(values, |s| {
            s.value.fetch_add(delta, Relaxed);
        })
    }

    /// Set a gauge.
    fn set(&self, values: &[&str], value: i64) {
        self.with(values, |s| s.value.store(value, Relaxed))
    }

    /// Record one duration in a histogram.
    fn observe(&self, values: &[&str], took: Duration) {
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let slot = BUCKETS_NS.iter().position(|&b| ns <= b).unwrap_or(BUCKETS_NS.len());
        self.with(values, |s| {
            s.buckets[slot].fetch_add(1, Relaxed);
            s.sum_ns.fetch_add(ns, Relaxed);
            s.value.fetch_add(1, Relaxed);
        })
    }

    /// This family in the text exposition; nothing if it has no series yet.
    fn render(&self, out: &mut String) {
        let series = self.series.read().unwrap_or_else(|p| p.into_inner());
        if series.is_empty() {
            return;
        }
        let kind = match self.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        let _ = writeln!(out, "# HELP {} {}\n# TYPE {} {kind}", self.name, self.help, self.name);
        for (key, s) in series.iter() {
            let labels = label_text(self.labels, key);
            let braced = |extra: &str| -> String {
                match (labels.is_empty(), extra.is_empty()) {
                    (true, true) => String::new(),
                    (true, false) => format!("{{{extra}}}"),
                    (false, true) => format!("{{{labels}}}"),
                    (false, false) => format!("{{{labels},{extra}}}"),
                }
            };
            if self.kind != Kind::Histogram {
                let _ = writeln!(out, "{}{} {}", self.name, braced(""), s.value.load(Relaxed));
                continue;
            }
            let mut cumulative = 0u64;
            for (i, bound) in BUCKETS_NS.iter().enumerate() {
                cumulative += s.buckets[i].load(Relaxed);
                let seconds = *bound as f64 / 1e9;
                let _ = writeln!(out, "{}_bucket{} {cumulative}", self.name, braced(&format!("le=\"{seconds}\"")));
            }
            cumulative += s.buckets[BUCKETS_NS.len()].load(Relaxed);
            let _ = writeln!(out, "{}_bucket{} {cumulative}", self.name, braced("le=\"+Inf\""));
            let _ = writeln!(out, "{}_sum{} {}", self.name, braced(""), s.sum_ns.load(Relaxed) as f64 / 1e9);
            let _ = writeln!(out, "{}_count{} {cumulative}", self.name, braced(""));
        }
    }
}

/// `name="value",…` for a series key, values escaped as the format asks.
fn label_text(names: &[&str], key: &str) -> String {
    if names.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for (i, (name, value)) in names.iter().zip(key.split(SEP)).enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{name}=\"");
        for c in value.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out
}

static HTTP_REQUESTS: Family = Family::new("cairn_http_requests_total", "Requests the host answered.", Kind::Counter, &["component", "route", "status"]);
static HTTP_DURATION: Family = Family::new("cairn_http_request_duration_seconds", "Time to answer a request.", Kind::Histogram, &["component", "route"]);
static TOOL_CALLS: Family = Family::new("cairn_tool_calls_total", "Tool calls, by transport and outcome.", Kind::Counter, &["tool", "transport", "outcome"]);
static STORE_OPS: Family = Family::new("cairn_store_operations_total", "Key-value operations components made.", Kind::Counter, &["store", "op", "outcome"]);
static STORE_DURATION: Family = Family::new("cairn_store_operation_duration_seconds", "Time of a key-value operation.", Kind::Histogram, &["store", "op"]);
static CAS_SWAPS: Family = Family::new("cairn_cas_swaps_total", "Compare-and-swaps, by outcome.", Kind::Counter, &["store", "outcome"]);
static INSTANCES: Family =
    Family::new("cairn_instances_in_use", "Component instances alive now (serving, or idle until reused or past their idle timeout).", Kind::Gauge, &[]);
static MERGE_TRANSITIONS: Family = Family::new("cairn_search_merge_transitions_total", "Notes the search merge brought up to date.", Kind::Counter, &[]);
static MARKERS_CLEARED: Family = Family::new("cairn_search_markers_cleared_total", "Dirty markers the search merge cleared.", Kind::Counter, &[]);
static FENCES: Family = Family::new("cairn_search_fences_total", "Notes the search merge fenced.", Kind::Counter, &[]);
static DIRTY: Family = Family::new("cairn_search_dirty_notes", "Notes still waiting for the search merge.", Kind::Gauge, &[]);
static STORED_BYTES: Family =
    Family::new("cairn_stored_bytes", "Bytes of content stored, every retained version counted, as of the last sweep.", Kind::Gauge, &[]);
static TENANTS: Family = Family::new("cairn_tenants", "Tenants with notes, as of the last sweep.", Kind::Gauge, &[]);
static INSTANCES_STARTED: Family = Family::new("cairn_instances_started_total", "Component instances made, by component.", Kind::Counter, &["component"]);
static VARIABLE_READS: Family =
    Family::new("cairn_variable_reads_total", "Variables components read from the host (each instance reads its configuration once).", Kind::Counter, &[]);
static REFUSALS: Family = Family::new("cairn_refusals_total", "Requests the front door refused, by code.", Kind::Counter, &["code"]);

static ALL: [&Family; 16] = [
    &HTTP_REQUESTS,
    &HTTP_DURATION,
    &TOOL_CALLS,
    &STORE_OPS,
    &STORE_DURATION,
    &CAS_SWAPS,
    &INSTANCES,
    &INSTANCES_STARTED,
    &VARIABLE_READS,
    &MERGE_TRANSITIONS,
    &MARKERS_CLEARED,
    &FENCES,
    &DIRTY,
    &REFUSALS,
    &STORED_BYTES,
    &TENANTS,
];

/// What the last sweep counted: bytes of content stored and tenants.
pub fn stored(bytes: u64, tenants: usize) {
    STORED_BYTES.set(&[], i64::try_from(bytes).unwrap_or(i64::MAX));
    TENANTS.set(&[], i64::try_from(tenants).unwrap_or(i64::MAX));
}

/// Series made so far, all families together: what the metrics' memory is
/// proportional to.
pub fn series() -> usize {
    ALL.iter().map(|f| f.series.read().unwrap_or_else(|p| p.into_inner()).len()).sum()
}

/// A status as a label: its number when it is a standard status, else `other`.
fn status_label(status: &hyper::StatusCode) -> &str {
    if status.canonical_reason().is_some() { status.as_str() } else { "other" }
}

/// One request refused by the front door (the code a component or the host
/// named in `cairn-refused`); a code outside the door's set is `other`.
pub fn refused(code: &str) {
    let code = cairn_door::Code::parse(code).map_or("other", cairn_door::Code::as_str);
    REFUSALS.add(&[code], 1);
}

/// Everything recorded so far, in the Prometheus text exposition.
/// `stores`: the host's open stores, whose nodes ([`cairn_kv::Store::nodes`])
/// are rendered too.
pub fn render<'a>(stores: impl IntoIterator<Item = &'a Arc<dyn Store>>) -> String {
    let mut out = String::new();
    for f in ALL {
        f.render(&mut out);
    }
    let (mut nodes, mut cross_slot) = (Vec::new(), Vec::new());
    for store in stores {
        nodes.extend(store.nodes());
        cross_slot.extend(store.cross_slot_refusals());
    }
    render_redis_nodes(&mut out, &nodes, &cross_slot);
    out
}

/// Each Redis node of the open stores (a cluster's primaries, or the one
/// server): its calls by outcome, the slots it serves and its replicas.
/// The series follow the cluster's nodes, a set the operator controls;
/// namespaces and addresses hold no quote or backslash (both are checked
/// when the store opens).
fn render_redis_nodes(out: &mut String, nodes: &[cairn_kv::NodeReport], cross_slot: &[(String, u64)]) {
    if nodes.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "# HELP cairn_redis_cross_slot_refusals_total Batches refused before sending because their keys spanned Redis Cluster slots (a bug: Cairn keeps every batch in one slot).\n# TYPE cairn_redis_cross_slot_refusals_total counter"
    );
    for (ns, n) in cross_slot {
        let _ = writeln!(out, "cairn_redis_cross_slot_refusals_total{{namespace=\"{ns}\"}} {n}");
    }
    let _ = writeln!(out, "# HELP cairn_redis_node_calls_total Calls to each Redis node, by outcome.\n# TYPE cairn_redis_node_calls_total counter");
    for n in nodes {
        for (outcome, v) in [("ok", n.ok), ("error", n.errors), ("redirected", n.redirects), ("refused", n.refusals), ("unconfirmed", n.unconfirmed)] {
            let _ = writeln!(out, "cairn_redis_node_calls_total{{namespace=\"{}\",node=\"{}\",outcome=\"{outcome}\"}} {v}", n.namespace, n.addr);
        }
    }
    let _ = writeln!(out, "# HELP cairn_redis_node_slots Hash slots each Redis primary serves.\n# TYPE cairn_redis_node_slots gauge");
    for n in nodes {
        let _ = writeln!(out, "cairn_redis_node_slots{{namespace=\"{}\",node=\"{}\"}} {}", n.namespace, n.addr, n.slots);
    }
    let _ = writeln!(
        out,
        "# HELP cairn_redis_node_replicas Replicas that follow each Redis primary (as the cluster reports them).\n# TYPE cairn_redis_node_replicas gauge"
    );
    for n in nodes {
        let _ = writeln!(out, "cairn_redis_node_replicas{{namespace=\"{}\",node=\"{}\"}} {}", n.namespace, n.addr, n.replicas);
    }
}

/// One request the host answered.
pub fn request(component: &str, route: &str, status: hyper::StatusCode, took: Duration) {
    HTTP_REQUESTS.add(&[component, route, status_label(&status)], 1);
    HTTP_DURATION.observe(&[component, route], took);
}

/// How a tool call ended, as a label: `ok`, the refusal's code (from the
/// core's closed set; any other text is `refused`), `unavailable`,
/// `bad_request` or `failed`. The tool names its refusal beside its result
/// (`cairn:platform/tool`'s `answer.refusal`, or the `cairn-tool-refusal`
/// header of `POST /tools/<name>`): nothing searches a body.
pub fn tool_outcome(status: u16, refusal: Option<&str>) -> &'static str {
    match (status, refusal) {
        (200, None) => "ok",
        (200, Some(code)) => cairn_notes::Code::ALL.into_iter().find(|c| c.as_str() == code).map_or("refused", |c| c.as_str()),
        (503, _) => "unavailable",
        (400, _) => "bad_request",
        _ => "failed",
    }
}

/// One tool call; `transport` is `composed` or `http`; `status` as the HTTP door
/// would answer. A name the tool table does not have is counted as
/// `other`, so no caller can make a series.
pub fn tool_call(tool: &str, transport: &'static str, status: u16, refusal: Option<&str>) {
    let name = cairn_notes::tools::find(tool).map_or("other", |t| t.name);
    TOOL_CALLS.add(&[name, transport, tool_outcome(status, refusal)], 1);
}

/// One round of the search merge: transitions made, notes left dirty.
pub fn search_merge(r: &cairn_notes::search::MergeReport) {
    MERGE_TRANSITIONS.add(&[], r.transitions);
    MARKERS_CLEARED.add(&[], r.markers_cleared);
    FENCES.add(&[], r.fenced);
    DIRTY.set(&[], i64::try_from(r.still_dirty).unwrap_or(i64::MAX));
}

/// One key-value operation of a component.
pub fn store_op(store: &str, op: &'static str, ok: bool, took: Duration) {
    STORE_OPS.add(&[store, op, if ok { "ok" } else { "error" }], 1);
    STORE_DURATION.observe(&[store, op], took);
}

/// One compare-and-swap: `written`, `conflict` or `error`.
pub fn swap(store: &str, outcome: &'static str) {
    CAS_SWAPS.add(&[store, outcome], 1);
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
        swap(
            &self.label,
            match &out {
                Ok(Swap::Done) => "written",
                Ok(Swap::Failed(_)) => "conflict",
                Err(_) => "error",
            },
        );
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
    fn waits(&self) -> cairn_kv::Waits {
        self.inner.waits()
    }
    fn describe(&self) -> Option<String> {
        self.inner.describe()
    }
    fn nodes(&self) -> Vec<cairn_kv::NodeReport> {
        self.inner.nodes()
    }
    fn cross_slot_refusals(&self) -> Option<(String, u64)> {
        self.inner.cross_slot_refusals()
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
    /// An instance of `component` starts.
    pub fn start(component: &str) -> Self {
        INSTANCES.shift(&[], 1);
        INSTANCES_STARTED.add(&[component], 1);
        InUse(())
    }
}

/// A component read one variable from the host.
pub fn variable_read() {
    VARIABLE_READS.add(&[], 1);
}

impl Drop for InUse {
    fn drop(&mut self) {
        INSTANCES.shift(&[], -1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    /// Counts this thread's allocations, so a test sees only its own.
    struct Counting;

    thread_local! {
        static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    }

    // SAFETY: every call goes straight to the system allocator; the count is
    // a const-initialised thread local, which never allocates.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            ALLOCATIONS.with(|n| n.set(n.get() + 1));
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            ALLOCATIONS.with(|n| n.set(n.get() + 1));
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;

    #[test]
    fn recording_allocates_nothing_once_a_series_exists() {
        let took = Duration::from_micros(180);
        // First use makes each series (and this thread's key buffer).
        request("alloc-test", "/mcp", hyper::StatusCode::OK, took);
        store_op("alloc-test", "read", true, took);
        swap("alloc-test", "written");
        tool_call("alloc_test", "composed", 200, None);
        drop(InUse::start("c"));
        let before = ALLOCATIONS.with(Cell::get);
        for _ in 0..10_000 {
            request("alloc-test", "/mcp", hyper::StatusCode::OK, took);
            store_op("alloc-test", "read", true, took);
            swap("alloc-test", "written");
            tool_call("alloc_test", "composed", 200, None);
            drop(InUse::start("c"));
        }
        assert_eq!(ALLOCATIONS.with(Cell::get) - before, 0, "recording into existing series allocated");
        let text = render([]);
        let line = |series: &str| text.lines().find(|l| l.starts_with(series)).unwrap_or_else(|| panic!("no {series} in\n{text}")).to_string();
        assert_eq!(line(r#"cairn_http_requests_total{component="alloc-test",route="/mcp",status="200"}"#).rsplit(' ').next(), Some("10001"));
        assert_eq!(line(r#"cairn_store_operations_total{store="alloc-test",op="read",outcome="ok"}"#).rsplit(' ').next(), Some("10001"));
    }

    #[test]
    fn series_stay_bounded_whatever_labels_callers_send() {
        // Names, outcomes, codes and statuses a caller could choose: none
        // makes a series of its own.
        tool_call("list_notes", "http", 200, None);
        refused("unauthorized");
        request("bound-test", "/mcp", hyper::StatusCode::from_u16(599).unwrap(), Duration::from_micros(1));
        let before = series();
        for i in 0..2_000 {
            tool_call(&format!("made-up-{i}"), "http", 200, Some(&format!("code-{i}")));
            refused(&format!("code-{i}"));
            request("bound-test", "/mcp", hyper::StatusCode::from_u16(590 + (i % 9) as u16).unwrap(), Duration::from_micros(1));
        }
        // At most: `other` tool with outcome `refused`, `other` code.
        assert!(series() <= before + 2, "{} series after, {before} before", series());
    }

    #[test]
    fn a_histogram_renders_cumulative_buckets_its_sum_and_count() {
        for us in [40, 60, 60, 700, 20_000_000] {
            HTTP_DURATION.observe(&["hist-test", "/a\"b\\c\nd"], Duration::from_micros(us));
        }
        let text = render([]);
        let labels = r#"component="hist-test",route="/a\"b\\c\nd""#;
        let value = |suffix: &str| -> f64 {
            let prefix = format!("cairn_http_request_duration_seconds{suffix}");
            text.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no {prefix} in\n{text}")).rsplit(' ').next().unwrap().parse().unwrap()
        };
        assert_eq!(value(&format!("_bucket{{{labels},le=\"0.00005\"}}")), 1.0);
        assert_eq!(value(&format!("_bucket{{{labels},le=\"0.0001\"}}")), 3.0);
        assert_eq!(value(&format!("_bucket{{{labels},le=\"0.001\"}}")), 4.0);
        assert_eq!(value(&format!("_bucket{{{labels},le=\"10\"}}")), 4.0);
        assert_eq!(value(&format!("_bucket{{{labels},le=\"+Inf\"}}")), 5.0);
        assert_eq!(value(&format!("_count{{{labels}}}")), 5.0);
        assert!((value(&format!("_sum{{{labels}}}")) - 20.00086).abs() < 1e-9);
        assert_eq!(text.matches("# TYPE cairn_http_request_duration_seconds histogram").count(), 1);
    }

    #[test]
    fn a_tool_answer_names_its_outcome() {
        assert_eq!(tool_outcome(200, None), "ok");
        assert_eq!(tool_outcome(200, Some("version_conflict")), "version_conflict");
        assert_eq!(tool_outcome(200, Some("made_up")), "refused");
        assert_eq!(tool_outcome(503, None), "unavailable");
        assert_eq!(tool_outcome(400, None), "bad_request");
        assert_eq!(tool_outcome(500, None), "failed");
    }

    #[test]
    fn a_metered_store_waits_where_the_store_it_meters_waits() {
        let dir = std::env::temp_dir().join(format!("cairn-metered-waits-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let durable: Arc<dyn Store> = Arc::new(cairn_kv_sqlite::SqliteStore::open(&dir.join("kv.db"), true).unwrap());
        assert_eq!(Metered::wrap("default", durable.clone()).waits(), cairn_kv::Waits::Writes);
        let memory: Arc<dyn Store> = Arc::new(cairn_kv::memory::MemoryStore::new());
        assert_eq!(Metered::wrap("cache", memory).waits(), cairn_kv::Waits::Never);
        durable.close().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
