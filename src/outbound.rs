//! Outbound HTTP from a guest, and chaining between components.
//!
//! Every outbound request passes through [`Hooks`]: the host must be in the
//! caller's `allowed_outbound_hosts` (else it is denied and logged);
//! `http://<id>.spin.internal` runs component `<id>` in-process, in the
//! calling task, with both bodies buffered, when a rule names it (a
//! wildcard rule, `https://*`, reaches public addresses only, never a
//! component); any other allowed host is called
//! over HTTP, or over TLS for `https://` ([`send`]): rustls with the
//! operating system's root certificates (`rustls-native-certs`, which also
//! reads `SSL_CERT_FILE` and `SSL_CERT_DIR`), nothing hand-rolled.
//!
//! Every call is bounded in time: [`CONNECT_TIMEOUT`] to connect (and to
//! finish the TLS handshake), [`RESPONSE_TIMEOUT`] until the response's
//! head arrives (shorter when the guest asks for less). A response body is
//! bounded by the calling instance's request timeout.

use crate::instance::{App, RouteInfo, boxed, run_buffered};
use crate::manifest::Component as Spec;
use crate::pool::Partition;
use http_body_util::BodyExt;
use hyper::Request;
use hyper_util::rt::TokioIo;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use wasmtime_wasi_http::{Error, WasiBody, WasiHttpHooks};

/// Whether an address is on the public internet: the one rule, shared with
/// the authorization server's check before it fetches
/// ([`cairn_oauth::wire::public_ip`]; an IPv6 address carrying an IPv4 one
/// is judged as that IPv4 address).
pub use cairn_oauth::wire::public_ip as public;

/// Longest time to connect to a host (and to finish a TLS handshake).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest time from sending a request to the head of its response.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);

/// Outbound HTTP policy of one instance.
pub struct Hooks {
    app: std::sync::Weak<App>,
    caller: Arc<Spec>,
    /// The caller's partition: a component it calls in-process serves the
    /// call on an instance of the same partition.
    partition: Partition,
}

/// The policy of an instance of `caller` in `partition`: what [`App::outbound`] holds.
pub fn hooks(app: &Arc<App>, caller: Arc<Spec>, partition: Partition) -> crate::instance::OutboundHooks {
    Box::new(Hooks { app: Arc::downgrade(app), caller, partition })
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
        options: Option<wasmtime_wasi_http::RequestOptions>,
        _fut: Box<dyn std::future::Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
    ) -> SendFuture {
        let app = self.app.upgrade();
        let caller = self.caller.clone();
        let partition = self.partition.clone();
        Box::new(async move {
            let app = app.ok_or(wasmtime_wasi_http::Error::InternalError(Some("host is shutting down".into())))?;
            let uri = request.uri().clone();
            let scheme = uri.scheme_str().unwrap_or("http").to_string();
            let host = uri.host().unwrap_or("").to_ascii_lowercase();
            let port = uri.port_u16().unwrap_or(if scheme == "https" { 443 } else { 80 });
            let allowed = caller.allowed_outbound_hosts.iter().any(|r| r.allows(&scheme, &host, port));
            // A rule that names no host (`https://*`) lets strangers choose
            // where the call goes (a client's metadata document): it reaches
            // public addresses only, so it cannot be aimed at this machine
            // or its network. A rule naming the host allows it wherever it is.
            let public_only = !caller.allowed_outbound_hosts.iter().any(|r| !r.any_host() && r.allows(&scheme, &host, port));
            if !allowed {
                tracing::warn!(component = %caller.id, %uri, "outbound request denied: not in allowed_outbound_hosts");
                return Err(wasmtime_wasi_http::Error::HttpRequestDenied);
            }
            if let Some(id) = host.strip_suffix(".spin.internal") {
                // A component of this application is never a public address:
                // only a rule that names it (or `*.spin.internal`) reaches it.
                if public_only {
                    tracing::warn!(component = %caller.id, %uri, "outbound request denied: a wildcard rule never reaches a component in-process");
                    return Err(wasmtime_wasi_http::Error::HttpRequestDenied);
                }
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
                let response = run_buffered(&app, &target, request, &RouteInfo::internal(), &partition)
                    .await
                    .map_err(|e| wasmtime_wasi_http::Error::InternalError(Some(format!("{e:#}"))))?;
                let response = response.map(|body| boxed(http_body_util::Full::new(body)));
                let io: Box<dyn std::future::Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send> = Box::new(async { Ok(()) });
                return Ok((response, io));
            }
            // The guest may ask for less time, never for more.
            let connect = options.as_ref().and_then(|o| o.connect_timeout).map_or(CONNECT_TIMEOUT, |t| t.min(CONNECT_TIMEOUT));
            let first_byte = options.as_ref().and_then(|o| o.first_byte_timeout).map_or(RESPONSE_TIMEOUT, |t| t.min(RESPONSE_TIMEOUT));
            send(request, connect, first_byte, public_only).await
        })
    }
}

