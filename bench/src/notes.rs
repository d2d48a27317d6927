//! `cairn-bench notes`: the notes tools through the whole stack (HTTP →
//! router → tool component → store) against the same core served natively
//! and called natively in this process on the same kind of store, in one
//! run: edits (read_note_tab + edit_note_tab replace_text of 200
//! characters) and reads at 1 and 32 clients; per-write cost as the tab
//! grows from 1 KB to ~1 MB; per-write cost as the store grows from 1,000
//! to 100,000 notes. (Where a read's time goes layer by layer is `perf`'s.)

use crate::measure::{load, print_table};
use crate::stack::*;
use anyhow::Result;
use std::path::PathBuf;
use std::time::Duration;

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
    let hyper = crate::host::native_server().await?;
    let mut floors = std::collections::BTreeMap::new();
    println!("# edit_note_tab: read_note_tab + replace_text of 200 characters, each client on its own note");
    for &c in &clients {
        let instance = instance_cost(stack.running.addr, hyper, c, duration).await?;
        floors.insert(c, instance);
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
        // An edit is two calls (a read and a write), each with its instance.
        print_floor(instance, 2, c, v.rps, s.rps);
    }
    println!("\n# read_note_tab, each client on its own note");
    for &c in &clients {
        stack_calls(&stack, &stack_notes, c, Op::Read, Duration::from_millis(300)).await?;
        let s = stack_calls(&stack, &stack_notes, c, Op::Read, duration).await?;
        let v = mcp_calls(server.addr, &server.token, &server_notes, c, Op::Read, duration, SERVED).await?;
        print_table(&format!("{c} concurrent clients, {seconds} s each (reads/s)"), &[v.clone(), s.clone()]);
        println!(
            "\nwhole stack ÷ native server: {:.2}x in time per read (p50 {:.0} µs vs {:.0} µs), {:.2}x in reads/s",
            s.p50.as_secs_f64() / v.p50.as_secs_f64(),
            s.p50.as_secs_f64() * 1e6,
            v.p50.as_secs_f64() * 1e6,
            v.rps / s.rps
        );
        print_floor(floors[&c], 1, c, v.rps, s.rps);
    }

    println!("\n# per-write cost as the tab grows (1 client)\n");
    println!(
        "| tab size | stack µs/edit (p50) | native server µs/edit (p50) | core in-process µs/edit (p50) | stack ÷ native server | stack ÷ core in-process |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    for size in [1_000usize, 10_000, 100_000, 900_000] {
        let d = Duration::from_millis((seconds * 1000 / 2).max(500));
        let s = stack_calls(&stack, &stack_notes, 1, Op::ReadEdit(size), d).await?;
        let v = mcp_calls(server.addr, &server.token, &server_notes, 1, Op::ReadEdit(size), d, SERVED).await?;
        let n = native_calls(native.clone(), &native_notes, 1, Op::ReadEdit(size), d)?;
        let us = |x: &crate::measure::Series| x.p50.as_secs_f64() * 1e6;
        println!("| {} | {:.0} | {:.0} | {:.0} | {:.2} | {:.2} |", human(size), us(&s), us(&v), us(&n), us(&s) / us(&v), us(&s) / us(&n));
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
        // Index the notes just seeded before measuring, as a host that had
        // been serving them would have; otherwise the edits race the
        // background merge of thousands of new notes.
        for _ in 0..10_000 {
            if cairn::sweep::merge_search(stack.running.app.store())?.still_dirty == 0 {
                break;
            }
        }
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

/// What one trivial component adds to a request at `c` clients, in seconds
/// of a client's time: `GET /healthz` through the host (the trivial
/// component, on a reused instance) less the same answer from bare hyper, in
/// this run. In a closed loop a request takes `c / rps` of a client's time.
async fn instance_cost(stack: std::net::SocketAddr, hyper: std::net::SocketAddr, c: usize, duration: Duration) -> Result<f64> {
    let warm = Duration::from_millis(300);
    load(hyper, "/healthz", c, warm).await?;
    load(stack, "/healthz", c, warm).await?;
    let bare = load(hyper, "/healthz", c, duration).await?;
    let fresh = load(stack, "/healthz", c, duration).await?;
    Ok((c as f64 / fresh.rps - c as f64 / bare.rps).max(0.0))
}

/// The floor of the component tax: a call through the stack needs at least
/// one component call through the host (the router's), so at best it takes
/// the native server's time plus `instances` × one trivial component's cost. Prints that best ratio beside the measured one.
fn print_floor(instance: f64, instances: usize, c: usize, native_rps: f64, stack_rps: f64) {
    let native = c as f64 / native_rps;
    let floor = (native + instances as f64 * instance) / native;
    println!(
        "floor: one trivial component costs {:.0} µs a request here (GET /healthz through the host less bare hyper, this run); \
         with {instances} per {} the stack can be no better than {floor:.2}x the native server (measured {:.2}x)",
        instance * 1e6,
        if instances == 1 { "read" } else { "edit (read + write)" },
        native_rps / stack_rps
    );
}

fn human(n: usize) -> String {
    if n >= 1_000_000 {
        format!("{} MB", n / 1_000_000)
    } else if n >= 1000 {
        format!("{} KB", n / 1000)
    } else {
        format!("{n} B")
    }
}
