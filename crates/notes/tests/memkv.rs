//! The in-memory store keeps the CAS promise and the store limits.
use cairn_notes::kv::{MAX_KEY_BYTES, MAX_VALUE_BYTES};
use cairn_notes::{Kv, KvError, MemKv, TenantKv};

#[test]
fn swap_fails_if_the_key_was_written_since_the_read_even_with_the_same_value() {
    let kv = MemKv::new();
    kv.set("k", b"a").unwrap();
    let (cas, v) = kv.read_cas("k").unwrap();
    assert_eq!(v, Some(b"a".to_vec()));
    kv.set("k", b"a").unwrap(); // same bytes: a value compare would miss this (ABA)
    assert!(!kv.swap(cas, b"b".to_vec()).unwrap());
    let (cas, _) = kv.read_cas("k").unwrap();
    assert!(kv.swap(cas, b"b".to_vec()).unwrap());
    assert_eq!(kv.get("k").unwrap(), Some(b"b".to_vec()));
}

#[test]
fn swap_on_an_absent_key_creates_it_only_if_still_absent() {
    let kv = MemKv::new();
    let (c1, v) = kv.read_cas("new").unwrap();
    assert!(v.is_none());
    let (c2, _) = kv.read_cas("new").unwrap();
    assert!(kv.swap(c1, b"first".to_vec()).unwrap());
    assert!(!kv.swap(c2, b"second".to_vec()).unwrap());
    assert_eq!(kv.get("new").unwrap(), Some(b"first".to_vec()));
}

#[test]
fn keys_and_values_over_the_limits_are_refused() {
    let kv = MemKv::new();
    assert_eq!(
        kv.set(&"k".repeat(MAX_KEY_BYTES + 1), b"x"),
        Err(KvError::KeyTooLong(MAX_KEY_BYTES + 1))
    );
    assert_eq!(
        kv.set("k", &vec![0; MAX_VALUE_BYTES + 1]),
        Err(KvError::ValueTooLarge(MAX_VALUE_BYTES + 1))
    );
    assert!(kv.set("k", &vec![0; MAX_VALUE_BYTES]).is_ok());
    let t = TenantKv::new(&kv, "acme").unwrap();
    assert!(
        matches!(
            t.set(&"k".repeat(MAX_KEY_BYTES - 3), b"x"),
            Err(KvError::KeyTooLong(_))
        ),
        "the prefix counts"
    );
    kv.delete("k").unwrap();
    assert_eq!(kv.get("k").unwrap(), None);
}
