//! Fuzzing the tools' argument parsers (proptest, shrinking): any JSON at
//! all, and valid calls with one argument replaced by anything, reach every
//! tool. No panic, no store failure, every answer inside the tool's output
//! schema (`crate::common::checked_call`), every argument refusal naming a field,
//! and no call allocating more than a bounded multiple of what it was sent
//! (a counting allocator measures each call's peak on its own thread).
//!
//! CI runs `CAIRN_FUZZ_CASES` cases per target (default 1,500); run longer
//! by hand with e.g. `CAIRN_FUZZ_CASES=200000 cargo test --release -p cairn-notes --test fuzz_arguments`.
//! A failure proptest finds is saved under `proptest-regressions/` and
//! replayed first on every later run.
use crate::common::*;
use cairn_notes::tools::TOOLS;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// The system allocator, counting the bytes live on each thread and their peak.
struct Counting;

thread_local! {
    static LIVE: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
    static PEAK: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
}

unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let _ = LIVE.try_with(|l| {
            l.set(l.get() + layout.size() as isize);
            let _ = PEAK.try_with(|p| p.set(p.get().max(l.get())));
        });
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        let _ = LIVE.try_with(|l| l.set(l.get() - layout.size() as isize));
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most a call may allocate beyond what it holds when it starts: a
/// generous multiple of the largest argument the fuzzer sends (1 MB).
const MAX_CALL_BYTES: isize = 64 << 20;

fn cases() -> u32 {
    std::env::var("CAIRN_FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(1_500)
}

/// Any JSON value, nested a few levels, with strings that look like what
/// tools take (ids, versions, huge and odd text) as well as noise.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "[a-z_]{0,12}".prop_map(Value::from),
        "\\PC{0,40}".prop_map(Value::from),
        prop_oneof![Just("markdown"), Just("sources"), Just("note-x"), Just("clm-a-b-c"), Just(""), Just("../../etc")].prop_map(Value::from),
        (0usize..3).prop_map(|n| Value::from("x".repeat([70, 5_000, 1_000_001][n]))),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            proptest::collection::btree_map("[a-z_]{1,16}", inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A call that would be valid for each tool (on a note that exists).
fn valid(tool: &str, note: &str) -> Value {
    match tool {
        "list_notes" => json!({"limit": 5}),
        "list_claims" => json!({"note_id": note}),
        "claim_note" => json!({"note_id": note, "tab_id": "markdown", "ttl_seconds": 30}),
        "renew_claim" | "release_claim" => json!({"claim_id": "clm-x-1-abcdefgh"}),
        "post_claim_note" => json!({"claim_id": "clm-x-1-abcdefgh", "text": "hands off"}),
        "read_sheet_range" => json!({"note_id": note, "tab_id": "markdown", "start_row": 0, "start_col": 0, "num_rows": 1, "num_cols": 1}),
        "create_note_tab" => json!({"note_id": note, "expected_version": 1, "idempotency_key": "k", "tab_type": "slides"}),
        "add_note_source" => json!({"note_id": note, "expected_version": 1, "idempotency_key": "k", "url": "https://example.com", "title": "t"}),
        "edit_note_tab" => {
            json!({"note_id": note, "tab_id": "markdown", "expected_version": 1, "idempotency_key": "k", "operation": "append_text", "text": "x"})
        }
        _ => json!({"note_id": note, "tab_id": "markdown"}),
    }
}

/// Calls and checks: the answer is a result inside its schema, and an
/// argument refusal names the field.
fn check(w: &mut World, tool: &str, args: Value) {
    let who = agent("acme");
    let start = LIVE.with(|l| l.get());
    PEAK.with(|p| p.set(start));
    let r = w.call(&who, tool, args.clone());
    let peak = PEAK.with(|p| p.get()) - start;
    assert!(peak <= MAX_CALL_BYTES, "{tool}: one call allocated {peak} bytes at its peak");
    let c = &r["structuredContent"];
    if matches!(c["error"].as_str(), Some("invalid_argument" | "too_large")) {
        assert!(c["field"].as_str().is_some_and(|f| !f.is_empty()), "{tool}: a refusal without a field for {args}: {c}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn any_json_at_all_is_answered_and_never_crashes_a_tool(tool in 0..TOOLS.len(), args in json_value()) {
        let mut w = World::new();
        check(&mut w, TOOLS[tool].name, args);
    }

    #[test]
    fn a_valid_call_with_one_argument_replaced_by_anything_is_answered(tool in 0..TOOLS.len(), pick in any::<usize>(), value in json_value(), drop in any::<bool>()) {
        let mut w = World::new();
        let note = w.note(&human("acme"), "Fuzzed", true);
        let name = TOOLS[tool].name;
        let mut args = valid(name, &note);
        let obj: &mut Map<String, Value> = args.as_object_mut().unwrap();
        let keys: Vec<String> = obj.keys().cloned().collect();
        let key = keys[pick % keys.len()].clone();
        if drop { obj.remove(&key); } else { obj.insert(key, value); }
        check(&mut w, name, args);
    }
}
