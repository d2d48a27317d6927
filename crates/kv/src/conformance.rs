//! The conformance suite: what every [`Store`] must do, as a catalogue of
//! named checks.
//!
//! - [`SEQUENTIAL`]: checks that need no threads and no fresh store. Each
//!   runs under its own key prefix, so they run on any store, a live one
//!   included: natively against every backend, and from inside a component
//!   (the `kv-probe` component runs this very list through `wasi:keyvalue`).
//!   A check that could harm a store names its [`Check::hazard`], and is
//!   run only on a store someone vouches for ([`Check::may_run_on`]): a
//!   probe must never break the store it probes.
//! - [`FRESH`]: checks that need threads (races between them) or a store
//!   of their own (closing it), natively only.
//!
//! A check returns `Err` with a sentence naming the broken rule.
//! [`conformance_tests!`](crate::conformance_tests) turns the whole
//! catalogue into one `#[test]` per check for a backend.

use crate::{Error, MAX_KEY_BYTES, MAX_VALUE_BYTES, Observed, Store, Swap};
use std::sync::{Arc, Barrier};
use std::thread;

/// What a check found: `Err` names the rule the store broke.
pub type Outcome = Result<(), String>;

/// Where a sequential check writes: one bucket, keys under one prefix.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The bucket (a store label).
    pub bucket: &'a str,
    /// Every key the check touches starts with this.
    pub prefix: &'a str,
}

impl Scope<'_> {
    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }
}

/// One named rule of the promise and the check of it.
pub struct Check {
    /// Stable snake_case name (reports and tests use it).
    pub name: &'static str,
    /// The rule, in one sentence.
    pub promise: &'static str,
    /// Runs the check against a store.
    pub run: fn(&dyn Store, Scope) -> Outcome,
    /// Why the check must not run on a store nobody vouches for
    /// ([`Store::vouched`]): what it does can harm such a store. `None`: it
    /// runs on any store.
    pub hazard: Option<&'static str>,
}

impl Check {
    /// Whether the check may run on `store`: it is harmless, or someone
    /// vouches for the store. Else it is reported as not run, with its
    /// [`hazard`](Check::hazard).
    pub fn may_run_on(&self, store: &dyn Store) -> bool {
        self.hazard.is_none() || store.vouched()
    }
}

/// Why [`SEQUENTIAL`]'s increment of a text value is not run on a store
/// nobody vouches for.
pub const INCREMENT_HAZARD: &str = "increment of a key that holds something other than an 8-byte counter crashes some hosts' stores: \
     Spin's SQLite store panics and then fails every key-value call of every component until Spin restarts; \
     set the commit_check variable to off to vouch for this store and run it";

/// A factory for fresh stores, for the checks that need threads or a store
/// of their own.
pub type Factory<'a> = &'a dyn Fn() -> Arc<dyn Store>;

/// A check that needs a fresh store (threads, or closing it).
pub struct FreshCheck {
    /// Stable snake_case name.
    pub name: &'static str,
    /// The rule, in one sentence.
    pub promise: &'static str,
    /// Runs the check on stores from the factory.
    pub run: fn(Factory) -> Outcome,
}

