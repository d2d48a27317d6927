//! Local credentials for one-machine use: the Ed25519 signing key and the
//! identity secret `cairn up` keeps in its state dir, and the variable
//! defaults they fill when the manifest leaves `jwks`, `issuer`, `audience`
//! or `identity_secret` empty.

use anyhow::{Context, Result};
use cairn_auth::mint::{LocalKey, TokenSpec};
use cairn_auth::{Actor, Role};
use std::collections::BTreeMap;
use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;

/// The issuer of tokens signed with the state dir's key: the origin of the
/// resource they are for (`http://127.0.0.1:3000` for
/// `http://127.0.0.1:3000/mcp`), where Cairn's own authorization server
/// publishes its metadata.
pub fn issuer_of(audience: &str) -> String {
    cairn_door::origin::origin_of(audience).to_string()
}

/// 64 bits from the operating system's randomness.
pub fn random_u64() -> u64 {
    u64::from_le_bytes(random_bytes::<8>().expect("/dev/urandom is readable"))
}

fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    let mut buf = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Creates `path` (mode 0600) holding a fresh secret, unless it exists: hosts
/// that share a state dir and start at once all end up reading the same one.
/// The secret is written whole under a name of this process's own and linked
/// into place, so no reader ever sees half of it.
fn create_secret(path: &Path) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if path.exists() {
        return Ok(());
    }
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
    f.write_all(hex(&random_bytes::<32>()?).as_bytes())?;
    f.sync_all()?;
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot create {}", path.display())),
    }
}

/// The state dir's signing key, created on first use.
pub fn signing_key(state_dir: &Path) -> Result<LocalKey> {
    std::fs::create_dir_all(state_dir)?;
    let path = state_dir.join("signing-key");
    create_secret(&path)?;
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    LocalKey::from_hex(&text).with_context(|| format!("{} must hold a 32-byte Ed25519 seed as 64 hex digits", path.display()))
}

/// The state dir's identity secret, created on first use.
pub fn identity_secret(state_dir: &Path) -> Result<String> {
    let path = state_dir.join("identity-secret");
    create_secret(&path)?;
    Ok(std::fs::read_to_string(path)?.trim().to_string())
}

/// The file in a state dir naming the audience its last `cairn up` served.
pub const SERVED_AUDIENCE: &str = "audience";

/// The audience the server of this state dir serves (its last `cairn up`),
/// else the default listener's.
pub fn served_audience(state_dir: &Path) -> String {
    std::fs::read_to_string(state_dir.join(SERVED_AUDIENCE))
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| audience(SocketAddr::from(([127, 0, 0, 1], 3000))))
}

/// The default audience for a listener.
pub fn audience(addr: SocketAddr) -> String {
    format!("http://{addr}/mcp")
}

/// Fill empty auth variables with local defaults. Returns the local key
/// when tokens are to be verified with it, which is also when Cairn is its
/// own authorization server (docs/oauth.md): with no keys and no issuer
/// configured, the state dir's key signs and verifies, the issuer is the
/// origin of the audience, `signing_key` turns the `authz` component on,
/// and the editor signs in as `cairn-editor`.
pub fn fill_defaults(vars: &mut BTreeMap<String, String>, state_dir: &Path, addr: SocketAddr) -> Result<Option<LocalKey>> {
    let mut local = None;
    let empty = |vars: &BTreeMap<String, String>, name: &str| vars.get(name).is_none_or(String::is_empty);
    // The local key, unless the keys come from an issuer (a pasted JWKS, a
    // JWKS URL, or discovery from a configured issuer).
    if vars.contains_key("jwks") && empty(vars, "jwks") && empty(vars, "jwks_url") && empty(vars, "issuer") {
        let key = signing_key(state_dir)?;
        vars.insert("jwks".into(), key.jwks());
        local = Some(key);
    }
    if vars.get("audience").is_some_and(String::is_empty) {
        vars.insert("audience".into(), audience(addr));
    }
    if vars.get("issuer").is_some_and(String::is_empty) {
        let a = vars.get("audience").cloned().unwrap_or_else(|| audience(addr));
        vars.insert("issuer".into(), issuer_of(&a));
    }
    if let Some(key) = &local {
        let issuer = vars.get("issuer").cloned().unwrap_or_default();
        for (name, value) in [("signing_key", key.to_hex()), ("authorization_server", issuer), ("ui_client_id", cairn_oauth::clients::EDITOR.to_string())] {
            if vars.get(name).is_some_and(String::is_empty) {
                vars.insert(name.into(), value);
            }
        }
    }
    // `cairn token` mints for what this state dir's server serves.
    if let Some(a) = vars.get("audience") {
        std::fs::create_dir_all(state_dir)?;
        std::fs::write(state_dir.join(SERVED_AUDIENCE), a).with_context(|| format!("cannot write {}", state_dir.join(SERVED_AUDIENCE).display()))?;
    }
    if vars.get("identity_secret").is_some_and(String::is_empty) {
        vars.insert("identity_secret".into(), identity_secret(state_dir)?);
    }
    Ok(local)
}

