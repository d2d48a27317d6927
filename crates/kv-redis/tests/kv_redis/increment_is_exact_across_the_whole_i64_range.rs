//! `increment` is exact wrapping 64-bit arithmetic on 8 little-endian bytes
//! over the whole range (the scripts' Lua has only doubles, exact to 2^53),
//! and any value that is not 8 bytes is refused with `NotACounter`, unchanged.

use cairn_kv::{Error, Store};

#[test]
fn increment_is_exact_across_the_whole_i64_range() {
    let server = crate::common::Server::start();
    let store = server.store("counter");
    let starts = [0i64, 1, -1, i64::MAX, i64::MIN, i64::MAX - 1, 1 << 53, (1 << 53) + 1, -(1 << 53) - 3, 0x0123_4567_89ab_cdef];
    let deltas = [0i64, 1, -1, 2, i64::MAX, i64::MIN, 1 << 32, (1 << 32) - 1, -(1 << 32), 0x7fff_ffff, 12345678901234567];
    for (i, start) in starts.iter().enumerate() {
        for (j, delta) in deltas.iter().enumerate() {
            let key = format!("t/acme/n/{i}/{j}");
            store.set("default", &key, &start.to_le_bytes()).unwrap();
            let got = store.increment("default", &key, *delta).unwrap();
            assert_eq!(got, start.wrapping_add(*delta), "{start} + {delta}");
            assert_eq!(store.get("default", &key).unwrap(), Some(got.to_le_bytes().to_vec()));
        }
    }
    for len in [0usize, 1, 7, 9, 100] {
        let key = format!("t/acme/text/{len}");
        let value = vec![7u8; len];
        store.set("default", &key, &value).unwrap();
        let before = store.read("default", &key).unwrap();
        assert_eq!(store.increment("default", &key, 1), Err(Error::NotACounter { len }));
        assert_eq!(store.read("default", &key).unwrap(), before, "a refused increment wrote");
    }
    // A deleted counter starts again from 0.
    store.increment("default", "t/acme/gone", 5).unwrap();
    store.delete("default", "t/acme/gone").unwrap();
    assert_eq!(store.increment("default", "t/acme/gone", 2).unwrap(), 2);
}
