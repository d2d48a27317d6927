//! The `cairn` commands, one file each: its arguments (clap) and its run.
//! `main.rs` only names them.

pub mod build;
pub mod compat;
pub mod deploy;
pub mod generate;
pub mod reindex;
pub mod token;
pub mod up;
