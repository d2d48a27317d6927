//! Cairn as its own authorization server (no issuer configured), over real
//! HTTP: discovery from a 401, registration, a person's consent, codes and
//! refresh tokens, client metadata documents fetched over real TLS within
//! their limits and never from a private address (or a component of this
//! application) unless its origin is named, the editor's code only at the
//! issuer's own page, revocation, spent and dead records swept by the host
//! and by the operators' route, and the whole server off with an external
//! issuer.
//! The rules one by one are in `crates/oauth/tests`; real MCP clients and
//! the editor's consent in Chromium in `tests/browser/test_oauth_clients.py`.
use crate::app::require_app;
use crate::harness::{Cairn, Reply, Start, require_built, scratch};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

pub(crate) const CALLBACK: &str = "http://127.0.0.1:9/callback";

fn start(env: Vec<(&str, &str)>) -> Cairn {
    require_app();
    require_built(&["authz.wasm", "ui.wasm"]);
    Cairn::start(Start { env, ..Start::default() })
}

fn enc(s: &str) -> String {
    cairn_oauth::wire::encode(s)
}

fn query(pairs: &[(&str, &str)]) -> String {
    pairs.iter().map(|(k, v)| format!("{k}={}", enc(v))).collect::<Vec<_>>().join("&")
}

fn params_of(url: &str) -> BTreeMap<String, String> {
    cairn_oauth::wire::params(url.split_once('?').map_or("", |(_, q)| q)).unwrap()
}

fn form(cairn: &Cairn, path: &str, pairs: &[(&str, &str)]) -> Reply {
    cairn.request("POST", path, &[("content-type", "application/x-www-form-urlencoded")], query(pairs).as_bytes())
}

fn post_json(cairn: &Cairn, path: &str, body: &Value, bearer: Option<&str>) -> Reply {
    let auth = bearer.map(|t| format!("Bearer {t}")).unwrap_or_default();
    let mut headers = vec![("content-type", "application/json")];
    if bearer.is_some() {
        headers.push(("authorization", auth.as_str()));
    }
    cairn.request("POST", path, &headers, body.to_string().as_bytes())
}

fn pkce() -> (String, String) {
    let verifier = format!("verifier-{:032x}-{:016x}", std::process::id(), Instant::now().elapsed().as_nanos());
    (verifier.clone(), B64.encode(Sha256::digest(verifier.as_bytes())))
}

/// The first person's session: the one-time link `cairn up` printed, used
/// as the editor does. Answers the session cookie.
fn first_person_session(cairn: &Cairn) -> String {
    let log = cairn.wait_for_log("#/sign-in/");
    let link = log.lines().find_map(|l| l.trim().split_once("/#/sign-in/").map(|(_, s)| s.to_string())).unwrap_or_else(|| panic!("no link:\n{log}"));
    let r = post_json(cairn, "/oauth/session", &json!({"link": link}), None);
    assert_eq!(r.status, 200, "{}", r.text());
    r.header("set-cookie").unwrap().split(';').next().unwrap().to_string()
}

/// `authorize` for `cairn-editor` with the session `cookie`, sending the code
/// to `redirect`: the answer and the PKCE verifier.
fn editor_authorize(cairn: &Cairn, cookie: &str, redirect: &str) -> (Reply, String) {
    let (verifier, challenge) = pkce();
    let q = query(&[
        ("response_type", "code"),
        ("client_id", "cairn-editor"),
        ("redirect_uri", redirect),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
        ("state", "e"),
    ]);
    (cairn.request("GET", &format!("/oauth/authorize?{q}"), &[("cookie", cookie)], b""), verifier)
}

