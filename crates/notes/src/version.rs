//! Version tokens: the version a read hands back to write against, marked
//! with how much of the tab that read returned.
//!
//! A note's version is a counter (so is a tab's). A read that returned a
//! tab's whole content hands back the plain number, `42`. A read that
//! returned only part of it hands back the token `"42:part"`: a read the
//! character cap cut, a window of lines, a section, the changes since a
//! version, a range of slides, a range of cells, a sheet's list of sheets,
//! an outline. Every write takes either form ([`Version`] parses both).
//!
//! **Invariant: a part token never passes for a whole one.** The only
//! writes that replace what they may not have seen are the whole-tab writes
//! (`replace_text`, `replace_tab_data`, the people's `PUT …/tabs/{tab}`);
//! given a part token they are refused `partial_base` with nothing written
//! (`crate::edit`), whatever the version. Proof that the mark survives
//! every road from a read to a write:
//!
//! 1. a read marks its answer with [`Version::of`] and the [`Extent`] of
//!    what it returned (one function per tool, asserted by the reads' tests
//!    against the text they returned);
//! 2. the token is a string on the wire, and [`Version`]'s parser keeps the
//!    mark: `"42:part"` parses to `Extent::Part`, and no other string parses;
//! 3. a write based on a part token answers with a part token too (a patch
//!    the caller built on part of a tab does not make it whole), and so does
//!    a patch rebased over changes the caller never read: the mark is
//!    carried through every result a later write could be based on.
//!
//! A plain number from a listing (`list_note_tabs`) or a write result still
//! passes: it was never handed out with a part of a tab's text.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Value, json};

/// How much of a tab the read that handed out a version returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Extent {
    /// The tab's whole content (or a read that hands out no content).
    #[default]
    Whole,
    /// Part of it: a whole-tab write based on this version is refused.
    Part,
}

/// A version as a read hands it out and a write takes it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    /// The counter.
    pub number: u64,
    /// What the read returned.
    pub extent: Extent,
}

/// The suffix of a part token.
const PART: &str = ":part";

impl Version {
    /// `number`, handed out with `extent`.
    pub fn of(number: u64, extent: Extent) -> Self {
        Version { number, extent }
    }

    /// A version handed out with a tab's whole content.
    pub fn whole(number: u64) -> Self {
        Version::of(number, Extent::Whole)
    }

    /// Whether the read that handed it out returned only part of the tab.
    pub fn is_part(self) -> bool {
        self.extent == Extent::Part
    }

    /// The wire form: a number, or the string `"<n>:part"`.
    pub fn to_json(self) -> Value {
        match self.extent {
            Extent::Whole => json!(self.number),
            Extent::Part => json!(format!("{}{PART}", self.number)),
        }
    }

    /// Parses the string form: `"<n>:part"` only (a plain number is sent as
    /// a number).
    fn parse_token(s: &str) -> Option<Version> {
        let digits = s.strip_suffix(PART)?;
        if digits.is_empty() || digits.len() > 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok().map(|n| Version::of(n, Extent::Part))
    }
}

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.extent {
            Extent::Whole => s.serialize_u64(self.number),
            Extent::Part => s.serialize_str(&format!("{}{PART}", self.number)),
        }
    }
}

struct VersionVisitor;

impl Visitor<'_> for VersionVisitor {
    type Value = Version;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a version from a read: a whole number, or a \"<n>:part\" token")
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Version, E> {
        Ok(Version::whole(n))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Version, E> {
        u64::try_from(n).map(Version::whole).map_err(|_| E::invalid_value(de::Unexpected::Signed(n), &self))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Version, E> {
        Version::parse_token(s).ok_or_else(|| E::invalid_value(de::Unexpected::Str(s), &self))
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Version, D::Error> {
        d.deserialize_any(VersionVisitor)
    }
}

/// The JSON Schema of a version a write or read takes: a number, or a part token.
pub(crate) fn schema(desc: &str) -> Value {
    json!({
        "anyOf": [
            {"type": "integer", "minimum": 0},
            {"type": "string", "pattern": "^[0-9]{1,20}:part$"},
        ],
        "description": desc,
    })
}

/// The JSON Schema of a version a read hands out.
pub(crate) fn out_schema() -> Value {
    json!({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": "^[0-9]{1,20}:part$"}]})
}
