//! Outbound HTTP from a guest, and chaining between components.
//!
//! Every outbound request passes through [`Hooks`]: the host must be in the
//! caller's `allowed_outbound_hosts` (else it is denied and logged);
//! `http://<id>.spin.internal` runs component `<id>` in-process, in the
//! calling task, with both bodies buffered; any other allowed host is called
//! over plain HTTP. The embedded host carries no TLS stack, so `https://` is
//! refused with a clear log line.

use crate::instance::{App, RouteInfo, boxed, run_buffered};
use crate::manifest::Component as Spec;
use http_body_util::BodyExt;
use hyper::Request;
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use wasmtime_wasi_http::{Error, WasiBody, WasiHttpHooks};

/// Outbound HTTP policy of one instance.
pub struct Hooks {
    app: std::sync::Weak<App>,
    caller: Arc<Spec>,
}

/// The policy of an instance of `caller`: what [`App::outbound`] holds.
pub fn hooks(app: &Arc<App>, caller: Arc<Spec>) -> crate::instance::OutboundHooks {
    Box::new(Hooks { app: Arc::downgrade(app), caller })
}

type SendFuture = Box<
    dyn std::future::Future<
            Output = Result<
                (hyper::Response<wasmtime_wasi_http::WasiBody>, Box<dyn std::future::Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>),
                wasmtime_wasi_http::Error,
            >,
        > + Send,
>;

impl WasiHttpHooks for Hooks {
    fn default_scheme(&mut self) -> Option<hyper::http::uri::Scheme> {
        Some(hyper::http::uri::Scheme::HTTP)
    }

    fn send_request(
        &mut self,
        request: hyper::Request<wasmtime_wasi_http::WasiBody>,
        _options: Option<wasmtime_wasi_http::RequestOptions>,
        _fut: Box<dyn std::future::Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
    ) -> SendFuture {
        let app = self.app.upgrade();
        let caller = self.caller.clone();
        Box::new(async move {
            let app = app.ok_or(wasmtime_wasi_http::Error::InternalError(Some("host is shutting down".into())))?;
            let uri = request.uri().clone();
            let scheme = uri.scheme_str().unwrap_or("http").to_string();
            let host = uri.host().unwrap_or("").to_ascii_lowercase();
            let port = uri.port_u16().unwrap_or(if scheme == "https" { 443 } else { 80 });
            let allowed = caller.allowed_outbound_hosts.iter().any(|r| r.allows(&scheme, &host, port));
            if !allowed {
                tracing::warn!(component = %caller.id, %uri, "outbound request denied: not in allowed_outbound_hosts");
                return Err(wasmtime_wasi_http::Error::HttpRequestDenied);
            }
            if let Some(id) = host.strip_suffix(".spin.internal") {
                let Some(target) = app.components.get(id).cloned() else {
                    return Err(wasmtime_wasi_http::Error::DestinationNotFound);
                };
                tracing::debug!(caller = %caller.id, component = %id, "in-process http call");
                // Buffer both bodies: the caller has written its whole request
                // before it waits for the answer, and handing each side one
                // complete body saves a round of stream polls per chunk.
                let (parts, body) = request.into_parts();
                let body = body.collect().await?.to_bytes();
                let request = hyper::Request::from_parts(parts, http_body_util::Full::new(body));
                let response = run_buffered(app, target, request, RouteInfo::internal())
                    .await
                    .map_err(|e| wasmtime_wasi_http::Error::InternalError(Some(format!("{e:#}"))))?;
                let response = response.map(|body| boxed(http_body_util::Full::new(body)));
                let io: Box<dyn std::future::Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send> =
                    Box::new(async { Ok(()) });
                return Ok((response, io));
            }
            send(request).await
        })
    }
}


type Io = Box<dyn std::future::Future<Output = Result<(), Error>> + Send>;

/// Send `request` to its host and return the response and the connection task.
pub async fn send(request: Request<WasiBody>) -> Result<(hyper::Response<WasiBody>, Io), Error> {
    let uri = request.uri().clone();
    if uri.scheme_str() == Some("https") {
        tracing::warn!(%uri, "https outbound requests are not supported by the embedded host");
        return Err(Error::TlsProtocolError);
    }
    let host = uri.host().ok_or(Error::HttpRequestUriInvalid)?.to_string();
    let port = uri.port_u16().unwrap_or(80);
    let stream = tokio::net::TcpStream::connect((host.as_str(), port)).await.map_err(Error::Connect)?;
    let _ = stream.set_nodelay(true);
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    // The connection must be driven while the request is sent and the
    // response streams, so it runs in its own task; the I/O future handed
    // back waits for it.
    let driver = tokio::spawn(conn);
    let io: Io = Box::new(async move {
        match driver.await {
            Ok(r) => r.map_err(Error::from),
            Err(e) => Err(Error::InternalError(Some(format!("outbound connection task failed: {e}")))),
        }
    });
    let (mut parts, body) = request.into_parts();
    if !parts.headers.contains_key(hyper::header::HOST) {
        let authority = if uri.port_u16().is_some() { format!("{host}:{port}") } else { host.clone() };
        if let Ok(v) = hyper::header::HeaderValue::from_str(&authority) {
            parts.headers.insert(hyper::header::HOST, v);
        }
    }
    if let Some(pq) = parts.uri.path_and_query() {
        parts.uri = pq.as_str().parse().map_err(|_| Error::HttpRequestUriInvalid)?;
    }
    let response = sender.send_request(Request::from_parts(parts, body)).await?;
    Ok((response.map(boxed), io))
}
