//! Group commit: concurrent writers share one SQLite transaction.
//!
//! A writer queues its [`Op`] and either leads or waits. The leader is
//! whoever holds the writer connection: it takes the queued writes (its own
//! among them, unless an earlier leader already ran it), runs them in one
//! transaction in queue order, answers each, releases the connection and
//! hands off: if writes are still queued, it wakes the first of them to lead
//! next. A writer whose write another leader ran just gets its answer.
//!
//! ## What this keeps, and why
//!
//! - **An answer only after the commit.** A leader answers the writes of a
//!   batch after `COMMIT` returned, so an acknowledged write is in the WAL
//!   (and survives the process being killed) exactly as with a transaction
//!   of its own. If `COMMIT` fails, nothing of the batch was written.
//! - **Each write is what it would be alone.** The batch runs the writes in
//!   queue order on one connection, so each sees the ones before it as a
//!   serial order would. If any write fails inside the batch, the whole
//!   transaction is rolled back (SQLite may already have rolled it back on
//!   a full disk or an I/O error, which would silently drop the earlier
//!   writes of the batch) and every write of the batch runs again in a
//!   transaction of its own: a refusal (a full disk) refuses only the write
//!   that does not fit.
//! - **No write is left waiting.** Every release of the writer connection is
//!   followed by [`Group::hand_off`], which looks at the queue under its
//!   lock. A writer queues under that lock and only then tries the
//!   connection. So either the hand-off sees the queued write (and wakes its
//!   writer to lead, or a leader in between takes it), or the write was
//!   queued after the hand-off looked, hence after the release, and its
//!   writer's own try finds the connection free or held by a leader that
//!   will hand off in turn.
//! - **Stamps.** The sequence only grows (a rolled back batch skips its
//!   numbers, it never reuses them), and [`Group::committed`] is published
//!   after each commit: the highest stamp readers may rely on (see the
//!   crate's `reading`).

use crate::Tx;
use crate::cache::Cache;
use cairn_kv::{Error, Observed, Result, Swap};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, TryLockError};

/// A write, owned, so another thread's leader can run it.
pub(crate) enum Op {
    /// Compare-and-swaps, each on its own.
    Swaps { bucket: String, swaps: Vec<(String, Observed, Vec<u8>)> },
    /// Unconditional writes, all or nothing.
    Set { bucket: String, pairs: Vec<(String, Vec<u8>)> },
    /// Deletes, all or nothing.
    Delete { bucket: String, keys: Vec<String> },
    /// A counter.
    Increment { bucket: String, key: String, delta: i64 },
    /// Drop delete markers older than this many milliseconds.
    Sweep { older_than_ms: u64 },
}

impl Op {
    /// Bytes of values the op carries, to bound a batch.
    pub fn weight(&self) -> usize {
        match self {
            Op::Swaps { swaps, .. } => swaps.iter().map(|s| s.2.len()).sum(),
            Op::Set { pairs, .. } => pairs.iter().map(|p| p.1.len()).sum(),
            _ => 0,
        }
    }
}

/// What a write answers.
#[derive(Debug)]
pub(crate) enum Done {
    Swaps(Vec<Swap>),
    Unit,
    Counter(i64),
    Swept(usize),
}

/// The writer connection and the state only a leader touches.
pub(crate) struct Writer {
    /// `None` once closed.
    pub conn: Option<rusqlite::Connection>,
    /// The last stamp handed out.
    pub seq: u64,
    /// The highest stamp of any delete marker swept so far.
    pub purge_floor: u64,
    /// The lock that keeps a second process off the file.
    /// Shared with the checkpoint thread, which syncs the file through it.
    pub lock: Option<Arc<std::fs::File>>,
}

/// Where a queued write stands.
enum State {
    Waiting,
    /// The writer connection was released with this write still queued: its
    /// writer should try to lead.
    Lead,
    Answered(Result<Done>),
}

struct Ticket {
    state: Mutex<State>,
    woken: Condvar,
}

impl Ticket {
    fn set(&self, s: State) {
        let mut g = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if matches!(s, State::Lead) && !matches!(*g, State::Waiting) {
            return;
        }
        *g = s;
        self.woken.notify_one();
    }

    /// Blocks until the write is answered or its writer should lead.
    fn wait(&self) -> Option<Result<Done>> {
        let mut g = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            match std::mem::replace(&mut *g, State::Waiting) {
                State::Waiting => g = self.woken.wait(g).unwrap_or_else(PoisonError::into_inner),
                State::Lead => return None,
                State::Answered(r) => return Some(r),
            }
        }
    }
}

struct Job {
    op: Op,
    ticket: Arc<Ticket>,
}

/// Most writes in one transaction, and most bytes of values.
const MAX_BATCH: usize = 64;
const MAX_BATCH_BYTES: usize = 8 << 20;

/// The queue, the writer connection and the committed stamp.
pub(crate) struct Group {
    queue: Mutex<VecDeque<Job>>,
    writer: Mutex<Writer>,
    committed: AtomicU64,
    /// The committed rows kept in memory, updated at each commit.
    pub cache: Cache,
    /// Transactions committed, and writes they carried.
    commits: AtomicU64,
    writes: AtomicU64,
}

impl Group {
    pub fn new(writer: Writer, cache_bytes: usize) -> Self {
        let committed = AtomicU64::new(writer.seq);
        let (commits, writes) = (AtomicU64::new(0), AtomicU64::new(0));
        let cache = Cache::new(cache_bytes);
        Self { queue: Mutex::new(VecDeque::new()), writer: Mutex::new(writer), committed, cache, commits, writes }
    }

    /// The published committed stamp itself, for the cache's fills.
    pub fn committed_stamp(&self) -> &AtomicU64 {
        &self.committed
    }

