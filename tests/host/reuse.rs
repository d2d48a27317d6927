//! Instances reused as Spin reuses them, and never across tenants. The
//! request log names, for every request, the instance that answered it
//! (`instance=`, a serial the host gives each instance it makes) and the
//! partition that instance serves (`partition=`), so these tests read which
//! instance served whom from the host's own account.
use crate::app::*;
use crate::harness::*;
use crate::metrics::{sample, scrape};
use cairn_auth::{Actor, Role};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

/// An agent of another tenant.
fn globex() -> Who<'static> {
    Who { tenant: "globex", sub: "agent-9", actor: Actor::Agent, role: Role::Member, scope: "notes:read notes:write" }
}

/// `(instance, partition)` of each logged request to `path` with an instance.
fn served(log: &str, path: &str) -> Vec<(u64, String)> {
    let field = |line: &str, name: &str| line.split_whitespace().find_map(|w| w.strip_prefix(name)).map(str::to_string);
    log.lines()
        .filter(|l| l.contains(" request") && field(l, "path=").as_deref() == Some(path))
        .filter_map(|l| Some((field(l, "instance=")?.parse().ok()?, field(l, "partition=")?)))
        .filter(|(i, _)| *i != 0)
        .collect()
}

/// The log once it has `n` requests to `path` with their instance (or after 5 s).
fn log_with(cairn: &Cairn, path: &str, n: usize) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let log = cairn.log();
        if served(&log, path).len() >= n || std::time::Instant::now() > deadline {
            return log;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The partitions each instance served.
fn partitions_of(served: &[(u64, String)]) -> BTreeMap<u64, BTreeSet<String>> {
    let mut out: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
    for (instance, partition) in served {
        out.entry(*instance).or_default().insert(partition.clone());
    }
    out
}

fn list_notes(cairn: &Cairn, token: &str) {
    let r = cairn.call(token, "list_notes", json!({}));
    assert_eq!(r["isError"], false, "{r}");
}

#[test]
fn an_instance_that_served_one_tenant_never_serves_another() {
    // Reuse forced high: one instance could serve everything, if it were allowed to.
    let cairn = start_with(vec![], vec!["--max-instance-reuse-count", "100000", "--idle-instance-timeout-ms", "60000"]);
    let (acme, globex) = (cairn.token(&agent()), cairn.token(&globex()));
    for _ in 0..15 {
        list_notes(&cairn, &acme);
        list_notes(&cairn, &globex);
    }
    // At once, from both tenants: concurrent requests share an instance only within a tenant.
    std::thread::scope(|s| {
        for i in 0..8 {
            let (cairn, token) = (&cairn, if i % 2 == 0 { &acme } else { &globex });
            s.spawn(move || (0..5).for_each(|_| list_notes(cairn, token)));
        }
    });
    // A token no key here verifies: an instance of its own, used once.
    let forged = stranger().sign(&cairn.claims(&agent()));
    for _ in 0..3 {
        assert_eq!(cairn.mcp(&forged, &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).status, 401);
    }
    for _ in 0..3 {
        assert_eq!(cairn.get("/healthz").status, 200);
    }
    let _ = log_with(&cairn, "/mcp", 73);
    let log = log_with(&cairn, "/healthz", 3);
    let mcp = served(&log, "/mcp");
    assert_eq!(mcp.len(), 30 + 40 + 3, "every /mcp request logged with its instance:\n{log}");
    for (instance, partitions) in partitions_of(&mcp) {
        assert_eq!(partitions.len(), 1, "instance {instance} served {partitions:?}");
    }
    let instances = |p: &str| mcp.iter().filter(|(_, q)| q == p).map(|(i, _)| *i).collect::<BTreeSet<_>>();
    let (a, g, alone) = (instances("tenant:acme"), instances("tenant:globex"), instances("alone"));
    // Reused, though not always the same few: concurrent calls each need an
    // instance of their own, and once the host's slots are full the idle
    // ones end to make room.
    assert!(!a.is_empty() && a.len() < 18, "35 calls of acme reuse instances: {a:?}");
    assert!(!g.is_empty() && g.len() < 18, "35 calls of globex reuse instances: {g:?}");
    assert!(a.is_disjoint(&g), "{a:?} {g:?}");
    assert_eq!(alone.len(), 3, "each unverified request had an instance of its own: {alone:?}");
    let health = served(&log, "/healthz");
    assert!(health.iter().all(|(i, p)| p == "anonymous" && !a.contains(i) && !g.contains(i)), "{health:?}");
}

#[test]
fn with_reuse_off_every_request_gets_a_fresh_instance() {
    let cairn = start_with(vec![], vec!["--max-instance-reuse-count", "1"]);
    let acme = cairn.token(&agent());
    for _ in 0..6 {
        list_notes(&cairn, &acme);
    }
    let log = log_with(&cairn, "/mcp", 6);
    let mcp = served(&log, "/mcp");
    assert_eq!(mcp.len(), 6, "{log}");
    assert_eq!(partitions_of(&mcp).len(), 6, "six requests, six instances: {mcp:?}");
}

#[test]
fn a_reused_instance_reads_its_configuration_once() {
    let variable_reads = |cairn: &Cairn| sample(&scrape(cairn), "cairn_variable_reads_total", &[]);
    let started = |cairn: &Cairn| sample(&scrape(cairn), "cairn_instances_started_total", &[("component", "router")]);
    let env = vec![("SPIN_VARIABLE_METRICS_TOKEN", "scrape-me")];
    // One connection thread: every connection meets the same pool (pools are per connection thread).
    let reused = start_with(env.clone(), vec!["--idle-instance-timeout-ms", "60000", "--connection-threads", "1"]);
    let acme = reused.token(&agent());
    list_notes(&reused, &acme);
    let (reads, instances) = (variable_reads(&reused), started(&reused));
    assert!(reads > 0.0 && instances >= 1.0, "the first call read the configuration: {reads} reads, {instances} instances");
    for _ in 0..20 {
        list_notes(&reused, &acme);
    }
    assert_eq!(started(&reused), instances, "20 more calls on the same instance");
    assert_eq!(variable_reads(&reused), reads, "and not one more variable read");
    // Without reuse, every instance reads it again: what the figure above saves.
    let fresh = start_with(env, vec!["--max-instance-reuse-count", "1"]);
    let acme = fresh.token(&agent());
    list_notes(&fresh, &acme);
    let first = variable_reads(&fresh);
    for _ in 0..5 {
        list_notes(&fresh, &acme);
    }
    assert!(variable_reads(&fresh) >= first * 6.0, "each fresh instance reads its configuration");
}

#[test]
fn a_trapped_instance_is_never_handed_another_request() {
    require_built(&["health.wasm", "misbehave.wasm"]);
    let args = vec!["--idle-instance-timeout-ms", "60000", "--connection-threads", "1"];
    let cairn = Cairn::start(Start { manifest: fixtures(), args, ..Start::default() });
    assert_eq!(cairn.get("/misbehave/variable").status, 200);
    assert_eq!(cairn.get("/misbehave/trap").status, 500);
    for _ in 0..3 {
        assert_eq!(cairn.get("/misbehave/variable").status, 200, "the next request is served by a sound instance");
    }
    let _ = cairn.wait_for_log("instance ended");
    let log = log_with(&cairn, "/misbehave/variable", 4);
    let ended = log.lines().find(|l| l.contains("instance ended")).unwrap_or_else(|| panic!("the trap is logged: {log}"));
    let trapped: u64 = ended.split_whitespace().find_map(|w| w.strip_prefix("instance=")).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{ended}"));
    let variable = served(&log, "/misbehave/variable");
    assert_eq!(variable.len(), 4, "{log}");
    assert_eq!(variable[0].0, trapped, "the trap ran on the reused instance that served the first request: {variable:?}");
    assert!(variable[1..].iter().all(|(i, _)| *i != trapped), "the instance that trapped took no later request: {variable:?}");
    assert!(variable[1..].iter().all(|(i, _)| *i == variable[1].0), "its successor is reused: {variable:?}");
}

/// A text of `n` distinct lines.
fn distinct_lines(n: usize, salt: &str) -> String {
    (0..n).map(|i| format!("{salt} line {i} {}\n", (i * 7919) % 104_729)).collect()
}

#[test]
fn an_idle_instance_holds_no_permit_for_costly_work() {
    // Idle instances live a minute: one that kept its permit for costly work
    // after its request would make every other tenant's costly request wait
    // that minute (the host has half its cores' permits).
    let cairn = start_with(vec![], vec!["--idle-instance-timeout-ms", "60000"]);
    let permits = std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1));
    for t in 0..=permits {
        let tenant: &'static str = Box::leak(format!("tenant-{t}").into_boxed_str());
        let who = Who { tenant, ..person() };
        let (token, note) = (cairn.token(&who), cairn.create_note(&who, "Long", true));
        for (v, salt) in ["first", "second"].iter().enumerate() {
            let put = json!({"expected_version": v + 1, "text": distinct_lines(33_000, salt)});
            let r = cairn.rest(&token, "PUT", &format!("/api/v1/notes/{note}/tabs/markdown"), Some(&put));
            assert_eq!(r.status, 200, "{}", r.text());
        }
        // The diff of two unrelated 33,000-line texts computes for about half a second: costly.
        let asked = std::time::Instant::now();
        let diff = cairn.rest(&token, "GET", &format!("/api/v1/notes/{note}/tabs/markdown/diff?from=2&to=3"), None);
        assert!(matches!(diff.status, 200 | 422), "tenant {t}, after {:?}: {} {}", asked.elapsed(), diff.status, diff.text());
        let took = asked.elapsed();
        assert!(took < std::time::Duration::from_secs(20), "tenant {t}'s costly request waited {took:?} for a permit an idle instance kept");
    }
}

