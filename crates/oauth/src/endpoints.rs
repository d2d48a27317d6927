//! The routes and their answers. [`Route::of`] names a request's route;
//! the component screens it at the front door, verifies a person's bearer
//! token where [`Route::needs_person`], fetches a metadata document where
//! [`Server::document_to_fetch`] names one, and hands the rest to
//! [`Server::serve`].
//!
//! `authorize` stores nothing for an app: until a person approves, the
//! request travels sealed (to the editor and back); registration is sealed
//! too ([`crate::clients`]). Only a person's approval, the editor's sign-in
//! through a session (onto that session's one grant), a code's exchange, a
//! refresh, a revocation that changes something, an invitation and a
//! one-time link write to the store; each is bounded (see the modules).
//!
//! **Only the editor gets a code without the consent screen**, and only at
//! its one redirect URI, the issuer's `/`, matched exactly: every other
//! client's code is made by [`Server::serve`] for `POST /oauth/consent`,
//! which takes a person's bearer token (never a cookie), and grants at most
//! the scopes that person's token holds. Until a redirect URI is known
//! good *and* vouched for ([`Client::redirect_verified`]), an error is a
//! page, never a redirect.

use crate::clients::{self, Client, EDITOR, RegisteredBy};
use crate::error::{Code, Error, Result, fail};
use crate::grants::{self, Issued, NewGrant};
use crate::people::{self, COOKIE, SESSION_SECONDS};
use crate::seal::Sealer;
use crate::wire::{self, encode, params, with_query};
use crate::{AGENT_SCOPES, PERSON_SCOPES, Settings};
use cairn_auth::mint::LocalKey;
use cairn_auth::{Actor, Principal, Role};
use cairn_kv::Store;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// How long a sealed consent request lasts, in seconds.
pub const CONSENT_SECONDS: u64 = 600;
/// Longest `state` accepted, in bytes.
pub const MAX_STATE_BYTES: usize = 1024;

/// Every route of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `GET /.well-known/oauth-authorization-server`.
    Metadata,
    /// `GET /oauth/jwks`.
    Jwks,
    /// `GET /oauth/authorize`.
    Authorize,
    /// `POST /oauth/token`.
    Token,
    /// `POST /oauth/register`.
    Register,
    /// `POST /oauth/revoke`.
    Revoke,
    /// `GET /oauth/consent`.
    ConsentView,
    /// `POST /oauth/consent`.
    ConsentAnswer,
    /// `POST /oauth/session`.
    SessionStart,
    /// `GET /oauth/session`.
    SessionView,
    /// `DELETE /oauth/session`.
    SessionEnd,
    /// `GET /oauth/apps`.
    Apps,
    /// `POST /oauth/apps/revoke`.
    AppsRevoke,
    /// `POST /oauth/invites`.
    Invite,
}

/// Path and method of each route.
const ROUTES: &[(&str, &str, Route)] = &[
    ("GET", "/.well-known/oauth-authorization-server", Route::Metadata),
    ("GET", "/oauth/jwks", Route::Jwks),
    ("GET", "/oauth/authorize", Route::Authorize),
    ("POST", "/oauth/token", Route::Token),
    ("POST", "/oauth/register", Route::Register),
    ("POST", "/oauth/revoke", Route::Revoke),
    ("GET", "/oauth/consent", Route::ConsentView),
    ("POST", "/oauth/consent", Route::ConsentAnswer),
    ("POST", "/oauth/session", Route::SessionStart),
    ("GET", "/oauth/session", Route::SessionView),
    ("DELETE", "/oauth/session", Route::SessionEnd),
    ("GET", "/oauth/apps", Route::Apps),
    ("POST", "/oauth/apps/revoke", Route::AppsRevoke),
    ("POST", "/oauth/invites", Route::Invite),
];

impl Route {
    /// The route of `method` and `path`: `Err(true)` when the path exists
    /// with other methods (405), `Err(false)` when it does not (404).
    pub fn of(method: &str, path: &str) -> std::result::Result<Route, bool> {
        let method = if method == "HEAD" { "GET" } else { method };
        ROUTES.iter().find(|(m, p, _)| *m == method && *p == path).map(|r| r.2).ok_or_else(|| ROUTES.iter().any(|(_, p, _)| *p == path))
    }

