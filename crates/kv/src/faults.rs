//! Stores that break on purpose, for tests: a wrapper around a real store
//! whose faults a test switches on and off while the system runs.
//!
//! - lose the next N swaps (reported as conflicts, nothing written);
//! - drop the next N swaps (reported as written, nothing written: a write a
//!   failover lost after acknowledging it);
//! - lie like Spin's Redis backend: a swap whose read was overtaken is
//!   reported as done without writing (its nil `EXEC` taken for success), and
//!   now and then written anyway (a reconnect between `WATCH` and `EXEC`
//!   turns it into a blind write), optionally only while the blind write
//!   reaches the store within a bound of the read it was based on;
//! - fail like a stopped server ([`Error::Unavailable`]) or a full disk
//!   ([`Error::Full`]), for writes only or for everything;
//! - report every swap failed, landed or not, as Spin's Redis backend at
//!   `94a8fc8a` does (its `UNWATCH <key>` after `EXEC` is refused by Redis);
//! - record the keys read, to show what an operation touched.

use crate::{Error, Observed, Read, Result, Store, Swap};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// The switches of a [`Faulty`] store, shared with the test driving it.
#[derive(Debug, Default)]
pub struct Control {
    lose_swaps: AtomicU32,
    /// Swaps of keys containing this are lost, however many.
    lose_swaps_of: Mutex<Option<String>>,
    /// Writes of keys containing this fail as if the store were unreachable.
    fail_writes_of: Mutex<Option<String>>,
    /// The next write of a key containing this waits until released.
    hold_next: Mutex<Hold>,
    held: std::sync::Condvar,
    drop_swaps: AtomicU32,
    lie: AtomicBool,
    /// Every swap goes to the store behind and is reported failed.
    report_failed: AtomicBool,
    /// Blind writes per 1,000 lied-about swaps.
    blind_per_mille: AtomicU32,
    rng: AtomicU64,
    unavailable: AtomicBool,
    full: AtomicBool,
    recording: AtomicBool,
    reads: Mutex<Vec<String>>,
    lies: AtomicU64,
    blind_writes: AtomicU64,
    /// 0: as the store behind says; 1: vouched; 2: not vouched.
    vouched: AtomicU32,
    swap_latency_us: AtomicU64,
    /// Blind writes land only this long after their read (0: any time).
    blind_within_us: AtomicU64,
    /// When each (bucket, key, observed) was first handed out by a read,
    /// recorded while `blind_within_us` is set.
    first_read: Mutex<HashMap<(String, String, Observed), Instant>>,
    /// Reads share it; a bounded blind write holds it alone while it checks
    /// its deadline and writes, so a read is wholly before or after it.
    front: RwLock<()>,
    late_blind: AtomicU64,
}

/// A write to hold back: which keys, and whether it is held now.
#[derive(Debug, Default)]
struct Hold {
    fragment: Option<String>,
    holding: bool,
    released: bool,
}

impl Control {
    /// The next `n` swaps fail as if another writer had written in between.
    pub fn lose_next_swaps(&self, n: u32) {
        self.lose_swaps.store(n, Ordering::SeqCst);
    }

    /// Every swap of a key containing `fragment` fails as if another writer
    /// had written in between, until called with `None`; other keys swap as usual.
    pub fn lose_swaps_of(&self, fragment: Option<&str>) {
        *self.lose_swaps_of.lock().unwrap() = fragment.map(str::to_string);
    }

    /// Every write (set, swap, delete, increment) of a key containing
    /// `fragment` fails as if the store could not be reached, until called
    /// with `None`; other keys are written as usual (a crash in the middle
    /// of a sequence of writes, seen from the writer).
    pub fn fail_writes_of(&self, fragment: Option<&str>) {
        *self.fail_writes_of.lock().unwrap() = fragment.map(str::to_string);
    }

    /// The next write (set, swap, delete, increment) of a key containing
    /// `fragment` waits, before it reaches the store, until [`release_held`](Self::release_held):
    /// a writer paused at one exact point while others go on.
    pub fn hold_next_write_of(&self, fragment: &str) {
        *self.hold_next.lock().unwrap() = Hold { fragment: Some(fragment.to_string()), holding: false, released: false };
    }

