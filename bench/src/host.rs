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

/// A plain hyper server answering [`HEALTH_BODY`] to every request.
pub(crate) async fn native_server() -> Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
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
    });
    Ok(addr)
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
    let (a, b) = (fetch(native, "/healthz").await?, fetch(running.addr, "/healthz").await?);
    if a != b {
        bail!("the component and the native handler answer differently: {a:?} vs {b:?}");
    }
    let duration = Duration::from_secs(seconds);
    for c in concurrency {
        // Warm both paths (pool slots, connections, caches) before measuring.
        load(native, "/healthz", c, Duration::from_millis(300)).await?;
        load(running.addr, "/healthz", c, Duration::from_millis(300)).await?;
        let mut n = load(native, "/healthz", c, duration).await?;
        n.name = "native hyper handler".into();
        let mut w = load(running.addr, "/healthz", c, duration).await?;
        w.name = "health component via cairn (instances reused as on Spin)".into();
        print_table(&format!("GET /healthz, {c} concurrent connections, {seconds} s each"), &[n.clone(), w.clone()]);
        println!("\nratio native/component: {:.2}x", n.rps / w.rps);
    }
    running.shutdown().await;
    let _ = std::fs::remove_dir_all(state);
    Ok(())
}
