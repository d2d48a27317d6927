//! Two stores with different namespaces on one server are independent:
//! values, stamps, listings, sweeps and counters of one never show in the other.

use crate::common::Server;
use cairn_kv::{Store, Swap};

#[test]
fn two_stores_on_one_server_with_different_namespaces_do_not_see_each_other() {
    let server = Server::start();
    let a = server.store("ns-a");
    let b = server.store("ns-b");

    a.set("default", "t/acme/k", b"from a").unwrap();
    assert_eq!(b.get("default", "t/acme/k").unwrap(), None);
    assert_eq!(b.list_keys("default", None, 10).unwrap(), Vec::<String>::new());

    // Creating the same key in both: each creator wins in its own store.
    let seen_b = b.read("default", "t/acme/k").unwrap();
    assert_eq!(b.swap("default", "t/acme/k", seen_b.observed, b"from b").unwrap(), Swap::Done);
    assert_eq!(a.get("default", "t/acme/k").unwrap(), Some(b"from a".to_vec()));
    assert_eq!(b.get("default", "t/acme/k").unwrap(), Some(b"from b".to_vec()));

    assert_eq!(a.increment("cache", "ratelimit/x", 3).unwrap(), 3);
    assert_eq!(b.increment("cache", "ratelimit/x", 1).unwrap(), 1);

    // A delete and sweep in one leaves the other alone.
    a.delete("default", "t/acme/k").unwrap();
    assert_eq!(a.sweep(0).unwrap(), 1);
    assert_eq!(b.sweep(0).unwrap(), 0);
    assert_eq!(b.get("default", "t/acme/k").unwrap(), Some(b"from b".to_vec()));
    assert_eq!(b.list_keys("default", None, 10).unwrap(), vec!["t/acme/k".to_string()]);
    assert_eq!(a.list_keys("default", None, 10).unwrap(), Vec::<String>::new());

    // Closing one does not close the other.
    a.close().unwrap();
    assert!(a.get("default", "t/acme/k").is_err());
    assert_eq!(b.get("default", "t/acme/k").unwrap(), Some(b"from b".to_vec()));

    // Nothing outside the two namespaces was written.
    let mut admin = server.admin();
    let all: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut admin).unwrap();
    assert!(all.iter().all(|k| k.starts_with("ns-a:") || k.starts_with("ns-b:")), "{all:?}");
}
