//! A write whose reply never comes back (the connection drops after the
//! request went out, or the reply is late past the I/O timeout) is
//! `Unavailable`: not success, not a conflict, and not sent again. The
//! server may well have run it; the caller is told the outcome is unknown.
//! The connection it was on is dropped, so a late reply is never taken for
//! the answer to the next request.

use crate::common::Server;
use cairn_kv::{Error, Store};
use cairn_kv_redis::{Options, RedisStore};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

const B: &str = "default";
const K: &str = "t/acme/note/n1";

/// A TCP proxy in front of the server that, while `swallow` is on, reads the
/// server's reply and closes the client's connection instead of passing it on.
struct LossyProxy {
    port: u16,
    swallow: Arc<AtomicBool>,
}

impl LossyProxy {
    fn start(upstream: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let swallow = Arc::new(AtomicBool::new(false));
        let flag = swallow.clone();
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else { return };
                let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                thread::spawn(move || {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n) = c_in.read(&mut buf) {
                        if n == 0 || s_out.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = s_out.shutdown(Shutdown::Both);
                });
                let (mut s_in, mut c_out, flag) = (server, client, flag.clone());
                thread::spawn(move || {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n) = s_in.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        if flag.load(Ordering::SeqCst) {
                            break;
                        }
                        if c_out.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = c_out.shutdown(Shutdown::Both);
                    let _ = s_in.shutdown(Shutdown::Both);
                });
            }
        });
        Self { port, swallow }
    }
}

fn expect_unavailable<T: std::fmt::Debug>(what: &str, got: cairn_kv::Result<T>) {
    match got {
        Err(Error::Unavailable(msg)) => println!("{what}: Unavailable: {msg}"),
        other => panic!("{what} whose reply was lost gave {other:?}, not Unavailable"),
    }
}

#[test]
fn a_dropped_connection_after_the_request_is_unavailable_and_the_write_may_have_happened() {
    let server = Server::start();
    let proxy = LossyProxy::start(server.port);
    let ns = crate::common::fresh_namespace("lost");
    // One connection, so the warm-up below leaves the very connection that
    // will carry the write with its tag already registered: the request
    // whose reply is lost is the write script itself.
    let options = Options { pool_size: 1, ..Options::with_namespace(&ns) };
    let store = RedisStore::open(&format!("redis://127.0.0.1:{}", proxy.port), options).unwrap();
    let direct = server.store(&ns);
    let lose_reply = |what: &str, op: &dyn Fn() -> cairn_kv::Result<()>| {
        store.set(B, "t/acme/warm-up", b"w").unwrap();
        proxy.swallow.store(true, Ordering::SeqCst);
        expect_unavailable(what, op());
        proxy.swallow.store(false, Ordering::SeqCst);
    };

    store.set(B, K, b"1").unwrap();
    store.increment(B, "t/acme/n", 1).unwrap();
    let seen = store.read(B, K).unwrap();
    lose_reply("swap", &|| store.swap(B, K, seen.observed, b"2").map(|_| ()));
    lose_reply("increment", &|| store.increment(B, "t/acme/n", 1).map(|_| ()));
    lose_reply("set_many", &|| store.set_many(B, &[("t/acme/a", b"a"), ("t/acme/b", b"b")]));
    lose_reply("delete", &|| store.delete(B, "t/acme/a"));

    // The server ran every one of them: had the store resent the swap, the
    // resend would have failed and been reported as a conflict.
    assert_eq!(direct.get(B, K).unwrap(), Some(b"2".to_vec()));
    assert_eq!(direct.increment(B, "t/acme/n", 0).unwrap(), 2);
    assert_eq!(direct.get_many(B, &["t/acme/a", "t/acme/b"]).unwrap(), vec![None, Some(b"b".to_vec())]);
    // And the same store works again through new connections.
    assert_eq!(store.get(B, K).unwrap(), Some(b"2".to_vec()));
    match store.swap(B, K, seen.observed, b"3").unwrap() {
        cairn_kv::Swap::Failed(fresh) => assert_eq!(fresh.value, Some(b"2".to_vec())),
        cairn_kv::Swap::Done => panic!("the old handle won after its own swap had landed"),
    }
}

#[test]
fn a_reply_later_than_the_io_timeout_is_unavailable_and_never_read_as_the_next_reply() {
    let server = Server::start();
    let ns = crate::common::fresh_namespace("late");
    let options = Options { io_timeout: Duration::from_millis(300), ..Options::with_namespace(&ns) };
    let store = RedisStore::open(&server.url(), options).unwrap();
    store.set(B, K, b"1").unwrap();
    let seen = store.read(B, K).unwrap();

    // Writes (and write scripts) wait for a second; reads go on.
    let mut admin = server.admin();
    redis::cmd("CLIENT").arg("PAUSE").arg(1000).arg("WRITE").exec(&mut admin).unwrap();
    let paused = Instant::now();
    expect_unavailable("swap during a pause", store.swap(B, K, seen.observed, b"2"));
    println!("the swap gave up after {:?}", paused.elapsed());
    assert_eq!(store.get(B, K).unwrap(), Some(b"1".to_vec()), "a read during a write pause");
    thread::sleep(Duration::from_millis(1200).saturating_sub(paused.elapsed()));

    // Whether the swap ran is unknown (here the server drops the command of
    // a client that hung up while paused); either way the store said
    // neither done nor failed, and every later request gets its own reply.
    let now = store.read(B, K).unwrap();
    println!("after the pause the key holds {:?}", now.value.as_deref().map(String::from_utf8_lossy));
    assert!(matches!(now.value.as_deref(), Some(b"1") | Some(b"2")));
    assert_eq!(store.increment(B, "t/acme/n", 7).unwrap(), 7);
    assert_eq!(store.list_keys(B, None, 10).unwrap(), vec!["t/acme/n".to_string(), K.to_string()]);
    assert_eq!(store.swap(B, K, now.observed, b"3").unwrap(), cairn_kv::Swap::Done);
    assert_eq!(store.get(B, K).unwrap(), Some(b"3".to_vec()));
}
