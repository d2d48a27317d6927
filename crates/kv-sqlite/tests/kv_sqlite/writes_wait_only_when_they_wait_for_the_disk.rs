//! Which calls a host should run on threads made for waiting
//! (`Store::waits`): with `fsync` every write waits for the disk; without it
//! a commit only copies pages into the OS cache, so no call is worth a hop.

use cairn_kv::{Store, Waits};
use cairn_kv_sqlite::SqliteStore;

#[test]
fn with_fsync_writes_wait_and_reads_do_not() {
    let dir = crate::common::scratch("waits-fsync");
    let store = SqliteStore::open(&dir.join("kv.db"), true).unwrap();
    assert_eq!(store.waits(), Waits::Writes);
    assert!(store.waits().call(true), "a write waits for the disk");
    assert!(!store.waits().call(false), "a read does not");
    store.close().unwrap();
}

#[test]
fn without_fsync_no_call_waits() {
    let dir = crate::common::scratch("waits-plain");
    let store = SqliteStore::open(&dir.join("kv.db"), false).unwrap();
    assert_eq!(store.waits(), Waits::Never);
    assert!(!store.waits().call(true) && !store.waits().call(false));
    store.close().unwrap();
}
