//! Three-way merge of texts by lines, for a person whose draft is based on
//! an older version: `base` (what the draft started from), `theirs` (the
//! text now) and `mine` (the draft).
//!
//! Each side's changes against `base` are ranges of base lines replaced by
//! new lines (the `similar` crate's line diff). Changes of the two sides
//! that overlap or touch (one ends where the other starts, or both insert
//! at the same line) form one region; a region changed by one side only
//! takes that side's lines, a region both sides changed the same way takes
//! those lines, and any other region is a conflict. The merged text keeps
//! `theirs` in a conflict, so a merge never drops what is stored; the
//! conflict lists all three versions of the region for the person to
//! decide.
//!
//! `segments` lays the merge out in order for an editor: the concatenation
//! of every segment's `text` is `merged`, each segment says where its lines
//! come from (`unchanged`, `theirs`, `mine`, `both` or `conflict`), and a
//! conflict segment also carries `base`, `theirs`, `mine` and its index in
//! `conflicts`, so a person's choice replaces exactly that segment's text.

use schemars::JsonSchema;
use serde::Serialize;

use crate::refusal::Refusal;

/// A three-way merge of a proposal with the text now.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct Merge {
    /// The merged text; in a conflict it keeps the stored text (theirs).
    pub merged: String,
    /// true when nothing conflicts.
    pub clean: bool,
    /// The conflicts, in text order.
    pub conflicts: Vec<Conflict>,
    /// The merge laid out in order: their texts joined are merged.
    pub segments: Vec<Segment>,
}

/// A region both sides changed, differently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct Conflict {
    /// The region's first line in the base text, 1-based.
    pub base_start: usize,
    /// The region as the base text had it.
    pub base: String,
    /// The region as it is stored now.
    pub theirs: String,
    /// The region as the proposal has it.
    pub mine: String,
}

/// Where a segment's lines come from (the published schema lists the
/// names; the field's description says what each means).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Source {
    // Neither side changed them.
    Unchanged,
    // Only the stored text changed them.
    Theirs,
    // Only the proposal changed them.
    Mine,
    // Both sides changed them the same way.
    Both,
    // Both sides changed them differently.
    Conflict,
}

/// One run of the merged text, from one source.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct Segment {
    /// Where its lines come from: unchanged (neither side changed them), theirs (only the stored text), mine (only the proposal), both (both sides, the same way) or conflict (both sides, differently).
    pub source: Source,
    /// Its text in merged (for a conflict: theirs).
    pub text: String,
    /// A conflict's three versions of the region.
    #[serde(flatten)]
    pub region: Option<Conflict>,
    /// A conflict's index in conflicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "usize")]
    pub conflict: Option<usize>,
}

/// One side's change: base lines `start..end` become `lines`.
struct Change<'a> {
    start: usize,
    end: usize,
    lines: Vec<&'a str>,
}

fn changes<'a>(base: &'a str, other: &'a str) -> Result<Vec<Change<'a>>, Refusal> {
    let diff = crate::diff::lines(base, other, crate::diff::Purpose::Merge)?;
    let new: Vec<&str> = diff.new_slices().to_vec();
    Ok(line_changes(diff.ops()).into_iter().map(|(old, n)| Change { start: old.start, end: old.end, lines: new[n].to_vec() }).collect())
}

/// The changed ranges of a line diff, `(old lines, new lines)` in order.
///
/// Positions come from walking the ops and adding up their lengths, not from
/// the indices the ops carry: `similar` 2.7's Myers diff can anchor a
/// deletion or an insertion at the wrong index (a fuzz test found
/// `Delete { old_index: 0, old_len: 2, new_index: 3 }` followed by
/// `Insert { old_index: 1, … }` after an `Equal` at old index 2), while the
/// order and the lengths of its ops are right.
pub(crate) fn line_changes(ops: &[similar::DiffOp]) -> Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    let (mut o, mut n) = (0, 0);
    let mut out = Vec::new();
    for op in ops {
        let (tag, old, new) = op.as_tag_tuple();
        let (ol, nl) = (old.len(), new.len());
        if tag != similar::DiffTag::Equal {
            out.push((o..o + ol, n..n + nl));
        }
        o += ol;
        n += nl;
    }
    out
}

/// Base lines `from..to` with one side's changes inside that range applied.
fn side<'a>(base: &[&'a str], from: usize, to: usize, mine: &[&Change<'a>]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut pos = from;
    for c in mine {
        out.extend_from_slice(&base[pos..c.start]);
        out.extend_from_slice(&c.lines);
        pos = c.end;
    }
    out.extend_from_slice(&base[pos..to]);
    out
}