/// The first person signed in to the editor as the page does: the session,
/// then code + PKCE as `cairn-editor`. Answers the person's token answer.
fn sign_in_first_person(cairn: &Cairn) -> Value {
    let cookie = first_person_session(cairn);
    let redirect = format!("http://{}/", cairn.addr);
    let (r, verifier) = editor_authorize(cairn, &cookie, &redirect);
    assert_eq!(r.status, 302, "{}", r.text());
    let code = params_of(r.header("location").unwrap())["code"].clone();
    let t = form(
        cairn,
        "/oauth/token",
        &[("grant_type", "authorization_code"), ("code", &code), ("client_id", "cairn-editor"), ("redirect_uri", &redirect), ("code_verifier", &verifier)],
    );
    assert_eq!(t.status, 200, "{}", t.text());
    t.json()
}

/// `client_id` through authorize and the person's consent to a token answer.
pub(crate) fn connect(cairn: &Cairn, person: &str, client_id: &str, redirect: &str) -> Value {
    let (verifier, challenge) = pkce();
    let resource = format!("http://{}/mcp", cairn.addr);
    let q = query(&[
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", redirect),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
        ("state", "st"),
        ("resource", &resource),
        ("scope", "notes:read notes:write"),
    ]);
    let r = cairn.get(&format!("/oauth/authorize?{q}"));
    assert_eq!(r.status, 302, "{}", r.text());
    let to = r.header("location").unwrap().to_string();
    let request = to.split_once("/#/consent/").unwrap_or_else(|| panic!("{to}")).1;
    let a = post_json(cairn, "/oauth/consent", &json!({"request": request, "approve": true}), Some(person));
    assert_eq!(a.status, 200, "{}", a.text());
    let back = a.json()["redirect_to"].as_str().unwrap().to_string();
    let p = params_of(&back);
    assert_eq!((p["state"].as_str(), p["iss"].as_str()), ("st", format!("http://{}", cairn.addr).as_str()));
    let t = form(
        cairn,
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &p["code"]),
            ("client_id", client_id),
            ("redirect_uri", redirect),
            ("code_verifier", &verifier),
            ("resource", &resource),
        ],
    );
    assert_eq!(t.status, 200, "{}", t.text());
    t.json()
}

pub(crate) fn register(cairn: &Cairn, redirect: &str) -> String {
    let r = post_json(cairn, "/oauth/register", &json!({"redirect_uris": [redirect], "client_name": "Test App"}), None);
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["client_id"].as_str().unwrap().to_string()
}

