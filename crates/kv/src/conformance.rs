//! The conformance suite: what every [`Store`] backend must do.
//!
//! Each check takes a factory for a fresh, empty store and panics with a
//! message naming the broken rule. [`conformance_tests!`](crate::conformance_tests)
//! turns the whole list into one `#[test]` per check for a backend.

use crate::{Error, MAX_KEY_BYTES, MAX_VALUE_BYTES, Observed, Store, Swap};
use std::sync::{Arc, Barrier};
use std::thread;

/// A factory for fresh stores.
pub type Factory<'a> = &'a dyn Fn() -> Arc<dyn Store>;

const B: &str = "default";

/// Many threads each read → swap(counter + 1), retrying on conflict:
/// no increment may be lost.
pub fn update_race_loses_no_update(new: Factory) {
    let store = new();
    let (threads, rounds) = (8, 200);
    store.set(B, "counter", b"0").unwrap();
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (store, barrier) = (store.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                let mut conflicts = 0u64;
                for _ in 0..rounds {
                    loop {
                        let read = store.read(B, "counter").unwrap();
                        let n: u64 = String::from_utf8(read.value.unwrap()).unwrap().parse().unwrap();
                        match store.swap(B, "counter", read.observed, (n + 1).to_string().as_bytes()).unwrap() {
                            Swap::Done => break,
                            Swap::Failed(_) => conflicts += 1,
                        }
                    }
                }
                conflicts
            })
        })
        .collect();
    let _conflicts: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let last = String::from_utf8(store.get(B, "counter").unwrap().unwrap()).unwrap();
    assert_eq!(last, (threads * rounds).to_string(), "a swap overwrote another swap's update");
}