    /// Transactions committed so far, and the writes they carried.
    pub fn commits(&self) -> (u64, u64) {
        (self.commits.load(Ordering::Relaxed), self.writes.load(Ordering::Relaxed))
    }

    /// The highest stamp of a committed write: every write stamped up to it
    /// is visible to a read transaction that starts after this is loaded.
    pub fn committed(&self) -> u64 {
        self.committed.load(Ordering::Acquire)
    }

    /// Runs `op` in a transaction, shared with whatever other writes are
    /// queued; returns after the transaction committed (or failed).
    pub fn submit(&self, op: Op) -> Result<Done> {
        let ticket = Arc::new(Ticket { state: Mutex::new(State::Waiting), woken: Condvar::new() });
        self.queue.lock().unwrap_or_else(PoisonError::into_inner).push_back(Job { op, ticket: ticket.clone() });
        loop {
            if let Some(mut w) = self.try_writer() {
                self.lead(&mut w);
                drop(w);
                self.hand_off();
            }
            if let Some(r) = ticket.wait() {
                return r;
            }
        }
    }

    /// Runs `f` on the writer alone (no batch), then hands off.
    pub fn exclusive<T>(&self, f: impl FnOnce(&mut Writer) -> T) -> T {
        let mut w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let out = f(&mut w);
        drop(w);
        self.hand_off();
        out
    }

    /// The writer, if no leader holds it right now.
    fn try_writer(&self) -> Option<MutexGuard<'_, Writer>> {
        match self.writer.try_lock() {
            Ok(w) => Some(w),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// The writer connection between transactions, if no leader holds it
    /// right now and the store is open; it hands off when dropped.
    pub fn idle(&self) -> Option<Idle<'_>> {
        let w = self.try_writer()?;
        if w.conn.is_none() {
            drop(w);
            self.hand_off();
            return None;
        }
        Some(Idle { group: self, writer: Some(w) })
    }

    /// Wakes the first queued write's writer to lead, if any is queued.
    fn hand_off(&self) {
        let q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(job) = q.front() {
            job.ticket.set(State::Lead);
        }
    }

    /// Takes a batch off the queue, runs it and answers it.
    fn lead(&self, w: &mut Writer) {
        let batch: Vec<Job> = {
            let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            let mut bytes = 0;
            let mut n = 0;
            while n < q.len() && n < MAX_BATCH && (n == 0 || bytes + q[n].op.weight() <= MAX_BATCH_BYTES) {
                bytes += q[n].op.weight();
                n += 1;
            }
            q.drain(..n).collect()
        };
        if batch.is_empty() {
            return;
        }
        let answers = self.run(w, &batch);
        for (job, answer) in batch.into_iter().zip(answers) {
            job.ticket.set(State::Answered(answer));
        }
    }

    /// The batch in one transaction; if any of it fails, each write in a
    /// transaction of its own.
    fn run(&self, w: &mut Writer, batch: &[Job]) -> Vec<Result<Done>> {
        let Some(conn) = w.conn.as_ref() else {
            return batch.iter().map(|_| Err(Error::Backend("store is closed".into()))).collect();
        };
        if batch.len() > 1 {
            let mut tx = Tx { seq: w.seq, floor: w.purge_floor, wrote: Vec::new() };
            let answers = self.transaction(conn, &mut tx, batch.iter().map(|j| &j.op));
            // Stamps of a rolled back batch are skipped, never reused.
            w.seq = tx.seq;
            if let Ok(answers) = answers {
                w.purge_floor = tx.floor;
                return answers.into_iter().map(Ok).collect();
            }
        }
        batch
            .iter()
            .map(|job| {
                let mut tx = Tx { seq: w.seq, floor: w.purge_floor, wrote: Vec::new() };
                let answer = self.transaction(conn, &mut tx, std::iter::once(&job.op)).map(|mut a| a.remove(0));
                w.seq = tx.seq;
                if answer.is_ok() {
                    w.purge_floor = tx.floor;
                }
                answer
            })
            .collect()
    }

    /// One transaction over `ops`: every answer, or the first failure with
    /// the transaction rolled back. Once it committed, applies what it
    /// wrote to the cache and publishes the committed stamp, together.
    fn transaction<'a>(&self, conn: &rusqlite::Connection, tx: &mut Tx, ops: impl Iterator<Item = &'a Op>) -> Result<Vec<Done>> {
        conn.execute_batch("BEGIN IMMEDIATE").map_err(crate::backend)?;
        let mut answers = Vec::new();
        for op in ops {
            match crate::apply(conn, tx, op) {
                Ok(done) => answers.push(done),
                Err(e) => {
                    let _ = conn.execute_batch("ROLLBACK");
                    return Err(e);
                }
            }
        }
        if let Err(e) = conn.execute_batch("COMMIT") {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(crate::backend(e));
        }
        let seq = tx.seq;
        self.cache.commit(std::mem::take(&mut tx.wrote), || self.committed.store(seq, Ordering::Release));
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.writes.fetch_add(answers.len() as u64, Ordering::Relaxed);
        Ok(answers)
    }
}

/// The writer connection lent to a read between transactions (see
/// [`Group::idle`]): released, then handed off, when dropped.
pub(crate) struct Idle<'a> {
    group: &'a Group,
    writer: Option<MutexGuard<'a, Writer>>,
}

impl std::ops::Deref for Idle<'_> {
    type Target = rusqlite::Connection;
    fn deref(&self) -> &rusqlite::Connection {
        // `idle` lends only an open writer, and nothing closes it while lent.
        self.writer.as_ref().and_then(|w| w.conn.as_ref()).expect("an idle writer has its connection")
    }
}

impl Drop for Idle<'_> {
    fn drop(&mut self) {
        drop(self.writer.take());
        self.group.hand_off();
    }
}
