//! HTTP as Cairn's components see it: a request with its whole body read
//! (within a cap, so no request holds more than the door allows), and a
//! response built by status, headers and body. Both sit on `spin-sdk`'s
//! `wasi:http@0.3.0` types ([`Request::read`], [`Response`]'s
//! `IntoResponse`), so a component's handler is `async fn(Request) ->
//! Response` whatever the host.

use http_body_util::BodyExt;
use spin_sdk::http::{HeaderMap, HeaderName, HeaderValue, IntoResponse, Method};
use spin_sdk::wasip3::http::types::{ErrorCode, Response as WasiResponse};

/// Why a request's body was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    /// It passed the cap.
    TooLarge,
    /// It broke off, or was not HTTP.
    Broken,
}

/// One request: its head and its whole body.
pub struct Request {
    method: Method,
    /// Path and query, as sent.
    uri: String,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Request {
    /// Reads `req` whole: its body up to `max_body` bytes, stopping the
    /// moment a longer body passes the cap.
    pub async fn read(req: spin_sdk::http::Request, max_body: usize) -> Result<Request, Unread> {
        let (parts, body) = req.into_parts();
        let limited = http_body_util::Limited::new(body, max_body);
        let body = match limited.collect().await {
            Ok(c) => c.to_bytes().to_vec(),
            Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => return Err(Unread::TooLarge),
            Err(_) => return Err(Unread::Broken),
        };
        let uri = parts.uri.path_and_query().map_or_else(|| parts.uri.path().to_string(), |p| p.as_str().to_string());
        Ok(Request { method: parts.method, uri, headers: parts.headers, body })
    }

    /// A request made here (a call to a tool over HTTP, a test).
    pub fn new(method: Method, uri: &str, headers: HeaderMap, body: Vec<u8>) -> Request {
        Request { method, uri: uri.to_string(), headers, body }
    }

    /// The method.
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// Path and query.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The path.
    pub fn path(&self) -> &str {
        self.uri.split_once('?').map_or(self.uri.as_str(), |(p, _)| p)
    }

    /// The query, without `?` (empty when there is none).
    pub fn query(&self) -> &str {
        self.uri.split_once('?').map_or("", |(_, q)| q)
    }

    /// The first value of a header, as text (`None` when absent or not text).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Every header, in order: name and raw value.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes()))
    }

    /// The body.
    pub fn body(&self) -> &[u8] {
        &self.body
    }
}

/// A response: status, headers, body (whole, or a stream of frames).
pub struct Response {
    status: u16,
    headers: HeaderMap,
    body: Vec<u8>,
    stream: Option<spin_sdk::http::BoxBody>,
}

/// Where a streamed response's frames are written; dropped, the stream ends.
pub type Frames = futures::channel::mpsc::Sender<String>;

/// Writes one frame of a streamed response; `false` once the client is gone.
pub async fn write(frames: &mut Frames, frame: String) -> bool {
    use futures::SinkExt;
    frames.send(frame).await.is_ok()
}

impl Response {
    /// A response with `status` and `body` and no header.
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Response {
        Response { status, headers: HeaderMap::new(), body: body.into(), stream: None }
    }

    /// A 200 response whose body is the frames written to the sender it
    /// comes with, each sent as it is written (no length: chunked), until
    /// the sender is dropped.
    pub fn streamed() -> (Frames, Response) {
        let (tx, body) = spin_sdk::http::body::stream::<String>();
        (tx, Response { status: 200, headers: HeaderMap::new(), body: Vec::new(), stream: Some(spin_sdk::http::box_body(body)) })
    }

    /// Sets (replaces) a header; a name or value HTTP cannot carry is dropped.
    pub fn set_header(&mut self, name: &str, value: &str) {
        if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) {
            self.headers.insert(n, v);
        }
    }

    /// With a header set.
    pub fn with_header(mut self, name: &str, value: &str) -> Response {
        self.set_header(name, value);
        self
    }

    /// The status.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// A header's value, as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body.
    pub fn body(&self) -> &[u8] {
        &self.body
    }
}

impl IntoResponse for Response {
    fn into_response(self) -> Result<WasiResponse, ErrorCode> {
        let mut headers = self.headers;
        let body = match self.stream {
            Some(stream) => stream,
            None => {
                // The whole body is here: its length goes with it, so the answer is
                // not chunked (clients read it as one piece, as from a WASI 0.2 host).
                headers.insert(HeaderName::from_static("content-length"), HeaderValue::from(self.body.len()));
                spin_sdk::http::box_body(http_body_util::Full::new(bytes::Bytes::from(self.body)))
            }
        };
        let mut r = spin_sdk::http::Response::new(body);
        *r.status_mut() = spin_sdk::http::StatusCode::from_u16(self.status).unwrap_or(spin_sdk::http::StatusCode::INTERNAL_SERVER_ERROR);
        *r.headers_mut() = headers;
        r.into_response()
    }
}
