//! The bytes the index's records share: LEB128 varints, and a [`Reader`]
//! that takes a record apart front to back and calls anything malformed a
//! corrupt store, never a guess.

use crate::refusal::Failure;

/// Appends `n` as a LEB128 varint (seven bits a byte, low bits first).
pub(crate) fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// A record being read; `what` names it in the error.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    /// The next byte to read.
    pub at: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Reader { bytes, at: 0, what }
    }

    /// The error for this record.
    pub(crate) fn bad(&self) -> Failure {
        Failure::Corrupt(format!("{} is malformed", self.what))
    }

    /// Whether every byte has been read.
    pub(crate) fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    #[inline]
    pub(crate) fn byte(&mut self) -> Result<u8, Failure> {
        let b = *self.bytes.get(self.at).ok_or_else(|| self.bad())?;
        self.at += 1;
        Ok(b)
    }

    /// The next `n` bytes.
    #[inline]
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], Failure> {
        let end = self.at.checked_add(n).ok_or_else(|| self.bad())?;
        let s = self.bytes.get(self.at..end).ok_or_else(|| self.bad())?;
        self.at = end;
        Ok(s)
    }

    /// The next `n` bytes as UTF-8.
    #[inline]
    pub(crate) fn str(&mut self, n: usize) -> Result<&'a str, Failure> {
        let s = self.take(n)?;
        std::str::from_utf8(s).map_err(|_| self.bad())
    }

    #[inline]
    pub(crate) fn varint(&mut self) -> Result<u64, Failure> {
        let (mut n, mut shift) = (0u64, 0);
        loop {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(n);
            }
            shift += 7;
            if shift > 63 {
                return Err(self.bad());
            }
        }
    }
}
