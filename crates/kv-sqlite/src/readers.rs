//! The reader connections: at most [`MAX_READERS`] open at once, kept open
//! between reads.
//!
//! A read that finds every reader busy waits for one to come back rather
//! than opening another. Opening a connection costs far more than a read
//! (the file, the schema, the shared-memory index mapped in), and closing
//! one unmaps memory, which flushes every core's TLB; with one connection
//! per concurrent reader, 32 clients meant a connection opened and closed
//! on most reads. More readers than cores only queue inside SQLite anyway.
//!
//! A connection goes back to the pool only outside a transaction: one left
//! inside a read transaction would see an old snapshot forever.

use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Reader connections open at most.
pub(crate) const MAX_READERS: usize = 8;

struct Pool {
    idle: Vec<Connection>,
    /// Connections open, idle or lent, and the most ever open at once.
    open: usize,
    peak: usize,
    closed: bool,
}

/// The pool.
pub(crate) struct Readers {
    path: PathBuf,
    pool: Mutex<Pool>,
    returned: Condvar,
}

impl Readers {
    pub fn new(path: &Path) -> Self {
        Self { path: path.to_path_buf(), pool: Mutex::new(Pool { idle: Vec::new(), open: 0, peak: 0, closed: false }), returned: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An idle reader, a new one while fewer than [`MAX_READERS`] are open,
    /// else the first one returned.
    pub fn take(&self) -> crate::Result<Lent<'_>> {
        let mut p = self.lock();
        loop {
            if p.closed {
                return Err(crate::closed());
            }
            if let Some(conn) = p.idle.pop() {
                return Ok(Lent { readers: self, conn: Some(conn) });
            }
            if p.open < MAX_READERS {
                p.open += 1;
                p.peak = p.peak.max(p.open);
                drop(p);
                return match self.open() {
                    Ok(conn) => Ok(Lent { readers: self, conn: Some(conn) }),
                    Err(e) => {
                        self.lock().open -= 1;
                        self.returned.notify_one();
                        Err(e)
                    }
                };
            }
            p = self.returned.wait(p).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn open(&self) -> crate::Result<Connection> {
        let c = Connection::open(&self.path).map_err(crate::backend)?;
        c.execute_batch(
            "PRAGMA query_only = 1;
             PRAGMA busy_timeout = 5000;
             PRAGMA cache_size = -1024;",
        )
        .map_err(crate::backend)?;
        Ok(c)
    }

    /// Connections open now, and the most ever open at once.
    pub fn counts(&self) -> (usize, usize) {
        let p = self.lock();
        (p.open, p.peak)
    }

    /// Closes the idle readers; lent ones close when they come back.
    pub fn close(&self) {
        let mut p = self.lock();
        p.closed = true;
        let idle = std::mem::take(&mut p.idle);
        p.open -= idle.len();
        drop(p);
        drop(idle);
        self.returned.notify_all();
    }
}

/// A reader lent out: back to the pool when dropped.
pub(crate) struct Lent<'a> {
    readers: &'a Readers,
    conn: Option<Connection>,
}

impl std::ops::Deref for Lent<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("a lent reader has its connection until dropped")
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        let mut p = self.readers.lock();
        if conn.is_autocommit() && !p.closed {
            p.idle.push(conn);
        } else {
            p.open -= 1;
            drop(p);
            drop(conn);
        }
        self.readers.returned.notify_one();
    }
}