/// Checks that run on any store, one after another.
pub const SEQUENTIAL: &[Check] = &[
    Check {
        name: "absent_handle_is_create_if_absent",
        promise: "a handle that saw a key absent fails once someone created it, even if it was deleted again",
        run: absent_handle_is_create_if_absent,
        hazard: None,
    },
    Check { name: "one_of_two_creators_wins", promise: "of two creators of one absent key, exactly one wins", run: one_of_two_creators_wins, hazard: None },
    Check {
        name: "no_aba_after_delete_and_recreate",
        promise: "a handle read before a delete and a recreate with the same bytes fails",
        run: no_aba_after_delete_and_recreate,
        hazard: None,
    },
    Check {
        name: "same_bytes_rewrite_is_a_write",
        promise: "rewriting identical bytes fails an older handle",
        run: same_bytes_rewrite_is_a_write,
        hazard: None,
    },
    Check {
        name: "lost_swap_is_never_reported_as_success",
        promise: "a swap whose key was written since its read fails, and its value is not stored",
        run: lost_swap_is_never_reported_as_success,
        hazard: None,
    },
    Check {
        name: "failed_swap_returns_a_fresh_read",
        promise: "cas-failed carries a read of the current value that can win the next swap",
        run: failed_swap_returns_a_fresh_read,
        hazard: None,
    },
    Check {
        name: "increment_is_an_8_byte_counter",
        promise: "increments add up and are stored as 8 little-endian bytes",
        run: increment_is_an_8_byte_counter,
        hazard: None,
    },
    Check {
        name: "increment_refuses_a_value_that_is_not_a_counter",
        promise: "increment of a key holding other bytes is refused, the value is kept, and the store goes on working",
        run: increment_refuses_a_value_that_is_not_a_counter,
        hazard: Some(INCREMENT_HAZARD),
    },
    Check {
        name: "values_up_to_1_mib_round_trip",
        promise: "a 1 MiB value is stored whole; one byte more is refused and nothing is written",
        run: values_up_to_1_mib_round_trip,
        hazard: None,
    },
    Check {
        name: "keys_over_256_bytes_refused",
        promise: "a key over 256 bytes is refused by every operation, naming the limit",
        run: keys_over_256_bytes_refused,
        hazard: None,
    },
    Check {
        name: "batches_are_all_or_nothing",
        promise: "set-many with one bad entry writes nothing; set-many, get-many and delete-many agree",
        run: batches_are_all_or_nothing,
        hazard: None,
    },
    Check {
        name: "keys_list_in_pages_per_bucket",
        promise: "keys list in byte order, in pages, per bucket, without deleted keys",
        run: keys_list_in_pages_per_bucket,
        hazard: None,
    },
    Check {
        name: "batched_swaps_each_keep_the_promise",
        promise: "read-many observes as reads do; swap-each writes the swaps whose keys did not move and fails the others with a fresh read",
        run: batched_swaps_each_keep_the_promise,
        hazard: None,
    },
    Check {
        name: "a_prefix_lists_only_its_own_keys",
        promise: "listing a prefix gives its keys in byte order, in pages, and nothing before or after it",
        run: a_prefix_lists_only_its_own_keys,
        hazard: None,
    },
];

/// Checks that need threads or a store of their own (natively only).
pub const FRESH: &[FreshCheck] = &[
    FreshCheck {
        name: "update_race_loses_no_update",
        promise: "threads doing read, swap(+1), retry on conflict lose no increment",
        run: update_race_loses_no_update,
    },
    FreshCheck {
        name: "create_race_has_exactly_one_winner",
        promise: "two threads creating one absent key at once: exactly one wins, every round",
        run: create_race_has_exactly_one_winner,
    },
    FreshCheck { name: "increment_is_atomic_under_threads", promise: "concurrent increments are never lost", run: increment_is_atomic_under_threads },
    FreshCheck {
        name: "closed_store_refuses_operations",
        promise: "after close, operations fail with a backend error instead of panicking",
        run: closed_store_refuses_operations,
    },
];

fn io<T>(r: crate::Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("store error: {e}"))
}

fn show(v: Option<&[u8]>) -> String {
    match v {
        None => "absent".into(),
        Some(b) if b.len() > 40 => format!("{} bytes", b.len()),
        Some(b) => format!("{:?}", String::from_utf8_lossy(b)),
    }
}

fn expect_value(s: &dyn Store, sc: Scope, key: &str, want: Option<&[u8]>, why: &str) -> Outcome {
    let got = io(s.get(sc.bucket, key))?;
    if got.as_deref() == want { Ok(()) } else { Err(format!("{why}: {key} holds {}, expected {}", show(got.as_deref()), show(want))) }
}

fn expect_failed(outcome: Swap, what: &str) -> Outcome {
    match outcome {
        Swap::Failed(_) => Ok(()),
        Swap::Done => Err(format!("swap reported success {what}")),
    }
}

fn expect_done(outcome: Swap, what: &str) -> Outcome {
    match outcome {
        Swap::Done => Ok(()),
        Swap::Failed(_) => Err(format!("swap failed {what}")),
    }
}

