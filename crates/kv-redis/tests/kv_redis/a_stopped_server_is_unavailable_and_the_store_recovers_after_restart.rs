//! A stopped server makes every operation fail with `Unavailable` (naming
//! the address) instead of hanging; once it runs again on the same port the
//! same `RedisStore`, never reopened, works again.

use crate::common::Server;
use cairn_kv::{Error, Observed, Store, Swap};
use std::time::Instant;

const B: &str = "default";

fn expect_unavailable<T: std::fmt::Debug>(what: &str, port: u16, f: impl FnOnce() -> cairn_kv::Result<T>) {
    let started = Instant::now();
    let got = f();
    let took = started.elapsed();
    match got {
        Err(Error::Unavailable(msg)) => {
            assert!(msg.contains(&format!("127.0.0.1:{port}")), "{what}: the message does not name the server: {msg}");
            println!("{what}: Unavailable after {took:?}: {msg}");
        }
        other => panic!("{what} on a stopped server gave {other:?}, not Unavailable"),
    }
}

#[test]
fn a_stopped_server_is_unavailable_and_the_store_recovers_after_restart() {
    let mut server = Server::start();
    let port = server.port;
    let store = server.store("restart");
    store.set(B, "t/acme/k", b"v").unwrap();
    let before = store.read(B, "t/acme/k").unwrap();

    server.kill();
    expect_unavailable("read", port, || store.read(B, "t/acme/k"));
    expect_unavailable("set", port, || store.set(B, "t/acme/k", b"w"));
    expect_unavailable("swap", port, || store.swap(B, "t/acme/k", before.observed, b"w"));
    expect_unavailable("increment", port, || store.increment(B, "t/acme/n", 1));
    expect_unavailable("delete", port, || store.delete(B, "t/acme/k"));
    expect_unavailable("set_many", port, || store.set_many(B, &[("t/acme/a", b"1"), ("t/acme/b", b"2")]));
    expect_unavailable("get_many", port, || store.get_many(B, &["t/acme/a", "t/acme/b"]));
    expect_unavailable("list_keys", port, || store.list_keys(B, None, 10));
    expect_unavailable("sweep", port, || store.sweep(0));

    // Same port, same store object: it connects again by itself. The server
    // kept nothing (no persistence in these tests).
    server.restart();
    assert_eq!(store.get(B, "t/acme/k").unwrap(), None, "the restarted server has no data");
    store.set(B, "t/acme/k", b"v").unwrap();
    assert_eq!(store.get(B, "t/acme/k").unwrap(), Some(b"v".to_vec()));
    assert_eq!(store.increment(B, "t/acme/n", 5).unwrap(), 5);
    // The registries were lost with the data and are written again: the keys list.
    assert_eq!(store.list_keys(B, None, 10).unwrap(), vec!["t/acme/k".to_string(), "t/acme/n".to_string()]);

    // A handle from before the restart does not match the recreated key,
    // though the bytes are the same: stamps follow the server clock, so the
    // emptied server does not hand out the old stamps again.
    assert!(matches!(before.observed, Observed::Present(_)));
    match store.swap(B, "t/acme/k", before.observed, b"late").unwrap() {
        Swap::Failed(fresh) => assert_eq!(fresh.value.as_deref(), Some(&b"v"[..])),
        Swap::Done => panic!("a handle read before the restart won a swap against a key written after it"),
    }
}

#[test]
fn reads_recover_at_once_and_writes_after_at_most_one_unavailable() {
    let mut server = Server::start();
    let store = server.store("stale");
    // Fill the pool with connections that the restart will leave dead.
    std::thread::scope(|s| {
        for i in 0..4 {
            let store = &store;
            s.spawn(move || store.set(B, &format!("t/acme/{i}"), b"v").unwrap());
        }
    });
    server.restart();
    // A read finds a dead pooled connection, and is sent again on a fresh one.
    assert_eq!(store.get(B, "t/acme/0").unwrap(), None);
    // A write is never resent (its outcome would be unknown); it may fail once
    // on a dead pooled connection, but the pool was emptied by the read above.
    let mut unavailable = 0;
    loop {
        match store.set(B, "t/acme/0", b"again") {
            Ok(()) => break,
            Err(Error::Unavailable(_)) if unavailable == 0 => unavailable += 1,
            Err(e) => panic!("a write after the restart failed with {e}"),
        }
    }
    println!("writes failing after the restart: {unavailable}");
    assert_eq!(store.get(B, "t/acme/0").unwrap(), Some(b"again".to_vec()));
}
