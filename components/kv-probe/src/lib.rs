//! `kv-probe`: runs the compare-and-swap checks of `wit/deps/keyvalue`
//! against the host it is deployed on, through the WIT interface, and answers
//! with a JSON report: one entry per rule, pass or fail, and the verdict.
//!
//! Operators only: every request must carry `Authorization: Bearer <token>`
//! where the token is the `kv_probe_token` variable; while that variable is
//! empty (the default) the probe answers 404 as if it did not exist.
//! Its keys live under `kv-probe/<random>/`, outside every tenant prefix, and
//! are deleted afterwards.

use cairn_guest::kv::{Bucket, Swap, describe};
use cairn_guest::respond;
use serde_json::json;
use spin_sdk::http::{Request, Response};
use spin_sdk::http_component;

type Check = Result<(), String>;

#[http_component]
fn handle(req: Request) -> Response {
    let Some(expected) = cairn_guest::variable("kv_probe_token") else {
        return respond::error(404, "not_found", "no such route");
    };
    match respond::bearer(&req) {
        Some(t) if cairn_guest::constant_time_eq(t.as_bytes(), expected.as_bytes()) => {}
        _ => return respond::error(401, "unauthorized", "the probe needs the operator's kv_probe_token"),
    }
    let label = req.query().strip_prefix("store=").unwrap_or("default").to_string();
    let bucket = match Bucket::open(&label) {
        Ok(b) => b,
        Err(e) => return respond::error(500, "store_unavailable", &describe(&e)),
    };
    let prefix = format!("kv-probe/{:016x}/", cairn_guest::random_u64());
    let checks: [(&str, &str, fn(&Bucket, &str) -> Check); 10] = [
        ("absent_key_swap_is_create_if_absent", "a handle that saw the key absent fails once someone created it", absent_key),
        ("create_race_has_one_winner", "of two creators of one absent key, exactly one wins", create_race),
        ("no_aba_after_delete_and_recreate", "a handle read before delete + recreate with the same bytes fails", no_aba),
        ("same_bytes_rewrite_is_a_write", "rewriting identical bytes fails an older handle", same_bytes),
        ("lost_swap_is_never_reported_as_success", "of two swaps from one read, the second fails and its value is not stored", lost_swap),
        ("failed_swap_returns_fresh_handle", "cas-failed carries a handle on the current value that can win", fresh_handle),
        ("increment_is_atomic_counter", "increments add up and are stored as 8 little-endian bytes", increment),
        ("values_up_to_1_mib", "a 1 MiB value round-trips", big_value),
        ("keys_over_256_bytes_refused", "a 257-byte key is refused", long_key),
        ("batch_round_trip", "set-many, get-many and delete-many agree", batch_round_trip),
    ];
    let mut report = Vec::new();
    let mut all = true;
    for (i, (rule, promise, check)) in checks.iter().enumerate() {
        let result = check(&bucket, &format!("{prefix}{i}/"));
        all &= result.is_ok();
        report.push(json!({
            "rule": rule,
            "promise": promise,
            "pass": result.is_ok(),
            "detail": result.err(),
        }));
    }
    cleanup(&bucket, &prefix, checks.len());
    respond::json(200, &json!({ "store": label, "keeps_cas_promise": all, "checks": report }))
}

fn kv<T>(r: Result<T, cairn_guest::kv::Error>) -> Result<T, String> {
    r.map_err(|e| format!("store error: {}", describe(&e)))
}

fn expect_value(bucket: &Bucket, key: &str, want: &[u8]) -> Check {
    let got = kv(bucket.get(key))?;
    if got.as_deref() == Some(want) {
        Ok(())
    } else {
        Err(format!("stored value is {:?}, expected {:?}", got.map(|v| String::from_utf8_lossy(&v).into_owned()), String::from_utf8_lossy(want)))
    }
}

fn expect_conflict(outcome: Swap, what: &str) -> Check {
    match outcome {
        Swap::Conflict(_) => Ok(()),
        Swap::Done => Err(format!("swap reported success {what}")),
    }
}

fn absent_key(b: &Bucket, p: &str) -> Check {
    let k = format!("{p}k");
    let seen = kv(b.read(&k))?;
    kv(b.set(&k, b"other"))?;
    expect_conflict(kv(b.swap(seen, b"mine"))?, "on a key created after the handle saw it absent")?;
    expect_value(b, &k, b"other")
}

