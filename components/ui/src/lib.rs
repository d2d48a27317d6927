//! The people's editor, served by Cairn itself: `GET /` is the page,
//! `/ui/…` its script, styles and libraries (embedded in this component, so
//! it deploys to any Spin host like the others), `/ui/config.json` what the
//! page needs to sign a person in.
//!
//! Every answer carries a strict Content-Security-Policy: scripts only from
//! this origin (no inline script, no `eval`), no plugins, no framing, and
//! network calls only to this origin and the configured authorization
//! server. Text written by others is sanitized in the page (DOMPurify over
//! the rendered markdown; everything else is set as text, never as HTML).
//!
//! Any other path answers a JSON 404, as the API does.

use bytes::Bytes;
use http_body_util::Full;
use serde_json::json;
use spin_sdk::http::{HeaderValue, Method, Request, StatusCode};

/// A whole answer: the page's files are a few kilobytes each.
type Response = spin_sdk::http::Response<Full<Bytes>>;

/// A file of the page: its path, content type and bytes.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file the page loads.
const ASSETS: &[Asset] = &[
    Asset { path: "/", content_type: "text/html; charset=utf-8", body: include_bytes!("../assets/index.html") },
    Asset { path: "/ui/app.js", content_type: JS, body: include_bytes!("../assets/app.js") },
    Asset { path: "/ui/app.css", content_type: "text/css; charset=utf-8", body: include_bytes!("../assets/app.css") },
    Asset { path: "/ui/vendor/marked.esm.js", content_type: JS, body: include_bytes!("../node_modules/marked/lib/marked.esm.js") },
    Asset { path: "/ui/vendor/purify.es.mjs", content_type: JS, body: include_bytes!("../node_modules/dompurify/dist/purify.es.mjs") },
];

/// The editor's configuration, read once per instance; `None` when a
/// variable does not parse (the page then answers 500, naming it).
fn config() -> Result<&'static cairn_config::Config, &'static cairn_config::Error> {
    static CONFIG: std::sync::OnceLock<Result<cairn_config::Config, cairn_config::Error>> = std::sync::OnceLock::new();
    let host = |name: &str| cairn_guest::variable(name);
    CONFIG.get_or_init(|| cairn_config::Config::read_as(cairn_config::Reader::Ui, &host, &[])).as_ref()
}

/// The origin (`scheme://host[:port]`) of a URL, if it has one.
fn origin(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let end = rest.find('/').map_or(url.len(), |i| url.len() - rest.len() + i);
    url.get(..end).filter(|o| o.starts_with("https://") || o.starts_with("http://"))
}

/// The authorization server the page signs people in with, when configured.
fn authorization_server() -> String {
    let Ok(c) = config() else { return String::new() };
    c.auth.authorization_server.clone().or_else(|| c.auth.issuer.clone()).unwrap_or_default()
}

/// This resource's URL (`audience`), empty when unset.
fn audience() -> String {
    config().ok().and_then(|c| c.auth.audience.clone()).unwrap_or_default()
}

/// The editor's OAuth client id, empty when unset.
fn client_id() -> String {
    config().ok().and_then(|c| c.oauth.ui_client_id.clone()).unwrap_or_default()
}

/// Whether the page signs people in with Cairn's own authorization server:
/// the editor's client id is `cairn-editor` and the server is this origin.
fn own_authorization_server() -> bool {
    let server = authorization_server();
    client_id() == "cairn-editor" && origin(&server).is_some() && origin(&server) == origin(&audience())
}

/// The policy: this origin only, plus the authorization server for
/// discovery, the token exchange and the sign-in redirect.
fn csp() -> String {
    let auth = origin(&authorization_server()).map(|o| format!(" {o}")).unwrap_or_default();
    format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'{auth}; form-action 'self'{auth}; base-uri 'none'; frame-ancestors 'none'"
    )
}

fn answer(status: u16, content_type: &str, body: Vec<u8>) -> Response {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let csp = csp();
    for (name, value) in [
        ("content-type", content_type),
        ("content-security-policy", csp.as_str()),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("cache-control", "no-cache"),
    ] {
        if let Ok(v) = HeaderValue::from_str(value) {
            r.headers_mut().insert(name, v);
        }
    }
    r
}

fn not_found() -> Response {
    let body = json!({"error": "not_found", "message": "no such route; the people's editor is at /, the API under /api/v1 and /mcp"});
    answer(404, "application/json", body.to_string().into_bytes())
}

/// The front door's limits and origin rules (`cairn_door`), with no store
/// call: the page is the same few files for everyone.
fn screened(req: &Request) -> Option<Response> {
    let c = match config() {
        Ok(c) => c,
        Err(e) => {
            let body = json!({"error": "misconfigured", "message": e.to_string()});
            return Some(answer(500, "application/json", body.to_string().into_bytes()));
        }
    };
    let settings = cairn_door::Settings::of(&c.door);
    let uri = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let arrival = cairn_door::Arrival::new(uri, req.headers().iter().map(|(n, v)| (n.as_str(), v.as_bytes())));
    let refusal = cairn_door::Door::new(&settings, None, 0).screen_limits(&arrival).err()?;
    let mut resp = answer(refusal.status(), "application/json", refusal.body().into_bytes());
    for (name, value) in refusal.headers() {
        if let Ok(v) = HeaderValue::from_str(&value) {
            resp.headers_mut().insert(name, v);
        }
    }
    Some(resp)
}

#[spin_sdk::http_service]
async fn handle(req: Request) -> Response {
    if let Some(refused) = screened(&req) {
        return refused;
    }
    let head = req.method() == Method::HEAD;
    if !head && req.method() != Method::GET {
        let body = json!({"error": "method_not_allowed", "message": "the page's files are read with GET"});
        return answer(405, "application/json", body.to_string().into_bytes());
    }
    let path = req.uri().path();
    let reply = if path == "/ui/config.json" {
        // Public settings only: where to sign in and for which resource.
        let body = json!({
            "authorization_server": authorization_server(),
            "client_id": client_id(),
            "resource": audience(),
            "scope": "notes:read notes:write notes:delete audit:read",
            // Cairn is its own authorization server (docs/oauth.md): people
            // sign in with one-time links, approve apps, and see them here.
            "own": own_authorization_server(),
            // How the server reads a token's tenant and name, so the page names them as it does.
            "claims": {
                "tenant": config().map(|c| c.auth.claims.tenant.as_str()).unwrap_or("tenant"),
                "fixed_tenant": config().ok().and_then(|c| c.auth.claims.fixed_tenant.as_deref()).unwrap_or(""),
                "name": config().map(|c| c.auth.claims.name.as_str()).unwrap_or("name"),
            },
        });
        answer(200, "application/json", body.to_string().into_bytes())
    } else {
        match ASSETS.iter().find(|a| a.path == path || (a.path == "/" && path == "/index.html")) {
            Some(a) => answer(200, a.content_type, a.body.to_vec()),
            None => return not_found(),
        }
    };
    if head {
        let mut r = reply;
        *r.body_mut() = Full::new(Bytes::new());
        return r;
    }
    reply
}