    /// Whether a write is waiting in [`hold_next_write_of`](Self::hold_next_write_of).
    pub fn is_holding(&self) -> bool {
        self.hold_next.lock().unwrap().holding
    }

    /// Lets the held write go on (and any that would have been held).
    pub fn release_held(&self) {
        let mut h = self.hold_next.lock().unwrap();
        h.released = true;
        h.fragment = None;
        self.held.notify_all();
    }

    fn hold(&self, key: &str) {
        let mut h = self.hold_next.lock().unwrap();
        if !h.fragment.as_deref().is_some_and(|f| key.contains(f)) || h.holding {
            return;
        }
        h.holding = true;
        h.fragment = None;
        while !h.released {
            h = self.held.wait(h).unwrap();
        }
        h.holding = false;
    }

    fn failing(&self, key: &str) -> Result<()> {
        self.hold(key);
        match self.fail_writes_of.lock().unwrap().as_deref() {
            Some(f) if key.contains(f) => Err(Error::Unavailable(format!("writes of {key} fail (fault)"))),
            _ => Ok(()),
        }
    }

    /// The next `n` swaps are reported as written and write nothing.
    pub fn drop_next_swaps(&self, n: u32) {
        self.drop_swaps.store(n, Ordering::SeqCst);
    }

    /// Lie about lost swaps as Spin's Redis backend does; `blind_per_mille`
    /// of those lies also write the value (a blind write). `seed` makes the
    /// choice repeatable.
    pub fn lie_like_spin_redis(&self, blind_per_mille: u32, seed: u64) {
        self.blind_per_mille.store(blind_per_mille.min(1000), Ordering::SeqCst);
        self.rng.store(seed | 1, Ordering::SeqCst);
        self.lie.store(true, Ordering::SeqCst);
    }

    /// Every swap takes this long before it reaches the store behind, as an
    /// `EXEC` does its round trip to a server: what another writer commits
    /// meanwhile makes the swap's read stale.
    pub fn set_swap_latency(&self, latency: std::time::Duration) {
        self.swap_latency_us.store(latency.as_micros() as u64, Ordering::SeqCst);
    }

    /// A blind write reaches the store at most `bound` after the read it was
    /// based on, as a request on a healthy network does: one that would land
    /// later is dropped instead (still reported as done). This is the
    /// delivery bound Cairn's commit check states, enforced exactly, so a
    /// test is not at the mercy of how its threads are scheduled.
    pub fn bound_blind_writes(&self, bound: Duration) {
        self.blind_within_us.store(bound.as_micros().max(1) as u64, Ordering::SeqCst);
    }

    /// Blind writes dropped because they would have landed past the bound.
    pub fn late_blind_writes(&self) -> u64 {
        self.late_blind.load(Ordering::SeqCst)
    }

    /// Stop lying.
    pub fn tell_the_truth(&self) {
        self.lie.store(false, Ordering::SeqCst);
        self.report_failed.store(false, Ordering::SeqCst);
    }

    /// While on, every swap reaches the store behind as it is (written if
    /// its read still holds, else not) and is then reported failed, with a
    /// fresh read: what Spin's Redis backend answers every swap, because it
    /// sends `UNWATCH <key>` after `EXEC` and Redis refuses the argument.
    pub fn report_every_swap_failed(&self, on: bool) {
        self.report_failed.store(on, Ordering::SeqCst);
    }

    /// Whether the wrapper says it keeps the promise ([`Store::vouched`]):
    /// a test decides whether the code on top confirms its commits.
    pub fn set_vouched(&self, vouched: bool) {
        self.vouched.store(if vouched { 1 } else { 2 }, Ordering::SeqCst);
    }

    /// Every operation fails with [`Error::Unavailable`] while on.
    pub fn set_unavailable(&self, on: bool) {
        self.unavailable.store(on, Ordering::SeqCst);
    }

    /// Every write fails with [`Error::Full`] while on; reads still work.
    pub fn set_full(&self, on: bool) {
        self.full.store(on, Ordering::SeqCst);
    }

