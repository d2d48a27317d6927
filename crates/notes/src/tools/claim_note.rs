//! `claim_note`: hold a note or one tab for a while, so nobody else writes it.

use serde::Deserialize;
use serde_json::Value;

use super::{ADDS, Call, ON_CLAIM, WRITE_SCOPE};
use crate::args::{DEFAULT_TTL_SECONDS, MAX_TTL_SECONDS, MIN_TTL_SECONDS, check_id, check_section_id, check_ttl, parse};
use crate::claim_results::ClaimView;
use crate::claims::claim;
use crate::refusal::{Out, Refusal};

tool!("claim_note", "Claim a note or a tab", WRITE_SCOPE, ADDS);

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(schema_with = "crate::schema::shape::note_id")]
    note_id: String,
    /// Exact tab ID from list_note_tabs; leave it out to claim the whole note. The files and sources tabs are claimed with the whole note.
    #[serde(default, deserialize_with = "crate::args::present")]
    #[schemars(schema_with = "crate::schema::shape::id")]
    tab_id: Option<String>,
    /// Optional: claim only this section of the markdown tab tab_id (a section_id from read_note_outline).
    #[serde(default, deserialize_with = "crate::args::present")]
    #[schemars(schema_with = "crate::schema::shape::section_id")]
    section_id: Option<String>,
    /// How long to hold the claim, in seconds (default 600).
    #[serde(default, deserialize_with = "crate::args::present")]
    #[schemars(schema_with = "crate::schema::shape::ttl")]
    ttl_seconds: Option<u64>,
}

impl Args {
    fn check(&self) -> Result<(), Refusal> {
        check_id("note_id", &self.note_id)?;
        if let Some(t) = &self.tab_id {
            check_id("tab_id", t)?;
        }
        check_section_id(self.section_id.as_deref())?;
        check_ttl(self.ttl_seconds)
    }
}

fn description() -> String {
    format!(
        "Announce that you are about to change a note (leave tab_id out: the whole note), one tab \
         (tab_id), or one section of a markdown tab (tab_id and a section_id from read_note_outline), and \
         hold it for ttl_seconds ({MIN_TTL_SECONDS}-{MAX_TTL_SECONDS}, default {DEFAULT_TTL_SECONDS}). While \
         you hold it, other actors' writes to it and their claims on it are refused; a section claim \
         refuses any write that would change the section's lines (people's saves included), and your own \
         writes to that tab must stay inside the section (outside_claim otherwise). A whole-note claim \
         excludes every other claim; a tab claim excludes claims on its sections; claims on two tabs, or \
         on two sections of a tab whose lines do not meet, coexist (one section per tab each). Claiming what you already hold is a heartbeat: the same claim_id comes back with \
         renewed: true and a later expires_at. Returns claim_id, held_by, actor_type, since, expires_at. \
         A claim does not replace versions: your writes still send the expected_version you read. Renew \
         with renew_claim before expires_at while you work, release_claim when done. {ON_CLAIM}"
    )
}

fn input_schema() -> Value {
    crate::schema::input::<Args>()
}

/// `claim_note`: the claim held.
type Output = ClaimView;

fn run(c: &mut Call, args: Value) -> Out<Output> {
    let a: Args = parse(args)?;
    a.check()?;
    Ok(claim(c.kv, c.env, c.who, &a.note_id, a.tab_id.as_deref(), a.section_id.as_deref(), a.ttl_seconds, "claim_note")?.result)
}
