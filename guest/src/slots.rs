//! The router's side of composition: [`call_slot`] calls the tool composed
//! into the router's slot for it (`wit/tools.wit`, world `router-slots`).
//! The arms are written by `cairn generate` from the core's tool table.

use crate::bindings::{Actor, Answer, Caller, Failure, Role, router_slots};

/// One slot's call, through the slot's own copy of the `tool` types.
macro_rules! slot {
    ($tool:ident) => {{
        use router_slots::$tool as s;
        |c: &Caller, arguments: &str| -> Result<Answer, Failure> {
            let caller = s::Caller {
                tenant: c.tenant.clone(),
                subject: c.subject.clone(),
                name: c.name.clone(),
                actor: match c.actor {
                    Actor::Agent => s::Actor::Agent,
                    Actor::Human => s::Actor::Human,
                },
                role: match c.role {
                    Role::Member => s::Role::Member,
                    Role::Admin => s::Role::Admin,
                },
                scopes: c.scopes.clone(),
                expires: c.expires,
            };
            match s::call(&caller, arguments) {
                Ok(a) => Ok(Answer { json: a.json, refusal: a.refusal }),
                Err(s::Failure::InvalidArguments(m)) => Err(Failure::InvalidArguments(m)),
                Err(s::Failure::Unavailable(m)) => Err(Failure::Unavailable(m)),
                Err(s::Failure::Internal(m)) => Err(Failure::Internal(m)),
            }
        }
    }};
}

/// Calls the tool composed into the router's slot `component` (the tool's
/// component id) as `caller`: `None` when the router has no such slot.
pub fn call_slot(component: &str, caller: &Caller, arguments: &str) -> Option<Result<Answer, Failure>> {
    let call: fn(&Caller, &str) -> Result<Answer, Failure> = match component {
        // BEGIN generated: call-slot
        "list-notes" => slot!(list_notes),
        "search-notes" => slot!(search_notes),
        "list-note-tabs" => slot!(list_note_tabs),
        "read-note-tab" => slot!(read_note_tab),
        "read-note-outline" => slot!(read_note_outline),
        "read-sheet-range" => slot!(read_sheet_range),
        "list-note-attachments" => slot!(list_note_attachments),
        "list-note-history" => slot!(list_note_history),
        "merge-note-tab" => slot!(merge_note_tab),
        "edit-note-tab" => slot!(edit_note_tab),
        "create-note-tab" => slot!(create_note_tab),
        "add-note-source" => slot!(add_note_source),
        "claim-note" => slot!(claim_note),
        "renew-claim" => slot!(renew_claim),
        "release-claim" => slot!(release_claim),
        "post-claim-note" => slot!(post_claim_note),
        "list-claims" => slot!(list_claims),
        // END generated: call-slot
        _ => return None,
    };
    Some(call(caller, arguments))
}
