//! A server that stops answering (here: `DEBUG SLEEP`) makes calls fail
//! with `Unavailable` after the I/O timeout, including callers waiting for
//! a connection of a pool whose connections are all stuck: nothing blocks
//! forever. Afterwards the store works again.

use crate::common::Server;
use cairn_kv::{Error, Store};
use cairn_kv_redis::{Options, RedisStore};
use std::thread;
use std::time::{Duration, Instant};

#[test]
fn a_hung_server_is_unavailable_after_the_io_timeout() {
    let server = Server::start();
    let options = Options { pool_size: 1, io_timeout: Duration::from_millis(300), ..Options::with_namespace(crate::common::fresh_namespace("hung")) };
    let store = RedisStore::open(&server.url(), options).unwrap();
    store.set("default", "t/acme/k", b"v").unwrap();

    let sleeper = thread::spawn({
        let mut admin = server.admin();
        move || redis::cmd("DEBUG").arg("SLEEP").arg("1.5").exec(&mut admin).unwrap()
    });
    thread::sleep(Duration::from_millis(100));
    let outcomes: Vec<(Duration, cairn_kv::Result<Option<Vec<u8>>>)> = thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let store = &store;
                s.spawn(move || {
                    let started = Instant::now();
                    let got = store.get("default", "t/acme/k");
                    (started.elapsed(), got)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (took, got) in &outcomes {
        match got {
            Err(Error::Unavailable(msg)) => println!("gave up after {took:?}: {msg}"),
            other => panic!("a call to a hung server gave {other:?}"),
        }
    }
    sleeper.join().unwrap();
    assert_eq!(store.get("default", "t/acme/k").unwrap(), Some(b"v".to_vec()));
}