#[test]
fn idle_instances_make_room_for_a_new_tenant_when_the_host_is_full() {
    // A tenant's router takes two slots (its own, and one for the first
    // tool it calls); kept idle a minute, 20 tenants fill a host of 41
    // slots, and the 21st finds one: the idle instances end to make room.
    let cairn = start_with(vec![], vec!["--idle-instance-timeout-ms", "60000", "--max-instances", "41"]);
    for t in 0..24 {
        let tenant: &'static str = Box::leak(format!("tenant-{t}").into_boxed_str());
        let token = cairn.token(&Who { tenant, ..agent() });
        let r = cairn.mcp(&token, &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_notes", "arguments": {}}}));
        assert_eq!(r.status, 200, "tenant {t}: {}", r.text());
    }
}

#[test]
fn a_router_holds_a_slot_for_the_tools_it_called_not_for_every_tool() {
    // Three slots, three tenants, each calling no tool (ping), then one
    // tool: had a router reserved a slot for each of its 18 composed tools,
    // each tenant's router would fill the host and end the others' (six
    // routers made, not three, and every switch a fresh instance).
    let env = vec![("SPIN_VARIABLE_METRICS_TOKEN", "scrape-me")];
    let args = vec!["--idle-instance-timeout-ms", "60000", "--connection-threads", "1", "--max-instances", "6"];
    let cairn = start_with(env, args);
    let started = |cairn: &Cairn| sample(&scrape(cairn), "cairn_instances_started_total", &[("component", "router")]);
    let tokens: Vec<String> = ["t-a", "t-b", "t-c"].iter().map(|&tenant| cairn.token(&Who { tenant, ..agent() })).collect();
    for _ in 0..2 {
        for token in &tokens {
            let r = cairn.mcp(token, &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
            assert_eq!(r.status, 200, "{}", r.text());
        }
    }
    assert_eq!(started(&cairn), 3.0, "one router a tenant, each kept: pings call no tool");
    for token in &tokens {
        list_notes(&cairn, token);
    }
    assert_eq!(started(&cairn), 3.0, "each router took a second slot for list_notes, and all six fit");
}

#[test]
fn a_second_tool_with_no_slot_left_on_a_busy_host_is_answered_busy_not_failed() {
    // Two slots: the router and the one it keeps for its first tool. Its
    // second tool finds none, and no idle instance can give one back (the
    // router is busy, waiting for it): the tool waits two seconds, then the
    // call is answered 503 busy with Retry-After, and the host serves on.
    let cairn = start_with(vec![], vec!["--max-instances", "2", "--connection-threads", "1"]);
    let token = cairn.token(&agent());
    list_notes(&cairn, &token);
    let search = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search_notes", "arguments": {"query": "anything"}}});
    let r = cairn.mcp(&token, &search);
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.header("retry-after").is_some(), "{:?}", r.headers);
    assert!(r.text().contains("no instance free"), "{}", r.text());
    let r = cairn.mcp(&token, &search);
    assert_eq!(r.status, 200, "a fresh router serves its first tool: {}", r.text());
}

#[test]
fn a_costly_caller_waiting_on_a_costly_callee_holds_no_permit_it_needs() {
    require_built(&["health.wasm", "misbehave.wasm"]);
    // Both sides compute 400 ms without a pause (costly). The caller waits
    // on the callee's answer; had it kept the permit for costly work through
    // that wait, the callee (on a host with one permit) would wait for it
    // until its request timeout and the chain would fail. One request at a
    // time per instance: the callee runs on an instance of its own.
    let args = vec!["--max-instance-concurrent-reuse-count", "1"];
    let cairn = Cairn::start(Start { manifest: fixtures(), args, ..Start::default() });
    assert_eq!(cairn.get("/misbehave/compute").status, 200);
    let asked = std::time::Instant::now();
    let chained = cairn.get("/misbehave/compute-chain");
    let took = asked.elapsed();
    assert!(took < std::time::Duration::from_secs(10), "the chain took {took:?}: the callee waited for a permit its caller kept");
    assert_eq!((chained.status, chained.text()), (200, "200 computed".to_string()), "{}", cairn.log());
}
