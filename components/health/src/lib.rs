//! `GET /healthz`: answers `{"status":"ok"}` without touching any state,
//! once the front door's limits pass (`cairn_door`, with no store call).
use spin_sdk::http::{Request, Response};
use spin_sdk::http_component;

/// The response body; the host benchmark serves the same bytes natively.
pub const BODY: &str = r#"{"status":"ok","service":"cairn"}"#;

#[http_component]
fn handle(req: Request) -> Response {
    let settings = cairn_door::Settings::default();
    let arrival = cairn_door::Arrival::new(req.uri(), req.headers().map(|(n, v)| (n, v.as_bytes())));
    if let Err(r) = cairn_door::Door::new(&settings, None, 0).screen_limits(&arrival) {
        let mut resp = Response::builder().status(r.status()).header("content-type", "application/json").body(r.body()).build();
        for (name, value) in r.headers() {
            resp.set_header(name, value);
        }
        return resp;
    }
    Response::builder().status(200).header("content-type", "application/json").body(BODY).build()
}
