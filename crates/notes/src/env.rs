//! What the caller injects: the clock and randomness ([`Env`]), and who is calling
//! ([`Identity`]). The core reads no clock and no entropy of its own.

use serde::{Deserialize, Serialize};

/// Time and randomness, supplied by the host.
pub trait Env {
    /// Microseconds since the Unix epoch.
    fn now_us(&self) -> u64;
    /// A fresh random number (used for the random part of new ids).
    fn random_u64(&mut self) -> u64;
    /// How long history stays readable (the host's `history_keep_versions`
    /// and `history_keep_days` variables; by default 1,000 versions and 30 days).
    fn retention(&self) -> Retention {
        Retention::default()
    }
}

/// A note's history stays readable while a version is among the newest
/// `versions` of its note **or** younger than `days`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Versions per note kept whatever their age.
    pub versions: u64,
    /// Days every version is kept whatever the count.
    pub days: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Retention { versions: 1_000, days: 30 }
    }
}

impl Retention {
    /// The retention the `history_keep_versions` and `history_keep_days`
    /// variables ask for, read through `variable` (whole numbers; absent or
    /// not a number: the default). Components and the host read it the same way.
    pub fn from_variables(variable: impl Fn(&str) -> Option<String>) -> Self {
        let d = Retention::default();
        let read = |name: &str, default: u64| variable(name).and_then(|v| v.trim().parse().ok()).unwrap_or(default);
        Retention { versions: read("history_keep_versions", d.versions), days: read("history_keep_days", d.days) }
    }
}

/// Whether the caller is an AI agent or a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActorType {
    /// An AI agent: sees only notes approved for agents.
    Agent,
    /// A person.
    Human,
}

/// The caller's role in its tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// May administer the tenant.
    Admin,
    /// An ordinary member.
    Member,
}

/// Who is calling, as established by the router from a verified token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Tenant id, `[a-z0-9_-]{1,64}`.
    pub tenant: String,
    /// Stable subject id of the caller (at most 200 bytes).
    pub subject: String,
    /// Name shown to others (cut to 100 characters when recorded).
    pub display_name: String,
    /// Agent or human.
    pub actor_type: ActorType,
    /// Admin or member.
    pub role: Role,
}

/// A deterministic [`Env`] for tests and benchmarks: a settable clock and a xorshift
/// generator.
#[derive(Debug, Clone)]
pub struct SimEnv {
    /// The current time in microseconds; tests move it forward.
    pub now_us: u64,
    /// The retention it reports; tests shorten it.
    pub retention: Retention,
    state: u64,
}

impl SimEnv {
    /// Starts at 2026-01-01T00:00:00Z with the given seed.
    pub fn new(seed: u64) -> Self {
        SimEnv {
            now_us: 1_767_225_600_000_000,
            retention: Retention::default(),
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
        }
    }

    /// Moves the clock forward.
    pub fn advance_us(&mut self, us: u64) {
        self.now_us += us;
    }
}

impl Env for SimEnv {
    fn now_us(&self) -> u64 {
        self.now_us
    }

    fn retention(&self) -> Retention {
        self.retention
    }

    fn random_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        x
    }
}
