//! `cairn token`: mint a bearer token with the local signing key of a state dir.

use anyhow::Result;
use std::path::PathBuf;

/// Agent or human.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ActorArg {
    /// An AI agent.
    Agent,
    /// A person.
    Human,
}

/// The caller's role.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum RoleArg {
    /// May administer the tenant (people only).
    Admin,
    /// An ordinary member.
    Member,
}

/// Arguments of `cairn token`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Tenant the caller belongs to.
    #[arg(long)]
    pub tenant: String,
    /// Subject (stable id of the caller).
    #[arg(long)]
    pub sub: String,
    /// Display name shown to others.
    #[arg(long)]
    pub name: Option<String>,
    /// Agent or human.
    #[arg(long, value_enum, default_value = "agent")]
    pub actor: ActorArg,
    /// Role (admin only takes effect for humans).
    #[arg(long, value_enum, default_value = "member")]
    pub role: RoleArg,
    /// Space-separated scopes.
    #[arg(long, default_value = "notes:read notes:write")]
    pub scope: String,
    /// Lifetime in seconds.
    #[arg(long, default_value_t = 3600)]
    pub ttl: u64,
    /// The audience: the MCP URL the token is for (default: what the last
    /// `cairn up` with this state dir serves, else http://127.0.0.1:3000/mcp).
    #[arg(long)]
    pub audience: Option<String>,
    /// The issuer the server expects (default: the origin of the audience,
    /// as `cairn up` sets it when it uses the state dir's key).
    #[arg(long)]
    pub issuer: Option<String>,
    /// State dir holding the signing key.
    #[arg(long, default_value = ".cairn")]
    pub state_dir: PathBuf,
}

/// Print a signed token.
pub fn run(a: Args) -> Result<()> {
    let key = crate::local::signing_key(&a.state_dir)?;
    let audience = a.audience.unwrap_or_else(|| crate::local::served_audience(&a.state_dir));
    let spec = cairn_auth::mint::TokenSpec {
        issuer: a.issuer.unwrap_or_else(|| crate::local::issuer_of(&audience)),
        audience,
        tenant: a.tenant,
        subject: a.sub,
        name: a.name,
        actor: match a.actor {
            ActorArg::Agent => cairn_auth::Actor::Agent,
            ActorArg::Human => cairn_auth::Actor::Human,
        },
        role: match a.role {
            RoleArg::Admin => cairn_auth::Role::Admin,
            RoleArg::Member => cairn_auth::Role::Member,
        },
        scope: a.scope,
        now: crate::local::now(),
        ttl: a.ttl,
    };
    println!("{}", key.sign(&spec.claims()));
    Ok(())
}
