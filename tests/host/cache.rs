//! Components are compiled once; a second start loads them from the cache.
use crate::harness::*;

#[test]
fn second_start_loads_every_component_from_the_cache() {
    require_built(&["health.wasm", "kv_probe.wasm"]);
    let n = cairn::manifest::Manifest::load(&root().join("spin.toml")).unwrap().components.len();
    let state = scratch("cache");
    let cache = state.join("cache");
    let start = || Start { state_dir: Some(state.clone()), cache_dir: Some(cache.clone()), ..Start::default() };
    let first = Cairn::start(start());
    let log = first.log();
    assert_eq!(count_lines(&log, &["component compiled"]), n, "first start must compile all {n}:\n{log}");
    drop(first);
    let second = Cairn::start(start());
    let log = second.log();
    assert_eq!(count_lines(&log, &["component compiled"]), 0, "second start recompiled:\n{log}");
    assert_eq!(count_lines(&log, &["component loaded from cache"]), n, "{log}");
    assert_eq!(second.get("/healthz").status, 200);
    let cached = std::fs::read_dir(&cache).unwrap().count();
    assert_eq!(cached, n, "one artifact per component in {}", show(&cache));
}
