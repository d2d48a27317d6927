//! Clients: who may ask for a code, and where the answer may go.
//!
//! Every client is public (no secret) and uses PKCE. A client is known by
//! one of three ways ([`RegisteredBy`]):
//!
//! - a **Client ID Metadata Document**: the `client_id` is an `https` URL
//!   on a public host ([`check_document_url`], checked before anything is
//!   fetched) whose JSON names that same `client_id`, a `client_name` and
//!   `redirect_uris` ([`from_metadata_document`]; the component fetches it
//!   within [`MAX_DOCUMENT_BYTES`]);
//! - **dynamic registration** (RFC 7591, [`register`]): the `client_id` is
//!   the registration itself, sealed ([`crate::seal`]). Nothing is stored,
//!   so the unauthenticated endpoint leaves nothing behind, and a client
//!   that registers twice just holds two ids for the same thing;
//! - **the editor** ([`EDITOR`]), whose one redirect URI is the issuer's `/`.
//!
//! Redirect URIs ([`check_redirect_uri`]): `https`, `http` on loopback, or
//! an app's own scheme; never a fragment, user info, or a scheme that runs
//! or reads something where it lands. A redirect matches a registered one
//! exactly, except a loopback `http` port (RFC 8252 §7.3) of a URI the
//! client registered; the editor's matches exactly, always.

use crate::error::{Code, Error, Result, fail};
use crate::seal::Sealer;
use crate::wire::{loopback, public_host, url};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The editor's client id.
pub const EDITOR: &str = "cairn-editor";
/// Largest metadata document read, in bytes.
pub const MAX_DOCUMENT_BYTES: usize = 5 * 1024;
/// Most redirect URIs a client may have.
pub const MAX_REDIRECT_URIS: usize = 10;
/// Longest redirect URI or document URL, in bytes.
pub const MAX_URI_BYTES: usize = 512;
/// Longest client name, in characters.
pub const MAX_NAME_CHARS: usize = 100;
/// Prefix of sealed client ids.
const SEALED: &str = "c.";

/// How a client became known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegisteredBy {
    /// Its `client_id` is the URL of its metadata document.
    MetadataDocument,
    /// RFC 7591 dynamic registration.
    Registration,
    /// The people's editor.
    Editor,
}

/// A client as the server knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    /// Its id.
    pub id: String,
    /// The name shown to people.
    pub name: String,
    /// Where codes may go.
    pub redirect_uris: Vec<String>,
    /// How it became known.
    pub registered_by: RegisteredBy,
}

impl Client {
    /// The redirect URI a request names (or the only one registered, when
    /// it names none), if it matches a registered one.
    /// The editor's one redirect URI matches exactly: the loopback-port
    /// exception is for apps that registered a loopback URI, never for the
    /// issuer's own page (else any local program listening on a port would
    /// receive a person's code).
    pub fn redirect(&self, asked: Option<&str>) -> Result<String> {
        let matches = |r: &String, a: &str| if self.registered_by == RegisteredBy::Editor { r == a } else { redirect_matches(r, a) };
        match asked {
            None if self.redirect_uris.len() == 1 => Ok(self.redirect_uris[0].clone()),
            None => fail(Code::InvalidRequest, "redirect_uri is missing, and the client registered more than one"),
            Some(a) if self.redirect_uris.iter().any(|r| matches(r, a)) => Ok(a.to_string()),
            Some(a) => fail(Code::InvalidRequest, format!("redirect_uri {a} is not one this client registered")),
        }
    }

    /// Whether an error may be sent to `redirect` before a person has seen
    /// it: only where someone answerable vouches for it. The editor's is the
    /// issuer's own page; a metadata document's, on the document's own host,
    /// is vouched for by that host. Anyone can register any URI, and a
    /// document may name any host, so those get a page instead of an open
    /// redirect.
    pub fn redirect_verified(&self, redirect: &str) -> bool {
        match self.registered_by {
            RegisteredBy::Editor => true,
            RegisteredBy::Registration => false,
            RegisteredBy::MetadataDocument => match (url(&self.id), url(redirect)) {
                (Some(d), Some(r)) => r.scheme == "https" && r.host == d.host && r.port == d.port,
                _ => false,
            },
        }
    }
}

