//! A cluster store reports the cluster's shape (primaries, replicas, slots
//! covered) and refuses to open on a cluster with slots no primary serves,
//! naming them; on a primary without the replicas its writes wait for; on
//! a standalone server named as a cluster, and on a cluster node named as
//! a standalone server.

use cairn_kv::{Error, Store};
use cairn_kv_redis::server::{Cluster, Server};
use cairn_kv_redis::{Options, RedisStore};

fn open(urls: &[String], wait: u32) -> Result<RedisStore, Error> {
    let seeds: Vec<&str> = urls.iter().map(String::as_str).collect();
    RedisStore::open_cluster(&seeds, Options { wait_for_replicas: wait, ..Options::with_namespace("shape") })
}

#[test]
fn the_store_reports_the_shape_of_a_whole_cluster() {
    let store = crate::common::cluster_store("shape", 1);
    let shown = store.describe().unwrap();
    assert!(shown.contains("3 primaries, 3 replicas, 16384 of 16384 slots covered"), "{shown}");
    assert!(shown.contains("after 1 replica(s) confirm"), "{shown}");
    let nodes = store.nodes();
    assert_eq!(nodes.len(), 3, "{nodes:?}");
    assert_eq!(nodes.iter().map(|n| n.slots).sum::<usize>(), 16384);
    assert!(nodes.iter().all(|n| n.replicas == 1), "{nodes:?}");
}

#[test]
fn a_cluster_with_uncovered_slots_or_too_few_replicas_is_refused() {
    let cluster = Cluster::start(1, 0);
    let e = open(&cluster.urls(), 1).err().expect("a primary without a replica cannot confirm writes");
    assert!(e.to_string().contains("has 0 connected replica(s)"), "{e}");
    let store = open(&cluster.urls(), 0).unwrap();
    assert!(store.describe().unwrap().contains("1 primaries, 0 replicas"), "{:?}", store.describe());
    store.set("default", "t/x/1", b"v").unwrap();
    drop(store);
    cluster.drop_slots(0, 100, 199);
    let e = open(&cluster.urls(), 0).err().expect("a cluster missing slots is refused");
    assert!(e.to_string().contains("16284 of 16384 slots") && e.to_string().contains("100-199"), "{e}");
}

#[test]
fn a_standalone_server_named_as_a_cluster_and_a_node_named_as_a_server_are_refused() {
    let server = Server::start();
    let e = open(&[server.url()], 0).err().unwrap();
    assert!(e.to_string().contains("not in cluster mode"), "{e}");
    let urls = crate::common::shared_cluster_urls();
    let e = RedisStore::open(&urls[0], Options::with_namespace("shape")).err().unwrap();
    assert!(e.to_string().contains("set `cluster = true`"), "{e}");
    let e = open(&[format!("{}/2", urls[0])], 0).err().unwrap();
    assert!(e.to_string().contains("only database 0"), "{e}");
}