/// Appends lines to the segment list, joining a run from the same source.
fn push(segments: &mut Vec<Segment>, source: Source, lines: &[&str]) {
    if lines.is_empty() {
        return;
    }
    let text = lines.concat();
    if let Some(last) = segments.last_mut()
        && last.source == source
        && source != Source::Conflict
    {
        last.text.push_str(&text);
        return;
    }
    segments.push(Segment { source, text, region: None, conflict: None });
}

/// The merge of `mine` and `theirs` over `base`, as JSON (`{merged, clean,
/// conflicts: [{base_start, base, theirs, mine}], segments}`).
#[cfg(test)]
pub(crate) fn merge3(base: &str, theirs: &str, mine: &str) -> Result<serde_json::Value, Refusal> {
    merge(base, theirs, mine).map(|m| serde_json::to_value(m).expect("a merge serializes"))
}

/// The merge of `mine` and `theirs` over `base` (see the module docs).
/// Texts whose diffs pass the bounds of [`crate::diff::lines`] are refused
/// `too_complex`.
pub(crate) fn merge(base: &str, theirs: &str, mine: &str) -> Result<Merge, Refusal> {
    let b: Vec<&str> = similar::TextDiff::from_lines(base, base).old_slices().to_vec();
    let (t, m) = (changes(base, theirs)?, changes(base, mine)?);
    // Every change, tagged with its side (0 theirs, 1 mine), in base order.
    let mut all: Vec<(usize, &Change)> = t.iter().map(|c| (0, c)).chain(m.iter().map(|c| (1, c))).collect();
    all.sort_by_key(|(s, c)| (c.start, c.end, *s));
    let mut merged: Vec<&str> = Vec::new();
    let mut conflicts = Vec::new();
    let mut segments = Vec::new();
    let mut pos = 0;
    let mut i = 0;
    while i < all.len() {
        let (start, mut end) = (all[i].1.start, all[i].1.end);
        let mut j = i + 1;
        while j < all.len() && all[j].1.start <= end {
            end = end.max(all[j].1.end);
            j += 1;
        }
        let region = &all[i..j];
        merged.extend_from_slice(&b[pos..start]);
        push(&mut segments, Source::Unchanged, &b[pos..start]);
        let of = |s: usize| region.iter().filter(|(x, _)| *x == s).map(|(_, c)| *c).collect::<Vec<_>>();
        let (ts, ms) = (of(0), of(1));
        let theirs_lines = side(&b, start, end, &ts);
        let mine_lines = side(&b, start, end, &ms);
        if ms.is_empty() || theirs_lines == mine_lines {
            merged.extend_from_slice(&theirs_lines);
            push(&mut segments, if ms.is_empty() { Source::Theirs } else { Source::Both }, &theirs_lines);
        } else if ts.is_empty() {
            merged.extend_from_slice(&mine_lines);
            push(&mut segments, Source::Mine, &mine_lines);
        } else {
            let conflict = Conflict { base_start: start + 1, base: b[start..end].concat(), theirs: theirs_lines.concat(), mine: mine_lines.concat() };
            segments.push(Segment { source: Source::Conflict, text: conflict.theirs.clone(), region: Some(conflict.clone()), conflict: Some(conflicts.len()) });
            conflicts.push(conflict);
            merged.extend_from_slice(&theirs_lines);
        }
        pos = end;
        i = j;
    }
    merged.extend_from_slice(&b[pos..]);
    push(&mut segments, Source::Unchanged, &b[pos..]);
    Ok(Merge { merged: merged.concat(), clean: conflicts.is_empty(), conflicts, segments })
}

#[cfg(test)]
mod tests {
    use super::merge3;

    const BASE: &str = "a\nb\nc\nd\ne\n";

    /// The segments' texts, joined, are the merged text.
    fn joined(r: &serde_json::Value) -> String {
        r["segments"].as_array().unwrap().iter().map(|s| s["text"].as_str().unwrap()).collect()
    }

    #[test]
    fn segments_lay_out_the_merge_and_name_each_side() {
        let r = merge3(BASE, "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n").unwrap();
        assert_eq!(joined(&r), r["merged"].as_str().unwrap());
        let sources: Vec<&str> = r["segments"].as_array().unwrap().iter().map(|s| s["source"].as_str().unwrap()).collect();
        assert_eq!(sources, ["theirs", "unchanged", "mine"]);
        assert_eq!(r["segments"][2]["text"], "E\n");
    }

    #[test]
    fn a_conflict_segment_carries_both_sides_and_its_index() {
        let r = merge3(BASE, "a\nb\nTHEIRS\nd\ne\n", "a\nb\nMINE\nd\nE\n").unwrap();
        assert_eq!(joined(&r), r["merged"].as_str().unwrap());
        let c = r["segments"].as_array().unwrap().iter().find(|s| s["source"] == "conflict").unwrap();
        assert_eq!((c["theirs"].as_str(), c["mine"].as_str(), c["conflict"].as_u64()), (Some("THEIRS\n"), Some("MINE\n"), Some(0)));
        assert!(r["segments"].as_array().unwrap().iter().any(|s| s["source"] == "mine" && s["text"] == "E\n"));
    }

