//! A store written in the first layout (values beside their keys in one
//! `WITHOUT ROWID` table `kv`) opens with every key, value, stamp and
//! delete marker it had, and keeps them across later opens.

use crate::common::scratch;
use cairn_kv::{Observed, Store, Swap};
use cairn_kv_sqlite::SqliteStore;
use rusqlite::{Connection, params};
use std::path::Path;

/// Writes the first layout by hand, as a store of that version left it.
fn write_first_layout(path: &Path, big: &[u8]) {
    let c = Connection::open(path).unwrap();
    c.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE kv (bucket TEXT NOT NULL, key TEXT NOT NULL, value BLOB, stamp INTEGER NOT NULL,
             deleted_at INTEGER, PRIMARY KEY (bucket, key)) WITHOUT ROWID;
         CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
         INSERT INTO meta VALUES ('purge_floor', 3);",
    )
    .unwrap();
    // (bucket, key, value, stamp, expiry)
    type Row<'a> = (&'a str, &'a str, Option<&'a [u8]>, i64, Option<i64>);
    let rows: [Row; 5] = [
        ("default", "a", Some(b"alpha"), 4, None),
        ("default", "big", Some(big), 9, None),
        ("default", "empty", Some(b""), 5, None),
        ("default", "gone", None, 7, Some(1_700_000_000_000)),
        ("cache", "a", Some(b"other bucket"), 6, None),
    ];
    for (b, k, v, stamp, deleted_at) in rows {
        c.execute("INSERT INTO kv VALUES (?1, ?2, ?3, ?4, ?5)", params![b, k, v, stamp, deleted_at]).unwrap();
    }
}

fn tables(path: &Path) -> Vec<String> {
    let c = Connection::open(path).unwrap();
    let mut s = c.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").unwrap();
    s.query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap()
}

#[test]
fn every_key_keeps_its_value_stamp_and_delete_marker() {
    let path = scratch("migrate").join("kv.db");
    let big: Vec<u8> = (0..600_000u32).map(|i| (i % 251) as u8).collect();
    write_first_layout(&path, &big);

    for round in 0..2 {
        let s = SqliteStore::open(&path, false).unwrap();
        assert_eq!(s.get("default", "big").unwrap().as_deref(), Some(&big[..]), "round {round}");
        assert_eq!(s.get("default", "empty").unwrap().as_deref(), Some(&b""[..]), "round {round}: empty is not absent");
        assert_eq!(s.get("cache", "a").unwrap().as_deref(), Some(&b"other bucket"[..]), "round {round}");
        assert_eq!(s.get("default", "gone").unwrap(), None, "round {round}");
        assert_eq!(s.list_keys("default", None, 10).unwrap(), ["a", "big", "empty"], "round {round}: no delete marker listed");
        if round == 0 {
            let a = s.read("default", "a").unwrap();
            assert_eq!(a.value.as_deref(), Some(&b"alpha"[..]));
            assert_eq!(a.observed, Observed::Present(4), "the stamp carried over");
            // A swap against the stamp read before the move succeeds once;
            // the delete marker still refuses a swap that read too early.
            assert_eq!(s.swap("default", "a", Observed::Present(4), b"beta").unwrap(), Swap::Done);
            assert!(matches!(s.swap("default", "gone", Observed::Absent(5), b"x").unwrap(), Swap::Failed(_)));
            // New writes are stamped above everything the old layout held.
            let fresh = s.read("default", "new").unwrap();
            assert!(matches!(fresh.observed, Observed::Absent(n) if n >= 10), "sequence continues: {:?}", fresh.observed);
        } else {
            assert_eq!(s.get("default", "a").unwrap().as_deref(), Some(&b"beta"[..]), "the swap after the move survived a reopen");
        }
        s.close().unwrap();
    }
    assert_eq!(tables(&path), ["entries", "meta", "vals"], "the first layout's table is gone");
}

#[test]
fn overwriting_and_deleting_a_value_frees_its_row() {
    let path = scratch("vals").join("kv.db");
    let s = SqliteStore::open(&path, false).unwrap();
    s.set_many("default", &[("k", &[7u8; 300_000][..]), ("j", b"small")]).unwrap();
    s.set_many("default", &[("k", b"smaller now")]).unwrap();
    s.delete_many("default", &["j"]).unwrap();
    assert_eq!(s.get("default", "k").unwrap().as_deref(), Some(&b"smaller now"[..]));
    assert_eq!(s.get("default", "j").unwrap(), None);
    s.close().unwrap();
    let c = Connection::open(&path).unwrap();
    let vals: i64 = c.query_row("SELECT COUNT(*) FROM vals", [], |r| r.get(0)).unwrap();
    assert_eq!(vals, 1, "one live value, one row: an overwrite reuses its row and a delete frees it");
}
