//! A trap, a request that runs too long and one that exceeds its memory end
//! as a clean 500 for that request only; the host keeps serving.
use crate::harness::*;
use std::time::{Duration, Instant};

#[test]
fn trap_timeout_and_memory_limit_end_as_500_and_the_host_keeps_serving() {
    require_built(&["health.wasm", "misbehave.wasm"]);
    let mut cairn = Cairn::start(Start { manifest: fixtures(), args: vec!["--request-timeout-ms", "1000", "--max-memory-mb", "64"], ..Start::default() });
    let trap = cairn.get("/misbehave/trap");
    assert_eq!(trap.status, 500);
    assert_eq!(trap.json()["error"], "component_failed");

    let started = Instant::now();
    let spin = cairn.get("/misbehave/spin");
    assert_eq!(spin.status, 500);
    assert!(started.elapsed() < Duration::from_secs(10), "the endless loop was not interrupted in time");

    let oom = cairn.get("/misbehave/oom");
    assert_eq!(oom.status, 500);

    // The host is still fine, for every kind of request.
    assert_eq!(cairn.get("/misbehave/variable").status, 200);
    let log = cairn.wait_for_log("ran past the request timeout");
    assert!(log.contains("trapped"), "{log}");
    assert!(log.contains("ran past the request timeout"), "{log}");
    assert!(cairn.child_alive());
}
