//! `cairn-config`: Cairn's one configuration. Every application variable
//! Cairn reads is named once, in [`VARIABLES`]: its default, whether it is a
//! secret, what it accepts ([`Kind`]), what it is for, and which components
//! read it. Everything else is derived:
//!
//! - [`Config::read`] parses every variable once into typed values (a value
//!   that does not parse is an [`Error`] naming the variable and what it
//!   expected): the embedded host checks the application's variables with it
//!   before it serves, and a component reads it once per instance;
//! - the `[variables]` table of `spin.toml` and each component's variables
//!   are generated from the table (`cairn generate`, `src/wiring.rs`), so a
//!   component is handed exactly the variables its code reads.
//!
//! Pure Rust with no dependencies: it compiles for `wasm32-wasip2`.
//!
//! Module map: [`table`] (the table and the kinds), [`typed`] (the typed
//! configuration and its parser).

#![warn(missing_docs)]

pub mod table;
pub mod typed;

pub use table::{Kind, RENAMED, Reader, VARIABLES, Var, variable};
pub use typed::{Auth, Claims, Config, Door, Error, Feed, Notes, OAuth, Operators, ToolTransport, Tools};
