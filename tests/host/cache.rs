//! Components are compiled once; a second start loads them from the cache.
use crate::harness::*;

#[test]
fn second_start_loads_every_component_from_the_cache() {
    require_built(&["health.wasm", "kv_probe.wasm"]);
    let state = scratch("cache");
    let first = Cairn::start(Start { state_dir: Some(state.clone()), ..Start::default() });
    let log = first.log();
    assert_eq!(count_lines(&log, &["component compiled"]), 2, "first start must compile both:\n{log}");
    drop(first);
    let second = Cairn::start(Start { state_dir: Some(state.clone()), ..Start::default() });
    let log = second.log();
    assert_eq!(count_lines(&log, &["component compiled"]), 0, "second start recompiled:\n{log}");
    assert_eq!(count_lines(&log, &["component loaded from cache"]), 2, "{log}");
    assert_eq!(second.get("/healthz").status, 200);
    let cached = std::fs::read_dir(state.join("cache")).unwrap().count();
    assert_eq!(cached, 2, "one artifact per component in {}", show(&state));
}