fn create_race(b: &Bucket, p: &str) -> Check {
    let k = format!("{p}k");
    let (first, second) = (kv(b.read(&k))?, kv(b.read(&k))?);
    if !matches!(kv(b.swap(first, b"a"))?, Swap::Done) {
        return Err("the first creator of an absent key lost".into());
    }
    expect_conflict(kv(b.swap(second, b"b"))?, "for a second creator of the same key")?;
    expect_value(b, &k, b"a")
}

fn no_aba(b: &Bucket, p: &str) -> Check {
    let k = format!("{p}k");
    kv(b.set(&k, b"v"))?;
    let seen = kv(b.read(&k))?;
    kv(b.delete(&k))?;
    kv(b.set(&k, b"v"))?;
    expect_conflict(kv(b.swap(seen, b"w"))?, "after delete + recreate (the store compares values)")?;
    expect_value(b, &k, b"v")
}

fn same_bytes(b: &Bucket, p: &str) -> Check {
    let k = format!("{p}k");
    kv(b.set(&k, b"v"))?;
    let seen = kv(b.read(&k))?;
    kv(b.set(&k, b"v"))?;
    expect_conflict(kv(b.swap(seen, b"w"))?, "after the same bytes were written again")
}

fn lost_swap(b: &Bucket, p: &str) -> Check {
    let k = format!("{p}k");
    kv(b.set(&k, b"0"))?;
    let (first, second) = (kv(b.read(&k))?, kv(b.read(&k))?);
    if !matches!(kv(b.swap(first, b"first"))?, Swap::Done) {
        return Err("an uncontended swap failed".into());
    }
    expect_conflict(kv(b.swap(second, b"second"))?, "for a swap whose read was overtaken")?;
    expect_value(b, &k, b"first")
}

fn fresh_handle(b: &Bucket, p: &str) -> Check {
    let k = format!("{p}k");
    kv(b.set(&k, b"1"))?;
    let stale = kv(b.read(&k))?;
    kv(b.set(&k, b"2"))?;
    let Swap::Conflict(fresh) = kv(b.swap(stale, b"3"))? else {
        return Err("a stale swap reported success".into());
    };
    if kv(fresh.value())?.as_deref() != Some(&b"2"[..]) {
        return Err("the handle of cas-failed does not hold the current value".into());
    }
    match kv(b.swap(fresh, b"3"))? {
        Swap::Done => expect_value(b, &k, b"3"),
        Swap::Conflict(_) => Err("the fresh handle of cas-failed could not win an uncontended swap".into()),
    }
}

fn increment(b: &Bucket, p: &str) -> Check {
    let k = format!("{p}n");
    let mut last = 0;
    for _ in 0..100 {
        last = kv(b.increment(&k, 1))?;
    }
    if last != 100 {
        return Err(format!("100 increments of 1 gave {last}"));
    }
    expect_value(b, &k, &100i64.to_le_bytes())
}

fn big_value(b: &Bucket, p: &str) -> Check {
    let k = format!("{p}big");
    let value: Vec<u8> = (0..1024 * 1024).map(|i: u32| (i % 251) as u8).collect();
    kv(b.set(&k, &value))?;
    if kv(b.get(&k))?.as_deref() != Some(&value[..]) {
        return Err("a 1 MiB value did not round-trip".into());
    }
    Ok(())
}

fn long_key(b: &Bucket, p: &str) -> Check {
    let k = format!("{p}{}", "x".repeat(257));
    match b.set(&k, b"v") {
        Err(_) => Ok(()),
        Ok(()) => Err(format!("a {}-byte key was accepted", k.len())),
    }
}

fn batch_round_trip(b: &Bucket, p: &str) -> Check {
    let keys: Vec<String> = (0..3).map(|i| format!("{p}{i}")).collect();
    let pairs: Vec<(String, Vec<u8>)> = keys.iter().map(|k| (k.clone(), k.as_bytes().to_vec())).collect();
    kv(b.set_many(&pairs))?;
    let got = kv(b.get_many(&keys))?;
    if got.iter().zip(&pairs).any(|((gk, gv), (k, v))| gk != k || gv.as_ref() != Some(v)) {
        return Err("get-many did not return what set-many wrote".into());
    }
    kv(b.delete_many(&keys))?;
    if kv(b.get_many(&keys))?.iter().any(|(_, v)| v.is_some()) {
        return Err("delete-many left keys behind".into());
    }
    Ok(())
}

/// Delete every key a check may have written (each check writes only these
/// names under its own prefix), without scanning the store.
fn cleanup(b: &Bucket, prefix: &str, checks: usize) {
    let keys: Vec<String> = (0..checks)
        .flat_map(|i| ["k", "n", "big", "0", "1", "2"].map(|name| format!("{prefix}{i}/{name}")))
        .collect();
    let _ = b.delete_many(&keys);
}
