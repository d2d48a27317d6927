//! Log lines on stderr, at the level `CAIRN_LOG` names (`debug`, `info`,
//! `warn`): as text, coloured only when stderr is a terminal (and `NO_COLOR`
//! is unset), or as one JSON object a line (`cairn up --log-format json`,
//! for log collectors).

use std::io::IsTerminal;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object a line.
    Json,
}

/// Install the subscriber (once).
pub fn init(format: Format) {
    let level = std::env::var("CAIRN_LOG").ok().and_then(|l| l.parse::<tracing::Level>().ok()).unwrap_or(tracing::Level::INFO);
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt().with_max_level(level).with_target(false).with_writer(std::io::stderr);
    let _ = match format {
        Format::Text => builder.with_ansi(colour).try_init(),
        Format::Json => builder.json().with_ansi(false).try_init(),
    };
}
