//! `release_claim`: end a claim you hold (harmless to repeat).

use serde::Deserialize;
use serde_json::Value;

use super::{ADDS, Call, WRITE_SCOPE};
use crate::args::{parse, parse_claim_id};
use crate::claim_results::Release;
use crate::claims::release;
use crate::refusal::Out;

tool!("release_claim", "Release a claim", WRITE_SCOPE, ADDS);

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(schema_with = "crate::schema::shape::claim_id")]
    claim_id: String,
}

fn description() -> String {
    "Release a claim you hold as soon as your change is written, so others can work. Its claim \
    notes go with it. Releasing again is harmless (already_released: true). Releasing someone else's \
    claim is forbidden: wait until its expires_at or work on another target; never improvise around a \
    claim."
        .into()
}

fn input_schema() -> Value {
    crate::schema::input::<Args>()
}

/// `release_claim`: released now, or already ended (and how).
type Output = Release;

fn run(c: &mut Call, args: Value) -> Out<Output> {
    let a: Args = parse(args)?;
    let r = parse_claim_id(&a.claim_id)?;
    release(c.kv, c.env, c.who, &a.claim_id, &r, false, "release_claim")
}
