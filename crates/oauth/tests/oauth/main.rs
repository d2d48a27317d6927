//! `cairn-oauth`'s rules, natively against the in-memory store: one module
//! per behaviour. The same rules over real HTTP, with real clients, are in
//! `tests/host/own_oauth.rs` and `tests/browser/test_oauth_clients.py`.

mod common;

mod addresses;
mod bounds;
mod clients;
mod codes;
mod consent;
mod editor;
mod people;
mod refresh;
mod swaps_reported_failed;