fn tools_list(cairn: &Cairn, token: &str) -> Reply {
    cairn.mcp(token, &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
}

#[test]
fn a_client_finds_the_server_from_a_401_registers_is_approved_and_calls_tools() {
    let cairn = start(vec![]);
    // Discovery as MCP clients do it: the challenge, the resource's metadata, the server's.
    let r = cairn.request("POST", "/mcp", &[("content-type", "application/json")], b"{}");
    assert_eq!(r.status, 401);
    let challenge = r.header("www-authenticate").unwrap().to_string();
    let prm_url = challenge.split_once("resource_metadata=\"").unwrap().1.trim_end_matches('"').to_string();
    let prm = cairn.get(prm_url.split_once(&cairn.addr.to_string()).unwrap().1).json();
    let issuer = format!("http://{}", cairn.addr);
    assert_eq!(prm["authorization_servers"], json!([issuer]));
    let meta = cairn.get("/.well-known/oauth-authorization-server").json();
    assert_eq!((meta["issuer"].as_str(), meta["client_id_metadata_document_supported"].as_bool()), (Some(issuer.as_str()), Some(true)));
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(cairn.get("/oauth/jwks").json()["keys"][0]["kty"], "OKP");

    let person = sign_in_first_person(&cairn);
    let person_token = person["access_token"].as_str().unwrap();
    let note = post_json(&cairn, "/api/v1/notes", &json!({"title": "Shared", "approved_for_agents": true}), Some(person_token));
    assert_eq!(note.status, 201, "a person's token from the editor's sign-in works on REST: {}", note.text());

    let client = register(&cairn, CALLBACK);
    let app = connect(&cairn, person_token, &client, CALLBACK);
    assert_eq!(app["scope"], "notes:read notes:write");
    let token = app["access_token"].as_str().unwrap();
    assert_eq!(tools_list(&cairn, token).status, 200);
    let listed = cairn.call(token, "list_notes", json!({}));
    assert_eq!(listed["structuredContent"]["notes"][0]["title"], "Shared", "{listed}");
    // The app is the person's connected app, and acts as an agent: no audit trail for it.
    let apps = cairn.request("GET", "/oauth/apps", &[("authorization", &format!("Bearer {person_token}"))], b"").json();
    assert_eq!(apps["apps"][0]["agent_name"], "Test App for Local person", "{apps}");
    assert_eq!(cairn.rest(token, "GET", "/api/v1/audit", None).status, 403);
}

#[test]
fn refused_requests_get_oauth_errors_and_issue_nothing() {
    let cairn = start(vec![]);
    let person = sign_in_first_person(&cairn);
    let person_token = person["access_token"].as_str().unwrap();
    let client = register(&cairn, CALLBACK);
    // A redirect URI not registered: a page, never a redirect.
    let (_, challenge) = pkce();
    let q = query(&[
        ("response_type", "code"),
        ("client_id", &client),
        ("redirect_uri", "https://evil.example/cb"),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
    ]);
    let r = cairn.get(&format!("/oauth/authorize?{q}"));
    assert_eq!(r.status, 400);
    assert!(r.header("location").is_none() && r.text().contains("not one this client registered"), "{}", r.text());
    // A token for another resource. Anyone can register any redirect URI, so
    // an error before the person saw the app is a page there too, never a redirect.
    let q = query(&[
        ("response_type", "code"),
        ("client_id", &client),
        ("redirect_uri", CALLBACK),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
        ("resource", "https://other.example/mcp"),
    ]);
    let r = cairn.get(&format!("/oauth/authorize?{q}"));
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.header("location").is_none() && r.text().contains("invalid_target"), "{}", r.text());
    // A code used twice, a refresh token reused: the family is revoked.
    let app = connect(&cairn, person_token, &client, CALLBACK);
    let refresh = |t: &str| form(&cairn, "/oauth/token", &[("grant_type", "refresh_token"), ("refresh_token", t), ("client_id", &client)]);
    let first = refresh(app["refresh_token"].as_str().unwrap());
    assert_eq!(first.status, 200, "{}", first.text());
    let second = refresh(first.json()["refresh_token"].as_str().unwrap());
    assert_eq!(second.status, 200, "{}", second.text());
    let reused = refresh(app["refresh_token"].as_str().unwrap());
    assert_eq!((reused.status, reused.json()["error"].as_str()), (400, Some("invalid_grant")));
    assert_eq!(refresh(second.json()["refresh_token"].as_str().unwrap()).json()["error"], "invalid_grant", "the family is revoked");
    // Consent denied: access_denied back to the client with its state.
    let q = query(&[
        ("response_type", "code"),
        ("client_id", &client),
        ("redirect_uri", CALLBACK),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
        ("state", "d"),
    ]);
    let to = cairn.get(&format!("/oauth/authorize?{q}")).header("location").unwrap().to_string();
    let request = to.split_once("/#/consent/").unwrap().1;
    let denied = post_json(&cairn, "/oauth/consent", &json!({"request": request, "approve": false}), Some(person_token)).json();
    let p = params_of(denied["redirect_to"].as_str().unwrap());
    assert_eq!((p["error"].as_str(), p["state"].as_str()), ("access_denied", "d"));
    // An agent's token cannot approve anything.
    let agent = app["access_token"].as_str().unwrap();
    let r = post_json(&cairn, "/oauth/consent", &json!({"request": request, "approve": true}), Some(agent));
    assert_eq!(r.status, 403, "{}", r.text());
    // Registrations are bounded per address (10 at once, then one every 3 s).
    let over = (0..15).map(|_| post_json(&cairn, "/oauth/register", &json!({"redirect_uris": [CALLBACK]}), None).status).filter(|s| *s == 429).count();
    assert!(over >= 3, "{over} of 15 registrations refused");
}