/// The manifest's `auth_origin` default: a name that never resolves, for
/// installs whose keys are pasted.
pub const UNSET_AUTH_ORIGIN: &str = "https://issuer.invalid";

/// Shortest `identity_secret` accepted, in bytes.
pub const MIN_IDENTITY_SECRET: usize = 32;

/// Checks and completes what outbound calls need, before anything starts:
///
/// - `auth_origin` (the one origin the router and REST fetch keys and
///   metadata from), when the operator left it unset: the origin of
///   `jwks_url`, else of an `http(s)` `issuer` (discovery). So setting the
///   issuer or the JWKS URL alone works.
/// - Plain `http` reaches keys only on this machine: a derived origin on
///   another host must be `https`, or is refused naming the variable (an
///   operator who means it names it in `auth_origin`).
/// - `identity_secret` is at least [`MIN_IDENTITY_SECRET`] bytes.
///
/// `explicit` says whether the operator set `auth_origin` themselves.
pub fn check_outbound(vars: &mut BTreeMap<String, String>, explicit: bool) -> Result<()> {
    let get = |name: &str| vars.get(name).filter(|v| !v.is_empty()).cloned();
    if let Some(secret) = get("identity_secret")
        && secret.len() < MIN_IDENTITY_SECRET
    {
        anyhow::bail!("the identity_secret variable is {} bytes; it must be at least {MIN_IDENTITY_SECRET} (for example `openssl rand -hex 32`)", secret.len());
    }
    let keys_fetched = get("jwks").is_none();
    let current = get("auth_origin");
    if explicit || !keys_fetched || current.as_deref().is_some_and(|c| c != UNSET_AUTH_ORIGIN) {
        return Ok(());
    }
    let (name, url) = match (get("jwks_url"), get("issuer")) {
        (Some(u), _) => ("jwks_url", u),
        (None, Some(i)) if i.starts_with("http://") || i.starts_with("https://") => ("issuer", i),
        _ => return Ok(()),
    };
    let origin = cairn_door::origin::origin_of(&url).to_string();
    let host = cairn_door::origin::host_of(&origin);
    if origin.starts_with("http://") && !cairn_door::origin::loopback(host) {
        anyhow::bail!(
            "the {name} variable ({url}) is plain http to another host, where anyone on the path could swap the keys: \
             use https, or set the auth_origin variable to {origin} to allow it anyway"
        );
    }
    vars.insert("auth_origin".into(), origin);
    Ok(())
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// A token for an agent of tenant `local`, valid a day.
pub fn starter_token(key: &LocalKey, issuer: &str, audience: &str) -> String {
    local_token(key, issuer, audience, ("local-agent", "Local agent"), Actor::Agent, Role::Member, "notes:read notes:write")
}

fn local_token(key: &LocalKey, issuer: &str, audience: &str, (sub, name): (&str, &str), actor: Actor, role: Role, scope: &str) -> String {
    key.sign(
        &TokenSpec {
            issuer: issuer.into(),
            audience: audience.into(),
            tenant: "local".into(),
            subject: sub.into(),
            name: Some(name.into()),
            actor,
            role,
            scope: scope.into(),
            now: now(),
            ttl: 86_400,
        }
        .claims(),
    )
}
