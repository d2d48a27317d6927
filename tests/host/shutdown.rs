//! SIGTERM: the listener closes, in-flight requests finish, the store closes.
use crate::harness::*;
use std::time::Duration;

#[test]
fn sigterm_lets_in_flight_requests_finish_and_closes_the_store() {
    require_built(&["health.wasm", "misbehave.wasm"]);
    let cairn = Cairn::start(Start { manifest: fixtures(), ..Start::default() });
    let addr = cairn.addr;
    let slow = std::thread::spawn(move || request(addr, "GET", "/misbehave/sleep", &[], b""));
    std::thread::sleep(Duration::from_millis(400));
    let (status, log) = cairn.terminate();
    let reply = slow.join().unwrap();
    assert_eq!(reply.status, 200, "the in-flight request was cut off");
    assert_eq!(reply.text(), "slept");
    assert!(status.success(), "exit status {status}\n{log}");
    assert!(log.contains("received SIGTERM"), "{log}");
    assert!(log.contains("store closed cleanly"), "{log}");
    assert!(std::net::TcpStream::connect(addr).is_err(), "still accepting after shutdown");
}
