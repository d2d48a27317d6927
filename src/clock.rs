//! The system clock and randomness, as the notes core's [`Env`] in the host
//! (the claim sweep, and the benchmarks' native baseline).

use cairn_notes::Env;
use cairn_notes::env::{Quotas, Retention};

/// The system clock, a xorshift generator seeded from it, and the history
/// retention and quotas the host was configured with.
pub struct SystemEnv {
    state: u64,
    retention: Retention,
    quotas: Quotas,
}

impl SystemEnv {
    /// Seeded from the clock and `salt`, with the default retention.
    pub fn new(salt: u64) -> Self {
        Self::retaining(salt, Retention::default())
    }

    /// Seeded from the clock and `salt`, keeping history as `retention` says.
    pub fn retaining(salt: u64, retention: Retention) -> Self {
        Self { state: (now_us() ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1, retention, quotas: Quotas::default() }
    }

    /// With this retention instead of the default.
    pub fn with_retention(self, retention: Retention) -> Self {
        Self { retention, ..self }
    }

    /// With these quotas instead of the defaults.
    pub fn with_quotas(self, quotas: Quotas) -> Self {
        Self { quotas, ..self }
    }
}

/// Seconds since the Unix epoch, from the system clock.
pub fn now_s() -> u64 {
    now_us() / 1_000_000
}

/// Microseconds since the Unix epoch, from the system clock.
pub fn now_us() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(1)
}

impl Env for SystemEnv {
    fn now_us(&self) -> u64 {
        now_us()
    }
    fn random_u64(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }
    fn retention(&self) -> Retention {
        self.retention
    }
    fn quotas(&self) -> Quotas {
        self.quotas
    }
}
