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

use serde_json::{Value, json};

/// One side's change: base lines `start..end` become `lines`.
struct Change<'a> {
    start: usize,
    end: usize,
    lines: Vec<&'a str>,
}

fn changes<'a>(base: &'a str, other: &'a str) -> Vec<Change<'a>> {
    let diff = similar::TextDiff::from_lines(base, other);
    let new: Vec<&str> = diff.new_slices().to_vec();
    diff.ops()
        .iter()
        .filter(|op| op.tag() != similar::DiffTag::Equal)
        .map(|op| Change { start: op.old_range().start, end: op.old_range().end, lines: new[op.new_range()].to_vec() })
        .collect()
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
fn push(segments: &mut Vec<Value>, source: &str, lines: &[&str]) {
    if lines.is_empty() {
        return;
    }
    let text = lines.concat();
    if let Some(last) = segments.last_mut()
        && last["source"] == source
        && source != "conflict"
    {
        let joined = format!("{}{text}", last["text"].as_str().unwrap_or_default());
        last["text"] = joined.into();
        return;
    }
    segments.push(json!({"source": source, "text": text}));
}

/// The merge of `mine` and `theirs` over `base`: `{merged, clean, conflicts:
/// [{base_start, base, theirs, mine}], segments}` (`base_start` is 1-based).
pub(crate) fn merge3(base: &str, theirs: &str, mine: &str) -> Value {
    let b: Vec<&str> = similar::TextDiff::from_lines(base, base).old_slices().to_vec();
    let (t, m) = (changes(base, theirs), changes(base, mine));
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
        push(&mut segments, "unchanged", &b[pos..start]);
        let of = |s: usize| region.iter().filter(|(x, _)| *x == s).map(|(_, c)| *c).collect::<Vec<_>>();
        let (ts, ms) = (of(0), of(1));
        let theirs_lines = side(&b, start, end, &ts);
        let mine_lines = side(&b, start, end, &ms);
        if ms.is_empty() || theirs_lines == mine_lines {
            merged.extend_from_slice(&theirs_lines);
            push(&mut segments, if ms.is_empty() { "theirs" } else { "both" }, &theirs_lines);
        } else if ts.is_empty() {
            merged.extend_from_slice(&mine_lines);
            push(&mut segments, "mine", &mine_lines);
        } else {
            let conflict = json!({
                "base_start": start + 1,
                "base": b[start..end].concat(),
                "theirs": theirs_lines.concat(),
                "mine": mine_lines.concat(),
            });
            let mut segment = conflict.clone();
            segment["source"] = "conflict".into();
            segment["text"] = conflict["theirs"].clone();
            segment["conflict"] = conflicts.len().into();
            segments.push(segment);
            conflicts.push(conflict);
            merged.extend_from_slice(&theirs_lines);
        }
        pos = end;
        i = j;
    }
    merged.extend_from_slice(&b[pos..]);
    push(&mut segments, "unchanged", &b[pos..]);
    json!({"merged": merged.concat(), "clean": conflicts.is_empty(), "conflicts": conflicts, "segments": segments})
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
        let r = merge3(BASE, "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n");
        assert_eq!(joined(&r), r["merged"].as_str().unwrap());
        let sources: Vec<&str> = r["segments"].as_array().unwrap().iter().map(|s| s["source"].as_str().unwrap()).collect();
        assert_eq!(sources, ["theirs", "unchanged", "mine"]);
        assert_eq!(r["segments"][2]["text"], "E\n");
    }

    #[test]
    fn a_conflict_segment_carries_both_sides_and_its_index() {
        let r = merge3(BASE, "a\nb\nTHEIRS\nd\ne\n", "a\nb\nMINE\nd\nE\n");
        assert_eq!(joined(&r), r["merged"].as_str().unwrap());
        let c = r["segments"].as_array().unwrap().iter().find(|s| s["source"] == "conflict").unwrap();
        assert_eq!((c["theirs"].as_str(), c["mine"].as_str(), c["conflict"].as_u64()), (Some("THEIRS\n"), Some("MINE\n"), Some(0)));
        assert!(r["segments"].as_array().unwrap().iter().any(|s| s["source"] == "mine" && s["text"] == "E\n"));
    }

    #[test]
    fn changes_apart_merge_cleanly() {
        let r = merge3(BASE, "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n");
        assert_eq!(r["merged"], "A\nb\nc\nd\nE\n");
        assert_eq!(r["clean"], true);
    }

    #[test]
    fn the_same_change_on_both_sides_is_no_conflict() {
        let r = merge3(BASE, "a\nB\nc\nd\ne\n", "a\nB\nc\nd\ne\n");
        assert_eq!((r["merged"].as_str(), r["clean"].as_bool()), (Some("a\nB\nc\nd\ne\n"), Some(true)));
    }

    #[test]
    fn the_same_line_changed_two_ways_is_a_conflict_that_keeps_theirs() {
        let r = merge3(BASE, "a\nb\nTHEIRS\nd\ne\n", "a\nb\nMINE\nd\ne\n");
        assert_eq!(r["clean"], false);
        assert_eq!(r["merged"], "a\nb\nTHEIRS\nd\ne\n");
        let c = &r["conflicts"][0];
        assert_eq!((c["base"].as_str(), c["theirs"].as_str(), c["mine"].as_str()), (Some("c\n"), Some("THEIRS\n"), Some("MINE\n")));
        assert_eq!(c["base_start"], 3);
    }

    #[test]
    fn both_appending_at_the_end_is_a_conflict() {
        let r = merge3(BASE, "a\nb\nc\nd\ne\nx\n", "a\nb\nc\nd\ne\ny\n");
        assert_eq!(r["clean"], false);
        assert_eq!(r["conflicts"][0]["mine"], "y\n");
    }

    #[test]
    fn one_side_unchanged_takes_the_other() {
        assert_eq!(merge3(BASE, BASE, "z\n")["merged"], "z\n");
        assert_eq!(merge3(BASE, "", BASE)["merged"], "");
    }
}
