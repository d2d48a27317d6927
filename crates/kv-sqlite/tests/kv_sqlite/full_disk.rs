//! Under concurrent writers, a write refused by a full database gets
//! `Error::Full` and leaves nothing behind, every acknowledged write stays,
//! and racing swaps lose nothing.
use cairn_kv::{Error, Observed, Store, Swap};
use cairn_kv_sqlite::SqliteStore;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn store(name: &str) -> Arc<SqliteStore> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("cairn-gc-{}-{name}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst)));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Arc::new(SqliteStore::open(&dir.join("kv.db"), false).unwrap())
}

#[test]
fn a_full_database_refuses_the_write_that_does_not_fit_and_keeps_every_acknowledged_one() {
    let s = store("full");
    s.limit_pages_for_tests(64).unwrap();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let s = s.clone();
            std::thread::spawn(move || {
                let mut acked = Vec::new();
                let mut full = Vec::new();
                for i in 0..400 {
                    let key = format!("t{t}-{i}");
                    // Every 7th write is large; small ones keep fitting for a while.
                    let value = vec![b'x'; if i % 7 == 0 { 20_000 } else { 200 }];
                    match s.set("b", &key, &value) {
                        Ok(()) => acked.push((key, value.len())),
                        Err(Error::Full(_)) => full.push(key),
                        Err(e) => panic!("{key}: {e:?}"),
                    }
                }
                (acked, full)
            })
        })
        .collect();
    let (mut acked, mut full) = (Vec::new(), Vec::new());
    for t in threads {
        let (a, f) = t.join().unwrap();
        acked.extend(a);
        full.extend(f);
    }
    assert!(!full.is_empty(), "the cap was never reached");
    assert!(!acked.is_empty());
    for (k, len) in &acked {
        assert_eq!(s.get("b", k).unwrap().map(|v| v.len()), Some(*len), "acknowledged {k} is gone");
    }
    for k in &full {
        assert_eq!(s.get("b", k).unwrap(), None, "refused {k} was written");
    }
}

#[test]
fn concurrent_swaps_on_one_key_lose_nothing_and_stamps_only_grow() {
    let s = store("swaps");
    s.set("b", "n", &0u64.to_le_bytes()).unwrap();
    let threads: Vec<_> = (0..16)
        .map(|_| {
            let s = s.clone();
            std::thread::spawn(move || {
                let mut done = 0;
                let mut seen = Vec::new();
                while done < 100 {
                    let r = s.read("b", "n").unwrap();
                    if let Observed::Present(stamp) = r.observed {
                        seen.push(stamp);
                    }
                    let n = u64::from_le_bytes(r.value.unwrap().try_into().unwrap());
                    if let Swap::Done = s.swap("b", "n", r.observed, &(n + 1).to_le_bytes()).unwrap() {
                        done += 1;
                    }
                }
                seen
            })
        })
        .collect();
    for t in threads {
        let seen = t.join().unwrap();
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "a thread saw a stamp go back: {seen:?}");
    }
    let n = u64::from_le_bytes(s.get("b", "n").unwrap().unwrap().try_into().unwrap());
    assert_eq!(n, 1600, "an acknowledged swap was lost");
}
