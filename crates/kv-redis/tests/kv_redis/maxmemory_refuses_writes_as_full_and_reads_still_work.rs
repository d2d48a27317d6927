//! When the server is over `maxmemory` with `noeviction`, every write is
//! refused whole as `Full` (nothing written, no half batch), reads keep
//! working, and deletes and the sweep still run so the store can be emptied.

use crate::common::Server;
use cairn_kv::{Error, Store};

const B: &str = "default";

fn expect_full<T: std::fmt::Debug>(what: &str, got: cairn_kv::Result<T>) {
    match got {
        Err(Error::Full(msg)) => assert!(msg.contains("OOM"), "{what}: {msg}"),
        other => panic!("{what} over maxmemory gave {other:?}, not Full"),
    }
}

#[test]
fn maxmemory_refuses_writes_as_full_and_reads_still_work() {
    let server = Server::start();
    let store = server.store("full");
    store.set(B, "t/acme/kept", b"kept").unwrap();
    store.set(B, "t/acme/doomed", b"x").unwrap();
    store.increment(B, "t/acme/n", 1).unwrap();
    let seen = store.read(B, "t/acme/kept").unwrap();

    let mut admin = server.admin();
    redis::cmd("CONFIG").arg("SET").arg("maxmemory-policy").arg("noeviction").exec(&mut admin).unwrap();
    redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg("1").exec(&mut admin).unwrap();

    expect_full("set", store.set(B, "t/acme/kept", b"new"));
    expect_full("set of a new tenant", store.set(B, "t/other/k", b"new"));
    expect_full("swap", store.swap(B, "t/acme/kept", seen.observed, b"new"));
    expect_full("increment", store.increment(B, "t/acme/n", 1));
    expect_full("set_many", store.set_many(B, &[("t/acme/a", b"1"), ("t/acme/b", b"2")]));

    // Nothing of the refused writes is there, and reads work.
    assert_eq!(store.get(B, "t/acme/kept").unwrap(), Some(b"kept".to_vec()));
    assert_eq!(store.read(B, "t/acme/kept").unwrap(), seen, "a refused write changed the stamp");
    assert_eq!(store.get_many(B, &["t/acme/a", "t/acme/b", "t/other/k"]).unwrap(), vec![None, None, None]);
    assert_eq!(store.increment(B, "t/acme/n", 0).err().map(|e| matches!(e, Error::Full(_))), Some(true));
    assert_eq!(store.list_keys(B, None, 10).unwrap(), vec!["t/acme/doomed".to_string(), "t/acme/kept".to_string(), "t/acme/n".to_string()]);

    // A full store can still be emptied.
    store.delete(B, "t/acme/doomed").unwrap();
    assert_eq!(store.sweep(0).unwrap(), 1);
    assert_eq!(store.get(B, "t/acme/doomed").unwrap(), None);

    redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg("0").exec(&mut admin).unwrap();
    store.set(B, "t/acme/kept", b"new").unwrap();
    assert_eq!(store.get(B, "t/acme/kept").unwrap(), Some(b"new".to_vec()));
}
