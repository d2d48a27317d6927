//! Bindings of Cairn's own WIT (`wit/tools.wit`), generated here once:
//! [`tool_library`], the `cairn:platform/tool` export every tool component
//! implements (through [`crate::tool_component!`]), and [`router_slots`],
//! the router's imports of the tools it is composed with.

/// The export of a tool component.
pub mod tool_library {
    wit_bindgen::generate!({
        path: "../wit",
        world: "cairn:platform/tool-library",
        pub_export_macro: true,
        export_macro_name: "export_tool_library",
        default_bindings_module: "cairn_guest::bindings::tool_library",
    });
}

/// The router's slots: one import per tool component.
pub mod router_slots {
    wit_bindgen::generate!({
        path: "../wit",
        world: "cairn:platform/router-slots",
    });
}

/// Call the tool composed into the router's slot `component` (the tool's
/// component id): `None` when there is no such slot. The tools' ids match
/// `cairn_notes::tools::TOOLS` (a test checks the slot list against it).
pub fn call_slot(component: &str, caller: &str, arguments: &str) -> Option<(u16, String)> {
    use router_slots as s;
    Some(match component {
        "list-notes" => s::list_notes::call(caller, arguments),
        "search-notes" => s::search_notes::call(caller, arguments),
        "list-note-tabs" => s::list_note_tabs::call(caller, arguments),
        "read-note-tab" => s::read_note_tab::call(caller, arguments),
        "read-sheet-range" => s::read_sheet_range::call(caller, arguments),
        "list-note-attachments" => s::list_note_attachments::call(caller, arguments),
        "list-note-history" => s::list_note_history::call(caller, arguments),
        "edit-note-tab" => s::edit_note_tab::call(caller, arguments),
        "create-note-tab" => s::create_note_tab::call(caller, arguments),
        "add-note-source" => s::add_note_source::call(caller, arguments),
        "claim-note" => s::claim_note::call(caller, arguments),
        "renew-claim" => s::renew_claim::call(caller, arguments),
        "release-claim" => s::release_claim::call(caller, arguments),
        "post-claim-note" => s::post_claim_note::call(caller, arguments),
        "list-claims" => s::list_claims::call(caller, arguments),
        _ => return None,
    })
}
