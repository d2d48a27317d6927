//! Redis Cluster's hash slots: which of the 16384 slots a key lives in.
//!
//! The slot of a key is CRC16 (XMODEM: polynomial 0x1021, initial value 0)
//! of the key, modulo 16384, except that a key with a *hash tag* (the bytes
//! between its first `{` and the first `}` after it, when there is at least
//! one byte between them) is hashed by the tag alone. This is the rule the
//! server applies (`CLUSTER KEYSLOT`); the tests check both against each
//! other on a real server. Every Redis key of one Cairn tenant carries the
//! tenant's tag ([`crate::Layout`]), so all of them share one slot.

/// How many hash slots a Redis Cluster has.
pub const SLOTS: usize = 16384;

/// CRC16-XMODEM, bit by bit (keys are short; no table needed).
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc
}

/// The part of `key` that is hashed: its hash tag if it has a non-empty
/// one, else the whole key.
fn hashed(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{')
        && let Some(len) = key[open + 1..].iter().position(|&b| b == b'}')
        && len > 0
    {
        return &key[open + 1..open + 1 + len];
    }
    key
}

/// The hash slot of a Redis key.
pub fn slot_of(key: &[u8]) -> u16 {
    let slot = crc16(hashed(key)) % SLOTS as u16;
    assert!((slot as usize) < SLOTS);
    slot
}

/// The one slot all of `keys` share, or `Err` with two that differ: a
/// script on a cluster may only name keys of one slot.
pub fn one_slot<'k>(keys: impl IntoIterator<Item = &'k [u8]>) -> Result<Option<u16>, (u16, u16)> {
    let mut found = None;
    for k in keys {
        let s = slot_of(k);
        match found {
            None => found = Some(s),
            Some(f) if f != s => return Err((f, s)),
            Some(_) => {}
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_vector_of_crc16_xmodem() {
        // The check value of CRC-16/XMODEM, and the example of the Redis Cluster specification.
        assert_eq!(crc16(b"123456789"), 0x31c3);
    }

    #[test]
    fn a_hash_tag_decides_the_slot_and_an_empty_one_does_not() {
        assert_eq!(slot_of(b"a:{t/acme}:r:1"), slot_of(b"t/acme"));
        assert_eq!(slot_of(b"x{t/acme}y{other}"), slot_of(b"t/acme"));
        assert_eq!(slot_of(b"a{}b"), crc16(b"a{}b") % 16384);
        assert_eq!(slot_of(b"a{b"), crc16(b"a{b") % 16384);
        assert_eq!(slot_of(b"{}{x}"), crc16(b"{}{x}") % 16384);
    }

    #[test]
    fn one_slot_names_two_that_differ() {
        let same: [&[u8]; 2] = [b"n:{t/a}:seq", b"n:{t/a}:r:1:x"];
        assert_eq!(one_slot(same), Ok(Some(slot_of(b"t/a"))));
        let mixed: [&[u8]; 2] = [b"n:{t/a}:seq", b"n:{t/b}:seq"];
        assert_eq!(one_slot(mixed), Err((slot_of(b"t/a"), slot_of(b"t/b"))));
        assert_eq!(one_slot(std::iter::empty::<&[u8]>()), Ok(None));
    }
}
