//! `cairn-bench cluster`: the append workload (32 clients of 16 tenants,
//! each appending to its own note) on three hosts, on one standalone Redis
//! (the baseline), then on Redis Clusters of 1, 2 and 3 primaries, each
//! primary with one replica, in one run; then the same on 3 primaries with
//! writes acknowledged on the primary alone (the price of replica
//! confirmation). Every row checks that every acknowledged
//! line is in its note exactly once.
//!
//! What this machine can show: the whole run (hosts, clients, every Redis
//! process) shares its cores, so a second and third primary add capacity
//! only where one Redis process was the limit. The figure that matters here
//! is that correctness holds and throughput does not fall as primaries are
//! added; the printout names the core count.

use crate::append::AppendRun;
use crate::hosts::{self, Host};
use crate::scale::drive_as;
use anyhow::Result;
use cairn_auth::Actor;
use cairn_kv_redis::server::{Cluster, Server};

/// What a row runs on; dropped (every process killed) after the row.
enum Place {
    One(#[allow(dead_code)] Server),
    Cluster(#[allow(dead_code)] Cluster),
}
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Tenants the clients are spread over (each tenant's keys live in one slot).
const TENANTS: usize = 16;
/// Hosts serving every row.
const HOSTS: usize = 3;

/// One row of the table.
pub struct ClusterRow {
    /// Primaries of the cluster; 0 for one standalone Redis (the baseline).
    pub primaries: usize,
    /// Replicas that confirm each write.
    pub wait_for_replicas: u32,
    /// The measurement.
    pub run: AppendRun,
}

/// A runtime config with `default` on `place` (`urls = [...]` for a
/// cluster, `url = ...` for one server).
fn runtime_config(dir: &Path, place: &str, wait: u32, ns: &str) -> Result<PathBuf> {
    let path = dir.join(format!("runtime-config-{ns}.toml"));
    std::fs::write(&path, format!("[key_value_store.default]\ntype = \"redis\"\n{place}\nnamespace = \"{ns}\"\nwait_for_replicas = {wait}\n"))?;
    Ok(path)
}

/// `cairn-bench cluster`: the rows, in order (print them with [`table`]).
pub async fn cluster(manifest: PathBuf, seconds: u64, clients: usize) -> Result<Vec<ClusterRow>> {
    let dir = std::env::temp_dir().join(format!("cairn-bench-cluster-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let state = dir.join("state");
    let tokens: Vec<String> = (0..TENANTS).map(|t| hosts::tenant_token(&state, &format!("tenant-{t}"), "bench-agent", Actor::Agent)).collect::<Result<_>>()?;
    let people: Vec<String> = (0..TENANTS).map(|t| hosts::tenant_token(&state, &format!("tenant-{t}"), "bench-person", Actor::Human)).collect::<Result<_>>()?;
    let duration = Duration::from_secs(seconds);
    let mut rows = Vec::new();
    for (primaries, wait) in [(0, 0), (1, 1), (2, 1), (3, 1), (3, 0)] {
        let ns = format!("p{primaries}w{wait}");
        let (c, rc) = if primaries == 0 {
            let one = Server::start_with(&["--appendonly", "yes", "--appendfsync", "everysec"]);
            let rc = runtime_config(&dir, &format!("url = {:?}", one.url()), wait, &ns)?;
            (Place::One(one), rc)
        } else {
            let c = Cluster::start(primaries, 1);
            let urls: Vec<String> = c.urls().iter().map(|u| format!("{u:?}")).collect();
            let rc = runtime_config(&dir, &format!("urls = [{}]", urls.join(", ")), wait, &ns)?;
            (Place::Cluster(c), rc)
        };
        let args = vec!["--runtime-config-file".to_string(), rc.display().to_string()];
        let group: Vec<Host> = (0..HOSTS).map(|_| hosts::start(&manifest, &state, &args, &[])).collect::<Result<_>>()?;
        let addrs: Vec<SocketAddr> = group.iter().map(|h| h.addr).collect();
        let label = format!("{primaries} primaries");
        let _ = &c;
        // Warm instances, connections and caches first.
        drive_as(&addrs, &people, &tokens, clients, Duration::from_millis(500), &label).await?;
        let run = drive_as(&addrs, &people, &tokens, clients, duration, &label).await?;
        drop(group);
        drop(c);
        rows.push(ClusterRow { primaries, wait_for_replicas: wait, run });
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(rows)
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

/// The markdown table of a run.
pub fn table(rows: &[ClusterRow], seconds: u64, clients: usize) -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut s = format!(
        "\n## cluster: {clients} clients of {TENANTS} tenants on {HOSTS} hosts, Redis Clusters of 1–3 primaries, {seconds} s per row\n\n\
         Each client loops read_note_tab → edit_note_tab on its own note (the text it read plus one line), spread \
         round-robin over the hosts; at the end every acknowledged line must be in its note exactly once. Each primary \
         has one replica. Everything (hosts, clients, every Redis process) shares this machine's {cores} cores: that is \
         the limit here, not Redis.\n\n"
    );
    s.push_str("| primaries | replicas confirm | edits/s | × 1 primary | p50 ms | p99 ms | acknowledged | lost | conflicts |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let base = rows.iter().find(|r| r.primaries == 1).map_or(f64::MIN_POSITIVE, |r| r.run.pairs.rps.max(f64::MIN_POSITIVE));
    for r in rows {
        let primaries = if r.primaries == 0 { "one standalone Redis".to_string() } else { r.primaries.to_string() };
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} | {:.2}× | {} | {} | {} | {} | {} |",
            primaries,
            r.wait_for_replicas,
            r.run.pairs.rps,
            r.run.pairs.rps / base,
            ms(r.run.pairs.p50),
            ms(r.run.pairs.p99),
            r.run.acked,
            r.run.lost,
            r.run.conflicts
        );
    }
    s
}