type Io = Box<dyn std::future::Future<Output = Result<(), Error>> + Send>;

/// The TLS client configuration: the operating system's roots (or
/// `SSL_CERT_FILE` / `SSL_CERT_DIR`), loaded once. `Err` says why none can
/// be had; every `https` call then fails with it.
fn tls() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            let mut roots = rustls::RootCertStore::empty();
            let (added, _ignored) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(format!(
                    "no root certificates could be loaded ({}): install ca-certificates or set SSL_CERT_FILE",
                    found.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; ")
                ));
            }
            // ring, not aws-lc-rs: no C++ toolchain or cmake in the build. Its
            // provider is deprecated only for lacking post-quantum key exchange.
            #[allow(deprecated)]
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
                .map_err(|e| format!("TLS configuration: {e}"))
        })
        .clone()
}

/// A connection to a host, plain or TLS.
trait Conn: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static> Conn for T {}

/// Connects to `host:port`, over TLS when `https`, within `limit`; with
/// `public_only`, to a public address of the host only (checked after the
/// name is resolved, so a name pointed at this machine is refused too).
async fn connect(host: &str, port: u16, https: bool, limit: Duration, public_only: bool) -> Result<Box<dyn Conn>, Error> {
    let work = async {
        let stream = if public_only {
            let addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host, port)).await.map_err(Error::Connect)?.filter(|a| public(a.ip())).collect();
            if addrs.is_empty() {
                tracing::warn!(%host, "outbound request denied: a wildcard rule reaches public addresses only, and this host has none");
                return Err(Error::HttpRequestDenied);
            }
            tokio::net::TcpStream::connect(&addrs[..]).await.map_err(Error::Connect)?
        } else {
            tokio::net::TcpStream::connect((host, port)).await.map_err(Error::Connect)?
        };
        let _ = stream.set_nodelay(true);
        if !https {
            return Ok(Box::new(stream) as Box<dyn Conn>);
        }
        let config = tls().map_err(|why| {
            tracing::warn!(%host, %why, "https outbound request cannot be made");
            Error::TlsProtocolError
        })?;
        let name = rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|_| Error::HttpRequestUriInvalid)?;
        let tls = tokio_rustls::TlsConnector::from(config).connect(name, stream).await.map_err(|e| {
            tracing::warn!(%host, error = %e, "TLS handshake failed");
            if e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>() && inner.to_string().contains("certificate")) {
                Error::TlsCertificateError
            } else {
                Error::Tls(e)
            }
        })?;
        Ok(Box::new(tls) as Box<dyn Conn>)
    };
    tokio::time::timeout(limit, work).await.map_err(|_| Error::ConnectionTimeout)?
}

/// Send `request` to its host (over TLS for `https`) and return the
/// response and the connection task; `connect` bounds the connection and
/// its handshake, `first_byte` the wait for the response's head;
/// `public_only` keeps it off private addresses ([`public`]).
pub async fn send(
    request: Request<WasiBody>,
    connect_limit: Duration,
    first_byte: Duration,
    public_only: bool,
) -> Result<(hyper::Response<WasiBody>, Io), Error> {
    let uri = request.uri().clone();
    let https = match uri.scheme_str() {
        Some("https") => true,
        Some("http") | None => false,
        Some(_) => return Err(Error::HttpRequestUriInvalid),
    };
    let host = uri.host().ok_or(Error::HttpRequestUriInvalid)?.trim_start_matches('[').trim_end_matches(']').to_string();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let stream = connect(&host, port, https, connect_limit, public_only).await?;
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
        let authority = uri.authority().map_or_else(|| host.clone(), |a| a.as_str().rsplit('@').next().unwrap_or("").to_string());
        if let Ok(v) = hyper::header::HeaderValue::from_str(&authority) {
            parts.headers.insert(hyper::header::HOST, v);
        }
    }
    if let Some(pq) = parts.uri.path_and_query() {
        parts.uri = pq.as_str().parse().map_err(|_| Error::HttpRequestUriInvalid)?;
    }
    let response = tokio::time::timeout(first_byte, sender.send_request(Request::from_parts(parts, body))).await.map_err(|_| Error::HttpResponseTimeout)??;
    Ok((response.map(boxed), io))
}
