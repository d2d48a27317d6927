//! Outbound HTTP to hosts outside the application (already allowed by the
//! caller's `allowed_outbound_hosts`). Plain `http://` only: the embedded
//! host carries no TLS stack, so `https://` is refused with a clear log line.

use hyper::Request;
use hyper_util::rt::TokioIo;
use wasmtime_wasi_http::{Error, WasiBody};

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
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    let io: Io = Box::new(async move { conn.await.map_err(Error::from) });
    let (mut parts, body) = request.into_parts();
    if let Some(pq) = parts.uri.path_and_query() {
        parts.uri = pq.as_str().parse().map_err(|_| Error::HttpRequestUriInvalid)?;
    }
    let response = sender.send_request(Request::from_parts(parts, body)).await?;
    Ok((response.map(crate::runtime::boxed), io))
}
