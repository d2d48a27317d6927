//! At open, a server that cannot be reached (nothing listening, or a peer
//! that never answers) is `Unavailable` naming the address, within the
//! connect timeout; a server of the wrong kind (a replica, a cluster node)
//! is a backend error saying what it is.

use crate::common::Server;
use cairn_kv::Error;
use cairn_kv_redis::{Options, RedisStore};
use std::net::TcpListener;
use std::time::Instant;

fn unavailable(url: &str, address: &str) {
    let started = Instant::now();
    match RedisStore::open(url, Options::default()) {
        Err(Error::Unavailable(msg)) => {
            assert!(msg.contains(address), "the message does not name {address}: {msg}");
            println!("{url}: Unavailable after {:?}: {msg}", started.elapsed());
        }
        Err(e) => panic!("{url}: {e:?}, expected Unavailable"),
        Ok(_) => panic!("{url}: opened"),
    }
}

#[test]
fn nothing_listening_is_unavailable_naming_the_address() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    unavailable(&format!("redis://127.0.0.1:{port}/2"), &format!("127.0.0.1:{port}/2"));
}

#[test]
fn a_peer_that_never_answers_is_unavailable_within_the_connect_timeout() {
    // Accepted by the kernel's backlog, never read: the handshake times out.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    unavailable(&format!("redis://127.0.0.1:{port}"), &format!("127.0.0.1:{port}"));
    drop(listener);
}

#[test]
fn a_replica_is_refused() {
    let primary = Server::start();
    let replica = Server::start_with(&["--replicaof", "127.0.0.1", &primary.port.to_string()]);
    match RedisStore::open(&replica.url(), Options::default()) {
        Err(Error::Backend(msg)) => assert!(msg.contains("replica") && msg.contains("primary"), "{msg}"),
        other => panic!("a replica was not refused: {:?}", other.err()),
    }
}

#[test]
fn a_cluster_node_is_refused() {
    let node = Server::start_with(&["--cluster-enabled", "yes"]);
    match RedisStore::open(&node.url(), Options::default()) {
        Err(Error::Backend(msg)) => assert!(msg.contains("cluster node"), "{msg}"),
        other => panic!("a cluster node was not refused: {:?}", other.err()),
    }
}
