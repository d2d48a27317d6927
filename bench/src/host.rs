//! `cairn-bench host`: requests/s and p50/p99 of the trivial `health`
//! component served through the host, against the same handler compiled
//! natively into a plain hyper server, in one run, with the ratio.
//!
//! Both servers run in this process on loopback and are driven by the same
//! load generator (N keep-alive connections, one request in flight each).
//! Before measuring, both answers are checked to be byte-identical.

use crate::measure::{load, print_table};
use anyhow::{Result, bail};
use cairn::instance::Limits;
use cairn::server;
use cairn::stores::{StoreKind, Stores};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Bytes;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// What the `health` component answers; the native handler answers the same.
pub const HEALTH_BODY: &str = r#"{"status":"ok","service":"cairn"}"#;

/// A plain hyper server answering [`HEALTH_BODY`] to every request, on the
/// caller's runtime (so at one connection the client and the server may
/// take turns on one thread, with no wake-up between them).
pub(crate) async fn native_server() -> Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(serve_native(listener));
    Ok(addr)
}

/// The same server on a thread of its own with a single-threaded runtime,
/// as Cairn's connection threads serve a connection: every request crosses from the
/// client's thread to the server's and back, as it does through the host.
pub(crate) fn native_server_on_a_lane() -> Result<SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    std::thread::Builder::new().name("bare-hyper-lane".into()).spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        rt.block_on(async move {
            if let Ok(listener) = tokio::net::TcpListener::from_std(listener) {
                serve_native(listener).await;
            }
        });
    })?;
    Ok(addr)
}

async fn serve_native(listener: tokio::net::TcpListener) {
    {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(|_req| async {
                    let mut r = Response::new(Full::new(Bytes::from_static(HEALTH_BODY.as_bytes())));
                    r.headers_mut().insert("content-type", "application/json".parse().unwrap());
                    Ok::<_, std::convert::Infallible>(r)
                });
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
            });
        }
    }
}

async fn fetch(addr: SocketAddr, path: &str) -> Result<Bytes> {
    let stream = tokio::net::TcpStream::connect(addr).await?;
    let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let req = Request::get(path).header("host", addr.to_string()).body(Empty::<Bytes>::new())?;
    Ok(tx.send_request(req).await?.into_body().collect().await?.to_bytes())
}

/// `cairn bench host`.
pub async fn host(manifest: PathBuf, seconds: u64, concurrency: Vec<usize>) -> Result<()> {
    let state = std::env::temp_dir().join(format!("cairn-bench-{}", std::process::id()));
    let opts = server::Options {
        manifest,
        listen: "127.0.0.1:0".parse()?,
        cache_dir: crate::hosts::compile_cache(),
        state_dir: state.clone(),
        stores: Stores::default().with_default(Some(&StoreKind::Memory)),
        components: Vec::new(),
        fsync: false,
        limits: Limits::default(),
        sweep_interval: Duration::from_secs(60),
        merge_interval: Duration::from_millis(250),
        variables: Default::default(),
        sign_in_link: false,
    };
    let running = server::start(opts).await?;
    let native = native_server().await?;
    let lane = native_server_on_a_lane()?;
    let (a, b) = (fetch(native, "/healthz").await?, fetch(running.addr, "/healthz").await?);
    if a != b || fetch(lane, "/healthz").await? != a {
        bail!("the component and the native handler answer differently: {a:?} vs {b:?}");
    }
    let duration = Duration::from_secs(seconds);
    for c in concurrency {
        // Warm both paths (pool slots, connections, caches) before measuring.
        for addr in [native, lane, running.addr] {
            load(addr, "/healthz", c, Duration::from_millis(300)).await?;
        }
        let mut n = load(native, "/healthz", c, duration).await?;
        n.name = "native hyper handler, on the client's runtime".into();
        let mut l = load(lane, "/healthz", c, duration).await?;
        l.name = "native hyper handler, on a thread of its own (as a connection thread)".into();
        let mut w = load(running.addr, "/healthz", c, duration).await?;
        w.name = "health component via cairn (instances reused as on Spin)".into();
        print_table(&format!("GET /healthz, {c} concurrent connections, {seconds} s each"), &[n.clone(), l.clone(), w.clone()]);
        println!(
            "\nratio native/component: {:.2}x; on a thread of its own: {:.2}x (the hand-off between threads alone: {:.2}x)",
            n.rps / w.rps,
            l.rps / w.rps,
            n.rps / l.rps
        );
    }
    running.shutdown().await;
    let _ = std::fs::remove_dir_all(state);
    Ok(())
}
