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
    /// What one tenant may store (the host's `quota_notes` and
    /// `quota_bytes` variables).
    fn quotas(&self) -> Quotas {
        Quotas::default()
    }
    /// The most characters one read returns when the caller does not ask for
    /// more (the host's `read_max_chars` variable; by default
    /// [`DEFAULT_READ_MAX_CHARS`]).
    fn read_max_chars(&self) -> usize {
        DEFAULT_READ_MAX_CHARS
    }
}

/// The default cap on the text of one read: about 6,000 tokens.
pub const DEFAULT_READ_MAX_CHARS: usize = 24_000;
/// The most a caller (or the `read_max_chars` variable) may raise a read's
/// cap to: a markdown tab's limit, so one read can always hold a whole tab.
pub const MAX_READ_CHARS: usize = 1_000_000;

/// The read cap of Cairn's configuration (`read_max_chars`, checked to be
/// within 1,000 and [`MAX_READ_CHARS`] when it was read).
pub fn read_max_chars_of(notes: &cairn_config::Notes) -> usize {
    usize::try_from(notes.read_max_chars).unwrap_or(MAX_READ_CHARS).clamp(1_000, MAX_READ_CHARS)
}

/// A note's history stays readable while a version is among the newest
/// `versions` of its note **or** younger than `days`, and in any case among
/// the newest `max_versions` (so a note's history is bounded however fast
/// it is written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Versions per note kept whatever their age.
    pub versions: u64,
    /// Days every version is kept, up to `max_versions`.
    pub days: u64,
    /// Versions per note kept at most, whatever their age.
    pub max_versions: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Retention { versions: 1_000, days: 30, max_versions: 10_000 }
    }
}

impl Retention {
    /// The retention of Cairn's configuration (`history_keep_versions`,
    /// `history_keep_days`, `history_max_versions`): components and the host
    /// read it the same way.
    pub fn of(notes: &cairn_config::Notes) -> Self {
        let max_versions = notes.history_max_versions.max(1);
        Retention { versions: notes.history_keep_versions.min(max_versions), days: notes.history_keep_days, max_versions }
    }
}

/// What one tenant may store. A write that would pass a quota is refused
/// `quota_exceeded`, naming the quota and the figure, and nothing is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quotas {
    /// Notes (`quota_notes`).
    pub notes: u64,
    /// Bytes of content, every retained version counted (`quota_bytes`),
    /// charged exactly as writes land ([`crate::quota`]).
    pub bytes: u64,
}

impl Default for Quotas {
    fn default() -> Self {
        Quotas { notes: 10_000, bytes: 1 << 30 }
    }
}

impl Quotas {
    /// The quotas of Cairn's configuration (`quota_notes`, `quota_bytes`).
    pub fn of(notes: &cairn_config::Notes) -> Self {
        Quotas { notes: notes.quota_notes, bytes: notes.quota_bytes }
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
    /// The quotas it reports; tests lower them.
    pub quotas: Quotas,
    /// What [`Env::read_max_chars`] answers.
    pub read_max_chars: usize,
    state: u64,
}

impl SimEnv {
    /// Starts at 2026-01-01T00:00:00Z with the given seed.
    pub fn new(seed: u64) -> Self {
        SimEnv {
            now_us: 1_767_225_600_000_000,
            retention: Retention::default(),
            quotas: Quotas::default(),
            read_max_chars: DEFAULT_READ_MAX_CHARS,
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

    fn quotas(&self) -> Quotas {
        self.quotas
    }

    fn read_max_chars(&self) -> usize {
        self.read_max_chars
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

#[cfg(test)]
mod defaults {
    use super::*;

    #[test]
    fn the_cores_defaults_are_the_variables_tables() {
        let notes = cairn_config::Config::defaults().notes;
        assert_eq!(Retention::of(&notes), Retention::default());
        assert_eq!(Quotas::of(&notes), Quotas::default());
        assert_eq!(read_max_chars_of(&notes), DEFAULT_READ_MAX_CHARS);
    }
}