#[test]
fn a_local_program_listening_on_a_port_never_gets_the_editors_code() {
    let cairn = start(vec![]);
    let cookie = first_person_session(&cairn);
    // The attack: the person's browser sent to authorize as the editor, with
    // the session cookie a top-level GET carries, and the code asked for at
    // a port some local program listens on.
    let port9 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    port9.set_nonblocking(true).unwrap();
    let elsewhere = format!("http://127.0.0.1:{}/", port9.local_addr().unwrap().port());
    for redirect in [elsewhere.as_str(), "http://127.0.0.1:9/", "http://localhost:9/", &format!("http://{}/elsewhere", cairn.addr)] {
        let (r, _) = editor_authorize(&cairn, &cookie, redirect);
        assert_eq!(r.status, 400, "{redirect}: {}", r.text());
        assert!(r.header("location").is_none(), "{redirect}: sent to {:?}", r.header("location"));
        assert!(r.text().contains("not one this client registered") && !r.text().contains("code="), "{}", r.text());
    }
    assert!(port9.accept().is_err(), "nothing reached the listening port");
    // The token endpoint refuses the editor's code anywhere but the issuer's own page.
    let own = format!("http://{}/", cairn.addr);
    let (r, verifier) = editor_authorize(&cairn, &cookie, &own);
    let code = params_of(r.header("location").unwrap())["code"].clone();
    let exchange = |redirect: &str| {
        form(
            &cairn,
            "/oauth/token",
            &[("grant_type", "authorization_code"), ("code", &code), ("client_id", "cairn-editor"), ("redirect_uri", redirect), ("code_verifier", &verifier)],
        )
    };
    let refused = exchange("http://127.0.0.1:9/");
    assert_eq!((refused.status, refused.json()["error"].as_str()), (400, Some("invalid_grant")), "{}", refused.text());
    assert_eq!(exchange(&own).status, 200, "the issuer's own page still signs in");
}

#[test]
fn a_metadata_document_on_a_component_of_this_app_is_refused_before_any_fetch() {
    let cairn = start(vec![]);
    for id in [
        "https://rest.spin.internal/api/v1/notes",
        "https://ui.spin.internal/index.html",
        "https://[::ffff:127.0.0.1]/c.json",
        "https://[64:ff9b::7f00:1]/c.json",
    ] {
        let r = authorize_document(&cairn, id);
        assert_eq!(r.status, 401, "{id}: {}", r.text());
        assert!(r.text().contains("is not fetched") && r.text().contains("public host"), "{id}: {}", r.text());
    }
}

/// Records of the store under `prefix`, read after the host stopped.
fn stored_under(state: &Path, prefix: &str) -> Vec<String> {
    use cairn_kv::Store;
    let store = cairn_kv_sqlite::SqliteStore::open(&state.join("kv.db"), false).unwrap();
    store.list_prefix("default", prefix, None, 10_000).unwrap()
}

