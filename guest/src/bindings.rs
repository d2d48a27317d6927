//! Bindings of Cairn's own WIT (`wit/`), generated here once, with the
//! `wit-bindgen` `spin-sdk` uses:
//!
//! - [`imports`]: what a component imports beyond WASI (world
//!   `cairn:platform/guest`): `wasi:keyvalue` (store, atomics, batch) and
//!   Spin's variables;
//! - [`tool_library`]: the `cairn:platform/tool` export every tool component
//!   implements (through [`crate::tool_component!`]);
//! - [`router_slots`]: the router's imports of the tools it is composed with
//!   (called through [`crate::slots::call_slot`]).

/// The host's interfaces: `wasi:keyvalue` and Spin's variables.
pub mod imports {
    spin_sdk::wit_bindgen::generate!({
        runtime_path: "spin_sdk::wit_bindgen::rt",
        path: "../wit",
        world: "cairn:platform/guest",
        generate_all,
    });
}

/// The export of a tool component.
pub mod tool_library {
    spin_sdk::wit_bindgen::generate!({
        runtime_path: "spin_sdk::wit_bindgen::rt",
        path: "../wit",
        world: "cairn:platform/tool-library",
        pub_export_macro: true,
        export_macro_name: "export_tool_library",
        default_bindings_module: "cairn_guest::bindings::tool_library",
    });
}

/// The router's slots: one import per tool component.
pub mod router_slots {
    spin_sdk::wit_bindgen::generate!({
        runtime_path: "spin_sdk::wit_bindgen::rt",
        path: "../wit",
        world: "cairn:platform/router-slots",
    });
}

/// The types of `cairn:platform/tool`, the one currency of a tool call on
/// either side of a slot.
pub use tool_library::exports::cairn::platform::tool::{Actor, Answer, Caller, Failure, Role};

impl Caller {
    /// The caller a verified principal is.
    pub fn of(p: &cairn_auth::Principal) -> Caller {
        Caller {
            tenant: p.tenant.clone(),
            subject: p.subject.clone(),
            name: p.name.clone(),
            actor: match p.actor {
                cairn_auth::Actor::Agent => Actor::Agent,
                cairn_auth::Actor::Human => Actor::Human,
            },
            role: match p.role {
                cairn_auth::Role::Member => Role::Member,
                cairn_auth::Role::Admin => Role::Admin,
            },
            scopes: p.scopes.clone(),
            expires: p.exp,
        }
    }

    /// The principal this caller is.
    pub fn principal(self) -> cairn_auth::Principal {
        cairn_auth::Principal {
            tenant: self.tenant,
            subject: self.subject,
            name: self.name,
            actor: match self.actor {
                Actor::Agent => cairn_auth::Actor::Agent,
                Actor::Human => cairn_auth::Actor::Human,
            },
            role: match self.role {
                Role::Member => cairn_auth::Role::Member,
                Role::Admin => cairn_auth::Role::Admin,
            },
            scopes: self.scopes,
            exp: self.expires,
        }
    }
}
