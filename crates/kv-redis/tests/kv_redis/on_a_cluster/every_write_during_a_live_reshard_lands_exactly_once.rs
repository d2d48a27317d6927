//! Half of the slots move from one primary to another (`redis-cli --cluster
//! reshard`, keys moved with `MIGRATE`) while eight writers increment
//! counters across 64 tenants: every acknowledged increment is counted
//! exactly once, the only other answer is a clear `Unavailable` (whose
//! outcome the writer does not know), and the store did follow the
//! cluster's redirections.

use cairn_kv::{Error, Store};
use cairn_kv_redis::server::Cluster;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[test]
fn every_write_during_a_live_reshard_lands_exactly_once() {
    let cluster = Cluster::start(3, 1);
    let store = Arc::new(cluster.store("reshard", 1));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (store, stop) = (store.clone(), stop.clone());
            std::thread::spawn(move || {
                let (mut acked, mut unknown) = (vec![0u64; 8], vec![0u64; 8]);
                let mut i = 0usize;
                while !stop.load(Ordering::SeqCst) {
                    let t = i % 8;
                    let key = format!("t/tenant-{}/count", w * 8 + t);
                    match store.increment("default", &key, 1) {
                        Ok(_) => acked[t] += 1,
                        Err(Error::Unavailable(_)) => unknown[t] += 1,
                        Err(e) => panic!("writer {w}: {e}"),
                    }
                    i += 1;
                }
                (acked, unknown)
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let took = cluster.reshard(&[0, 2], 1, 8192);
    std::thread::sleep(std::time::Duration::from_millis(300));
    stop.store(true, Ordering::SeqCst);
    let results: Vec<(Vec<u64>, Vec<u64>)> = writers.into_iter().map(|h| h.join().unwrap()).collect();
    let (mut total, mut unknown_total) = (0, 0);
    for (w, (acked, unknown)) in results.iter().enumerate() {
        for t in 0..8 {
            let key = format!("t/tenant-{}/count", w * 8 + t);
            let raw = store.get("default", &key).unwrap().unwrap_or_default();
            let value = if raw.is_empty() { 0 } else { i64::from_le_bytes(raw.try_into().unwrap()) as u64 };
            assert!(value >= acked[t] && value <= acked[t] + unknown[t], "{key}: {value} counted, {} acknowledged, {} unknown", acked[t], unknown[t]);
            total += acked[t];
            unknown_total += unknown[t];
        }
    }
    let moved = cluster.shape(0).primaries.iter().map(|p| p.slots).max().unwrap();
    assert_eq!(moved, 5462 + 8192, "the reshard did not move the slots: {:?}", cluster.shape(0).primaries);
    let redirects: u64 = store.nodes().iter().map(|n| n.redirects).sum();
    eprintln!("reshard of 8192 slots took {took:?}: {total} increments acknowledged, {unknown_total} unknown, {redirects} redirections followed");
    assert!(total > 500, "only {total} increments acknowledged");
    assert!(redirects > 0, "no MOVED or ASK was followed: the reshard did not overlap the writes");
}
