//! `post_claim_note`: tell others, on your claim, what you are doing.

use serde::Deserialize;
use serde_json::Value;

use super::{APPENDS, Call, WRITE_SCOPE};
use crate::args::{ClaimRef, MAX_CLAIM_NOTE_CHARS, check_chars, parse, parse_claim_id};
use crate::claim_results::PostedNote;
use crate::claims::{NOTES_PER_CLAIM, post_note};
use crate::refusal::{Out, Refusal};

tool!("post_claim_note", "Post a claim note", WRITE_SCOPE, APPENDS);

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(schema_with = "crate::schema::shape::claim_id")]
    claim_id: String,
    /// What you are doing, for others.
    #[schemars(length(min = 1, max = MAX_CLAIM_NOTE_CHARS))]
    text: String,
}

impl Args {
    fn check(&self) -> Result<ClaimRef, Refusal> {
        let r = parse_claim_id(&self.claim_id)?;
        check_chars("text", &self.text, 1, MAX_CLAIM_NOTE_CHARS)?;
        Ok(r)
    }
}

fn description() -> String {
    format!(
        "Post a short note (at most {MAX_CLAIM_NOTE_CHARS} characters) on a live claim you hold, telling \
         others what you are doing (\"rewriting the intro, hands off for ten minutes\"). Claim notes are \
         ephemeral: they end with the claim and never enter the note's history; the {NOTES_PER_CLAIM} \
         newest are kept. Only the holder may post (forbidden otherwise); on a claim that is no longer live \
         the answer is not_found."
    )
}

fn input_schema() -> Value {
    crate::schema::input::<Args>()
}

/// `post_claim_note`: the note posted on the claim.
type Output = PostedNote;

fn run(c: &mut Call, args: Value) -> Out<Output> {
    let a: Args = parse(args)?;
    let r = a.check()?;
    post_note(c.kv, c.env, c.who, &a.claim_id, &r, &a.text, "post_claim_note")
}