/// Two creators of one absent key, released together, many times: exactly
/// one wins each round.
pub fn create_race_has_exactly_one_winner(new: Factory) {
    let store = new();
    for round in 0..100 {
        let key = format!("create-{round}");
        let barrier = Arc::new(Barrier::new(2));
        let wins: usize = (0..2)
            .map(|who| {
                let (store, barrier, key) = (store.clone(), barrier.clone(), key.clone());
                thread::spawn(move || {
                    let read = store.read(B, &key).unwrap();
                    assert!(read.value.is_none());
                    barrier.wait();
                    matches!(store.swap(B, &key, read.observed, &[who]).unwrap(), Swap::Done) as usize
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .sum();
        assert_eq!(wins, 1, "round {round}: {wins} creators of one absent key won");
    }
}

/// A handle read before a delete and a recreate with the same bytes fails:
/// the store compares stamps, not values.
pub fn delete_and_recreate_fails_an_older_handle(new: Factory) {
    let store = new();
    store.set(B, "k", b"same").unwrap();
    let before = store.read(B, "k").unwrap();
    store.delete(B, "k").unwrap();
    store.set(B, "k", b"same").unwrap();
    assert!(
        matches!(store.swap(B, "k", before.observed, b"late").unwrap(), Swap::Failed(_)),
        "ABA: a handle read before delete + recreate swapped"
    );
    assert_eq!(store.get(B, "k").unwrap().as_deref(), Some(&b"same"[..]));
}

/// Writing the same bytes again is a write: an older handle fails.
pub fn rewriting_the_same_bytes_fails_an_older_handle(new: Factory) {
    let store = new();
    store.set(B, "k", b"v").unwrap();
    let before = store.read(B, "k").unwrap();
    store.set(B, "k", b"v").unwrap();
    assert!(matches!(store.swap(B, "k", before.observed, b"w").unwrap(), Swap::Failed(_)));
}

/// A handle that saw the key absent fails if the key was created meanwhile,
/// and also if it was created and deleted again.
pub fn absent_handle_fails_after_create_or_create_and_delete(new: Factory) {
    let store = new();
    let seen = store.read(B, "a").unwrap();
    store.set(B, "a", b"first").unwrap();
    assert!(
        matches!(store.swap(B, "a", seen.observed, b"second").unwrap(), Swap::Failed(_)),
        "create-if-absent overwrote a key created after the read"
    );
    assert_eq!(store.get(B, "a").unwrap().as_deref(), Some(&b"first"[..]));

    let seen = store.read(B, "b").unwrap();
    store.set(B, "b", b"x").unwrap();
    store.delete(B, "b").unwrap();
    assert!(matches!(store.swap(B, "b", seen.observed, b"y").unwrap(), Swap::Failed(_)));
    store.sweep(0).unwrap();
    assert!(
        matches!(store.swap(B, "b", seen.observed, b"y").unwrap(), Swap::Failed(_)),
        "sweeping delete markers let a stale absent handle swap"
    );
    assert!(store.get(B, "b").unwrap().is_none());
}

/// A failed swap hands back a fresh read that can win the next attempt.
pub fn failed_swap_returns_a_fresh_read(new: Factory) {
    let store = new();
    store.set(B, "k", b"1").unwrap();
    let stale = store.read(B, "k").unwrap();
    store.set(B, "k", b"2").unwrap();
    let Swap::Failed(fresh) = store.swap(B, "k", stale.observed, b"3").unwrap() else {
        panic!("a stale swap reported success");
    };
    assert_eq!(fresh.value.as_deref(), Some(&b"2"[..]));
    assert_eq!(store.swap(B, "k", fresh.observed, b"3").unwrap(), Swap::Done);
    assert_eq!(store.get(B, "k").unwrap().as_deref(), Some(&b"3"[..]));
}

/// Concurrent increments are never lost; the counter is 8 LE bytes.
pub fn increment_is_atomic(new: Factory) {
    let store = new();
    let (threads, rounds) = (8, 500);
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let store = store.clone();
            thread::spawn(move || {
                for _ in 0..rounds {
                    store.increment(B, "n", 1).unwrap();
                }
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    let total = (threads * rounds) as i64;
    assert_eq!(store.increment(B, "n", 0).unwrap(), total);
    assert_eq!(store.get(B, "n").unwrap().unwrap(), total.to_le_bytes().to_vec());
    store.set(B, "text", b"abc").unwrap();
    assert_eq!(store.increment(B, "text", 1), Err(Error::NotACounter { len: 3 }));
}

/// Values up to 1 MiB are stored whole; one byte more is refused and
/// nothing is written.
pub fn values_up_to_one_mebibyte_round_trip(new: Factory) {
    let store = new();
    let big: Vec<u8> = (0..MAX_VALUE_BYTES).map(|i| (i * 31 % 251) as u8).collect();
    store.set(B, "big", &big).unwrap();
    assert_eq!(store.get(B, "big").unwrap().as_deref(), Some(&big[..]));
    let too_big = vec![1u8; MAX_VALUE_BYTES + 1];
    assert_eq!(store.set(B, "big", &too_big), Err(Error::ValueTooLarge { len: MAX_VALUE_BYTES + 1 }));
    let read = store.read(B, "big").unwrap();
    assert!(matches!(
        store.swap(B, "big", read.observed, &too_big),
        Err(Error::ValueTooLarge { .. })
    ));
    assert_eq!(store.get(B, "big").unwrap().as_deref(), Some(&big[..]), "a refused write changed the value");
}

/// Keys over 256 bytes are refused by every operation with a clear error.
pub fn keys_over_256_bytes_are_refused(new: Factory) {
    let store = new();
    let ok = "k".repeat(MAX_KEY_BYTES);
    store.set(B, &ok, b"v").unwrap();
    let long = "k".repeat(MAX_KEY_BYTES + 1);
    let want = Error::KeyTooLong { len: MAX_KEY_BYTES + 1 };
    assert_eq!(store.set(B, &long, b"v"), Err(want.clone()));
    assert_eq!(store.read(B, &long).map(|_| ()), Err(want.clone()));
    assert_eq!(store.delete(B, &long), Err(want.clone()));
    assert_eq!(store.increment(B, &long, 1), Err(want.clone()));
    assert_eq!(store.swap(B, &long, Observed::Absent(0), b"v").map(|_| ()), Err(want.clone()));
    assert!(want.to_string().contains("at most 256 bytes"), "error text must name the limit");
    assert_eq!(store.list_keys(B, None, 10).unwrap(), vec![ok]);
}

/// A batch with one bad entry writes nothing.
pub fn batches_are_all_or_nothing(new: Factory) {
    let store = new();
    let too_big = vec![0u8; MAX_VALUE_BYTES + 1];
    let r = store.set_many(B, &[("a", b"1"), ("b", &too_big)]);
    assert!(matches!(r, Err(Error::ValueTooLarge { .. })));
    assert!(store.get(B, "a").unwrap().is_none(), "half a batch was written");
    store.set_many(B, &[("a", b"1"), ("b", b"2"), ("c", b"3")]).unwrap();
    store.delete_many(B, &["a", "c", "missing"]).unwrap();
    assert_eq!(store.list_keys(B, None, 10).unwrap(), vec!["b".to_string()]);
}

/// Keys list in pages, buckets do not mix, deleted keys do not show.
pub fn keys_list_in_pages_per_bucket(new: Factory) {
    let store = new();
    for i in 0..25 {
        store.set(B, &format!("key-{i:02}"), b"v").unwrap();
    }
    store.set("other", "key-99", b"v").unwrap();
    store.delete(B, "key-03").unwrap();
    let mut all = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = store.list_keys(B, after.as_deref(), 10).unwrap();
        if page.is_empty() {
            break;
        }
        after = page.last().cloned();
        all.extend(page);
    }
    assert_eq!(all.len(), 24);
    assert!(!all.contains(&"key-03".to_string()));
    assert!(!all.contains(&"key-99".to_string()));
    assert!(store.get("other", "key-01").unwrap().is_none());
}

/// After `close`, operations fail with a backend error instead of panicking.
pub fn closed_store_refuses_operations(new: Factory) {
    let store = new();
    store.set(B, "k", b"v").unwrap();
    store.close().unwrap();
    assert!(matches!(store.get(B, "k"), Err(Error::Backend(_))));
}

/// Generate one `#[test]` per conformance check for a backend, given an
/// expression producing a fresh `Arc<dyn Store>`.
#[macro_export]
macro_rules! conformance_tests {
    ($factory:expr) => {
        $crate::conformance_tests!(@each $factory;
            update_race_loses_no_update,
            create_race_has_exactly_one_winner,
            delete_and_recreate_fails_an_older_handle,
            rewriting_the_same_bytes_fails_an_older_handle,
            absent_handle_fails_after_create_or_create_and_delete,
            failed_swap_returns_a_fresh_read,
            increment_is_atomic,
            values_up_to_one_mebibyte_round_trip,
            keys_over_256_bytes_are_refused,
            batches_are_all_or_nothing,
            keys_list_in_pages_per_bucket,
            closed_store_refuses_operations
        );
    };
    (@each $factory:expr; $($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                $crate::conformance::$name(&$factory);
            }
        )*
    };
}
