//! Many hosts on a Redis Cluster: three `cairn up` processes share one real
//! 3-primary, 3-replica cluster, with 32 agents of 16 tenants appending to
//! their own notes (a call that got no answer is resent with the same
//! idempotency key). Every slot they write in moves live (the tenants are
//! picked so that their slots are among those a reshard of 1,024 slots
//! moves), or a primary dies and its replica takes over, and every
//! acknowledged line is in its note exactly once: with writes confirmed by a replica (the cluster default) even
//! through the failover; acknowledged on the primary alone, the lines a
//! failover loses are counted and printed.
use crate::app::*;
use crate::harness::*;
use crate::scale_out::hosts_with;
use crate::scale_out_faults::{Seen, clients_each, count_lines};
use cairn_kv_redis::server::Cluster;
use cairn_kv_redis::slot::slot_of;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A runtime config with `default` on the cluster (`cache` goes beside it
/// in a namespace of its own), writes confirmed by `wait` replicas (the
/// cluster default when `None`).
fn runtime_config(cluster: &Cluster, wait: Option<u32>) -> PathBuf {
    let path = scratch("rc-cluster").join("runtime-config.toml");
    let urls: Vec<String> = cluster.urls().iter().map(|u| format!("{u:?}")).collect();
    let mut text = format!("[key_value_store.default]\ntype = \"redis\"\nurls = [{}]\n", urls.join(", "));
    if let Some(w) = wait {
        text.push_str(&format!("wait_for_replicas = {w}\n"));
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn hosts(cluster: &Cluster, wait: Option<u32>) -> Vec<Cairn> {
    hosts_with(&runtime_config(cluster, wait), 3, &[("SPIN_VARIABLE_METRICS_TOKEN", "scrape-me")], &[])
}

/// 16 tenants, `tenant-0` to `tenant-15`.
fn tenants() -> Vec<String> {
    (0..16).map(|t| format!("tenant-{t}")).collect()
}

/// The slots a live reshard takes from each of its two source primaries:
/// `redis-cli --cluster reshard` takes an equal share of each source's
/// slots, lowest first.
const MOVED_PER_SOURCE: usize = 512;

/// 16 tenants whose keys' slot (their hash tag is `t/<tenant>`) is among
/// the [`MOVED_PER_SOURCE`] lowest slots of node 0 or of node 2 (8 each):
/// a reshard of those moves every slot their agents write in.
fn tenants_on_moving_slots(cluster: &Cluster) -> Vec<String> {
    let mut out = Vec::new();
    for node in [0, 2] {
        let moving = &cluster.slots_of(node)[..MOVED_PER_SOURCE];
        let on = (0..).map(|i| format!("tenant-{i}")).filter(|t| moving.contains(&slot_of(format!("t/{t}").as_bytes())));
        out.extend(on.take(8));
    }
    out
}

/// 32 agents of the 16 `tenants`, each with a note of its own: (token, note, tag).
fn agents(hosts: &[Cairn], tenants: &[String]) -> Vec<(String, String, String)> {
    assert_eq!(tenants.len(), 16);
    (0..32)
        .map(|c| {
            let tenant = tenants[c % 16].as_str();
            let person = Who { tenant, ..person() };
            let agent = Who { tenant, sub: "agent", ..agent() };
            let host = &hosts[c % hosts.len()];
            (host.token(&agent), host.create_note(&person, &format!("cluster {c}"), true), format!("a{c}"))
        })
        .collect()
}

fn p99(mut took: Vec<Duration>) -> Duration {
    took.sort();
    took.get((took.len() * 99 / 100).min(took.len().saturating_sub(1))).copied().unwrap_or_default()
}

fn metrics(host: &Cairn) -> String {
    let r = host.request("GET", "/metrics", &[("authorization", "Bearer scrape-me")], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    r.text()
}

#[test]
fn three_hosts_lose_no_acknowledged_line_while_every_slot_they_write_moves_live() {
    let cluster = Cluster::start(3, 1);
    let hosts = hosts(&cluster, None);
    let tenants = tenants_on_moving_slots(&cluster);
    assert!(
        hosts[0].log().contains("Redis Cluster: 3 primaries, 3 replicas, 16384 of 16384 slots covered"),
        "the shape is not reported at start:\n{}",
        hosts[0].log()
    );
    let work = agents(&hosts, &tenants);
    let (stop, workers) = clients_each(Arc::new(Mutex::new(hosts.iter().map(|h| h.addr).collect())), &work);
    std::thread::sleep(Duration::from_millis(1500));
    let moving = Instant::now();
    let took = cluster.reshard(&[0, 2], 1, 2 * MOVED_PER_SOURCE);
    let moved = Instant::now();
    std::thread::sleep(Duration::from_millis(1000));
    stop.store(true, Ordering::SeqCst);
    let seen: Vec<Seen> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    for (c, s) in seen.iter().enumerate() {
        assert!(s.errors.is_empty(), "agent {c}: {:?}", s.errors);
    }
    let (acked, lost, twice) = count_lines(&hosts[2], &work, &seen);
    let before: Vec<Duration> = seen.iter().flat_map(|s| &s.timings).filter(|(at, _)| *at < moving).map(|(_, d)| *d).collect();
    let during: Vec<Duration> = seen.iter().flat_map(|s| &s.timings).filter(|(at, _)| *at >= moving && *at < moved).map(|(_, d)| *d).collect();
    let unavailable: usize = seen.iter().map(|s| s.unavailable).sum();
    eprintln!(
        "reshard of {} slots under 32 agents took {took:?}: {acked} lines acknowledged, {lost} lost, {twice} twice, \
         {unavailable} calls answered 503; p99 of a call {:?} before the move ({} calls), {:?} during it ({} calls)",
        2 * MOVED_PER_SOURCE,
        p99(before.clone()),
        before.len(),
        p99(during.clone()),
        during.len()
    );
    assert_eq!((lost, twice), (0, 0), "acknowledged lines lost or doubled by the reshard");
    assert!(during.len() > 100, "only {} calls ran during the move", during.len());
    let m = metrics(&hosts[0]);
    let primaries = cluster.shape(0).primaries;
    let moved_to = primaries.iter().find(|p| p.addr.ends_with(&format!(":{}", cluster.nodes[1].port))).unwrap();
    assert_eq!(moved_to.slots, 5462 + 2 * MOVED_PER_SOURCE);
    let on_node_1 = cluster.slots_of(1);
    for t in &tenants {
        let slot = slot_of(format!("t/{t}").as_bytes());
        assert!(on_node_1.contains(&slot), "{t}'s slot {slot} did not move");
    }
    assert!(m.contains("cairn_redis_node_calls_total{namespace=\"cairn\",node="), "{m}");
    for h in &hosts {
        assert!(!h.log().contains("panicked"), "{}", h.log());
    }
}

/// Make the replica of node 0 lag for certain (asleep, its link dropped by
/// the primary), kill node 0 while it lags, wait until the replica took
/// over, and bring node 0 back (it rejoins as a replica of the new
/// primary). Returns (acknowledged, lost, doubled) over the 32 agents.
fn fail_over_under_load(wait: Option<u32>) -> (usize, usize, usize) {
    let mut cluster = Cluster::start(3, 1);
    let hosts = hosts(&cluster, wait);
    let work = agents(&hosts, &tenants());
    let (stop, workers) = clients_each(Arc::new(Mutex::new(hosts.iter().map(|h| h.addr).collect())), &work);
    std::thread::sleep(Duration::from_millis(1500));
    let (replica, sleeper) = cluster.stall_replication(0, 4.0);
    // Lines acknowledged by node 0 alone now (with wait_for_replicas = 0).
    cluster.wait_for_unreplicated_writes(0, 4096);
    cluster.nodes[0].kill();
    let _ = sleeper.join();
    let took = cluster.wait_until_primary(replica);
    eprintln!("replica promoted {took:?} after its sleep, the primary killed");
    cluster.nodes[0].restart();
    cluster.wait_until_settled();
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, Ordering::SeqCst);
    let seen: Vec<Seen> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let mut conflicts = 0;
    for (c, s) in seen.iter().enumerate() {
        // A failover that loses writes takes a note back to an older
        // version: an agent that read the newer one is refused with
        // `version_conflict` (and told to read again). Only then.
        let (stale, other): (Vec<&String>, Vec<&String>) = s.errors.iter().partition(|e| e.contains("\"error\":\"version_conflict\""));
        assert!(other.is_empty(), "agent {c}: {other:?}");
        assert!(stale.is_empty() || wait == Some(0), "agent {c} saw its note go back without a lossy failover: {stale:?}");
        conflicts += stale.len();
    }
    let (acked, lost, twice) = count_lines(&hosts[1], &work, &seen);
    let unavailable: usize = seen.iter().map(|s| s.unavailable).sum();
    eprintln!(
        "failover under 32 agents, wait_for_replicas = {}: {acked} lines acknowledged, {lost} lost, {twice} twice, {unavailable} calls answered 503, {conflicts} edits refused because their note went back",
        wait.unwrap_or(1)
    );
    (acked, lost, twice)
}

#[test]
fn a_primary_failed_over_under_load_loses_no_acknowledged_line_when_a_replica_confirms_each_write() {
    let (acked, lost, twice) = fail_over_under_load(None);
    assert!(acked > 100, "only {acked} lines acknowledged");
    assert_eq!((lost, twice), (0, 0), "acknowledged lines lost or doubled in the failover");
}

#[test]
fn acknowledged_on_the_primary_alone_a_failover_loses_the_lines_the_replica_never_got_and_counts_them() {
    let (acked, lost, twice) = fail_over_under_load(Some(0));
    assert!(acked > 100, "only {acked} lines acknowledged");
    assert_eq!(twice, 0, "a line landed twice");
    assert!(lost > 0, "nothing was lost: the replica did not lag, so the loss bound was not measured");
}

/// Every tool, for two tenants, and the host's sweeps (every second: lapsed
/// claims, history, delete markers, the door's budgets and nonces) run on a
/// cluster without one batch refused for spanning slots, and without one
/// store error: every batch Cairn sends stays within one slot.
#[test]
fn every_tool_and_every_sweep_run_on_a_cluster_and_no_batch_spans_two_slots() {
    let cluster = Cluster::start(3, 1);
    let rc = runtime_config(&cluster, None);
    let host = hosts_with(&rc, 1, &[("SPIN_VARIABLE_METRICS_TOKEN", "scrape-me")], &["--sweep-interval-secs", "1"]).remove(0);
    for tenant in ["north", "south"] {
        let (person, agent) = (Who { tenant, ..person() }, Who { tenant, ..agent() });
        crate::wire::every_tool_once(&host, &person, &agent, |tool, _, response, _| {
            assert!(response.get("error").is_none() && response["result"]["isError"] == false, "{tool} on tenant {tenant}: {response}");
        });
        let token = host.token(&agent);
        let note = host.create_note(&person, "claims", true);
        let claim = host.call(&token, "claim_note", serde_json::json!({"note_id": note, "tab_id": "markdown", "ttl_seconds": 1}));
        assert_eq!(claim["isError"], false, "{claim}");
        let board = host.call(&token, "list_claims", serde_json::json!({"note_id": note}));
        assert_eq!(board["structuredContent"]["claims"].as_array().unwrap().len(), 1, "{board}");
    }
    // Two sweeps: the claims lapse and are swept, markers and budgets too.
    std::thread::sleep(Duration::from_millis(2500));
    let m = metrics(&host);
    let refusals: Vec<&str> = m.lines().filter(|l| l.starts_with("cairn_redis_cross_slot_refusals_total{")).collect();
    assert_eq!(refusals.len(), 2, "both stores on the cluster report: {m}");
    assert!(refusals.iter().all(|l| l.ends_with(" 0")), "{refusals:?}");
    assert!(!m.lines().any(|l| l.starts_with("cairn_store_operations_total") && l.contains("outcome=\"error\"")), "{m}");
    let log = host.log();
    assert!(!log.contains("sweep failed") && !log.contains("panicked"), "{log}");
    assert!(m.contains("cairn_redis_node_slots{namespace=\"cairn-cache\""), "{m}");
}