/// Accepts the limit error, or (through an interface that carries only a
/// message) a backend error naming the limit.
fn expect_limit(r: crate::Result<()>, what: &str, limit: &str, exact: &Error) -> Outcome {
    match r {
        Ok(()) => Err(format!("{what} was accepted")),
        Err(e) if &e == exact => Ok(()),
        Err(Error::Backend(m)) if m.contains(limit) => Ok(()),
        Err(e) => Err(format!("{what} was refused with an error that does not name the limit: {e}")),
    }
}

fn absent_handle_is_create_if_absent(s: &dyn Store, sc: Scope) -> Outcome {
    let (a, b) = (sc.key("a"), sc.key("b"));
    let seen = io(s.read(sc.bucket, &a))?;
    if seen.value.is_some() {
        return Err(format!("{a} was expected absent"));
    }
    io(s.set(sc.bucket, &a, b"first"))?;
    expect_failed(io(s.swap(sc.bucket, &a, seen.observed, b"second"))?, "on a key created after the handle saw it absent")?;
    expect_value(s, sc, &a, Some(b"first"), "create-if-absent overwrote a key created after the read")?;

    // Two reads of the absent key: a handle is used up by its swap on some
    // hosts (a `wasi:keyvalue` CAS resource), so each attempt gets its own.
    let (seen, seen_again) = (io(s.read(sc.bucket, &b))?, io(s.read(sc.bucket, &b))?);
    io(s.set(sc.bucket, &b, b"x"))?;
    io(s.delete(sc.bucket, &b))?;
    expect_failed(io(s.swap(sc.bucket, &b, seen.observed, b"y"))?, "on a key created and deleted after the handle saw it absent")?;
    io(s.sweep(0))?;
    expect_failed(io(s.swap(sc.bucket, &b, seen_again.observed, b"y"))?, "after sweeping delete markers, on a stale absent handle")?;
    expect_value(s, sc, &b, None, "a refused swap wrote")
}

fn one_of_two_creators_wins(s: &dyn Store, sc: Scope) -> Outcome {
    let k = sc.key("c");
    let (first, second) = (io(s.read(sc.bucket, &k))?, io(s.read(sc.bucket, &k))?);
    expect_done(io(s.swap(sc.bucket, &k, first.observed, b"a"))?, "for the first creator of an absent key")?;
    expect_failed(io(s.swap(sc.bucket, &k, second.observed, b"b"))?, "for a second creator of the same key")?;
    expect_value(s, sc, &k, Some(b"a"), "the second creator's value was stored")
}

/// A handle read after `k` was set to `value`, then `meddle`d with, fails its
/// swap, and the key keeps `value`.
fn stale_after(s: &dyn Store, sc: Scope, name: &str, value: &[u8], meddle: impl Fn(&str) -> Outcome, what: &str) -> Outcome {
    let k = sc.key(name);
    io(s.set(sc.bucket, &k, value))?;
    let before = io(s.read(sc.bucket, &k))?;
    meddle(&k)?;
    expect_failed(io(s.swap(sc.bucket, &k, before.observed, b"late"))?, what)?;
    expect_value(s, sc, &k, Some(value), "a refused swap wrote")
}

fn no_aba_after_delete_and_recreate(s: &dyn Store, sc: Scope) -> Outcome {
    let meddle = |k: &str| {
        io(s.delete(sc.bucket, k))?;
        io(s.set(sc.bucket, k, b"same"))
    };
    stale_after(s, sc, "aba", b"same", meddle, "after delete + recreate with the same bytes (the store compares values)")
}

fn same_bytes_rewrite_is_a_write(s: &dyn Store, sc: Scope) -> Outcome {
    stale_after(s, sc, "same", b"v", |k| io(s.set(sc.bucket, k, b"v")), "after the same bytes were written again")
}

fn lost_swap_is_never_reported_as_success(s: &dyn Store, sc: Scope) -> Outcome {
    let k = sc.key("lost");
    io(s.set(sc.bucket, &k, b"0"))?;
    let (first, second) = (io(s.read(sc.bucket, &k))?, io(s.read(sc.bucket, &k))?);
    expect_done(io(s.swap(sc.bucket, &k, first.observed, b"first"))?, "without contention")?;
    expect_failed(io(s.swap(sc.bucket, &k, second.observed, b"second"))?, "for a swap whose read was overtaken by another swap")?;
    expect_value(s, sc, &k, Some(b"first"), "a lost swap's value was stored")?;
    let stale = io(s.read(sc.bucket, &k))?;
    io(s.set(sc.bucket, &k, b"other writer"))?;
    expect_failed(io(s.swap(sc.bucket, &k, stale.observed, b"late"))?, "for a swap whose read was overtaken by a set")?;
    expect_value(s, sc, &k, Some(b"other writer"), "a lost swap's value was stored")
}

