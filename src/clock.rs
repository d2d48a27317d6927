//! The system clock and randomness, as the notes core's [`Env`] in the host
//! (the claim sweep, and the benchmarks' native baseline).

use cairn_notes::Env;

/// The system clock and a xorshift generator seeded from it.
pub struct SystemEnv(u64);

impl SystemEnv {
    /// Seeded from the clock and `salt`.
    pub fn new(salt: u64) -> Self {
        Self((now_us() ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1)
    }
}

/// Microseconds since the epoch.
pub fn now_us() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(1)
}

impl Env for SystemEnv {
    fn now_us(&self) -> u64 {
        now_us()
    }
    fn random_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}
