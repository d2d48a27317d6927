//! Line diffs with a bound on what one costs: every diff in Cairn (the
//! rebase check of a patch, a person's three-way merge, the REST diff of
//! two versions) goes through [`lines`].
//!
//! A line diff of two texts that share little is the one computation a
//! single small request can make expensive: Myers' algorithm takes time in
//! the number of lines times the size of the difference, so two unrelated
//! 33,000-line texts take seconds. [`lines`] bounds it twice:
//!
//! - each side has at most [`MAX_DIFF_LINES`] lines (checked before any
//!   diffing, in one pass over the bytes);
//! - the diff runs under a deadline of [`DIFF_DEADLINE`]: `similar` stops
//!   refining when it passes and finishes with a coarse (still correct)
//!   diff, and a diff that reached its deadline is refused as
//!   `too_complex`, never passed off as the minimal diff.
//!
//! So one diff costs at most about [`DIFF_DEADLINE`] of CPU plus a linear
//! pass, and a request runs at most two.

use std::time::{Duration, Instant};

use crate::refusal::{Code, Refusal};

/// Lines each side of a diff may have.
pub const MAX_DIFF_LINES: usize = 50_000;
/// Time one diff may take before it is refused as `too_complex`.
pub const DIFF_DEADLINE: Duration = Duration::from_millis(250);

/// Why a diff is being made, for the refusal's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// A patch's rebase check.
    Rebase,
    /// A person's three-way merge.
    Merge,
    /// The REST diff of two versions.
    Compare,
    /// `read_note_tab`'s `since_version`: what changed since a version.
    CatchUp,
}

impl Purpose {
    fn next_step(self) -> &'static str {
        match self {
            Purpose::Rebase => "read the tab again and write with its current version (no rebase), or send a smaller patch",
            Purpose::Merge => "keep your draft, read the tab again and save over its current version, or merge a smaller part at a time",
            Purpose::Compare => "compare versions closer together, or read both versions whole",
            Purpose::CatchUp => "read the tab again whole, or in parts (read_note_outline, then a section or a window of lines)",
        }
    }
}

/// The line diff of `old` and `new`, or `too_complex` naming the limit it
/// passed and what to do instead.
pub(crate) fn lines<'a>(old: &'a str, new: &'a str, purpose: Purpose) -> Result<similar::TextDiff<'a, 'a, 'a, str>, Refusal> {
    for (side, text) in [("the older text", old), ("the newer text", new)] {
        let n = line_count(text);
        if n > MAX_DIFF_LINES {
            return Err(too_complex(format!("{side} has {n} lines; a diff takes at most {MAX_DIFF_LINES} lines a side"), purpose));
        }
    }
    let deadline = Instant::now() + DIFF_DEADLINE;
    let diff = similar::TextDiff::configure().algorithm(similar::Algorithm::Myers).deadline(deadline).diff_lines(old, new);
    if Instant::now() >= deadline {
        return Err(too_complex(format!("the two texts differ too much to compare within {} ms", DIFF_DEADLINE.as_millis()), purpose));
    }
    Ok(diff)
}

fn too_complex(why: String, purpose: Purpose) -> Refusal {
    Refusal::new(Code::TooComplex, why).with("limit_lines", MAX_DIFF_LINES as u64).with_next_step(purpose.next_step())
}

/// Lines of a text as a line diff counts them.
fn line_count(text: &str) -> usize {
    let newlines = text.bytes().filter(|b| *b == b'\n').count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_over_the_line_limit_is_refused_before_diffing() {
        let big = "x\n".repeat(MAX_DIFF_LINES + 1);
        let r = lines(&big, "x\n", Purpose::Compare).err().expect("refused");
        assert_eq!(r.code, Code::TooComplex);
        assert!(r.message.contains(&MAX_DIFF_LINES.to_string()), "{}", r.message);
        assert!(lines(&"x\n".repeat(MAX_DIFF_LINES), "x\n", Purpose::Compare).is_ok());
    }

    #[test]
    fn two_unrelated_big_texts_are_refused_within_the_deadline() {
        // Distinct lines on both sides: the worst case for Myers.
        let a: String = (0..40_000u64).map(|i| format!("left {i} {}\n", i * 7919 % 10007)).collect();
        let b: String = (0..40_000u64).map(|i| format!("right {i} {}\n", i * 104_729 % 10009)).collect();
        let r = lines(&a, &b, Purpose::Merge).err().expect("refused");
        assert_eq!(r.code, Code::TooComplex);
        assert!(r.message.contains("250 ms"), "{}", r.message);
    }

    #[test]
    fn small_diffs_are_exact() {
        let d = lines("a\nb\nc\n", "a\nB\nc\n", Purpose::Rebase).unwrap();
        let changed: Vec<_> = d.ops().iter().filter(|op| !matches!(op.tag(), similar::DiffTag::Equal)).map(|op| (op.old_range(), op.new_range())).collect();
        assert_eq!(changed, vec![(1..2, 1..2)]);
        assert_eq!(line_count(""), 0);
        assert_eq!(line_count("a"), 1);
        assert_eq!(line_count("a\n"), 1);
    }
}
