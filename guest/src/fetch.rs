//! A bounded `GET` over outbound HTTP (`wasi:http/client@0.3.0`), for
//! documents a stranger names (a client's metadata document) or an issuer
//! serves (its metadata and JWKS): one deadline for the whole exchange
//! (connecting, the head, every byte of the body), a cap on the body (read
//! no further than one byte past it), no redirects followed, and the
//! host's own rules on where it may go (`allowed_outbound_hosts`; the
//! embedded host also keeps wildcard rules off private and loopback
//! addresses).

use http_body_util::BodyExt;
use spin_sdk::wasip3::http::types::ErrorCode;
use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

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
        ErrorCode::ConnectionTimeout | ErrorCode::HttpResponseTimeout | ErrorCode::ConnectionReadTimeout => {
            format!("no answer within {} seconds", limit.as_secs())
        }
        ErrorCode::HttpRequestDenied => "this address may not be fetched (a private or loopback address, or a host the application does not allow)".into(),
        ErrorCode::DnsError(_) => "its host name does not resolve".into(),
        ErrorCode::ConnectionRefused => "the connection was refused".into(),
        ErrorCode::TlsCertificateError | ErrorCode::TlsAlertReceived(_) | ErrorCode::TlsProtocolError => {
            "its TLS certificate or handshake is not trusted".into()
        }
        other => format!("{other:?}"),
    }
}

/// `work`, unless `limit` passes first (then `None`).
pub async fn within<T>(limit: Duration, work: impl Future<Output = T>) -> Option<T> {
    let ns = limit.as_nanos().min(u128::from(u64::MAX)) as u64;
    let mut timer = pin!(spin_sdk::wasip3::clocks::monotonic_clock::wait_for(ns));
    let mut work = pin!(work);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = work.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        timer.as_mut().poll(cx).map(|()| None)
    })
    .await
}

/// `GET url` (`https://host[:port]/path`) with `accept`, within `limit` in
/// all, reading at most `max_bytes` of body (and one byte more, to tell a
/// larger body, which is then left unread). A larger body, a late answer
/// or a refused connection is an error saying which.
pub async fn get(url: &str, accept: &str, max_bytes: usize, limit: Duration) -> Result<Fetched, String> {
    let late = || format!("no answer within {} seconds", limit.as_secs());
    within(limit, exchange(url, accept, max_bytes, limit)).await.unwrap_or_else(|| Err(late()))
}

/// The exchange itself, with no deadline of its own.
async fn exchange(url: &str, accept: &str, max_bytes: usize, limit: Duration) -> Result<Fetched, String> {
    let request = spin_sdk::http::Request::builder()
        .method(spin_sdk::http::Method::GET)
        .uri(url)
        .header("accept", accept)
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .map_err(|e| format!("the URL cannot be sent: {e}"))?;
    let response = spin_sdk::http::send(request).await.map_err(|e| why(&e, limit))?;
    let status = response.status().as_u16();
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).map(str::to_string);
    let mut body = response.into_body();
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("the body broke off: {e}"))?;
        if let Ok(chunk) = frame.into_data() {
            out.extend_from_slice(&chunk);
            // Never read on once past the cap: enough to know it is too big.
            if out.len() > max_bytes {
                return Err(format!("the document is larger than {max_bytes} bytes"));
            }
        }
    }
    Ok(Fetched { status, content_type, body: out })
}
