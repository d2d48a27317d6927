//! `GET /healthz`: answers `{"status":"ok"}` without touching any state,
//! once the front door's limits pass (`cairn_door`, with no store call).
use bytes::Bytes;
use http_body_util::Full;
use spin_sdk::http::{HeaderValue, Request, StatusCode};

/// The response body; the host benchmark serves the same bytes natively.
pub const BODY: &str = r#"{"status":"ok","service":"cairn"}"#;

/// A JSON answer.
fn json(status: u16, body: impl Into<Bytes>) -> spin_sdk::http::Response<Full<Bytes>> {
    let mut r = spin_sdk::http::Response::new(Full::new(body.into()));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert("content-type", HeaderValue::from_static("application/json"));
    r
}

#[spin_sdk::http_service]
async fn handle(req: Request) -> spin_sdk::http::Response<Full<Bytes>> {
    let settings = cairn_door::Settings::default();
    let uri = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let arrival = cairn_door::Arrival::new(uri, req.headers().iter().map(|(n, v)| (n.as_str(), v.as_bytes())));
    if let Err(r) = cairn_door::Door::new(&settings, None, 0).screen_limits(&arrival) {
        let mut resp = json(r.status(), r.body());
        for (name, value) in r.headers() {
            if let Ok(v) = HeaderValue::from_str(&value) {
                resp.headers_mut().insert(name, v);
            }
        }
        return resp;
    }
    json(200, BODY)
}