    /// Whether the route takes a person's bearer token (the editor's calls).
    pub fn needs_person(self) -> bool {
        matches!(self, Route::ConsentView | Route::ConsentAnswer | Route::Apps | Route::AppsRevoke | Route::Invite)
    }
}

/// A request as the server reads it.
#[derive(Debug, Clone, Default)]
pub struct Request<'a> {
    /// The query string (after `?`), raw.
    pub query: &'a str,
    /// The `Cookie` header.
    pub cookie: Option<&'a str>,
    /// The `Content-Type` header.
    pub content_type: Option<&'a str>,
    /// The body.
    pub body: &'a [u8],
}

/// An answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Headers besides the content type.
    pub headers: Vec<(String, String)>,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Body.
    pub body: Vec<u8>,
}

impl Reply {
    fn json(status: u16, body: &Value) -> Reply {
        Reply { status, headers: vec![("cache-control".into(), "no-store".into())], content_type: "application/json", body: body.to_string().into_bytes() }
    }

    fn error(e: &Error) -> Reply {
        let mut r = Reply::json(e.code.status(), &e.body());
        if e.code == Code::InvalidClient {
            r.headers.push(("www-authenticate".into(), "Basic realm=\"cairn\"".into()));
        }
        r
    }

    fn redirect(to: &str) -> Reply {
        Reply {
            status: 302,
            headers: vec![("location".into(), to.into()), ("cache-control".into(), "no-store".into())],
            content_type: "text/plain; charset=utf-8",
            body: Vec::new(),
        }
    }

    /// The error page of an authorization that cannot be sent back to the
    /// client (its client or redirect URI is not known good).
    fn page(e: &Error) -> Reply {
        let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;");
        let html = format!(
            "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>Cannot connect this app</title>\
             <h1>Cannot connect this app</h1><p>{}</p><p><code>{}</code></p>\
             <p>Nothing was shared. Go back to the app and try again, or tell its makers.</p></html>",
            esc(&e.description),
            e.code.as_str()
        );
        let mut r = Reply {
            status: e.code.status(),
            headers: vec![("cache-control".into(), "no-store".into())],
            content_type: "text/html; charset=utf-8",
            body: html.into_bytes(),
        };
        r.headers.push(("content-security-policy".into(), "default-src 'none'; frame-ancestors 'none'".into()));
        r
    }

    /// Whether the answer refuses the caller (counted at the front door).
    pub fn refused(&self) -> bool {
        self.status >= 400 && self.status < 500
    }
}

/// A consent request, sealed while it travels to the editor and back.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Consent {
    c: String,
    n: String,
    b: RegisteredBy,
    r: String,
    s: Option<String>,
    ch: String,
    sc: Vec<String>,
    e: u64,
}

/// The server for one request.
pub struct Server<'a> {
    /// The `default` store.
    pub store: &'a dyn Store,
    /// Settings.
    pub settings: &'a Settings,
    /// The signing key.
    pub key: &'a LocalKey,
    /// Seconds since the epoch.
    pub now: u64,
    /// The host's randomness.
    pub random: &'a dyn Fn() -> u64,
}

/// The `sub` of the agent an app acts as for a person: stable per person and client.
pub fn agent_subject(tenant: &str, person: &str, client_id: &str) -> String {
    let h = Sha256::digest(format!("{tenant}\n{person}\n{client_id}").as_bytes());
    format!("app-{}", cairn_notes::hex(&h[..6]))
}

/// The display name of that agent.
pub fn agent_name(client_name: &str, person_name: &str) -> String {
    let name = format!("{client_name} for {person_name}");
    name.chars().take(120).collect()
}

fn iso(seconds: u64) -> String {
    cairn_notes::rfc3339(seconds.saturating_mul(1_000_000))
}

