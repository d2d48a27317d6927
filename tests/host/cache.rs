//! Components are compiled once; a second start loads them from the cache.
//! (On the fixture manifest's two components: the mechanism is one per
//! component, and the application's 22 would compile for a minute and more
//! on two cores, a cost every other test already shares through the run's
//! one cache.)
use crate::harness::*;

#[test]
fn second_start_loads_every_component_from_the_cache() {
    require_built(&["health.wasm", "misbehave.wasm"]);
    let n = cairn::manifest::Manifest::load(&fixtures()).unwrap().components.len();
    assert!(n >= 2, "the fixture manifest has {n} components");
    let state = scratch("cache");
    let cache = state.join("cache");
    let start = || Start { manifest: fixtures(), state_dir: Some(state.clone()), cache_dir: Some(cache.clone()), ..Start::default() };
    let first = Cairn::start(start());
    let log = first.log();
    assert_eq!(count_lines(&log, &["component compiled"]), n, "first start must compile all {n}:\n{log}");
    drop(first);
    let second = Cairn::start(start());
    let log = second.log();
    assert_eq!(count_lines(&log, &["component compiled"]), 0, "second start recompiled:\n{log}");
    assert_eq!(count_lines(&log, &["component loaded from cache"]), n, "{log}");
    // Both serve from the cached artifacts: one calls the other.
    let chain = second.get("/misbehave/chain");
    assert!(chain.status == 200 && chain.text().starts_with("200"), "{} {}", chain.status, chain.text());
    let cached = std::fs::read_dir(&cache).unwrap().count();
    assert_eq!(cached, n, "one artifact per component in {}", show(&cache));
}
