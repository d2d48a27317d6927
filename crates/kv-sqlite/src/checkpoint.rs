//! Checkpoints off the commit path.
//!
//! In WAL mode every commit appends to the WAL, and a checkpoint copies the
//! WAL's pages back into the database file and syncs it. Left to SQLite
//! (`wal_autocheckpoint`), the checkpoint runs inside whichever commit
//! crosses the threshold, on the writer connection: that writer, and every
//! writer queued behind it, waits while megabytes are copied and synced
//! (see `docs/decisions/checkpoints.md` for how long, measured).
//!
//! Here the writer connection checkpoints only as a backstop, at a WAL far
//! longer than this thread lets it grow ([`WRITER_CHECKPOINT_FRAMES`]). A
//! thread of its own, on its own connection, checkpoints once writes have
//! added [`THRESHOLD`] bytes since the last one:
//!
//! 1. **The bulk, beside the writers**: a `PASSIVE` checkpoint copies every
//!    page committed so far while writers go on appending (SQLite lets one
//!    checkpointer run beside one writer and any readers).
//! 2. **The tail, between transactions**, once the WAL is longer than
//!    [`RESTART_FRAMES`]: holding the writer (no batch runs), a second
//!    `PASSIVE` checkpoint copies what was committed during step 1, usually
//!    a few pages, and syncs the WAL and the database file. The WAL is then
//!    wholly in the database, so the next write transaction starts the WAL
//!    over from its beginning instead of growing it. Without this step a
//!    busy store's WAL would never be wholly copied, and would grow without
//!    end.
//!
//! Every writer waits while the tail is held, so what can move out of it
//! does: right before taking the writer, this thread flushes the WAL and
//! the database file itself (`fdatasync`), beside the writers, and the
//! syncs under the hold then find only what was written in between (the
//! WAL alone, without the database file, left holds as long as before; the
//! effect is measured in `docs/decisions/checkpoints.md`). The database file is synced through the
//! store's own descriptor of it (the one holding the advisory lock), never
//! a descriptor opened here: closing any descriptor of the database file
//! drops every POSIX lock SQLite holds on it in this process. The tail also
//! comes at twice the length it first did, so half as often.
//!
//! ## What this keeps
//!
//! - **Durability is unchanged.** A checkpoint only copies committed pages
//!   into the database file; an acknowledged write is in the WAL before it
//!   is acknowledged, whether or not a checkpoint has copied it yet, and
//!   recovery after a crash replays the WAL as before.
//! - **A failed checkpoint loses nothing.** The WAL keeps the pages it did
//!   not copy; the next checkpoint tries again. Closing the store still
//!   checkpoints (`TRUNCATE`) on the writer connection, after this thread
//!   has stopped.

use crate::group::Group;
use rusqlite::Connection;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

/// Bytes of values written between two checkpoints (about 1,000 pages).
pub(crate) const THRESHOLD: u64 = 4 << 20;

/// WAL length (frames of one page) past which the checkpoint also copies
/// the tail while holding the writer, so the WAL starts over (~128 MB).
pub(crate) const RESTART_FRAMES: i64 = 32768;

/// The backstop: should writes outrun this thread, the writer connection
/// checkpoints by itself at this many frames (~256 MB), as SQLite does by
/// default at 1,000, so the WAL never grows without bound.
pub(crate) const WRITER_CHECKPOINT_FRAMES: i64 = 65536;

struct Shared {
    /// Bytes written since the last checkpoint: added to without a lock on
    /// every write; the lock below is taken only to wake the thread.
    bytes: AtomicU64,
    /// Set when the thread is to stop; its lock orders a wake after the
    /// thread looked at `bytes`, so no wake is lost.
    stop: Mutex<bool>,
    wake: Condvar,
    /// Checkpoints run beside the writers, and those that also copied the tail.
    passes: AtomicU64,
    restarts: AtomicU64,
}

/// The checkpoint thread: told how much was written, it checkpoints when
/// enough was; stopped (and joined) when dropped.
pub(crate) struct Checkpointer {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Checkpointer {
    /// Starts the thread on its own connection to `path`, whose WAL is `wal`
    /// and which the store holds open as `db` (synced, never closed, here).
    pub fn start(path: &Path, wal: &Path, db: Arc<std::fs::File>, group: Arc<Group>) -> crate::Result<Self> {
        let conn = Connection::open(path).map_err(crate::backend)?;
        conn.execute_batch("PRAGMA busy_timeout = 5000;").map_err(crate::backend)?;
        let shared = Arc::new(Shared {
            bytes: AtomicU64::new(0),
            stop: Mutex::new(false),
            wake: Condvar::new(),
            passes: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("cairn-sqlite-checkpoint".into())
            .spawn({
                let wal = wal.to_path_buf();
                move || run(&s, &conn, &group, &wal, &db)
            })
            .map_err(|e| cairn_kv::Error::Backend(format!("cannot start the checkpoint thread: {e}")))?;
        Ok(Self { shared, thread: Mutex::new(Some(thread)) })
    }

    /// A write of `bytes` committed.
    pub fn wrote(&self, bytes: usize) {
        let before = self.shared.bytes.fetch_add(bytes as u64, Ordering::AcqRel);
        // Only the write that crosses the threshold wakes the thread; a
        // thread busy checkpointing looks at `bytes` again before it waits.
        if before < THRESHOLD && before + bytes as u64 >= THRESHOLD {
            let _held = self.shared.stop.lock().unwrap_or_else(PoisonError::into_inner);
            self.shared.wake.notify_one();
        }
    }

    /// Checkpoints run so far, and how many of them also copied the tail
    /// under the writer (the WAL started over after each).
    pub fn counts(&self) -> (u64, u64) {
        (self.shared.passes.load(Ordering::Relaxed), self.shared.restarts.load(Ordering::Relaxed))
    }

    /// Stops the thread and waits for it (a checkpoint under way finishes).
    pub fn stop(&self) {
        *self.shared.stop.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = t.join();
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A `PASSIVE` checkpoint: the WAL's length in frames.
fn passive(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(1))
}

/// Flushes the WAL and the database file to the disk, beside the writers,
/// so the syncs of a checkpoint right after have little left to write.
/// Best effort: what cannot be synced here is left to the checkpoint's own
/// sync. (No lock lives on the WAL file, so its descriptor may be closed.)
fn flush(wal: &Path, db: &std::fs::File) {
    if let Ok(f) = std::fs::File::open(wal) {
        let _ = f.sync_data();
    }
    let _ = db.sync_data();
}

fn run(shared: &Shared, conn: &Connection, group: &Group, wal: &Path, db: &std::fs::File) {
    loop {
        {
            let mut stop = shared.stop.lock().unwrap_or_else(PoisonError::into_inner);
            while shared.bytes.load(Ordering::Acquire) < THRESHOLD && !*stop {
                stop = shared.wake.wait(stop).unwrap_or_else(PoisonError::into_inner);
            }
            if *stop {
                return;
            }
        }
        shared.bytes.store(0, Ordering::Release);
        // The bulk, beside the writers. A failure (a full disk) leaves the
        // pages in the WAL for the next round.
        let Ok(frames) = passive(conn) else { continue };
        shared.passes.fetch_add(1, Ordering::Relaxed);
        // The tail, between transactions, once the WAL is long enough to
        // be worth starting over: the sync this costs blocks every writer.
        if frames >= RESTART_FRAMES {
            flush(wal, db);
            if group.exclusive(|_| passive(conn)).is_ok() {
                shared.restarts.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
