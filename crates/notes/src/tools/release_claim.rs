//! `release_claim`: end a claim you hold (harmless to repeat).

use serde::Deserialize;
use serde_json::{Value, json};

use super::{ADDS, Call, WRITE_SCOPE};
use crate::args::{parse, parse_claim_id};
use crate::claims::release;
use crate::refusal::Out;

tool!(untyped "release_claim", "Release a claim", WRITE_SCOPE, ADDS);

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

/// `release_claim`: released now, or already ended (and why).
fn output_schema() -> Value {
    use crate::schema::*;
    output_of(result(
        &["claim_id", "note_id", "released", "already_released", "reason"],
        json!({
            "claim_id": text(), "note_id": text(), "tab_id": nullable(text()), "released": flag(),
            "already_released": flag(), "reason": nullable(text()), "ended_at": nullable(timestamp()),
            "held_by": text(), "actor_type": {"type": "string", "enum": ["agent", "human"]},
            "forced": flag(), "forced_by": text(),
        }),
    ))
}

fn run(c: &mut Call, args: Value) -> Out<Value> {
    let a: Args = parse(args)?;
    let r = parse_claim_id(&a.claim_id)?;
    release(c.kv, c.env, c.who, &a.claim_id, &r, false, "release_claim")
}
