//! The cache of committed rows never answers a read with a version older
//! than an acknowledged write or than what an earlier read returned, with
//! writers, readers, deletes and evictions all running at once.
use crate::common::scratch;
use cairn_kv::{Observed, Store, Swap};
use cairn_kv_sqlite::SqliteStore;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

const KEYS: usize = 8;

fn decode(v: &[u8]) -> u64 {
    std::str::from_utf8(v).unwrap().split('|').next().unwrap().parse().unwrap()
}

/// Counters that writers raise by compare-and-swap, padded so a handful of
/// them overflow a small cache, while readers check every answer against the
/// highest acknowledged value and against their own previous reads.
fn race(cache_bytes: usize) {
    let s = Arc::new(SqliteStore::open_with_cache(&scratch("cache").join("kv.db"), false, cache_bytes).unwrap());
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..KEYS).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(Barrier::new(6));
    let pad = "x".repeat(3000);
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (s, acked, barrier, pad) = (s.clone(), acked.clone(), barrier.clone(), pad.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let mut done = 0;
                for i in 0..600 {
                    let k = (i * 7 + w) % KEYS;
                    let key = format!("k{k}");
                    let r = s.read("b", &key).unwrap();
                    let next = r.value.as_deref().map_or(0, decode) + 1;
                    if let Swap::Done = s.swap("b", &key, r.observed, format!("{next}|{pad}").as_bytes()).unwrap() {
                        acked[k].fetch_max(next, Ordering::SeqCst);
                        done += 1;
                    }
                    // Other keys come and go, so deletes run through the cache too.
                    let churn = format!("churn{w}-{}", i % 5);
                    s.set_many("b", &[(&churn, pad.as_bytes())]).unwrap();
                    if i % 3 == 0 {
                        s.delete("b", &churn).unwrap();
                        assert_eq!(s.get("b", &churn).unwrap(), None, "{churn}: a read after its delete");
                    }
                }
                done
            })
        })
        .collect();
    let readers: Vec<_> = (0..3)
        .map(|r| {
            let (s, acked, stop, barrier) = (s.clone(), acked.clone(), stop.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let mut last = [0u64; KEYS];
                let mut reads = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    for k in 0..KEYS {
                        let key = format!("k{k}");
                        let floor = acked[k].load(Ordering::SeqCst);
                        let got = match (reads + r) % 3 {
                            0 => s.get("b", &key).unwrap(),
                            1 => s.read("b", &key).unwrap().value,
                            _ => s.get_many("b", &[key.as_str(), "k0"]).unwrap().remove(0),
                        };
                        let v = got.as_deref().map_or(0, decode);
                        assert!(v >= floor, "{key}: read {v} after {floor} was acknowledged");
                        assert!(v >= last[k], "{key}: read {v} after this reader had read {}", last[k]);
                        last[k] = v;
                        reads += 1;
                    }
                }
                reads
            })
        })
        .collect();
    let done: u64 = writers.into_iter().map(|h| h.join().unwrap()).sum();
    stop.store(true, Ordering::SeqCst);
    let reads: u64 = readers.into_iter().map(|h| h.join().unwrap()).sum();
    let total: u64 = (0..KEYS).map(|k| s.get("b", &format!("k{k}")).unwrap().as_deref().map_or(0, decode)).sum();
    assert_eq!(total, done, "every acknowledged increment is in the store exactly once");
    assert!(reads > 0);
    let (bytes, hits, _) = s.cache_counts();
    if cache_bytes == 0 {
        assert_eq!((bytes, hits), (0, 0), "a store without a cache keeps nothing");
    } else {
        assert!(bytes <= cache_bytes, "the cache holds {bytes} bytes, over its budget of {cache_bytes}");
        assert!(hits > 0, "reads were answered from memory");
    }
}

#[test]
fn reads_never_go_back_with_room_for_every_key() {
    race(32 << 20);
}

#[test]
fn reads_never_go_back_while_evictions_run() {
    // Room for about four padded values: rows leave and come back all the time.
    race(14_000);
}

#[test]
fn reads_never_go_back_without_a_cache() {
    race(0);
}

#[test]
fn a_swap_on_a_cached_read_still_fails_once_the_key_moved_on() {
    let s = SqliteStore::open(&scratch("cache-swap").join("kv.db"), false).unwrap();
    s.set("b", "k", b"1").unwrap();
    let first = s.read("b", "k").unwrap();
    assert!(matches!(first.observed, Observed::Present(_)));
    s.set("b", "k", b"2").unwrap();
    match s.swap("b", "k", first.observed, b"3").unwrap() {
        Swap::Failed(now) => assert_eq!(now.value.as_deref(), Some(&b"2"[..]), "the refusal carries what is there"),
        Swap::Done => panic!("a swap on a read older than the last write was written"),
    }
    let again = s.read("b", "k").unwrap();
    assert_eq!(s.swap("b", "k", again.observed, b"3").unwrap(), Swap::Done);
    assert_eq!(s.get("b", "k").unwrap().as_deref(), Some(&b"3"[..]));
}
