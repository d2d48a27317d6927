//! One component, routed twice (`/...` and `/exact`), that answers with the
//! route Spin matched (`spin-component-route`), and runs one key-value
//! scenario per path under `/kv/` against the `default` store through
//! `wasi:keyvalue` (store, atomics), printing what the host answered.

use spin_sdk::http::{IntoResponse, Request, Response};
use spin_sdk::http_component;
use spin_sdk::wit::wasi::keyvalue::{atomics, batch, store};

#[http_component]
fn handle(req: Request) -> anyhow::Result<impl IntoResponse> {
    let route = req.header("spin-component-route").and_then(|v| v.as_str()).unwrap_or("?").to_string();
    let body = match req.path() {
        "/kv/increment-text" => increment_text(),
        "/kv/get" => get(),
        "/kv/swap" => swap(),
        "/kv/two-creators" => two_creators(),
        "/kv/stale-swap" => stale_swap(),
        "/kv/get-many-two" => get_many(&["a", "b"]),
        "/kv/get-many-one" => get_many(&["a"]),
        _ => format!("route {route:?}\n"),
    };
    Ok(Response::new(200, body))
}

fn bucket() -> store::Bucket {
    store::open("default").expect("the default store")
}

fn cas_error(e: &atomics::CasError) -> String {
    match e {
        atomics::CasError::CasFailed(_) => "cas-failed".into(),
        atomics::CasError::StoreError(e) => format!("store-error {e:?}"),
    }
}

fn show(v: Option<Vec<u8>>) -> String {
    v.map_or("absent".into(), |b| format!("{:?}", String::from_utf8_lossy(&b)))
}

/// `increment` on a key that holds 3 bytes of text.
fn increment_text() -> String {
    let b = bucket();
    b.set("text", b"abc").unwrap();
    format!("increment of a text value: {:?}\n", atomics::increment(&b, "text", 1))
}

/// A plain read: does the store still answer?
fn get() -> String {
    format!("get: {:?}\n", bucket().get("text").map(show))
}

/// One uncontended swap: what is reported, and what is stored.
fn swap() -> String {
    let b = bucket();
    b.set("swapped", b"before").unwrap();
    let cas = atomics::Cas::new(&b, "swapped").unwrap();
    let current = cas.current().unwrap();
    let out = atomics::swap(cas, b"after").map_err(|e| cas_error(&e));
    format!("current {}; swap: {out:?}; now stored: {}\n", show(current), show(b.get("swapped").unwrap()))
}

/// Two creators of one absent key, each having seen it absent.
fn two_creators() -> String {
    let b = bucket();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let key = format!("created-{nanos}");
    let (first, second) = (atomics::Cas::new(&b, &key).unwrap(), atomics::Cas::new(&b, &key).unwrap());
    let (c1, c2) = (first.current().unwrap(), second.current().unwrap());
    let one = atomics::swap(first, b"first").map_err(|e| cas_error(&e));
    let two = atomics::swap(second, b"second").map_err(|e| cas_error(&e));
    format!("both saw {} and {}; first swap: {one:?}; second swap: {two:?}; stored: {}\n", show(c1), show(c2), show(b.get(&key).unwrap()))
}

/// A swap whose read was overtaken by a set of the same bytes, then of other bytes.
fn stale_swap() -> String {
    let b = bucket();
    b.set("stale", b"v").unwrap();
    let cas = atomics::Cas::new(&b, "stale").unwrap();
    cas.current().unwrap();
    b.set("stale", b"other").unwrap();
    b.set("stale", b"v").unwrap();
    let out = atomics::swap(cas, b"late").map_err(|e| cas_error(&e));
    format!("read v; another writer wrote other, then v again; stale swap: {out:?}; stored: {}\n", show(b.get("stale").unwrap()))
}

/// A batch read of keys that hold values.
fn get_many(keys: &[&str]) -> String {
    let b = bucket();
    b.set("a", b"1").unwrap();
    b.set("b", b"2").unwrap();
    let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    let got = batch::get_many(&b, &keys).map(|v| v.into_iter().map(|(k, v)| format!("{k}={}", show(v))).collect::<Vec<_>>());
    format!("get-many {keys:?}: {got:?}\n")
}