impl Server<'_> {
    fn clients(&self) -> Sealer {
        Sealer::new(&self.key.seed(), "client-id")
    }

    fn consents(&self) -> Sealer {
        Sealer::new(&self.key.seed(), "consent")
    }

    /// The metadata document `authorize` needs fetched, if its `client_id`
    /// is one (a well-formed `https` URL on a public host, or on the
    /// operator's named origin); the caller fetches it within the limits of
    /// [`clients`] and hands it to [`serve`](Server::serve).
    pub fn document_to_fetch(settings: &Settings, query: &str) -> Option<String> {
        let p = params(query).ok()?;
        let id = p.get("client_id")?;
        (clients::is_document_url(id) && clients::check_document_url(id, settings.metadata_origin.as_deref()).is_ok()).then(|| id.clone())
    }

    /// Whether an `authorize` query is the editor's (its sign-in writes to
    /// the store, so the component charges it).
    pub fn is_editor_sign_in(query: &str) -> bool {
        params(query).is_ok_and(|p| p.get("client_id").is_some_and(|c| c == EDITOR))
    }

    /// Answers `route`. `person` is the verified bearer of routes that
    /// [`need one`](Route::needs_person); `document` the fetched metadata
    /// document (or why it could not be fetched) for `authorize`.
    pub fn serve(&self, route: Route, req: &Request, person: Option<&Principal>, document: Option<std::result::Result<Vec<u8>, String>>) -> Reply {
        let person = || person.ok_or_else(|| Error::new(Code::AccessDenied, "this needs a person's bearer token"));
        let answer = match route {
            Route::Metadata => Ok(Reply::json(200, &self.metadata())),
            Route::Jwks => Ok(Reply::json(200, &self.key.jwks().parse::<Value>().unwrap_or_default())),
            Route::Authorize => return self.authorize(req, document),
            Route::Token => self.token(req),
            Route::Register => self.register(req),
            Route::Revoke => self.revoke(req),
            Route::ConsentView => person().and_then(|p| self.consent_view(req, p)),
            Route::ConsentAnswer => person().and_then(|p| self.consent_answer(req, p)),
            Route::SessionStart => self.session_start(req),
            Route::SessionView => self.session_view(req),
            Route::SessionEnd => self.session_end(req),
            Route::Apps => person().and_then(|p| self.apps(p)),
            Route::AppsRevoke => person().and_then(|p| self.apps_revoke(req, p)),
            Route::Invite => person().and_then(|p| self.invite(req, p)),
        };
        answer.unwrap_or_else(|e| Reply::error(&e))
    }

    /// RFC 8414 metadata.
    pub fn metadata(&self) -> Value {
        let i = &self.settings.issuer;
        json!({
            "issuer": i,
            "authorization_endpoint": format!("{i}/oauth/authorize"),
            "token_endpoint": format!("{i}/oauth/token"),
            "registration_endpoint": format!("{i}/oauth/register"),
            "revocation_endpoint": format!("{i}/oauth/revoke"),
            "jwks_uri": format!("{i}/oauth/jwks"),
            "scopes_supported": AGENT_SCOPES,
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "code_challenge_methods_supported": ["S256"],
            "client_id_metadata_document_supported": true,
            "authorization_response_iss_parameter_supported": true,
            "service_documentation": format!("{i}/"),
        })
    }

    fn resource_ok(&self, asked: Option<&String>) -> Result<()> {
        match asked {
            Some(r) if r.trim_end_matches('/') != self.settings.resource.trim_end_matches('/') => {
                fail(Code::InvalidTarget, format!("resource {r} is not this server's; tokens here are for {} only", self.settings.resource))
            }
            _ => Ok(()),
        }
    }

    fn client(&self, client_id: &str, document: Option<std::result::Result<Vec<u8>, String>>) -> Result<Client> {
        if clients::is_document_url(client_id) {
            clients::check_document_url(client_id, self.settings.metadata_origin.as_deref())?;
            return match document {
                Some(Ok(bytes)) => clients::from_metadata_document(client_id, &bytes),
                Some(Err(why)) => fail(Code::InvalidClient, format!("the metadata document at {client_id} could not be read: {why}")),
                None => fail(Code::InvalidClient, format!("the metadata document at {client_id} was not fetched")),
            };
        }
        clients::known(client_id, &self.clients(), &self.settings.issuer).ok_or_else(|| {
            Error::new(
                Code::InvalidClient,
                format!(
                    "client_id {client_id} is unknown here: register at {}/oauth/register, or use the https URL of a client metadata document",
                    self.settings.issuer
                ),
            )
        })
    }

    fn back(&self, redirect: &str, state: Option<&str>, pairs: &[(&str, &str)]) -> String {
        let mut all: Vec<(&str, &str)> = pairs.to_vec();
        if let Some(s) = state {
            all.push(("state", s));
        }
        all.push(("iss", &self.settings.issuer));
        with_query(redirect, &all)
    }

    fn authorize(&self, req: &Request, document: Option<std::result::Result<Vec<u8>, String>>) -> Reply {
        // Until the client and its redirect URI are known good, errors are a page.
        let known = (|| {
            let p = params(req.query)?;
            let client_id = p.get("client_id").ok_or_else(|| Error::new(Code::InvalidRequest, "client_id is missing"))?;
            let client = self.client(client_id, document)?;
            let redirect = client.redirect(p.get("redirect_uri").map(String::as_str))?;
            Ok::<_, Error>((p, client, redirect))
        })();
        let (p, client, redirect) = match known {
            Ok(k) => k,
            Err(e) => return Reply::page(&e),
        };
        let state = p.get("state").map(String::as_str);
        match self.authorize_known(&p, &client, &redirect, state, people::cookie_value(req.cookie)) {
            Ok(reply) => reply,
            Err(e) if client.redirect_verified(&redirect) => {
                Reply::redirect(&self.back(&redirect, state, &[("error", e.code.as_str()), ("error_description", &e.description)]))
            }
            Err(e) => Reply::page(&e),
        }
    }

    fn authorize_known(
        &self,
        p: &std::collections::BTreeMap<String, String>,
        client: &Client,
        redirect: &str,
        state: Option<&str>,
        cookie: Option<&str>,
    ) -> Result<Reply> {
        if p.get("response_type").map(String::as_str) != Some("code") {
            return fail(Code::UnsupportedResponseType, "response_type must be code");
        }
        if state.is_some_and(|s| s.len() > MAX_STATE_BYTES) {
            return fail(Code::InvalidRequest, format!("state is longer than {MAX_STATE_BYTES} bytes"));
        }
        let challenge = p.get("code_challenge").ok_or_else(|| Error::new(Code::InvalidRequest, "code_challenge is missing: PKCE with S256 is required"))?;
        if p.get("code_challenge_method").map(String::as_str) != Some("S256") {
            return fail(Code::InvalidRequest, "code_challenge_method must be S256 (plain is not accepted)");
        }
        if challenge.len() != 43 || !challenge.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
            return fail(Code::InvalidRequest, "code_challenge must be the base64url SHA-256 of the verifier (43 characters)");
        }
        self.resource_ok(p.get("resource"))?;
        let asked: Vec<&str> = p.get("scope").map(|s| s.split(' ').filter(|s| !s.is_empty()).collect()).unwrap_or_default();
        if client.registered_by == RegisteredBy::Editor {
            let Some(people::SignedIn { person, session }) = people::session(self.store, cookie, self.now)? else {
                return fail(Code::LoginRequired, "nobody is signed in here: open a one-time sign-in link first");
            };
            let new = NewGrant {
                tenant: person.tenant.clone(),
                person: person.sub.clone(),
                client_id: EDITOR.into(),
                client_name: client.name.clone(),
                registered_by: RegisteredBy::Editor,
                scopes: PERSON_SCOPES.iter().map(|s| s.to_string()).collect(),
                actor: Actor::Human,
                role: person.role,
                subject: person.sub.clone(),
                name: person.name.clone(),
            };
            let code = grants::approve_editor(self.store, new, &session, challenge, redirect, self.now, self.settings.idle_seconds, self.random)?;
            return Ok(Reply::redirect(&self.back(redirect, state, &[("code", &code)])));
        }
        let scopes: Vec<String> = if asked.is_empty() {
            AGENT_SCOPES.iter().map(|s| s.to_string()).collect()
        } else {
            AGENT_SCOPES.iter().filter(|s| asked.contains(s)).map(|s| s.to_string()).collect()
        };
        if scopes.is_empty() {
            return fail(Code::InvalidScope, format!("an app may be granted {} only", AGENT_SCOPES.join(" and ")));
        }
        let consent = Consent {
            c: client.id.clone(),
            n: client.name.clone(),
            b: client.registered_by,
            r: redirect.to_string(),
            s: state.map(str::to_string),
            ch: challenge.clone(),
            sc: scopes,
            e: self.now + CONSENT_SECONDS,
        };
        Ok(Reply::redirect(&format!("{}/#/consent/{}", self.settings.issuer, self.consents().seal(&consent))))
    }

    fn open_consent(&self, sealed: Option<&str>) -> Result<Consent> {
        let c: Option<Consent> = sealed.and_then(|s| self.consents().open(s));
        match c {
            Some(c) if c.e > self.now => Ok(c),
            Some(_) => fail(Code::InvalidRequest, "this request to connect an app expired (they last 10 minutes); start again from the app"),
            None => fail(Code::InvalidRequest, "this request to connect an app is not one this server made (altered or cut short); start again from the app"),
        }
    }

    fn consent_view(&self, req: &Request, person: &Principal) -> Result<Reply> {
        only_people(person)?;
        let p = params(req.query)?;
        let c = self.open_consent(p.get("request").map(String::as_str))?;
        let host = wire::url(&c.r).map(|u| if u.host.is_empty() { u.scheme.clone() } else { u.host }).unwrap_or_default();
        let (granted, withheld) = grantable(&c.sc, person);
        let mut view = json!({
            "client_id": c.c, "client_name": c.n, "registered_by": c.b, "redirect_uri": c.r, "redirect_host": host,
            "scopes": granted, "tenant": person.tenant, "agent_name": agent_name(&c.n, &person.name), "expires_at": iso(c.e),
        });
        if !withheld.is_empty() {
            view["withheld"] = json!(withheld);
            view["withheld_reason"] = json!(format!("you do not hold {}, so you cannot grant it to an app", withheld.join(" or ")));
        }
        Ok(Reply::json(200, &view))
    }

    fn consent_answer(&self, req: &Request, person: &Principal) -> Result<Reply> {
        only_people(person)?;
        let body: Value = serde_json::from_slice(req.body)
            .map_err(|_| Error::new(Code::InvalidRequest, "the body must be JSON: {\"request\": …, \"approve\": true|false}"))?;
        let approve = body.get("approve").and_then(Value::as_bool).ok_or_else(|| Error::new(Code::InvalidRequest, "approve must be true or false"))?;
        let c = self.open_consent(body.get("request").and_then(Value::as_str))?;
        let to = if approve {
            let (scopes, withheld) = grantable(&c.sc, person);
            if scopes.is_empty() {
                return fail(
                    Code::InvalidScope,
                    format!("you hold none of the scopes this app asks for ({}), so you cannot grant them; nothing was granted", withheld.join(" ")),
                );
            }
            let new = NewGrant {
                tenant: person.tenant.clone(),
                person: person.subject.clone(),
                client_id: c.c.clone(),
                client_name: c.n.clone(),
                registered_by: c.b,
                scopes,
                actor: Actor::Agent,
                role: Role::Member,
                subject: agent_subject(&person.tenant, &person.subject, &c.c),
                name: agent_name(&c.n, &person.name),
            };
            let code = grants::approve(self.store, new, &c.ch, &c.r, self.now, self.settings.idle_seconds, self.random)?;
            self.back(&c.r, c.s.as_deref(), &[("code", &code)])
        } else {
            self.back(&c.r, c.s.as_deref(), &[("error", "access_denied"), ("error_description", "the person did not allow this app")])
        };
        Ok(Reply::json(200, &json!({"redirect_to": to})))
    }

    fn form(req: &Request) -> Result<std::collections::BTreeMap<String, String>> {
        let ct = req.content_type.unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        if ct != "application/x-www-form-urlencoded" {
            return fail(Code::InvalidRequest, "the body must be application/x-www-form-urlencoded");
        }
        params(std::str::from_utf8(req.body).map_err(|_| Error::new(Code::InvalidRequest, "the body is not UTF-8"))?)
    }

    fn token(&self, req: &Request) -> Result<Reply> {
        let p = Self::form(req)?;
        let need = |name: &str| p.get(name).ok_or_else(|| Error::new(Code::InvalidRequest, format!("{name} is missing")));
        self.resource_ok(p.get("resource"))?;
        let client_id = need("client_id")?;
        let issued = match p.get("grant_type").map(String::as_str) {
            Some("authorization_code") => grants::exchange_code(
                self.store,
                need("code")?,
                client_id,
                p.get("redirect_uri").map(String::as_str),
                need("code_verifier")?,
                self.now,
                self.random,
            )?,
            Some("refresh_token") => {
                let scopes = p.get("scope").map(|s| s.split(' ').filter(|s| !s.is_empty()).map(str::to_string).collect());
                grants::refresh(
                    self.store,
                    &Sealer::new(&self.key.seed(), "refresh"),
                    need("refresh_token")?,
                    client_id,
                    scopes,
                    self.settings.idle_seconds,
                    self.now,
                )?
            }
            Some(other) => return fail(Code::UnsupportedGrantType, format!("grant_type {other} is not offered; use authorization_code or refresh_token")),
            None => return fail(Code::InvalidRequest, "grant_type is missing"),
        };
        Ok(Reply::json(200, &self.tokens(&issued)))
    }

    /// The token answer: a signed access token and the refresh token.
    fn tokens(&self, issued: &Issued) -> Value {
        let g = &issued.grant;
        let scope = issued.scopes.join(" ");
        let claims = json!({
            "iss": self.settings.issuer, "aud": self.settings.resource, "sub": g.subject, "tenant": g.tenant,
            "name": g.name, "actor": g.actor, "role": g.role, "scope": scope, "client_id": g.client_id,
            "grant": format!("{}.{}", g.tenant, g.id), "jti": wire::short_id(self.random),
            "iat": self.now, "nbf": self.now, "exp": self.now + self.settings.access_seconds,
        });
        json!({
            "access_token": self.key.sign(&claims), "token_type": "Bearer", "expires_in": self.settings.access_seconds,
            "refresh_token": issued.refresh_token, "scope": scope,
        })
    }

    fn register(&self, req: &Request) -> Result<Reply> {
        Ok(Reply::json(201, &clients::register(req.body, &self.clients(), self.now)?))
    }

    fn revoke(&self, req: &Request) -> Result<Reply> {
        let p = Self::form(req)?;
        let token = p.get("token").ok_or_else(|| Error::new(Code::InvalidRequest, "token is missing"))?;
        if !grants::revoke_token(self.store, token, self.now)? {
            // An access token: its grant ends (the token itself lasts until it expires).
            let verifier = cairn_auth::jwt::Verifier::from_jwks(&self.key.jwks(), &self.settings.issuer, &self.settings.resource);
            if verifier.is_ok_and(|v| v.verify(token).is_ok()) {
                let grant = token.split('.').nth(1).and_then(wire::unb64).and_then(|b| serde_json::from_slice::<Value>(&b).ok());
                if let Some((tenant, id)) = grant.as_ref().and_then(|c| c.get("grant")?.as_str()?.split_once('.')) {
                    grants::revoke_grant(self.store, tenant, id, self.now)?;
                }
            }
        }
        Ok(Reply::json(200, &json!({})))
    }

    fn cookie(&self, value: &str, max_age: u64) -> (String, String) {
        let secure = if self.settings.issuer.starts_with("https://") { "; Secure" } else { "" };
        ("set-cookie".into(), format!("{COOKIE}={value}; Path=/oauth; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}"))
    }

    fn session_start(&self, req: &Request) -> Result<Reply> {
        let body: Value = serde_json::from_slice(req.body).map_err(|_| Error::new(Code::InvalidRequest, "the body must be JSON: {\"link\": …}"))?;
        let link = body.get("link").and_then(Value::as_str).ok_or_else(|| Error::new(Code::InvalidRequest, "link is missing"))?;
        let started = people::use_link(self.store, link, self.now, self.random)?;
        let p = &started.person;
        let mut r = Reply::json(200, &json!({"tenant": p.tenant, "sub": p.sub, "name": p.name, "role": p.role}));
        r.headers.push(self.cookie(&started.cookie, SESSION_SECONDS));
        Ok(r)
    }

    fn session_view(&self, req: &Request) -> Result<Reply> {
        Ok(Reply::json(
            200,
            &match people::session(self.store, people::cookie_value(req.cookie), self.now)? {
                Some(people::SignedIn { person: p, .. }) => json!({"signed_in": true, "tenant": p.tenant, "sub": p.sub, "name": p.name, "role": p.role}),
                None => json!({"signed_in": false}),
            },
        ))
    }

    fn session_end(&self, req: &Request) -> Result<Reply> {
        people::end_session(self.store, people::cookie_value(req.cookie))?;
        let mut r = Reply::json(204, &json!({}));
        r.body.clear();
        r.headers.push(self.cookie("", 0));
        Ok(r)
    }

    fn apps(&self, person: &Principal) -> Result<Reply> {
        only_people(person)?;
        let mut latest: Vec<grants::Grant> = Vec::new();
        for g in grants::of_person(self.store, &person.tenant, &person.subject)? {
            if g.revoked.is_some() || g.client_id == EDITOR {
                continue;
            }
            match latest.iter_mut().find(|l| l.client_id == g.client_id) {
                Some(l) if l.created <= g.created => *l = g,
                Some(_) => {}
                None => latest.push(g),
            }
        }
        let apps: Vec<Value> = latest
            .iter()
            .map(|g| {
                json!({
                    "client_id": g.client_id, "client_name": g.client_name, "registered_by": g.registered_by, "redirect_uri": g.redirect_uri,
                    "scopes": g.scopes, "agent_name": g.name, "approved_at": iso(g.created),
                    "last_used_at": (g.last_used > g.created).then(|| iso(g.last_used)),
                })
            })
            .collect();
        Ok(Reply::json(200, &json!({"apps": apps})))
    }

    fn apps_revoke(&self, req: &Request, person: &Principal) -> Result<Reply> {
        only_people(person)?;
        let body: Value = serde_json::from_slice(req.body).map_err(|_| Error::new(Code::InvalidRequest, "the body must be JSON: {\"client_id\": …}"))?;
        let client_id = body.get("client_id").and_then(Value::as_str).ok_or_else(|| Error::new(Code::InvalidRequest, "client_id is missing"))?;
        let n = grants::revoke_client(self.store, &person.tenant, &person.subject, client_id, self.now)?;
        Ok(Reply::json(200, &json!({"revoked": n})))
    }

    fn invite(&self, req: &Request, person: &Principal) -> Result<Reply> {
        let body: Value = serde_json::from_slice(req.body)
            .map_err(|_| Error::new(Code::InvalidRequest, "the body must be JSON: {\"name\": …, \"role\": \"member\"|\"admin\"}"))?;
        let name = body.get("name").and_then(Value::as_str).ok_or_else(|| Error::new(Code::InvalidRequest, "name is missing"))?;
        let role = match body.get("role").and_then(Value::as_str).unwrap_or("member") {
            "member" => Role::Member,
            "admin" => Role::Admin,
            other => return fail(Code::InvalidRequest, format!("role must be member or admin, not {other}")),
        };
        let (p, link) = people::invite(self.store, person, name, role, self.now, self.random)?;
        Ok(Reply::json(201, &json!({"link": self.link_url(&link.secret), "expires_at": iso(link.expires), "name": p.name, "role": p.role, "tenant": p.tenant})))
    }

    /// The URL of a one-time sign-in link.
    pub fn link_url(&self, secret: &str) -> String {
        format!("{}/#/sign-in/{}", self.settings.issuer, encode(secret))
    }
}

/// The scopes of `asked` that `person`'s token holds (what they may grant),
/// and those it does not.
fn grantable(asked: &[String], person: &Principal) -> (Vec<String>, Vec<String>) {
    asked.iter().cloned().partition(|s| person.scopes.contains(s))
}

fn only_people(who: &Principal) -> Result<()> {
    if who.actor != Actor::Human {
        return fail(Code::AccessDenied, "only a person signed in to the editor can do this; an agent's token cannot");
    }
    Ok(())
}
