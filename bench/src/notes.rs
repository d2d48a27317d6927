//! `cairn-bench notes` and `cairn-bench router`: the notes tools through the
//! whole stack (HTTP → router → tool component → store) against the same
//! core called natively in this process on the same kind of store, in one run.
//!
//! - notes: edits (read_note_tab + edit_note_tab replace_text of 200
//!   characters) at 1 and 32 clients; per-write cost as the tab grows from
//!   1 KB to ~1 MB; per-write cost as the store grows from 1,000 to 100,000
//!   notes.
//! - router: read_note_tab through the router, against the tool component
//!   called directly (in-process, no router), against the core natively.

use crate::measure::{print_table, summarize};
use crate::stack::*;
use anyhow::{Context, Result, bail};
use cairn::clock::SystemEnv;
use cairn_auth::{Actor, Principal, Role};
use cairn_kv::Store;
use http_body_util::Full;
use hyper::body::Bytes;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `cairn bench notes`.
pub async fn notes(manifest: PathBuf, seconds: u64, clients: Vec<usize>, max_notes: usize) -> Result<()> {
    let duration = Duration::from_secs(seconds);
    let stack = Stack::start(manifest).await?;
    let scratch = std::env::temp_dir().join(format!("cairn-bench-native-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let native = native_store(&scratch.join("a"))?;
    let max_clients = clients.iter().copied().max().unwrap_or(1);
    let stack_notes = stack.seed_notes(max_clients)?;
    let native_notes = seed(native.as_ref(), max_clients)?;

    // The native server: the same core, MCP layer and front door over HTTP, no components.
    let server = crate::native::start(native_store(&scratch.join("b"))?).await?;
    let server_notes = seed(server.store.as_ref(), max_clients)?;
    const SERVED: &str = "native server: HTTP, front door, MCP, core, SQLite";
    println!("# edit_note_tab: read_note_tab + replace_text of 200 characters, each client on its own note");
    for &c in &clients {
        stack_calls(&stack, &stack_notes, c, Op::ReadEdit(200), Duration::from_millis(300)).await?;
        mcp_calls(server.addr, &server.token, &server_notes, c, Op::ReadEdit(200), Duration::from_millis(300), SERVED).await?;
        let s = stack_calls(&stack, &stack_notes, c, Op::ReadEdit(200), duration).await?;
        let v = mcp_calls(server.addr, &server.token, &server_notes, c, Op::ReadEdit(200), duration, SERVED).await?;
        let n = native_calls(native.clone(), &native_notes, c, Op::ReadEdit(200), duration)?;
        print_table(&format!("{c} concurrent clients, {seconds} s each (edits/s)"), &[n.clone(), v.clone(), s.clone()]);
        println!(
            "\nwhole stack ÷ native server (the component tax): {:.2}x in time per edit (p50 {:.0} µs vs {:.0} µs), {:.2}x in edits/s; core in-process ÷ stack: {:.2}x",
            s.p50.as_secs_f64() / v.p50.as_secs_f64(),
            s.p50.as_secs_f64() * 1e6,
            v.p50.as_secs_f64() * 1e6,
            v.rps / s.rps,
            n.rps / s.rps
        );
    }
    println!("\n# read_note_tab, each client on its own note");
    for &c in &clients {
        stack_calls(&stack, &stack_notes, c, Op::Read, Duration::from_millis(300)).await?;
        let s = stack_calls(&stack, &stack_notes, c, Op::Read, duration).await?;
        let v = mcp_calls(server.addr, &server.token, &server_notes, c, Op::Read, duration, SERVED).await?;
        print_table(&format!("{c} concurrent clients, {seconds} s each (reads/s)"), &[v.clone(), s.clone()]);
        println!("\nwhole stack ÷ native server: {:.2}x in time per read (p50 {:.0} µs vs {:.0} µs), {:.2}x in reads/s", s.p50.as_secs_f64() / v.p50.as_secs_f64(), s.p50.as_secs_f64() * 1e6, v.p50.as_secs_f64() * 1e6, v.rps / s.rps);
    }

    println!("\n# per-write cost as the tab grows (1 client)\n");
    println!("| tab size | stack µs/edit (p50) | native µs/edit (p50) | ratio |");
    println!("|---:|---:|---:|---:|");
    for size in [1_000usize, 10_000, 100_000, 900_000] {
        let d = Duration::from_millis((seconds * 1000 / 2).max(500));
        let s = stack_calls(&stack, &stack_notes, 1, Op::ReadEdit(size), d).await?;
        let n = native_calls(native.clone(), &native_notes, 1, Op::ReadEdit(size), d)?;
        println!("| {} | {:.0} | {:.0} | {:.2} |", human(size), s.p50.as_secs_f64() * 1e6, n.p50.as_secs_f64() * 1e6, s.p50.as_secs_f64() / n.p50.as_secs_f64());
    }

    println!("\n# per-write cost as the store grows (1 client, 200 characters)\n");
    println!("| notes in the store | stack µs/edit (p50) | native µs/edit (p50) |");
    println!("|---:|---:|---:|");
    let mut have = max_clients;
    let mut sizes = vec![1_000usize, 10_000, 100_000];
    sizes.retain(|&n| n <= max_notes);
    for target in sizes {
        let more = target.saturating_sub(have);
        let added = stack.seed_notes(more)?;
        let native_added = seed(native.as_ref(), more)?;
        have = target;
        let pick = |ids: &[String], fallback: &[String]| ids.last().cloned().unwrap_or_else(|| fallback[0].clone());
        let d = Duration::from_millis((seconds * 1000 / 2).max(500));
        let s = stack_calls(&stack, &[pick(&added, &stack_notes)], 1, Op::ReadEdit(200), d).await?;
        let n = native_calls(native.clone(), &[pick(&native_added, &native_notes)], 1, Op::ReadEdit(200), d)?;
        println!("| {target} | {:.0} | {:.0} |", s.p50.as_secs_f64() * 1e6, n.p50.as_secs_f64() * 1e6);
    }
    stack.stop().await;
    let _ = std::fs::remove_dir_all(scratch);
    Ok(())
}

fn human(n: usize) -> String {
    if n >= 1_000_000 { format!("{} MB", n / 1_000_000) } else if n >= 1000 { format!("{} KB", n / 1000) } else { format!("{n} B") }
}

/// `cairn bench router`.
pub async fn router(manifest: PathBuf, seconds: u64, clients: Vec<usize>) -> Result<()> {
    let duration = Duration::from_secs(seconds);
    let stack = Stack::start(manifest).await?;
    let note = stack.seed_notes(1)?.remove(0);
    let app = stack.running.app.clone();
    let tool = app.components.get("read-note-tab").context("no read-note-tab component")?.clone();
    let secret = cairn::local::identity_secret(&stack.state)?;
    let principal = Principal {
        tenant: TENANT.into(),
        subject: "bench-agent".into(),
        name: "Bench agent".into(),
        actor: Actor::Agent,
        role: Role::Member,
        scopes: vec!["notes:read".into()],
        exp: u64::MAX,
    };
    let args = json!({"note_id": note, "tab_id": "markdown"});
    let native: Arc<dyn Store> = app.store().clone();
    println!("# read_note_tab");
    for &c in &clients {
        let deadline = |d| Instant::now() + d;
        // Through the router.
        let (addr, token) = (stack.running.addr, stack.agent.clone());
        let run_stack = |d: Duration| {
            let (token, args) = (token.clone(), args.clone());
            async move {
                let end = deadline(d);
                let started = Instant::now();
                let mut tasks = Vec::new();
                for _ in 0..c {
                    let (token, args) = (token.clone(), args.clone());
                    tasks.push(tokio::spawn(async move {
                        let mut client = Client::connect(addr).await?;
                        let mut lat = Vec::new();
                        while Instant::now() < end {
                            let t = Instant::now();
                            client.call(&token, "read_note_tab", args.clone()).await?;
                            lat.push(t.elapsed());
                        }
                        anyhow::Ok(lat)
                    }));
                }
                let mut all = Vec::new();
                for t in tasks {
                    all.extend(t.await??);
                }
                anyhow::Ok(summarize("MCP through the router (HTTP, router + tool instance)", all, started.elapsed()))
            }
        };
        run_stack(Duration::from_millis(300)).await?;
        let s = run_stack(duration).await?;
        // The tool component alone, in-process.
        let end = deadline(duration);
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..c {
            let (app, tool, principal, secret, body) = (app.clone(), tool.clone(), principal.clone(), secret.clone(), args.to_string());
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                while Instant::now() < end {
                    let t = Instant::now();
                    // Each call signs its own identity, as the router does.
                    let call = cairn_auth::identity::Call { tool: "read_note_tab", method: "POST", path: "/", body: body.as_bytes() };
                    let identity = cairn_auth::identity::sign(&principal, &secret, &call, cairn::clock::now_us() / 1_000_000, &crate::nonce())?;
                    let req = hyper::Request::post("http://read-note-tab.spin.internal/")
                        .header("host", "read-note-tab.spin.internal")
                        .header(cairn_auth::identity::HEADER, identity)
                        .body(Full::new(Bytes::from(body.clone())))?;
                    let resp = cairn::instance::run_buffered(app.clone(), tool.clone(), req, cairn::instance::RouteInfo::internal()).await?;
                    let status = resp.status();
                    if status != 200 {
                        bail!("tool answered {status}");
                    }
                    lat.push(t.elapsed());
                }
                anyhow::Ok(lat)
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await??);
        }
        let d = summarize("tool component called directly (in-process, no HTTP, no router)", all, started.elapsed());
        // The core natively.
        let end = deadline(duration);
        let started = Instant::now();
        let handles: Vec<_> = (0..c)
            .map(|i| {
                let (kv, args) = (native.clone(), args.clone());
                std::thread::spawn(move || -> Result<Vec<Duration>> {
                    let mut env = SystemEnv::new(i as u64);
                    let mut lat = Vec::new();
                    while Instant::now() < end {
                        let t = Instant::now();
                        cairn_notes::call_tool_value(&*kv, &mut env, &agent(), "read_note_tab", args.clone()).map_err(|e| anyhow::anyhow!("{e:?}"))?;
                        lat.push(t.elapsed());
                    }
                    Ok(lat)
                })
            })
            .collect();
        let mut all = Vec::new();
        for h in handles {
            all.extend(h.join().map_err(|_| anyhow::anyhow!("thread panicked"))??);
        }
        let n = summarize("core natively in-process", all, started.elapsed());
        print_table(&format!("{c} concurrent clients, {seconds} s each"), &[n.clone(), d.clone(), s.clone()]);
        let (per_s, per_d, per_n) = (1.0 / s.rps * c as f64, 1.0 / d.rps * c as f64, 1.0 / n.rps * c as f64);
        println!(
            "\ncost per call: router path {:.0} µs, tool alone {:.0} µs, core {:.0} µs; the router's share of the router path: {:.0}%",
            per_s * 1e6,
            per_d * 1e6,
            per_n * 1e6,
            100.0 * (per_s - per_d).max(0.0) / per_s
        );
    }
    stack.stop().await;
    Ok(())
}
