//! Measurements: a series of latencies summarized (throughput, p50, p99),
//! a closed-loop GET load generator, and the tables the benchmarks print.

use anyhow::{Result, bail};
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// One measured series.
#[derive(Debug, Clone)]
pub struct Series {
    /// Name printed in the table.
    pub name: String,
    /// Requests completed per second.
    pub rps: f64,
    /// Median latency.
    pub p50: Duration,
    /// 99th percentile latency.
    pub p99: Duration,
    /// Requests completed.
    pub requests: usize,
}

/// Drive `GET http://addr/path` from `concurrency` connections for `duration`.
pub async fn load(addr: SocketAddr, path: &str, concurrency: usize, duration: Duration) -> Result<Series> {
    let deadline = Instant::now() + duration;
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let path = path.to_string();
        tasks.push(tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
            tokio::spawn(conn);
            let mut lat = Vec::new();
            while Instant::now() < deadline {
                let req = Request::get(&path).header("host", addr.to_string()).body(Empty::<Bytes>::new())?;
                let t = Instant::now();
                let resp = tx.send_request(req).await?;
                let status = resp.status();
                resp.into_body().collect().await?;
                if !status.is_success() {
                    bail!("GET {path} answered {status}");
                }
                lat.push(t.elapsed());
            }
            anyhow::Ok(lat)
        }));
    }
    let started = Instant::now();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    Ok(summarize("", all, started.elapsed().max(duration)))
}

/// Throughput and percentiles of a run's latencies.
pub fn summarize(name: &str, mut lat: Vec<Duration>, elapsed: Duration) -> Series {
    lat.sort();
    let pct = |p: f64| lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1))).copied().unwrap_or_default();
    Series { name: name.into(), rps: lat.len() as f64 / elapsed.as_secs_f64(), p50: pct(0.5), p99: pct(0.99), requests: lat.len() }
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

/// Print one table of series, with each row's throughput against the first.
pub fn print_table(title: &str, rows: &[Series]) {
    println!("\n{title}\n");
    println!("| path | requests/s | p50 ms | p99 ms | requests | throughput vs native |");
    println!("|---|---:|---:|---:|---:|---:|");
    let base = rows.first().map(|r| r.rps).unwrap_or(1.0);
    for r in rows {
        println!("| {} | {:.0} | {} | {} | {} | {:.3} |", r.name, r.rps, ms(r.p50), ms(r.p99), r.requests, r.rps / base);
    }
}