    #[test]
    fn changes_apart_merge_cleanly() {
        let r = merge3(BASE, "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n").unwrap();
        assert_eq!(r["merged"], "A\nb\nc\nd\nE\n");
        assert_eq!(r["clean"], true);
    }

    #[test]
    fn the_same_change_on_both_sides_is_no_conflict() {
        let r = merge3(BASE, "a\nB\nc\nd\ne\n", "a\nB\nc\nd\ne\n").unwrap();
        assert_eq!((r["merged"].as_str(), r["clean"].as_bool()), (Some("a\nB\nc\nd\ne\n"), Some(true)));
    }

    #[test]
    fn the_same_line_changed_two_ways_is_a_conflict_that_keeps_theirs() {
        let r = merge3(BASE, "a\nb\nTHEIRS\nd\ne\n", "a\nb\nMINE\nd\ne\n").unwrap();
        assert_eq!(r["clean"], false);
        assert_eq!(r["merged"], "a\nb\nTHEIRS\nd\ne\n");
        let c = &r["conflicts"][0];
        assert_eq!((c["base"].as_str(), c["theirs"].as_str(), c["mine"].as_str()), (Some("c\n"), Some("THEIRS\n"), Some("MINE\n")));
        assert_eq!(c["base_start"], 3);
    }

    #[test]
    fn both_appending_at_the_end_is_a_conflict() {
        let r = merge3(BASE, "a\nb\nc\nd\ne\nx\n", "a\nb\nc\nd\ne\ny\n").unwrap();
        assert_eq!(r["clean"], false);
        assert_eq!(r["conflicts"][0]["mine"], "y\n");
    }

    /// Found by the fuzz test below: `similar` anchored a deletion and an
    /// insertion at the wrong base lines, and the merge sliced backwards.
    #[test]
    fn a_diff_whose_ops_carry_wrong_anchors_still_merges() {
        let (base, mine) = ("a\nc\nb\nlong line\n", "b\nb\n\nb\na\nlong line\n");
        let diff = similar::TextDiff::from_lines(base, mine);
        assert_eq!(super::line_changes(diff.ops()), vec![(0..2, 0..0), (3..3, 1..5)]);
        let r = merge3(base, "", mine).unwrap();
        assert_eq!(r["clean"], false, "{r}");
        assert_eq!(r["merged"], "", "a conflict keeps theirs: {r}");
        assert_eq!(merge3(base, base, mine).unwrap()["merged"], mine);
    }

    #[test]
    fn one_side_unchanged_takes_the_other() {
        assert_eq!(merge3(BASE, BASE, "z\n").unwrap()["merged"], "z\n");
        assert_eq!(merge3(BASE, "", BASE).unwrap()["merged"], "");
    }
}

/// Fuzzing the merge (proptest, shrinking) on texts of a few distinct lines,
/// with and without a final newline: no panic, the segments always spell
/// the merged text, a side that did not change yields the other side, the
/// same change on both sides merges cleanly, and a clean merge has no
/// conflicts. `CAIRN_FUZZ_CASES` cases (default 3,000).
#[cfg(test)]
mod fuzz {
    use super::merge3;
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        (proptest::collection::vec(prop_oneof![Just("a"), Just("b"), Just("c"), Just(""), Just("long line"), Just("b")], 0..12), any::<bool>()).prop_map(
            |(lines, newline)| {
                let mut t = lines.join("\n");
                if newline && !t.is_empty() {
                    t.push('\n');
                }
                t
            },
        )
    }

    fn cases() -> u32 {
        std::env::var("CAIRN_FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(3_000)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

        #[test]
        fn merges_keep_their_promises(base in text(), theirs in text(), mine in text()) {
            let r = merge3(&base, &theirs, &mine).unwrap();
            let spelled: String = r["segments"].as_array().unwrap().iter().map(|s| s["text"].as_str().unwrap()).collect();
            prop_assert_eq!(&spelled, r["merged"].as_str().unwrap(), "segments spell the merge");
            if r["clean"] == true {
                prop_assert!(r["conflicts"].as_array().unwrap().is_empty());
            }
            for (a, b, want) in [(&base, &mine, &theirs), (&theirs, &base, &mine), (&mine, &theirs, &theirs)] {
                if a == b {
                    let m = merge3(&base, &theirs, &mine).unwrap();
                    prop_assert_eq!(m["merged"].as_str(), Some(want.as_str()));
                    prop_assert_eq!(&m["clean"], &serde_json::Value::Bool(true));
                }
            }
        }
    }
}