fn failed_swap_returns_a_fresh_read(s: &dyn Store, sc: Scope) -> Outcome {
    let k = sc.key("fresh");
    io(s.set(sc.bucket, &k, b"1"))?;
    let stale = io(s.read(sc.bucket, &k))?;
    io(s.set(sc.bucket, &k, b"2"))?;
    let Swap::Failed(fresh) = io(s.swap(sc.bucket, &k, stale.observed, b"3"))? else {
        return Err("a stale swap reported success".into());
    };
    if fresh.value.as_deref() != Some(&b"2"[..]) {
        return Err(format!("cas-failed carried {}, not the current value", show(fresh.value.as_deref())));
    }
    expect_done(io(s.swap(sc.bucket, &k, fresh.observed, b"3"))?, "with the fresh read of cas-failed, uncontended")?;
    expect_value(s, sc, &k, Some(b"3"), "the winning swap's value is missing")
}

fn increment_is_an_8_byte_counter(s: &dyn Store, sc: Scope) -> Outcome {
    let n = sc.key("n");
    let mut last = 0;
    for _ in 0..100 {
        last = io(s.increment(sc.bucket, &n, 1))?;
    }
    if last != 100 {
        return Err(format!("100 increments of 1 gave {last}"));
    }
    if io(s.increment(sc.bucket, &n, -40))? != 60 {
        return Err("a negative delta did not subtract".into());
    }
    expect_value(s, sc, &n, Some(&60i64.to_le_bytes()), "the counter is not 8 little-endian bytes")
}

fn increment_refuses_a_value_that_is_not_a_counter(s: &dyn Store, sc: Scope) -> Outcome {
    let (text, after) = (sc.key("text"), sc.key("after"));
    io(s.set(sc.bucket, &text, b"abc"))?;
    match s.increment(sc.bucket, &text, 1) {
        Err(Error::NotACounter { len: 3 }) | Err(Error::Backend(_)) => {}
        Err(e) => return Err(format!("increment of a 3-byte text value failed with {e}")),
        Ok(v) => return Err(format!("increment of a 3-byte text value answered {v}")),
    }
    expect_value(s, sc, &text, Some(b"abc"), "a refused increment changed the value")?;
    io(s.set(sc.bucket, &after, b"ok")).map_err(|e| format!("after a refused increment the store stopped working: {e}"))?;
    expect_value(s, sc, &after, Some(b"ok"), "after a refused increment the store stopped working")
}

fn values_up_to_1_mib_round_trip(s: &dyn Store, sc: Scope) -> Outcome {
    let k = sc.key("big");
    let big: Vec<u8> = (0..MAX_VALUE_BYTES).map(|i| (i * 31 % 251) as u8).collect();
    io(s.set(sc.bucket, &k, &big))?;
    expect_value(s, sc, &k, Some(&big), "a 1 MiB value did not round-trip")?;
    let too_big = vec![1u8; MAX_VALUE_BYTES + 1];
    let exact = Error::ValueTooLarge { len: MAX_VALUE_BYTES + 1 };
    expect_limit(s.set(sc.bucket, &k, &too_big), "a value of 1 MiB + 1 byte", "1048576", &exact)?;
    let read = io(s.read(sc.bucket, &k))?;
    expect_limit(s.swap(sc.bucket, &k, read.observed, &too_big).map(|_| ()), "a swap of 1 MiB + 1 byte", "1048576", &exact)?;
    expect_value(s, sc, &k, Some(&big), "a refused write changed the value")
}

