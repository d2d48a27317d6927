//! A bounded `GET` over outbound HTTP, for documents a stranger names (a
//! client's metadata document) or an issuer serves (its metadata and
//! JWKS): one deadline for the whole exchange
//! (connecting, the head, every byte of the body), a cap on the body, no
//! redirects followed, and the host's own rules on where it may go
//! (`allowed_outbound_hosts`; the embedded host also keeps wildcard rules
//! off private and loopback addresses).

use std::time::{Duration, Instant};
use wasi::http::outgoing_handler;
use wasi::http::types::{ErrorCode, Fields, Method, OutgoingBody, OutgoingRequest, RequestOptions, Scheme};
use wasi::io::poll::poll;
use wasi::io::streams::StreamError;

/// The most read from the body at once, in bytes.
const READ_CHUNK: usize = 16 * 1024;

/// What came back.
pub struct Fetched {
    /// Status.
    pub status: u16,
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// The body, at most the cap.
    pub body: Vec<u8>,
}

/// What a person can act on, for the host's error codes.
fn why(e: &ErrorCode, limit: Duration) -> String {
    match e {
        ErrorCode::ConnectionTimeout | ErrorCode::HttpResponseTimeout | ErrorCode::ConnectionReadTimeout => format!("no answer within {} seconds", limit.as_secs()),
        ErrorCode::HttpRequestDenied => "this address may not be fetched (a private or loopback address, or a host the application does not allow)".into(),
        ErrorCode::DnsError(_) => "its host name does not resolve".into(),
        ErrorCode::ConnectionRefused => "the connection was refused".into(),
        ErrorCode::TlsCertificateError | ErrorCode::TlsAlertReceived(_) | ErrorCode::TlsProtocolError => "its TLS certificate or handshake is not trusted".into(),
        other => format!("{other:?}"),
    }
}

fn ns(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

/// Waits for `ready` until `deadline`; `false` when the deadline came first.
fn wait(ready: &wasi::io::poll::Pollable, deadline: Instant) -> bool {
    let left = deadline.saturating_duration_since(Instant::now());
    let timer = wasi::clocks::monotonic_clock::subscribe_duration(ns(left));
    let _ = poll(&[ready, &timer]);
    ready.ready()
}

/// `GET url` (`https://host[:port]/path`) with `accept`, within `limit` in
/// all, reading at most `max_bytes` of body (and one byte more, to tell a
/// larger body, which is then left unread). A larger body, a late answer
/// or a refused connection is an error saying which.
pub fn get(url: &str, accept: &str, max_bytes: usize, limit: Duration) -> Result<Fetched, String> {
    let deadline = Instant::now() + limit;
    let (scheme, rest) = url.split_once("://").ok_or("not an absolute URL")?;
    let scheme = match scheme {
        "https" => Scheme::Https,
        "http" => Scheme::Http,
        other => return Err(format!("the {other} scheme cannot be fetched")),
    };
    let (authority, path) = rest.find('/').map_or((rest, "/"), |i| (&rest[..i], &rest[i..]));
    let headers = Fields::from_list(&[("accept".to_string(), accept.as_bytes().to_vec())]).map_err(|e| format!("header: {e:?}"))?;
    let request = OutgoingRequest::new(headers);
    let set = request.set_method(&Method::Get).is_ok()
        && request.set_scheme(Some(&scheme)).is_ok()
        && request.set_authority(Some(authority)).is_ok()
        && request.set_path_with_query(Some(path)).is_ok();
    if !set {
        return Err("the URL cannot be sent".into());
    }
    let options = RequestOptions::new();
    let _ = options.set_connect_timeout(Some(ns(limit)));
    let _ = options.set_first_byte_timeout(Some(ns(limit)));
    let _ = options.set_between_bytes_timeout(Some(ns(limit)));
    let body = request.body().map_err(|_| "the request body cannot be opened")?;
    let pending = outgoing_handler::handle(request, Some(options)).map_err(|e| format!("not sent: {e:?}"))?;
    OutgoingBody::finish(body, None).map_err(|e| format!("not sent: {e:?}"))?;
    if !wait(&pending.subscribe(), deadline) {
        return Err(format!("no answer within {} seconds", limit.as_secs()));
    }
    let response = match pending.get() {
        Some(Ok(Ok(r))) => r,
        Some(Ok(Err(e))) => return Err(why(&e, limit)),
        _ => return Err("no answer".into()),
    };
    let status = response.status();
    let content_type = response.headers().get(&"content-type".to_string()).first().map(|v| String::from_utf8_lossy(v).into_owned());
    let incoming = response.consume().map_err(|_| "the body cannot be read")?;
    let stream = incoming.stream().map_err(|_| "the body cannot be read")?;
    let mut out = Vec::new();
    loop {
        if !wait(&stream.subscribe(), deadline) {
            return Err(format!("the body did not arrive within {} seconds", limit.as_secs()));
        }
        // Never more than one byte past the cap: enough to know it is too big.
        let room = (max_bytes + 1 - out.len()).min(READ_CHUNK) as u64;
        match stream.read(room) {
            Ok(chunk) => {
                out.extend_from_slice(&chunk);
                if out.len() > max_bytes {
                    return Err(format!("the document is larger than {max_bytes} bytes"));
                }
            }
            Err(StreamError::Closed) => break,
            Err(e) => return Err(format!("the body broke off: {e:?}")),
        }
    }
    drop(stream);
    Ok(Fetched { status, content_type, body: out })
}