/// Whether `asked` matches the registered `uri`: the same text, or both
/// `http` on the same loopback host with the same path, any port.
pub fn redirect_matches(uri: &str, asked: &str) -> bool {
    if uri == asked {
        return true;
    }
    match (url(uri), url(asked)) {
        (Some(r), Some(a)) => r.scheme == "http" && a.scheme == "http" && loopback(&r.host) && r.host == a.host && r.rest == a.rest && !a.userinfo,
        _ => false,
    }
}

/// Schemes no redirect may use: they run, read or fetch something where they land.
const REFUSED_SCHEMES: &[&str] = &["javascript", "data", "file", "vbscript", "about", "blob", "ftp", "ws", "wss", "filesystem"];

/// Refuses a redirect URI that cannot be used, naming why.
pub fn check_redirect_uri(uri: &str) -> std::result::Result<(), String> {
    if uri.len() > MAX_URI_BYTES {
        return Err(format!("a redirect URI is longer than {MAX_URI_BYTES} bytes"));
    }
    let Some(u) = url(uri) else { return Err(format!("{uri} is not an absolute URI")) };
    if u.fragment {
        return Err(format!("{uri} has a fragment, which a redirect URI must not have"));
    }
    if u.userinfo {
        return Err(format!("{uri} carries user information"));
    }
    match u.scheme.as_str() {
        "https" if !u.host.is_empty() => Ok(()),
        "http" if loopback(&u.host) => Ok(()),
        "http" => Err(format!("{uri} is plain http to another host; use https (http is for loopback only)")),
        "https" => Err(format!("{uri} has no host")),
        s if REFUSED_SCHEMES.contains(&s) => Err(format!("{uri} uses the {s}: scheme, which no redirect may use")),
        _ => Ok(()),
    }
}

/// What a sealed client id holds.
#[derive(Serialize, Deserialize)]
struct Registered {
    n: String,
    r: Vec<String>,
    t: u64,
}

fn name_of(v: &Value, fallback: &str) -> Result<String> {
    match v.get("client_name") {
        None | Some(Value::Null) => Ok(fallback.to_string()),
        Some(Value::String(s)) if !s.trim().is_empty() && s.chars().count() <= MAX_NAME_CHARS && !s.chars().any(char::is_control) => Ok(s.trim().to_string()),
        Some(_) => fail(Code::InvalidClientMetadata, format!("client_name must be text of 1 to {MAX_NAME_CHARS} characters")),
    }
}

fn redirect_uris_of(v: &Value, code: Code) -> Result<Vec<String>> {
    let Some(list) = v.get("redirect_uris").and_then(Value::as_array) else {
        return fail(code, "redirect_uris is missing: a list of 1 to 10 URIs");
    };
    if list.is_empty() || list.len() > MAX_REDIRECT_URIS {
        return fail(code, format!("redirect_uris has {} URIs; it must have 1 to {MAX_REDIRECT_URIS}", list.len()));
    }
    list.iter()
        .map(|u| {
            let u = u.as_str().ok_or_else(|| Error::new(code, "every redirect URI must be text"))?;
            check_redirect_uri(u).map_err(|why| Error::new(code, why))?;
            Ok(u.to_string())
        })
        .collect()
}

fn check_grant_types(v: &Value) -> Result<()> {
    for (field, allowed) in [("grant_types", &["authorization_code", "refresh_token"][..]), ("response_types", &["code"][..])] {
        if let Some(list) = v.get(field) {
            let ok = list.as_array().is_some_and(|l| l.iter().all(|g| g.as_str().is_some_and(|g| allowed.contains(&g))));
            if !ok {
                return fail(Code::InvalidClientMetadata, format!("{field} may only hold {}", allowed.join(" and ")));
            }
        }
    }
    Ok(())
}

/// RFC 7591 registration: checks the metadata and answers the client's
/// information (201), with the registration sealed as its `client_id`.
/// Every client is public: whatever `token_endpoint_auth_method` it asks
/// for, the answer says `none` (RFC 7591 §3.2.1 lets the server choose).
pub fn register(body: &[u8], sealer: &Sealer, now: u64) -> Result<Value> {
    let v: Value = serde_json::from_slice(body).map_err(|e| Error::new(Code::InvalidClientMetadata, format!("the registration is not a JSON object: {e}")))?;
    if !v.is_object() {
        return fail(Code::InvalidClientMetadata, "the registration must be a JSON object");
    }
    let redirect_uris = redirect_uris_of(&v, Code::InvalidRedirectUri)?;
    check_grant_types(&v)?;
    let name = name_of(&v, "An unnamed app")?;
    let id = format!("{SEALED}{}", sealer.seal(&Registered { n: name.clone(), r: redirect_uris.clone(), t: now }));
    Ok(json!({
        "client_id": id,
        "client_id_issued_at": now,
        "client_name": name,
        "redirect_uris": redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }))
}