fn keys_over_256_bytes_refused(s: &dyn Store, sc: Scope) -> Outcome {
    let fits = format!("{}{}", sc.prefix, "k".repeat(MAX_KEY_BYTES.saturating_sub(sc.prefix.len())));
    io(s.set(sc.bucket, &fits, b"v"))?;
    let long = format!("{fits}k");
    let exact = Error::KeyTooLong { len: long.len() };
    let what = format!("a {}-byte key", long.len());
    expect_limit(s.set(sc.bucket, &long, b"v"), &format!("set of {what}"), "256", &exact)?;
    expect_limit(s.read(sc.bucket, &long).map(|_| ()), &format!("read of {what}"), "256", &exact)?;
    expect_limit(s.delete(sc.bucket, &long), &format!("delete of {what}"), "256", &exact)?;
    expect_limit(s.increment(sc.bucket, &long, 1).map(|_| ()), &format!("increment of {what}"), "256", &exact)?;
    expect_limit(s.swap(sc.bucket, &long, Observed::Absent(0), b"v").map(|_| ()), &format!("swap of {what}"), "256", &exact)?;
    if !exact.to_string().contains("at most 256 bytes") {
        return Err("the key-length error does not name the limit".into());
    }
    io(s.delete(sc.bucket, &fits))
}

fn batches_are_all_or_nothing(s: &dyn Store, sc: Scope) -> Outcome {
    let (a, b, c) = (sc.key("ba"), sc.key("bb"), sc.key("bc"));
    let too_big = vec![0u8; MAX_VALUE_BYTES + 1];
    if s.set_many(sc.bucket, &[(&a, b"1"), (&b, &too_big)]).is_ok() {
        return Err("set-many with an oversized value was accepted".into());
    }
    expect_value(s, sc, &a, None, "half a batch was written")?;
    io(s.set_many(sc.bucket, &[(&a, b"1"), (&b, b"2"), (&c, b"3")]))?;
    let got = io(s.get_many(sc.bucket, &[&a, &b, &c, &sc.key("missing")]))?;
    let want: Vec<Option<Vec<u8>>> = vec![Some(b"1".to_vec()), Some(b"2".to_vec()), Some(b"3".to_vec()), None];
    if got != want {
        return Err("get-many did not return what set-many wrote".into());
    }
    io(s.delete_many(sc.bucket, &[&a, &c, &sc.key("missing")]))?;
    expect_value(s, sc, &a, None, "delete-many left a key behind")?;
    expect_value(s, sc, &b, Some(b"2"), "delete-many removed a key it was not given")?;
    io(s.delete(sc.bucket, &b))
}

fn batched_swaps_each_keep_the_promise(s: &dyn Store, sc: Scope) -> Outcome {
    let (a, b, c) = (sc.key("batch-a"), sc.key("batch-b"), sc.key("batch-c"));
    io(s.set(sc.bucket, &a, b"a1"))?;
    io(s.set(sc.bucket, &b, b"b1"))?;
    let reads = io(s.read_many(sc.bucket, &[&a, &b, &c]))?;
    if reads.len() != 3 || reads[0].value.as_deref() != Some(&b"a1"[..]) || reads[2].value.is_some() {
        return Err(format!("read-many gave {reads:?}"));
    }
    // b moves after the read; a and c (absent) do not.
    io(s.set(sc.bucket, &b, b"b2"))?;
    let out = io(s.swap_each(sc.bucket, &[(&a, reads[0].observed, b"a2"), (&b, reads[1].observed, b"b3"), (&c, reads[2].observed, b"c1")]))?;
    let result = match out.as_slice() {
        [Swap::Done, Swap::Failed(fresh), Swap::Done] if fresh.value.as_deref() == Some(&b"b2"[..]) => {
            let now = io(s.get_many(sc.bucket, &[&a, &b, &c]))?;
            if now == [Some(b"a2".to_vec()), Some(b"b2".to_vec()), Some(b"c1".to_vec())] {
                // The same key twice in one batch on one read: only the first may land.
                let again = io(s.read(sc.bucket, &a))?;
                let twice = io(s.swap_each(sc.bucket, &[(&a, again.observed, b"a3"), (&a, again.observed, b"a4")]))?;
                match twice.as_slice() {
                    [Swap::Done, Swap::Failed(_)] => Ok(()),
                    other => Err(format!("two swaps of one key on one read gave {other:?}")),
                }
            } else {
                Err(format!("after swap-each the keys hold {now:?}"))
            }
        }
        other => Err(format!("swap-each gave {other:?} (want written, failed with b2, written)")),
    };
    io(s.delete_many(sc.bucket, &[&a, &b, &c]))?;
    result
}