/// A spent link, a revoked grant and a live session: what a sweep must
/// delete and keep.
fn spent_link_and_revoked_grant(cairn: &Cairn) {
    let person = sign_in_first_person(cairn);
    let r = form(cairn, "/oauth/revoke", &[("token", person["refresh_token"].as_str().unwrap())]);
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn the_hosts_sweep_deletes_spent_links_and_revoked_grants_and_keeps_live_sessions() {
    require_app();
    let cairn = Cairn::start(Start { args: vec!["--sweep-interval-secs", "1"], ..Start::default() });
    spent_link_and_revoked_grant(&cairn);
    std::thread::sleep(Duration::from_millis(3_500));
    let state = cairn.state_dir.clone();
    let (status, log) = cairn.terminate();
    assert!(status.success(), "{log}");
    assert_eq!(stored_under(&state, "oauth/link/"), Vec::<String>::new(), "the spent link is swept");
    assert_eq!(stored_under(&state, "t/local/oauth/grant/"), Vec::<String>::new(), "the revoked grant is swept");
    assert_eq!(stored_under(&state, "t/local/oauth/session/").len(), 1, "the live session is kept");
}

#[test]
fn the_operators_sweep_route_deletes_them_on_hosts_without_a_timer() {
    let cairn = start(vec![("SPIN_VARIABLE_SWEEP_TOKEN", "operator-sweep-secret")]);
    spent_link_and_revoked_grant(&cairn);
    let r = cairn.request("POST", "/api/v1/sweep-claims?tenant=local", &[("authorization", "Bearer operator-sweep-secret")], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let oauth = &r.json()["oauth"];
    assert_eq!((oauth["links"].as_u64(), oauth["local"]["grants"].as_u64(), oauth["local"]["sessions"].as_u64()), (Some(1), Some(1), Some(0)), "{oauth}");
    let again = cairn.request("POST", "/api/v1/sweep-claims?tenant=local", &[("authorization", "Bearer operator-sweep-secret")], b"").json();
    assert_eq!((again["oauth"]["links"].as_u64(), again["oauth"]["local"]["grants"].as_u64()), (Some(0), Some(0)), "{again}");
}

#[test]
fn revoking_an_app_stops_its_refresh_at_once_and_its_access_within_the_token_lifetime() {
    let cairn = start(vec![("SPIN_VARIABLE_ACCESS_TOKEN_SECONDS", "1")]);
    let person = sign_in_first_person(&cairn);
    let person_token = person["access_token"].as_str().unwrap().to_string();
    let client = register(&cairn, CALLBACK);
    let app = connect(&cairn, &person_token, &client, CALLBACK);
    let access = app["access_token"].as_str().unwrap();
    let r = post_json(&cairn, "/oauth/apps/revoke", &json!({"client_id": client}), Some(&person_token));
    assert_eq!(r.json()["revoked"], 1, "{}", r.text());
    let refreshed =
        form(&cairn, "/oauth/token", &[("grant_type", "refresh_token"), ("refresh_token", app["refresh_token"].as_str().unwrap()), ("client_id", &client)]);
    assert_eq!(refreshed.json()["error"], "invalid_grant", "refresh stops at once");
    assert_eq!(tools_list(&cairn, access).status, 200, "an access token lasts until it expires (stated: access_token_seconds)");
    // ...plus the verifier's 30 s of leeway for clocks that disagree, and no longer.
    std::thread::sleep(Duration::from_millis(32_500));
    assert_eq!(tools_list(&cairn, access).status, 401, "and no longer");
}

/// A TLS server on loopback: `/ok.json` a good document, `/big.json` too
/// big, `/slow.json` never answers in time, `/other.json` names another
/// client, `/moved.json` redirects, `/text.json` is not JSON's type.
fn document_server(dir: &Path) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>, std::path::PathBuf) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (ca, cert, key) = crate::outbound::https_keys::certificates(dir, "Cairn OAuth Test CA");
    use rustls::pki_types::pem::PemObject;
    let certs = rustls::pki_types::CertificateDer::pem_file_iter(&cert).unwrap().collect::<Result<Vec<_>, _>>().unwrap();
    let key = rustls::pki_types::PrivateKeyDer::from_pem_file(&key).unwrap();
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            listener.set_nonblocking(true).unwrap();
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((tcp, _)) = listener.accept().await else { continue };
                let (acceptor, counted) = (acceptor.clone(), counted.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                    let mut buf = vec![0u8; 8192];
                    let mut got = Vec::new();
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tls.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    counted.fetch_add(1, Ordering::SeqCst);
                    let head = String::from_utf8_lossy(&got).into_owned();
                    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let me = format!("https://localhost:{port}{path}");
                    let doc = |id: &str| json!({"client_id": id, "client_name": "Doc App", "redirect_uris": [CALLBACK]}).to_string();
                    let (status, ctype, body) = match path.as_str() {
                        "/ok.json" => ("200 OK", "application/json", doc(&me)),
                        "/big.json" => {
                            ("200 OK", "application/json", json!({"client_id": me, "redirect_uris": [CALLBACK], "pad": "x".repeat(8000)}).to_string())
                        }
                        "/other.json" => ("200 OK", "application/json", doc("https://elsewhere.example/client.json")),
                        "/moved.json" => ("302 Found", "application/json", String::new()),
                        "/text.json" => ("200 OK", "text/plain", doc(&me)),
                        _ => {
                            // /slow.json: the head never comes within the fetch's 5 s.
                            tokio::time::sleep(Duration::from_secs(8)).await;
                            ("200 OK", "application/json", doc(&me))
                        }
                    };
                    let answer = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\nlocation: /ok.json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = tls.write_all(answer.as_bytes()).await;
                    let _ = tls.shutdown().await;
                });
            }
        });
    });
    (port, hits, ca)
}

