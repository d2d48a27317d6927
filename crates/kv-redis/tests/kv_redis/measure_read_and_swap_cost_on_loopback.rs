//! Prints what one call costs on loopback (run with `--nocapture`). Asserts
//! nothing about time: it only shows the numbers.

use cairn_kv::{Store, Swap};
use std::time::Instant;

const N: u32 = 5000;

fn per_call(what: &str, n: u32, f: impl FnMut(u32)) -> f64 {
    let mut f = f;
    let started = Instant::now();
    for i in 0..n {
        f(i);
    }
    let us = started.elapsed().as_secs_f64() * 1e6 / n as f64;
    println!("{what:<34} {us:8.1} µs per call ({n} calls)");
    us
}

#[test]
fn measure_read_and_swap_cost_on_loopback() {
    let server = crate::common::Server::start();
    let store = server.store("measure");
    let mut raw = server.admin();
    let value = vec![b'x'; 1024];
    store.set("default", "t/acme/note/n1", &value).unwrap();
    for _ in 0..500 {
        store.read("default", "t/acme/note/n1").unwrap();
    }
    per_call("PING (raw round trip)", N, |_| redis::cmd("PING").exec(&mut raw).unwrap());
    let read = per_call("read (1 KiB value)", N, |_| {
        store.read("default", "t/acme/note/n1").unwrap();
    });
    let cycle = per_call("read + swap (1 KiB, uncontended)", N, |_| {
        let r = store.read("default", "t/acme/note/n1").unwrap();
        assert_eq!(store.swap("default", "t/acme/note/n1", r.observed, &value).unwrap(), Swap::Done);
    });
    println!("{:<34} {:8.1} µs per call (cycle minus read)", "swap", cycle - read);
    per_call("set (1 KiB)", N, |i| store.set("default", &format!("t/acme/blob/{i}"), &value).unwrap());
    per_call("increment", N, |_| {
        store.increment("cache", "ratelimit/t1/60", 1).unwrap();
    });
    per_call("get_many (10 keys, one tenant)", N / 5, |i| {
        let keys: Vec<String> = (0..10).map(|j| format!("t/acme/blob/{}", (i * 10 + j) % N)).collect();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        store.get_many("default", &refs).unwrap();
    });
    for t in 0..200 {
        store.set("default", &format!("t/tenant{t:03}/note/n1"), b"v").unwrap();
    }
    per_call("list_keys (tenant discovery step)", 200, |t| {
        store.list_keys("default", Some(&format!("t/tenant{t:03}0")), 1).unwrap();
    });
}