fn a_prefix_lists_only_its_own_keys(s: &dyn Store, sc: Scope) -> Outcome {
    let (mine, before, after) = (sc.key("pfx-b/"), sc.key("pfx-a/"), sc.key("pfx-b0"));
    let mut written = Vec::new();
    for i in 0..23 {
        written.push(format!("{mine}{i:02}"));
    }
    let neighbours = [format!("{before}zz"), after.clone(), format!("{after}/x"), sc.key("pfx-b")];
    for k in written.iter().chain(&neighbours) {
        io(s.set(sc.bucket, k, b"v"))?;
    }
    let mut all = Vec::new();
    let mut from: Option<String> = None;
    loop {
        let page = io(s.list_prefix(sc.bucket, &mine, from.as_deref(), 5))?;
        if page.len() > 5 {
            return Err(format!("a page of 5 held {} keys", page.len()));
        }
        let Some(last) = page.last().cloned() else { break };
        all.extend(page);
        from = Some(last);
    }
    let direct = io(s.list_prefix(sc.bucket, &mine, Some(&written[9]), 3))?;
    let result = if all != written {
        Err(format!("listed {all:?} under {mine}, not its {} keys in order", written.len()))
    } else if direct != written[10..13] {
        Err(format!("listing after {} gave {direct:?}", written[9]))
    } else {
        Ok(())
    };
    let refs: Vec<&str> = written.iter().chain(&neighbours).map(String::as_str).collect();
    io(s.delete_many(sc.bucket, &refs))?;
    result
}

fn keys_list_in_pages_per_bucket(s: &dyn Store, sc: Scope) -> Outcome {
    let other = if sc.bucket == "default" { "cache" } else { "default" };
    let mut written = Vec::new();
    for i in 0..25 {
        let k = sc.key(&format!("list-{i:02}"));
        io(s.set(sc.bucket, &k, b"v"))?;
        written.push(k);
    }
    let stranger = sc.key("list-99");
    // Another bucket may be absent on some hosts; what is there must not leak.
    let other_written = s.set(other, &stranger, b"v").is_ok();
    io(s.delete(sc.bucket, &written[3]))?;
    let mut all = Vec::new();
    let mut after = sc.key("list-");
    loop {
        let page = io(s.list_keys(sc.bucket, Some(&after), 10))?;
        let mine: Vec<String> = page.iter().filter(|k| k.starts_with(&sc.key("list-"))).cloned().collect();
        if page.len() > 10 {
            return Err(format!("a page of 10 held {} keys", page.len()));
        }
        let done = page.is_empty() || mine.len() < page.len();
        if let Some(last) = page.last() {
            after = last.clone();
        }
        all.extend(mine);
        if done {
            break;
        }
    }
    let mut want: Vec<String> = written.iter().filter(|k| **k != written[3]).cloned().collect();
    want.sort();
    let result = if all != want { Err(format!("listed {} keys of {} (deleted or foreign keys shown, or order wrong)", all.len(), want.len())) } else { Ok(()) };
    let refs: Vec<&str> = written.iter().map(String::as_str).collect();
    io(s.delete_many(sc.bucket, &refs))?;
    if other_written {
        io(s.delete(other, &stranger))?;
    }
    result
}

const B: &str = "default";

