//! Cairn's configuration inside a component ([`cairn_config::Config`]):
//! read once per instance, the first time a request asks for it, from the
//! variables this component is given; every later request of the instance
//! uses what was read. A variable that does not parse is answered 500
//! `misconfigured`, naming the variable and what it expected (the embedded
//! host refuses to start with one; another host lets the component say so).

use cairn_config::{Config, Error, Reader};
use std::sync::OnceLock;

static CONFIG: OnceLock<Result<Config, Error>> = OnceLock::new();
static READER: OnceLock<Reader> = OnceLock::new();
static TOOL_NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();

/// Names the component this code runs as (its entry point does, before
/// anything reads the configuration): which variables it is given.
pub fn run_as(reader: Reader) {
    let _ = READER.set(reader);
}

/// [`run_as`] the router, which also reads each tool's own variables: the
/// tool table's names are read here, in the router's entry alone. (A tool
/// component that named the table would link every tool's code through its
/// `TOOL` entries: each tool component links only its own.)
pub fn run_as_router() {
    run_as(Reader::Router);
    TOOL_NAMES.get_or_init(|| cairn_notes::tools::TOOLS.iter().map(|t| t.name).collect());
}

/// The configuration of this component: the variables its reader reads
/// come from the host, the others keep the table's default (a component is
/// given only the variables it reads, so asking for the rest would be a
/// wasted host call). Read on the first call of the instance.
pub fn config() -> Result<&'static Config, &'static Error> {
    let reader = *READER.get_or_init(|| Reader::Router);
    CONFIG
        .get_or_init(|| {
            let tools = TOOL_NAMES.get().map(Vec::as_slice).unwrap_or_default();
            Config::read_as(reader, &crate::variable, tools)
        })
        .as_ref()
}

/// The answer of a component whose configuration cannot be read.
pub fn misconfigured(e: &Error) -> crate::http::Response {
    crate::respond::error(500, "misconfigured", &e.to_string())
}
