//! `cairn-bench scale`: the append workload (32 clients, each on its own
//! note: read → conditional write of the text plus one line) on 1, 2 and 3
//! hosts sharing one Redis, against one host on SQLite, in one run, with
//! p50/p99 and the lost count (must be 0); and the cost of the commit check,
//! on against off, on one host on Redis.
//!
//! Every host is its own `cairn up` process; the clients are spread over
//! the hosts round-robin, one keep-alive connection each. Redis runs with an
//! append-only file synced every second (its usual durable setting).

use crate::append::{AppendRun, append_one, combine};
use crate::hosts::{self, Host};
use crate::stack::{Client, McpCaller};
use anyhow::{Context, Result, bail};
use cairn_kv_redis::server::Server;
use serde_json::json;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One row of the table.
pub struct ScaleRow {
    /// What ran.
    pub label: String,
    /// Hosts serving.
    pub hosts: usize,
    /// The measurement.
    pub run: AppendRun,
}

/// Notes for `n` clients, created (and approved for agents) through a host
/// by people, client `i`'s by `people[i % len]`.
async fn notes(addr: SocketAddr, people: &[String], n: usize) -> Result<Vec<String>> {
    let mut c = Client::connect(addr).await?;
    let mut out = Vec::new();
    for i in 0..n {
        let token = &people[i % people.len()];
        let (status, v) = c.send("POST", "/api/v1/notes", token, &json!({"title": format!("append {i}"), "approved_for_agents": true})).await?;
        if status != 201 {
            bail!("creating a note: HTTP {status}: {v}");
        }
        out.push(v["note_id"].as_str().context("note_id")?.to_string());
    }
    Ok(out)
}

/// The append workload against `hosts` (clients round-robin) for
/// `seconds`: a person of the agent's tenant makes the notes.
pub async fn drive(hosts: &[SocketAddr], person: &str, token: &str, clients: usize, duration: Duration, label: &str) -> Result<AppendRun> {
    drive_as(hosts, &[person.to_string()], &[token.to_string()], clients, duration, label).await
}

/// [`drive`] with client `i`'s note made by `people[i % len]` and its
/// calls made with `tokens[i % len]` (several tenants spread the clients
/// over them; `people[j]` and `tokens[j]` are of one tenant).
pub async fn drive_as(hosts: &[SocketAddr], people: &[String], tokens: &[String], clients: usize, duration: Duration, label: &str) -> Result<AppendRun> {
    let notes = notes(hosts[0], people, clients).await?;
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, note) in notes.into_iter().enumerate() {
        let (addr, token) = (hosts[c % hosts.len()], tokens[c % tokens.len()].clone());
        tasks.push(tokio::spawn(async move {
            let mut caller = McpCaller { client: Client::connect(addr).await?, token };
            append_one(&mut caller, &note, &format!("c{c}"), deadline).await
        }));
    }
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(t.await??);
    }
    Ok(combine(label, outcomes, started.elapsed().min(duration + Duration::from_secs(1))))
}

/// A runtime config putting both stores on `redis`, under `ns`.
fn redis_config(dir: &Path, redis: &Server, ns: &str) -> Result<PathBuf> {
    let path = dir.join(format!("runtime-config-{ns}.toml"));
    std::fs::write(
        &path,
        format!(
            "[key_value_store.default]\ntype = \"redis\"\nurl = \"{}\"\nnamespace = \"{ns}\"\n\n[key_value_store.cache]\ntype = \"redis\"\nurl = \"{}\"\nnamespace = \"{ns}\"\n",
            redis.url(),
            redis.url()
        ),
    )?;
    Ok(path)
}

/// `cairn-bench scale`.
pub async fn scale(manifest: PathBuf, seconds: u64, clients: usize) -> Result<String> {
    let dir = std::env::temp_dir().join(format!("cairn-bench-scale-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let state = dir.join("state");
    let token = hosts::token(&state, "bench-agent")?;
    let person = hosts::person_token(&state, "bench-person")?;
    let duration = Duration::from_secs(seconds);
    let redis = Server::start_with(&["--appendonly", "yes", "--appendfsync", "everysec"]);
    let mut rows = Vec::new();
    let run = |label: String, n: usize, args: Vec<String>, env: Vec<(String, String)>| {
        let (manifest, state, token, person) = (manifest.clone(), state.clone(), token.clone(), person.clone());
        async move {
            let group: Vec<Host> = (0..n).map(|_| hosts::start(&manifest, &state, &args, &env)).collect::<Result<_>>()?;
            let addrs: Vec<SocketAddr> = group.iter().map(|h| h.addr).collect();
            // Warm instances, connections and caches first.
            drive(&addrs, &person, &token, clients, Duration::from_millis(500), &label).await?;
            let r = drive(&addrs, &person, &token, clients, duration, &label).await?;
            drop(group);
            anyhow::Ok(ScaleRow { label, hosts: n, run: r })
        }
    };
    // The SQLite host keeps its store in the shared state dir, which the
    // Redis hosts after it do not open.
    rows.push(run("one host, SQLite".into(), 1, vec![], vec![]).await?);
    for n in 1..=3 {
        let rc = redis_config(&dir, &redis, &format!("hosts{n}"))?;
        rows.push(run(format!("{n} host(s), one Redis"), n, vec!["--runtime-config-file".into(), rc.display().to_string()], vec![]).await?);
    }
    let rc = redis_config(&dir, &redis, "checked")?;
    let checked = run(
        "one host, Redis, commit check on".into(),
        1,
        vec!["--runtime-config-file".into(), rc.display().to_string()],
        vec![("SPIN_VARIABLE_COMMIT_CHECK".into(), "on".into())],
    )
    .await?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(table(&rows, &checked, seconds, clients))
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

/// The markdown table of a run.
pub fn table(rows: &[ScaleRow], checked: &ScaleRow, seconds: u64, clients: usize) -> String {
    let mut s = format!(
        "\n## scale: {clients} clients appending to their own notes, {seconds} s per row, hosts as separate processes\n\n\
         Each client loops read_note_tab → edit_note_tab (the text it read plus one line, the version it read, a fresh key) \
         on one keep-alive connection, spread round-robin over the hosts; at the end it checks every acknowledged line is \
         in its note exactly once. Redis: append-only file, fsync every second.\n\n"
    );
    s.push_str("| deployment | hosts | edits/s | p50 ms | p99 ms | acknowledged | lost | conflicts |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in rows.iter().chain([checked]) {
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} | {} | {} | {} | {} | {} |",
            r.label,
            r.hosts,
            r.run.pairs.rps,
            ms(r.run.pairs.p50),
            ms(r.run.pairs.p99),
            r.run.acked,
            r.run.lost,
            r.run.conflicts
        );
    }
    if let Some(base) = rows.iter().find(|r| r.label.starts_with("1 host")) {
        let _ = writeln!(
            s,
            "\nCommit check on one host on Redis: {:.0} edits/s with it on against {:.0} off: **{:.2}×** the cost.",
            checked.run.pairs.rps,
            base.run.pairs.rps,
            base.run.pairs.rps / checked.run.pairs.rps.max(f64::MIN_POSITIVE)
        );
    }
    s
}
