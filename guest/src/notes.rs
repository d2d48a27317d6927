//! The notes core's environment inside a component: the host's clock and
//! randomness as [`cairn_notes::Env`], and the verified principal as the
//! core's [`cairn_notes::Identity`].

use cairn_notes::Env;

/// The host's clock and randomness.
pub struct HostEnv;

/// Microseconds since the epoch, from the host's system clock.
pub fn now_us() -> u64 {
    let now = spin_sdk::wasip3::clocks::system_clock::now();
    u64::try_from(now.seconds).unwrap_or(0) * 1_000_000 + u64::from(now.nanoseconds / 1_000)
}

impl Env for HostEnv {
    fn now_us(&self) -> u64 {
        now_us()
    }
    fn random_u64(&mut self) -> u64 {
        crate::random_u64()
    }
    /// The `history_keep_versions`, `history_keep_days` and
    /// `history_max_versions` variables.
    fn retention(&self) -> cairn_notes::env::Retention {
        notes().map_or_else(Default::default, cairn_notes::env::Retention::of)
    }
    /// The `quota_notes` and `quota_bytes` variables.
    fn quotas(&self) -> cairn_notes::env::Quotas {
        notes().map_or_else(Default::default, cairn_notes::env::Quotas::of)
    }
    /// The `read_max_chars` variable.
    fn read_max_chars(&self) -> usize {
        notes().map_or(cairn_notes::env::DEFAULT_READ_MAX_CHARS, cairn_notes::env::read_max_chars_of)
    }
}

/// The notes core's settings of this component's configuration. A
/// component whose configuration does not parse answers `misconfigured` at
/// its front door, before the core runs; here it keeps the defaults.
fn notes() -> Option<&'static cairn_config::Notes> {
    crate::config::config().ok().map(|c| &c.notes)
}

/// The notes core's view of a verified principal.
pub fn identity(p: &cairn_auth::Principal) -> cairn_notes::Identity {
    cairn_notes::Identity { tenant: p.tenant.clone(), subject: p.subject.clone(), display_name: p.name.clone(), actor_type: p.actor, role: p.role }
}