fn update_race_loses_no_update(new: Factory) -> Outcome {
    let store = new();
    let (threads, rounds) = (8, 200);
    io(store.set(B, "counter", b"0"))?;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (store, barrier) = (store.clone(), barrier.clone());
            thread::spawn(move || -> Outcome {
                barrier.wait();
                for _ in 0..rounds {
                    loop {
                        let read = io(store.read(B, "counter"))?;
                        let n: u64 = String::from_utf8_lossy(&read.value.unwrap_or_default()).parse().map_err(|_| "counter unreadable")?;
                        if let Swap::Done = io(store.swap(B, "counter", read.observed, (n + 1).to_string().as_bytes()))? {
                            break;
                        }
                    }
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| "a racing thread panicked")??;
    }
    let last = String::from_utf8_lossy(&io(store.get(B, "counter"))?.unwrap_or_default()).into_owned();
    if last != (threads * rounds).to_string() {
        return Err(format!("{} increments by swap left the counter at {last}: a swap overwrote another's update", threads * rounds));
    }
    Ok(())
}

fn create_race_has_exactly_one_winner(new: Factory) -> Outcome {
    let store = new();
    for round in 0..100 {
        let key = format!("create-{round}");
        let barrier = Arc::new(Barrier::new(2));
        let handles: Vec<_> = (0..2u8)
            .map(|who| {
                let (store, barrier, key) = (store.clone(), barrier.clone(), key.clone());
                thread::spawn(move || -> Result<bool, String> {
                    let read = io(store.read(B, &key))?;
                    barrier.wait();
                    Ok(matches!(io(store.swap(B, &key, read.observed, &[who]))?, Swap::Done))
                })
            })
            .collect();
        let mut wins = 0;
        for h in handles {
            wins += h.join().map_err(|_| "a racing thread panicked")?? as usize;
        }
        if wins != 1 {
            return Err(format!("round {round}: {wins} creators of one absent key won"));
        }
    }
    Ok(())
}

fn increment_is_atomic_under_threads(new: Factory) -> Outcome {
    let store = new();
    let (threads, rounds) = (8, 500);
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let store = store.clone();
            thread::spawn(move || -> Outcome {
                for _ in 0..rounds {
                    io(store.increment(B, "n", 1))?;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| "an incrementing thread panicked")??;
    }
    let total = io(store.increment(B, "n", 0))?;
    if total != (threads * rounds) as i64 {
        return Err(format!("{} concurrent increments gave {total}", threads * rounds));
    }
    Ok(())
}

fn closed_store_refuses_operations(new: Factory) -> Outcome {
    let store = new();
    io(store.set(B, "k", b"v"))?;
    io(store.close())?;
    match store.get(B, "k") {
        Err(Error::Backend(_)) | Err(Error::Unavailable(_)) => Ok(()),
        Err(e) => Err(format!("a closed store failed with {e}, not a backend error")),
        Ok(_) => Err("a closed store still answered".into()),
    }
}

/// Runs the named check against stores from `new`, panicking with the
/// broken rule: what the generated tests call.
pub fn run(name: &str, new: Factory) {
    let outcome = if let Some(c) = SEQUENTIAL.iter().find(|c| c.name == name) {
        let store = new();
        (c.run)(store.as_ref(), Scope { bucket: B, prefix: "conformance/" })
    } else if let Some(c) = FRESH.iter().find(|c| c.name == name) {
        (c.run)(new)
    } else {
        panic!("no conformance check is named {name}");
    };
    if let Err(why) = outcome {
        panic!("{name}: {why}");
    }
}

/// Every check's name, in catalogue order.
pub fn names() -> Vec<&'static str> {
    SEQUENTIAL.iter().map(|c| c.name).chain(FRESH.iter().map(|c| c.name)).collect()
}

/// Generate one `#[test]` per conformance check for a backend, given an
/// expression producing a fresh `Arc<dyn Store>`, plus a test that the list
/// below covers the whole catalogue.
#[macro_export]
macro_rules! conformance_tests {
    ($factory:expr) => {
        $crate::conformance_tests!(@each $factory;
            absent_handle_is_create_if_absent,
            one_of_two_creators_wins,
            no_aba_after_delete_and_recreate,
            same_bytes_rewrite_is_a_write,
            lost_swap_is_never_reported_as_success,
            failed_swap_returns_a_fresh_read,
            increment_is_an_8_byte_counter,
            increment_refuses_a_value_that_is_not_a_counter,
            values_up_to_1_mib_round_trip,
            keys_over_256_bytes_refused,
            batches_are_all_or_nothing,
            keys_list_in_pages_per_bucket,
            batched_swaps_each_keep_the_promise,
            a_prefix_lists_only_its_own_keys,
            update_race_loses_no_update,
            create_race_has_exactly_one_winner,
            increment_is_atomic_under_threads,
            closed_store_refuses_operations
        );
    };
    (@each $factory:expr; $($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                $crate::conformance::run(stringify!($name), &$factory);
            }
        )*
        #[test]
        fn conformance_list_covers_the_catalogue() {
            let listed = [$(stringify!($name)),*];
            assert_eq!(listed.to_vec(), $crate::conformance::names(), "the macro's list and the catalogue differ");
        }
    };
}
