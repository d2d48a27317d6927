//! Group commit: concurrent writers share transactions, each is answered only
//! once its transaction committed, and reads beside the writer never let a
//! swap succeed over a write it did not see.
use crate::common::scratch;
use cairn_kv::{Observed, Store, Swap};
use cairn_kv_sqlite::SqliteStore;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};

#[test]
fn concurrent_writers_share_transactions_and_each_gets_its_own_answer() {
    let s = Arc::new(SqliteStore::open(&scratch("group").join("kv.db"), false).unwrap());
    let (threads, rounds) = (16, 200);
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (s, barrier) = (s.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..rounds {
                    let key = format!("t{t}");
                    let r = s.read("b", &key).unwrap();
                    let value = format!("{t}-{i}");
                    assert_eq!(s.swap("b", &key, r.observed, value.as_bytes()).unwrap(), Swap::Done, "{key} had one writer");
                    // A stale swap in the same batch stream is refused with what is there.
                    match s.swap("b", &key, r.observed, b"stale").unwrap() {
                        Swap::Failed(now) => assert_eq!(now.value.as_deref(), Some(value.as_bytes())),
                        Swap::Done => panic!("{key}: a swap on a spent read was written"),
                    }
                    s.set_many("b", &[(&format!("t{t}-log-{i}"), value.as_bytes())]).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    for t in 0..threads {
        assert_eq!(s.get("b", &format!("t{t}")).unwrap().unwrap(), format!("{t}-{}", rounds - 1).as_bytes());
        for i in 0..rounds {
            assert!(s.get("b", &format!("t{t}-log-{i}")).unwrap().is_some(), "t{t}-log-{i} acknowledged but missing");
        }
    }
    let (commits, writes) = s.commits();
    assert_eq!(writes, (threads * rounds * 3) as u64, "every write went through a committed transaction");
    assert!(commits < writes, "{threads} threads writing at once never shared a transaction ({commits} commits for {writes} writes)");
}

#[test]
fn absent_reads_beside_a_busy_writer_let_exactly_one_creator_win_and_never_miss_a_delete() {
    let s = Arc::new(SqliteStore::open(&scratch("creators").join("kv.db"), false).unwrap());
    // A writer keeps the writer connection busy, so reads go to the pool.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let busy = {
        let (s, stop) = (s.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                s.set("b", &format!("noise-{}", i % 64), &vec![b'n'; 4096]).unwrap();
                i += 1;
            }
        })
    };
    let threads = 8;
    for round in 0..100 {
        let key = format!("k{round}");
        let barrier = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (s, barrier, key) = (s.clone(), barrier.clone(), key.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let r = s.read("b", &key).unwrap();
                    if r.value.is_some() {
                        return false;
                    }
                    assert!(matches!(r.observed, Observed::Absent(_)));
                    s.swap("b", &key, r.observed, format!("{t}").as_bytes()).unwrap() == Swap::Done
                })
            })
            .collect();
        let wins = handles.into_iter().map(|h| h.join().unwrap() as usize).sum::<usize>();
        assert_eq!(wins, 1, "round {round}: {wins} creators of one absent key were told they won");
    }
    // No ABA through a pooled read: an absent read, then a create and a
    // delete of the key, and the swap carrying that read must fail.
    for round in 0..300 {
        let key = format!("aba{round}");
        let r = s.read("b", &key).unwrap();
        s.set("b", &key, b"created").unwrap();
        s.delete("b", &key).unwrap();
        assert!(
            matches!(s.swap("b", &key, r.observed, b"late").unwrap(), Swap::Failed(_)),
            "round {round}: a swap on an absent read succeeded over a create and a delete it never saw"
        );
    }
    stop.store(true, Ordering::Relaxed);
    busy.join().unwrap();
}

/// Child half of the kill test: 8 threads write keys forever, printing each
/// acknowledged key; killed by the parent.
#[test]
fn group_durability_child_writers() {
    let Ok(path) = std::env::var("CAIRN_KV_GROUP_CHILD") else { return };
    let store = Arc::new(SqliteStore::open(std::path::Path::new(&path), false).unwrap());
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in 0u64.. {
                    let key = format!("t{t}-{i}");
                    let read = store.read("b", &key).unwrap();
                    assert_eq!(store.swap("b", &key, read.observed, &i.to_le_bytes()).unwrap(), Swap::Done);
                    println!("acked {key}");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn writes_acknowledged_from_shared_transactions_survive_sigkill() {
    let path = scratch("group-durable").join("kv.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "group_commit::group_durability_child_writers", "--nocapture", "--test-threads=1"])
        .env("CAIRN_KV_GROUP_CHILD", &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut acked = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let Ok(line) = line else { break };
        if let Some(k) = line.strip_prefix("acked ") {
            acked.push(k.to_string());
            if acked.len() == 2000 {
                break;
            }
        }
    }
    // SIGKILL while the other writers are mid-batch: no destructors, no checkpoint.
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(acked.len(), 2000, "the child stopped acknowledging writes");
    let store = SqliteStore::open(&path, false).unwrap();
    for k in &acked {
        let i: u64 = k.rsplit('-').next().unwrap().parse().unwrap();
        assert_eq!(store.get("b", k).unwrap(), Some(i.to_le_bytes().to_vec()), "acknowledged write {k} was lost");
    }
}
