//! The SQLite store keeps the CAS promise, and what it acknowledged survives
//! the process being killed.
use crate::common::scratch;
use cairn_kv::Store;
use cairn_kv_sqlite::SqliteStore;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;

fn fresh() -> Arc<dyn Store> {
    Arc::new(SqliteStore::open(&scratch("conf").join("kv.db"), false).unwrap())
}

cairn_kv::conformance_tests!(fresh);

/// Child half of the durability test: writes keys forever, printing each
/// acknowledged key; killed by the parent.
#[test]
fn durability_child_writer() {
    let Ok(path) = std::env::var("CAIRN_KV_DURABILITY_CHILD") else { return };
    let store = SqliteStore::open(std::path::Path::new(&path), false).unwrap();
    for i in 0u64.. {
        let read = store.read("default", &format!("k{i}")).unwrap();
        store.swap("default", &format!("k{i}"), read.observed, &i.to_le_bytes()).unwrap();
        println!("acked {i}");
    }
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let path = scratch("durable").join("kv.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "sqlite_conformance::durability_child_writer", "--nocapture", "--test-threads=1"])
        .env("CAIRN_KV_DURABILITY_CHILD", &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut last_acked = None;
    while let Some(Ok(line)) = lines.next() {
        if let Some(n) = line.strip_prefix("acked ") {
            last_acked = Some(n.parse::<u64>().unwrap());
            if last_acked == Some(500) {
                break;
            }
        }
    }
    // SIGKILL: no destructors, no checkpoint, no close.
    child.kill().unwrap();
    child.wait().unwrap();
    let last = last_acked.expect("the child never acknowledged a write");
    let store = SqliteStore::open(&path, false).unwrap();
    for i in 0..=last {
        assert_eq!(store.get("default", &format!("k{i}")).unwrap(), Some(i.to_le_bytes().to_vec()), "acknowledged write k{i} was lost");
    }
}

#[test]
fn a_second_process_cannot_open_the_same_database() {
    let path = scratch("exclusive").join("kv.db");
    let first = SqliteStore::open(&path, false).unwrap();
    first.set("default", "k", b"v").unwrap();
    let second = SqliteStore::open(&path, false);
    let err = second.err().expect("a second opener must be refused").to_string();
    assert!(err.contains("in use by another process"), "unclear error: {err}");
}

#[test]
fn stamps_are_never_reused_across_restarts() {
    let path = scratch("restart").join("kv.db");
    let store = SqliteStore::open(&path, false).unwrap();
    store.set("default", "k", b"v").unwrap();
    let before = store.read("default", "k").unwrap();
    store.delete("default", "k").unwrap();
    store.sweep(0).unwrap();
    store.close().unwrap();
    drop(store);
    let store = SqliteStore::open(&path, false).unwrap();
    store.set("default", "k", b"v").unwrap();
    assert!(matches!(store.swap("default", "k", before.observed, b"w").unwrap(), cairn_kv::Swap::Failed(_)), "a stamp was reused after restart");
}
