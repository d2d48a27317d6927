//! With writes confirmed by one replica, a write whose replica does not
//! answer in time (`DEBUG SLEEP` on it) is refused as `Unavailable`, never
//! acknowledged, and counted as unconfirmed on its primary; once the
//! replica is back, writes are acknowledged again.

use cairn_kv::{Error, Store};
use cairn_kv_redis::server::Cluster;
use cairn_kv_redis::{Options, RedisStore};
use std::time::{Duration, Instant};

#[test]
fn a_write_no_replica_confirms_in_time_is_refused_and_counted() {
    let cluster = Cluster::start(3, 1);
    let urls = cluster.urls();
    let seeds: Vec<&str> = urls.iter().map(String::as_str).collect();
    let options = Options { wait_for_replicas: 1, wait_timeout: Duration::from_millis(200), ..Options::with_namespace("wait") };
    let store = RedisStore::open_cluster(&seeds, options).unwrap();
    let key = "t/acme/note/n1";
    store.set("default", key, b"confirmed").unwrap();
    let slot = cairn_kv_redis::slot::slot_of(b"t/acme");
    let owner = cluster.shape(0).owner(slot).unwrap().addr.clone();
    let primary = cluster.nodes.iter().position(|n| owner.ends_with(&format!(":{}", n.port))).unwrap();
    let replica = cluster.replica_of(primary).expect("a replica");
    let mut admin = cluster.nodes[replica].admin();
    let sleeper = std::thread::spawn(move || redis::cmd("DEBUG").arg("SLEEP").arg("1").query::<()>(&mut admin));
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    let e = store.set("default", key, b"unconfirmed").unwrap_err();
    assert!(matches!(&e, Error::Unavailable(m) if m.contains("0 of 1 replica(s) confirmed")), "{e}");
    assert!(started.elapsed() >= Duration::from_millis(200), "refused before the wait timeout");
    sleeper.join().unwrap().unwrap();
    let unconfirmed: u64 = store.nodes().iter().filter(|n| n.addr == owner).map(|n| n.unconfirmed).sum();
    assert_eq!(unconfirmed, 1);
    store.set("default", key, b"confirmed again").unwrap();
    assert_eq!(store.get("default", key).unwrap().as_deref(), Some(&b"confirmed again"[..]));
}