/// Whether `client_id` names a metadata document (an `https` URL).
pub fn is_document_url(client_id: &str) -> bool {
    client_id.starts_with("https://")
}

/// Refuses a document URL that cannot be one, before anything is fetched:
/// `https`, a host, a path, no fragment, no user info, at most
/// [`MAX_URI_BYTES`], and a public DNS name or public address
/// ([`public_host`]: never this machine, its network or one of this
/// application's own components, `*.spin.internal`). `named_origin` (the
/// operator's `client_metadata_origin`) is the one origin exempt from the
/// public rule.
pub fn check_document_url(client_id: &str, named_origin: Option<&str>) -> Result<()> {
    let u = url(client_id).filter(|u| u.scheme == "https" && !u.host.is_empty());
    let Some(u) = u else { return fail(Code::InvalidClient, format!("client_id {client_id} is not an https URL")) };
    if client_id.len() > MAX_URI_BYTES || u.fragment || u.userinfo || u.rest.len() < 2 {
        return fail(Code::InvalidClient, format!("client_id {client_id} cannot name a metadata document (it needs a path, and no fragment or user info)"));
    }
    let named = named_origin.and_then(url).is_some_and(|o| o.scheme == u.scheme && o.host == u.host && o.port.unwrap_or(443) == u.port.unwrap_or(443));
    if !named {
        public_host(&u.host)
            .or_else(|why| fail(Code::InvalidClient, format!("client_id {client_id} is not fetched: {why}; a metadata document must live on a public host")))?;
    }
    Ok(())
}

/// The client a fetched metadata document describes, if it is one: JSON
/// within [`MAX_DOCUMENT_BYTES`], naming `url` as its `client_id`, with
/// usable `redirect_uris`, no secret, and `none` as its token endpoint
/// authentication (the only kind this server offers).
pub fn from_metadata_document(url: &str, document: &[u8]) -> Result<Client> {
    if document.len() > MAX_DOCUMENT_BYTES {
        return fail(Code::InvalidClient, format!("the metadata document at {url} is larger than {MAX_DOCUMENT_BYTES} bytes"));
    }
    let v: Value = serde_json::from_slice(document).map_err(|e| Error::new(Code::InvalidClient, format!("the metadata document at {url} is not JSON: {e}")))?;
    if v.get("client_id").and_then(Value::as_str) != Some(url) {
        return fail(Code::InvalidClient, format!("the metadata document at {url} names another client_id ({})", v.get("client_id").unwrap_or(&Value::Null)));
    }
    if v.get("client_secret").is_some() {
        return fail(Code::InvalidClient, format!("the metadata document at {url} holds a client_secret, which a public document must not"));
    }
    if let Some(m) = v.get("token_endpoint_auth_method").and_then(Value::as_str).filter(|m| *m != "none") {
        return fail(
            Code::InvalidClient,
            format!("the metadata document at {url} asks for {m} token endpoint authentication; this server only has public clients (none)"),
        );
    }
    let redirect_uris = redirect_uris_of(&v, Code::InvalidClient)?;
    check_grant_types(&v).map_err(|e| Error::new(Code::InvalidClient, e.description))?;
    let host = crate::wire::url(url).map(|u| u.host).unwrap_or_default();
    let name = name_of(&v, &host).map_err(|e| Error::new(Code::InvalidClient, e.description))?;
    Ok(Client { id: url.to_string(), name, redirect_uris, registered_by: RegisteredBy::MetadataDocument })
}

/// The client a sealed id, or the editor's id, names; `None` for a
/// document URL (fetched by the caller) and for ids nobody issued.
pub fn known(client_id: &str, sealer: &Sealer, issuer: &str) -> Option<Client> {
    if client_id == EDITOR {
        return Some(Client {
            id: EDITOR.into(),
            name: "Cairn's editor".into(),
            redirect_uris: vec![format!("{issuer}/")],
            registered_by: RegisteredBy::Editor,
        });
    }
    let r: Registered = sealer.open(client_id.strip_prefix(SEALED)?)?;
    Some(Client { id: client_id.to_string(), name: r.n, redirect_uris: r.r, registered_by: RegisteredBy::Registration })
}
