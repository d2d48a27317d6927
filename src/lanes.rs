//! Lanes: every connection is served, from its first request to its last, on
//! one thread.
//!
//! A lane is a thread running a single-threaded tokio runtime. The accept
//! loop hands each new connection to the lane with the fewest open
//! connections, and the connection's task (hyper, the instances of its
//! requests, their store calls that run in place) never leaves that thread.
//! Work that may block (a store write, the blocking pool) still goes to the
//! lane runtime's own blocking threads.
//!
//! Why: on tokio's work-stealing runtime a keep-alive connection's task
//! wakes on whichever worker polled the socket, so one request hops between
//! threads, and on a virtual machine waking a halted core is costly.
//!
//! How many: more than cores. A lane runs its requests' store calls in
//! place, so while one waits (its write joining a group commit, a read
//! waiting for a reader connection) the other connections of that lane
//! wait too; more lanes keep the cores busy meanwhile, and each lane busy
//! at once holds an instance's memory and its own allocator pages. Four
//! per core is the default. The measurements behind both choices are in
//! `docs/decisions/lanes.md`.
//!
//! Shutting down: [`Lanes::close`] ends the lanes once the caller has let
//! every connection finish (the lane runtimes would drop unfinished ones).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::mpsc;

/// A connection's work, built inside the lane that serves it (so its socket
/// registers with that lane's reactor).
pub type Job = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

struct Lane {
    jobs: mpsc::UnboundedSender<Job>,
    open: Arc<AtomicUsize>,
}

/// The lanes of one server.
pub struct Lanes {
    lanes: Vec<Lane>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

/// Lanes per core by default: see the module docs for the measurements.
pub const PER_CORE: usize = 4;

/// [`PER_CORE`] lanes for each core this process may use.
pub fn default_count() -> usize {
    PER_CORE * std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

thread_local! {
    /// This thread's lane, counted from 1 (0: not a lane).
    static LANE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The lane this code runs on, counted from 1; 0 off the lanes (a sweep, a
/// benchmark calling in-process). Instance pools are per lane, so a
/// connection's requests meet instances running on its own thread.
pub fn current() -> usize {
    LANE.get()
}

impl Lanes {
    /// Start `n` lanes (at least one), each on a thread named `lane-<i>`.
    pub fn start(n: usize) -> std::io::Result<Lanes> {
        let mut lanes = Vec::new();
        let mut threads = Vec::new();
        for i in 0..n.max(1) {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().thread_name(format!("lane-{i}-blocking")).build()?;
            let (jobs, mut rx) = mpsc::unbounded_channel::<Job>();
            let open = Arc::new(AtomicUsize::new(0));
            let count = open.clone();
            threads.push(std::thread::Builder::new().name(format!("lane-{i}")).spawn(move || {
                LANE.set(i + 1);
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
            lanes.push(Lane { jobs, open });
        }
        Ok(Lanes { lanes, threads })
    }

    /// Hand `job` to the lane with the fewest open connections. `Err` gives
    /// the job back when every lane has stopped.
    pub fn spawn(&self, job: Job) -> Result<(), Job> {
        let Some(lane) = self.lanes.iter().min_by_key(|l| l.open.load(Ordering::Relaxed)) else {
            return Err(job);
        };
        lane.open.fetch_add(1, Ordering::Relaxed);
        lane.jobs.send(job).map_err(|e| {
            lane.open.fetch_sub(1, Ordering::Relaxed);
            e.0
        })
    }

    /// Connections open on each lane.
    pub fn open(&self) -> Vec<usize> {
        self.lanes.iter().map(|l| l.open.load(Ordering::Relaxed)).collect()
    }

    /// Stop the lanes (after their connections have finished) and wait for
    /// their threads.
    pub fn close(self) {
        drop(self.lanes);
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
    fn each_job_runs_on_one_lane_thread_and_new_jobs_go_to_the_least_loaded_lane() {
        let lanes = Lanes::start(2).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (release, wait) = tokio::sync::watch::channel(false);
        for _ in 0..4 {
            let (seen, mut wait) = (seen.clone(), wait.clone());
            lanes
                .spawn(Box::new(move || {
                    Box::pin(async move {
                        let before = std::thread::current().name().unwrap().to_string();
                        let _ = wait.wait_for(|go| *go).await;
                        let after = std::thread::current().name().unwrap().to_string();
                        seen.lock().unwrap().push((before, after));
                    })
                }))
                .map_err(|_| "lanes stopped")
                .unwrap();
        }
        assert_eq!(lanes.open(), vec![2, 2], "four connections are spread two and two");
        release.send(true).unwrap();
        while lanes.open().iter().sum::<usize>() > 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 4);
        assert!(seen.iter().all(|(a, b)| a == b && a.starts_with("lane-")), "a job never leaves its lane: {seen:?}");
        assert_eq!(seen.iter().map(|(a, _)| a.clone()).collect::<BTreeSet<_>>().len(), 2, "both lanes served");
        lanes.close();
    }
}
