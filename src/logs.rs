//! Log lines on stderr, at the level `CAIRN_LOG` names (`debug`, `info`, `warn`).

/// Install the subscriber (once).
pub fn init() {
    let level = std::env::var("CAIRN_LOG").ok().and_then(|l| l.parse::<tracing::Level>().ok()).unwrap_or(tracing::Level::INFO);
    let _ = tracing_subscriber::fmt().with_max_level(level).with_target(false).with_writer(std::io::stderr).try_init();
}