fn authorize_document(cairn: &Cairn, client_id: &str) -> Reply {
    let (_, challenge) = pkce();
    let q = query(&[
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", CALLBACK),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
    ]);
    cairn.get(&format!("/oauth/authorize?{q}"))
}

#[test]
fn metadata_documents_are_fetched_over_tls_within_their_limits() {
    let dir = scratch("cimd");
    let (port, hits, ca) = document_server(&dir);
    let origin = format!("https://localhost:{port}");
    let cairn = start(vec![
        ("SSL_CERT_FILE", Box::leak(ca.display().to_string().into_boxed_str())),
        ("SPIN_VARIABLE_CLIENT_METADATA_ORIGIN", Box::leak(origin.clone().into_boxed_str())),
    ]);
    let ok = authorize_document(&cairn, &format!("{origin}/ok.json"));
    assert_eq!(ok.status, 302, "{}", ok.text());
    assert!(ok.header("location").unwrap().contains("/#/consent/"));
    for (path, why) in [
        ("/big.json", "larger than 5120 bytes"),
        ("/other.json", "names another client_id"),
        ("/moved.json", "answered 302"),
        ("/text.json", "not application/json"),
        ("/slow.json", "no answer within 5 seconds"),
    ] {
        let started = Instant::now();
        let r = authorize_document(&cairn, &format!("{origin}{path}"));
        assert_eq!(r.status, 401, "{path}: {}", r.text());
        assert!(r.text().contains(why), "{path}: {}", r.text());
        assert!(started.elapsed() < Duration::from_secs(7), "{path} took {:?}", started.elapsed());
    }
    // Plain http is no document URL, and nobody registered it.
    let r = authorize_document(&cairn, &format!("http://localhost:{port}/ok.json"));
    assert_eq!(r.status, 401, "{}", r.text());
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 6);
}

#[test]
fn a_metadata_document_on_a_private_host_is_refused_unless_its_origin_is_named() {
    let dir = scratch("cimd-private");
    let (port, hits, ca) = document_server(&dir);
    let cairn = start(vec![("SSL_CERT_FILE", Box::leak(ca.display().to_string().into_boxed_str()))]);
    // Documents live on public hosts: localhost and 127.0.0.1 are refused
    // before anything is fetched (and the manifest's `https://*` rule would
    // reach public addresses only, checked again once a name is resolved).
    for host in ["localhost", "127.0.0.1"] {
        let r = authorize_document(&cairn, &format!("https://{host}:{port}/ok.json"));
        assert_eq!(r.status, 401, "{}", r.text());
        assert!(r.text().contains("is not fetched") && r.text().contains("public host"), "{}", r.text());
    }
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 0, "nothing reached the loopback server");
}

#[test]
fn with_an_external_issuer_the_authorization_server_is_off() {
    let cairn = crate::app::start_with(vec![], vec![]);
    for path in ["/.well-known/oauth-authorization-server", "/oauth/jwks", "/oauth/authorize?client_id=x"] {
        assert_eq!(cairn.get(path).status, 404, "{path}");
    }
    assert_eq!(post_json(&cairn, "/oauth/register", &json!({"redirect_uris": [CALLBACK]}), None).status, 404);
    let prm = cairn.get("/.well-known/oauth-protected-resource/mcp").json();
    assert_eq!(prm["authorization_servers"], json!([crate::app::ISSUER]));
    assert!(!cairn.log().contains("#/sign-in/"), "no sign-in link with an external issuer");
}
