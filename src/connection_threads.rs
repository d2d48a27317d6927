//! Connection threads: every connection is served, from its first request to its last, on
//! one thread.
//!
//! A connection thread runs a single-threaded tokio runtime. The accept
//! loop hands each new connection to the connection thread with the fewest open
//! connections, and the connection's task (hyper, the instances of its
//! requests, their store calls that run in place) never leaves that thread.
//! Work that may block (a store write, the blocking pool) still goes to the
//! connection thread runtime's own blocking threads.
//!
//! Why: on tokio's work-stealing runtime a keep-alive connection's task
//! wakes on whichever worker polled the socket, so one request hops between
//! threads, and on a virtual machine waking a halted core is costly.
//!
//! How many: more than cores. A connection thread runs its requests' store calls in
//! place, so while one waits (its write joining a group commit, a read
//! waiting for a reader connection) the other connections of that connection thread
//! wait too; more connection threads keep the cores busy meanwhile, and each connection thread busy
//! at once holds an instance's memory and its own allocator pages. Four
//! per core is the default. The measurements behind both choices are in
//! `docs/decisions/connection-threads.md`.
//!
//! Shutting down: [`ConnectionThreads::close`] ends the connection threads once the caller has let
//! every connection finish (the connection thread runtimes would drop unfinished ones).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::mpsc;

/// A connection's work, built inside the connection thread that serves it (so its socket
/// registers with that connection thread's reactor).
pub type Job = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

struct Worker {
    jobs: mpsc::UnboundedSender<Job>,
    open: Arc<AtomicUsize>,
}

/// The connection threads of one server.
pub struct ConnectionThreads {
    workers: Vec<Worker>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

/// Connection threads per core by default: see the module docs for the measurements.
pub const PER_CORE: usize = 4;

/// [`PER_CORE`] connection threads for each core this process may use.
pub fn default_count() -> usize {
    PER_CORE * std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

thread_local! {
    /// This thread's connection thread, counted from 1 (0: not a connection thread).
    static THREAD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The connection thread this code runs on, counted from 1; 0 off the connection threads (a sweep, a
/// benchmark calling in-process). Instance pools are per connection thread, so a
/// connection's requests meet instances running on its own thread.
pub fn current() -> usize {
    THREAD.get()
}

impl ConnectionThreads {
    /// Start `n` connection threads (at least one), each on a thread named `conn-<i>`.
    pub fn start(n: usize) -> std::io::Result<ConnectionThreads> {
        let mut workers = Vec::new();
        let mut threads = Vec::new();
        for i in 0..n.max(1) {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().thread_name(format!("conn-{i}-blocking")).build()?;
            let (jobs, mut rx) = mpsc::unbounded_channel::<Job>();
            let open = Arc::new(AtomicUsize::new(0));
            let count = open.clone();
            threads.push(std::thread::Builder::new().name(format!("conn-{i}")).spawn(move || {
                THREAD.set(i + 1);
                runtime.block_on(async move {
                    while let Some(job) = rx.recv().await {
                        let count = count.clone();
                        let work = job();
                        tokio::spawn(async move {
                            work.await;
                            count.fetch_sub(1, Ordering::Relaxed);
                        });
                    }
                });
            })?);
            workers.push(Worker { jobs, open });
        }
        Ok(ConnectionThreads { workers, threads })
    }

    /// Hand `job` to the connection thread with the fewest open connections. `Err` gives
    /// the job back when every connection thread has stopped.
    pub fn spawn(&self, job: Job) -> Result<(), Job> {
        let Some(worker) = self.workers.iter().min_by_key(|l| l.open.load(Ordering::Relaxed)) else {
            return Err(job);
        };
        worker.open.fetch_add(1, Ordering::Relaxed);
        worker.jobs.send(job).map_err(|e| {
            worker.open.fetch_sub(1, Ordering::Relaxed);
            e.0
        })
    }

    /// Connections open on each connection thread.
    pub fn open(&self) -> Vec<usize> {
        self.workers.iter().map(|l| l.open.load(Ordering::Relaxed)).collect()
    }

    /// Stop the connection threads (after their connections have finished) and wait for
    /// their threads.
    pub fn close(self) {
        drop(self.workers);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::sync::Mutex;

    #[test]
    fn each_connection_stays_on_one_thread_and_new_ones_go_to_the_least_loaded() {
        let threads = ConnectionThreads::start(2).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (release, wait) = tokio::sync::watch::channel(false);
        for _ in 0..4 {
            let (seen, mut wait) = (seen.clone(), wait.clone());
            threads
                .spawn(Box::new(move || {
                    Box::pin(async move {
                        let before = std::thread::current().name().unwrap().to_string();
                        let _ = wait.wait_for(|go| *go).await;
                        let after = std::thread::current().name().unwrap().to_string();
                        seen.lock().unwrap().push((before, after));
                    })
                }))
                .map_err(|_| "threads stopped")
                .unwrap();
        }
        assert_eq!(threads.open(), vec![2, 2], "four connections are spread two and two");
        release.send(true).unwrap();
        while threads.open().iter().sum::<usize>() > 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 4);
        assert!(seen.iter().all(|(a, b)| a == b && a.starts_with("conn-")), "a job never leaves its connection thread: {seen:?}");
        assert_eq!(seen.iter().map(|(a, _)| a.clone()).collect::<BTreeSet<_>>().len(), 2, "both connection threads served");
        threads.close();
    }
}