    /// Start (or stop) recording the keys read.
    pub fn record_reads(&self, on: bool) {
        self.recording.store(on, Ordering::SeqCst);
    }

    /// The keys read since the last call (while recording).
    pub fn take_reads(&self) -> Vec<String> {
        std::mem::take(&mut *self.reads.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// How many lost swaps were reported as success, and how many of those
    /// were blind writes.
    pub fn lies_told(&self) -> (u64, u64) {
        (self.lies.load(Ordering::SeqCst), self.blind_writes.load(Ordering::SeqCst))
    }

    fn next_per_mille(&self) -> u32 {
        let mut x = self.rng.load(Ordering::SeqCst);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.store(x, Ordering::SeqCst);
        (x % 1000) as u32
    }

    fn reading(&self, key: &str) -> Result<()> {
        if self.unavailable.load(Ordering::SeqCst) {
            return Err(Error::Unavailable("connection refused (fault injected)".into()));
        }
        if self.recording.load(Ordering::SeqCst) {
            self.reads.lock().unwrap_or_else(|e| e.into_inner()).push(key.to_string());
        }
        Ok(())
    }

    fn writing(&self) -> Result<()> {
        if self.unavailable.load(Ordering::SeqCst) {
            return Err(Error::Unavailable("connection refused (fault injected)".into()));
        }
        if self.full.load(Ordering::SeqCst) {
            return Err(Error::Full("no space left on device (fault injected)".into()));
        }
        Ok(())
    }
}

/// A real store behind switchable faults.
pub struct Faulty {
    inner: Arc<dyn Store>,
    ctl: Arc<Control>,
}

impl Faulty {
    /// Wrap `inner`; the returned [`Control`] flips the faults.
    pub fn new(inner: Arc<dyn Store>) -> (Self, Arc<Control>) {
        let ctl = Arc::new(Control::default());
        (Self { inner, ctl: ctl.clone() }, ctl)
    }
}

impl Faulty {
    /// Writes `value` over whatever the key holds now, unless a delivery
    /// bound is set and the read behind `observed` is older than it.
    fn blind_write(&self, bucket: &str, key: &str, observed: Observed, value: &[u8]) -> Result<()> {
        let bound = self.ctl.blind_within_us.load(Ordering::SeqCst);
        if bound == 0 {
            self.ctl.blind_writes.fetch_add(1, Ordering::SeqCst);
            return self.inner.set(bucket, key, value);
        }
        let _alone = self.ctl.front.write().unwrap_or_else(|e| e.into_inner());
        let read_at = self.ctl.first_read.lock().unwrap_or_else(|e| e.into_inner()).get(&(bucket.to_string(), key.to_string(), observed)).copied();
        match read_at {
            Some(at) if at.elapsed() <= Duration::from_micros(bound) => {
                self.ctl.blind_writes.fetch_add(1, Ordering::SeqCst);
                self.inner.set(bucket, key, value)
            }
            _ => {
                self.ctl.late_blind.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        }
    }
}

impl Store for Faulty {
    fn read(&self, bucket: &str, key: &str) -> Result<Read> {
        self.ctl.reading(key)?;
        let _shared = self.ctl.front.read().unwrap_or_else(|e| e.into_inner());
        let read = self.inner.read(bucket, key)?;
        if self.ctl.blind_within_us.load(Ordering::SeqCst) > 0 {
            let mut seen = self.ctl.first_read.lock().unwrap_or_else(|e| e.into_inner());
            seen.entry((bucket.to_string(), key.to_string(), read.observed)).or_insert_with(Instant::now);
        }
        Ok(read)
    }

    fn swap(&self, bucket: &str, key: &str, observed: Observed, value: &[u8]) -> Result<Swap> {
        self.ctl.writing()?;
        self.ctl.failing(key)?;
        crate::check_value(value)?;
        let latency = self.ctl.swap_latency_us.load(Ordering::SeqCst);
        if latency > 0 {
            std::thread::sleep(std::time::Duration::from_micros(latency));
        }
        if self.ctl.lose_swaps.load(Ordering::SeqCst) > 0 {
            self.ctl.lose_swaps.fetch_sub(1, Ordering::SeqCst);
            return Ok(Swap::Failed(self.inner.read(bucket, key)?));
        }
        if self.ctl.lose_swaps_of.lock().unwrap().as_deref().is_some_and(|f| key.contains(f)) {
            return Ok(Swap::Failed(self.inner.read(bucket, key)?));
        }
        if self.ctl.drop_swaps.load(Ordering::SeqCst) > 0 {
            self.ctl.drop_swaps.fetch_sub(1, Ordering::SeqCst);
            self.ctl.lies.fetch_add(1, Ordering::SeqCst);
            return Ok(Swap::Done);
        }
        match self.inner.swap(bucket, key, observed, value)? {
            _ if self.ctl.report_failed.load(Ordering::SeqCst) => Ok(Swap::Failed(self.inner.read(bucket, key)?)),
            Swap::Done => Ok(Swap::Done),
            Swap::Failed(fresh) if !self.ctl.lie.load(Ordering::SeqCst) => Ok(Swap::Failed(fresh)),
            Swap::Failed(_) => {
                self.ctl.lies.fetch_add(1, Ordering::SeqCst);
                if self.ctl.next_per_mille() < self.ctl.blind_per_mille.load(Ordering::SeqCst) {
                    self.blind_write(bucket, key, observed, value)?;
                }
                Ok(Swap::Done)
            }
        }
    }

    fn set_many(&self, bucket: &str, pairs: &[(&str, &[u8])]) -> Result<()> {
        self.ctl.writing()?;
        for (k, _) in pairs {
            self.ctl.failing(k)?;
        }
        self.inner.set_many(bucket, pairs)
    }

    fn get_many(&self, bucket: &str, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>> {
        for k in keys {
            self.ctl.reading(k)?;
        }
        self.inner.get_many(bucket, keys)
    }

    fn delete_many(&self, bucket: &str, keys: &[&str]) -> Result<()> {
        self.ctl.writing()?;
        for k in keys {
            self.ctl.failing(k)?;
        }
        self.inner.delete_many(bucket, keys)
    }

    fn increment(&self, bucket: &str, key: &str, delta: i64) -> Result<i64> {
        self.ctl.writing()?;
        self.ctl.failing(key)?;
        self.inner.increment(bucket, key, delta)
    }

    fn list_keys(&self, bucket: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        self.ctl.reading("")?;
        self.inner.list_keys(bucket, after, limit)
    }

    fn sweep(&self, older_than_ms: u64) -> Result<usize> {
        self.inner.sweep(older_than_ms)
    }

    fn close(&self) -> Result<()> {
        self.inner.close()
    }

    fn vouched(&self) -> bool {
        match self.ctl.vouched.load(Ordering::SeqCst) {
            1 => true,
            2 => false,
            _ => self.inner.vouched(),
        }
    }

    fn waits(&self) -> crate::Waits {
        self.inner.waits()
    }
    fn describe(&self) -> Option<String> {
        self.inner.describe()
    }
    fn nodes(&self) -> Vec<crate::NodeReport> {
        self.inner.nodes()
    }
    fn cross_slot_refusals(&self) -> Option<(String, u64)> {
        self.inner.cross_slot_refusals()
    }

    fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        self.ctl.reading(key)?;
        let _shared = self.ctl.front.read().unwrap_or_else(|e| e.into_inner());
        self.inner.get(bucket, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryStore;

    #[test]
    fn a_lying_store_reports_a_lost_swap_as_done_and_writes_nothing() {
        let (s, ctl) = Faulty::new(Arc::new(MemoryStore::new()));
        s.set("b", "k", b"1").unwrap();
        let stale = s.read("b", "k").unwrap();
        s.set("b", "k", b"2").unwrap();
        ctl.lie_like_spin_redis(0, 1);
        assert_eq!(s.swap("b", "k", stale.observed, b"3").unwrap(), Swap::Done);
        assert_eq!(s.get("b", "k").unwrap().as_deref(), Some(&b"2"[..]));
        assert_eq!(ctl.lies_told(), (1, 0));
    }

    #[test]
    fn a_blind_write_overwrites_what_another_writer_stored() {
        let (s, ctl) = Faulty::new(Arc::new(MemoryStore::new()));
        s.set("b", "k", b"1").unwrap();
        let stale = s.read("b", "k").unwrap();
        s.set("b", "k", b"2").unwrap();
        ctl.lie_like_spin_redis(1000, 1);
        assert_eq!(s.swap("b", "k", stale.observed, b"3").unwrap(), Swap::Done);
        assert_eq!(s.get("b", "k").unwrap().as_deref(), Some(&b"3"[..]));
        assert_eq!(ctl.lies_told(), (1, 1));
    }

    #[test]
    fn a_bounded_blind_write_lands_in_time_and_is_dropped_when_late() {
        let (s, ctl) = Faulty::new(Arc::new(MemoryStore::new()));
        ctl.lie_like_spin_redis(1000, 1);
        ctl.bound_blind_writes(Duration::from_millis(50));
        s.set("b", "k", b"1").unwrap();
        let stale = s.read("b", "k").unwrap();
        s.set("b", "k", b"2").unwrap();
        assert_eq!(s.swap("b", "k", stale.observed, b"3").unwrap(), Swap::Done);
        assert_eq!(s.get("b", "k").unwrap().as_deref(), Some(&b"3"[..]), "in time: written blindly");
        let stale = s.read("b", "k").unwrap();
        s.set("b", "k", b"4").unwrap();
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(s.swap("b", "k", stale.observed, b"5").unwrap(), Swap::Done);
        assert_eq!(s.get("b", "k").unwrap().as_deref(), Some(&b"4"[..]), "late: dropped, still reported done");
        assert_eq!((ctl.lies_told(), ctl.late_blind_writes()), ((2, 1), 1));
    }

    #[test]
    fn the_probe_rule_for_lost_swaps_catches_a_store_that_lies_like_spin_redis() {
        use crate::conformance::{SEQUENTIAL, Scope};
        let check = SEQUENTIAL.iter().find(|c| c.name == "lost_swap_is_never_reported_as_success").unwrap();
        let (honest, _) = Faulty::new(Arc::new(MemoryStore::new()));
        assert_eq!((check.run)(&honest, Scope { bucket: "b", prefix: "p/" }), Ok(()));
        for blind in [0, 1000] {
            let (s, ctl) = Faulty::new(Arc::new(MemoryStore::new()));
            ctl.lie_like_spin_redis(blind, 7);
            let verdict = (check.run)(&s, Scope { bucket: "b", prefix: "p/" });
            assert!(verdict.is_err(), "a lying store (blind {blind}/1000) passed the lost-swap rule");
        }
    }

    #[test]
    fn a_store_reporting_every_swap_failed_still_writes_the_swaps_that_hold() {
        let (s, ctl) = Faulty::new(Arc::new(MemoryStore::new()));
        ctl.report_every_swap_failed(true);
        let absent = s.read("b", "k").unwrap();
        let Swap::Failed(fresh) = s.swap("b", "k", absent.observed, b"1").unwrap() else { panic!("reported written") };
        assert_eq!(fresh.value.as_deref(), Some(&b"1"[..]), "landed, and the fresh read shows it");
        let stale = s.read("b", "k").unwrap();
        s.set("b", "k", b"2").unwrap();
        assert!(matches!(s.swap("b", "k", stale.observed, b"3").unwrap(), Swap::Failed(_)));
        assert_eq!(s.get("b", "k").unwrap().as_deref(), Some(&b"2"[..]), "a swap whose read was overtaken is not written");
    }

    #[test]
    fn unavailable_and_full_refuse_without_writing() {
        let (s, ctl) = Faulty::new(Arc::new(MemoryStore::new()));
        s.set("b", "k", b"1").unwrap();
        ctl.set_full(true);
        assert!(matches!(s.set("b", "k", b"2"), Err(Error::Full(_))));
        assert_eq!(s.get("b", "k").unwrap().as_deref(), Some(&b"1"[..]), "reads work while full");
        ctl.set_full(false);
        ctl.set_unavailable(true);
        assert!(matches!(s.get("b", "k"), Err(Error::Unavailable(_))));
        ctl.set_unavailable(false);
        assert_eq!(s.get("b", "k").unwrap().as_deref(), Some(&b"1"[..]));
    }
}
