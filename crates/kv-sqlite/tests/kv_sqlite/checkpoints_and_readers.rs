//! Checkpoints run off the commit path and still keep the WAL bounded;
//! reader connections are bounded and reused, however many threads read.
use crate::common::scratch;
use cairn_kv::{Store, Swap};
use cairn_kv_sqlite::SqliteStore;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

/// 256 KB of a value that differs per write, so nothing compresses it away.
fn value(i: usize) -> Vec<u8> {
    (0..256 * 1024).map(|j| ((i * 31 + j * 7) % 251) as u8).collect()
}

#[test]
fn a_busy_store_checkpoints_in_the_background_and_its_wal_starts_over() {
    let dir = scratch("ckpt");
    let path = dir.join("kv.db");
    let s = SqliteStore::open(&path, false).unwrap();
    // 900 writes of 256 KB: 225 MB through the WAL, below the writer's own
    // backstop checkpoint (256 MB), so only the checkpoint thread can keep
    // the WAL short (it starts the WAL over at 128 MB). Without it the WAL
    // would hold all 225 MB; with checkpoints that never let it start
    // over, it would grow just as much.
    let writes = 900;
    // A busy store, not a burst faster than a thread is scheduled (alone,
    // the 225 MB take under a second; on a loaded machine the checkpoint
    // thread may not run at all in that time, and the WAL then holds all of
    // it up to the writer's backstop): every 50 writes (12.5 MB, three
    // rounds' worth) wait, at most 10 s, until a round has run since the
    // last such wait.
    let (mut largest_wal, mut rounds) = (0, 0);
    for i in 0..writes {
        s.set("b", &format!("k{}", i % 50), &value(i)).unwrap();
        largest_wal = largest_wal.max(s.wal_bytes());
        if i % 50 == 49 {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while s.checkpoints().0 == rounds {
                assert!(std::time::Instant::now() < deadline, "no checkpoint ran in 10 s after 12.5 MB of writes");
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            rounds = s.checkpoints().0;
        }
    }
    // A writer that outpaces the checkpoints needs the thread's tail step to
    // start the WAL over; a slower one (a loaded machine) lets a round catch
    // up, and SQLite starts the WAL over before it reaches the tail's length
    // (128 MB). Either way it starts over, and never holds the 225 MB.
    let (passes, restarts) = s.checkpoints();
    assert!(
        passes >= 1 && (restarts >= 1 || largest_wal < 128 << 20),
        "{passes} checkpoints, {restarts} of them letting the WAL start over, and a WAL of {} MB, for 225 MB of writes",
        largest_wal >> 20
    );
    assert!(largest_wal < 200 << 20, "the WAL grew to {} MB for 225 MB of writes: it never started over", largest_wal >> 20);
    let db_bytes = std::fs::metadata(&path).unwrap().len();
    assert!(db_bytes > 10 << 20, "the database file has {db_bytes} bytes: no checkpoint copied the WAL into it");
    // Every key holds its last write, before and after a reopen.
    let check = |s: &SqliteStore| {
        for k in 0..50 {
            let last = (0..writes).rev().find(|i| i % 50 == k).unwrap();
            assert_eq!(s.get("b", &format!("k{k}")).unwrap().unwrap(), value(last), "k{k}");
        }
    };
    check(&s);
    s.close().unwrap();
    drop(s);
    let s = SqliteStore::open(&path, false).unwrap();
    check(&s);
}

#[test]
fn many_readers_share_a_bounded_pool_and_see_every_acknowledged_write() {
    let s = Arc::new(SqliteStore::open(&scratch("readers").join("kv.db"), false).unwrap());
    s.set("b", "counter", b"0").unwrap();
    // Reads of a large value take long enough that, on any number of cores,
    // many of the 32 threads are inside a read at once.
    s.set("b", "large", &value(0)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicUsize::new(0));
    // One writer keeps the writer connection busy, so reads go to the pool.
    let writer = {
        let (s, stop, written) = (s.clone(), stop.clone(), written.clone());
        std::thread::spawn(move || {
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let r = s.read("b", "counter").unwrap();
                i += 1;
                assert_eq!(s.swap("b", "counter", r.observed, i.to_string().as_bytes()).unwrap(), Swap::Done);
                written.store(i, Ordering::SeqCst);
            }
        })
    };
    let threads = 32;
    let barrier = Arc::new(Barrier::new(threads));
    let readers: Vec<_> = (0..threads)
        .map(|_| {
            let (s, barrier, written) = (s.clone(), barrier.clone(), written.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for _ in 0..300 {
                    // A read never shows less than what was acknowledged before it began.
                    let floor = written.load(Ordering::SeqCst);
                    let both = s.get_many("b", &["counter", "large"]).unwrap();
                    assert_eq!(both[1].as_deref(), Some(&value(0)[..]));
                    let v: usize = String::from_utf8(both[0].clone().unwrap()).unwrap().parse().unwrap();
                    assert!(v >= floor, "read {v} after write {floor} was acknowledged");
                }
            })
        })
        .collect();
    for r in readers {
        r.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let (open, peak) = s.reader_connections();
    assert!(peak >= 2, "32 threads reading beside a writer used {peak} reader connection at most");
    assert!(peak <= 8, "{peak} reader connections were open at once for {threads} threads; the pool holds 8");
    assert!(open <= peak);
}

#[test]
fn reads_after_close_are_refused() {
    let s = SqliteStore::open(&scratch("close").join("kv.db"), false).unwrap();
    s.set("b", "k", b"v").unwrap();
    s.close().unwrap();
    let e = s.get("b", "k").unwrap_err().to_string();
    assert!(e.contains("closed"), "{e}");
}
