//! The notes core's environment inside a component: the host's clock and
//! randomness as [`cairn_notes::Env`], and the verified principal as the
//! core's [`cairn_notes::Identity`].

use cairn_notes::Env;

/// The host's clock and randomness.
pub struct HostEnv;

/// Microseconds since the epoch, from the host's wall clock.
pub fn now_us() -> u64 {
    let now = wasi::clocks::wall_clock::now();
    now.seconds * 1_000_000 + u64::from(now.nanoseconds / 1_000)
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
        cairn_notes::env::Retention::from_variables(crate::variable)
    }
    /// The `quota_notes` and `quota_bytes` variables.
    fn quotas(&self) -> cairn_notes::env::Quotas {
        cairn_notes::env::Quotas::from_variables(crate::variable)
    }
    /// The `read_max_chars` variable.
    fn read_max_chars(&self) -> usize {
        cairn_notes::env::read_max_chars_from_variables(crate::variable)
    }
}

/// The notes core's view of a verified principal.
pub fn identity(p: &cairn_auth::Principal) -> cairn_notes::Identity {
    cairn_notes::Identity {
        tenant: p.tenant.clone(),
        subject: p.subject.clone(),
        display_name: p.name.clone(),
        actor_type: p.actor,
        role: p.role,
    }
}
