//! `renew_claim`: the heartbeat that keeps a claim live.

use serde::Deserialize;
use serde_json::Value;

use super::{ADDS, Call, WRITE_SCOPE};
use crate::args::{ClaimRef, check_ttl, parse, parse_claim_id};
use crate::claim_results::ClaimView;
use crate::claims::renew;
use crate::refusal::{Out, Refusal};

tool!("renew_claim", "Renew a claim", WRITE_SCOPE, ADDS);

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(schema_with = "crate::schema::shape::claim_id")]
    claim_id: String,
    /// New ttl from now, in seconds (default: the claim's own ttl).
    #[serde(default, deserialize_with = "crate::args::present")]
    #[schemars(schema_with = "crate::schema::shape::ttl")]
    ttl_seconds: Option<u64>,
}

impl Args {
    fn check(&self) -> Result<ClaimRef, Refusal> {
        let r = parse_claim_id(&self.claim_id)?;
        check_ttl(self.ttl_seconds)?;
        Ok(r)
    }
}

fn description() -> String {
    "Heartbeat: extend a live claim you hold to now + ttl_seconds (default: the claim's own ttl). \
    A claim that was released or has expired cannot be renewed (not_found): claim the target again and \
    read it before writing, since someone may have written meanwhile. Renewing someone else's claim is \
    forbidden: wait until its expires_at or work on another target; never improvise around a claim."
        .into()
}

fn input_schema() -> Value {
    crate::schema::input::<Args>()
}

/// `renew_claim`: the claim with its new expiry.
type Output = ClaimView;

fn run(c: &mut Call, args: Value) -> Out<Output> {
    let a: Args = parse(args)?;
    let r = a.check()?;
    renew(c.kv, c.env, c.who, &a.claim_id, &r, a.ttl_seconds, "renew_claim")
}
