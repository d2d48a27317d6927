//! `GET /healthz`: answers `{"status":"ok"}` without touching any state.
use spin_sdk::http::{Request, Response};
use spin_sdk::http_component;

/// The response body; the host benchmark serves the same bytes natively.
pub const BODY: &str = r#"{"status":"ok","service":"cairn"}"#;

#[http_component]
fn handle(_req: Request) -> Response {
    Response::builder().status(200).header("content-type", "application/json").body(BODY).build()
}
