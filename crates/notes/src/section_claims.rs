//! Section claims hold bytes: a claim on one section of a markdown tab
//! (`claim_note` with `section_id`) is enforced on the text every commit
//! leaves, whatever operation or door made it, people's saves included.
//!
//! **Invariant.** For every commit and every live claim `C` on section `S`
//! (by id, as [`crate::sections::outline`] names it) of markdown tab `T`,
//! held by subject `H`, where `S` is a section of `T`'s text before the
//! commit:
//!
//! 1. *Others keep out.* If the writer is not `H`, then after the commit `T`
//!    exists and its text has a section with `S`'s id and `S`'s very lines:
//!    every line of `S` is as it was, and nothing was added inside it.
//! 2. *The holder keeps in.* If the writer is `H`, every line of `T` outside
//!    `S` is as it was: the text after the commit is the lines before `S`,
//!    then any lines, then the lines after `S`.
//!
//! **Why it holds.** [`crate::write::commit`] takes [`guards`] of the head it
//! read (before apply) and runs [`enforce`] on the head apply left (before
//! the swap, in the same attempt): the check compares the very texts the
//! swap replaces and installs, so no interleaving slips between them (a lost
//! swap re-runs the whole attempt). Every content write goes through
//! `commit`, and a refusal there returns before the swap: nothing is written.
//! Claims cannot overlap ([`crate::claims`] refuses a section claim whose
//! lines meet another claim's, a tab or note claim over a section claim, and
//! a second section claim of one holder in one tab), so (1) and (2) never
//! ask for opposite things.
//!
//! **Following the section.** After the holder's commit passes (2), its
//! section starts on the line it started on (the lines before it are
//! unchanged); the claim takes the id of the section that starts there, so
//! renaming one's own heading keeps the claim. A write by someone else that
//! would give `S` another id (a new heading with the same text before it)
//! fails (1): a conservative refusal, never a silent move of a claim.

use crate::content::load_text;
use crate::env::Identity;
use crate::kv::TenantKv;
use crate::model::{Head, Tab, TabKind};
use crate::refusal::{Code, Failure, Out, Refusal};
use crate::sections::{Section, lines, outline};

/// A tab with live section claims, as the commit found it.
pub(crate) struct Guard {
    /// The tab before the commit.
    before: Tab,
}

/// The tabs a commit by `who` must be checked on: markdown tabs with a live
/// section claim (anyone's: others' are kept out, the writer's own fence it in).
pub(crate) fn guards(head: &Head, now: u64) -> Vec<Guard> {
    let mut out: Vec<Guard> = Vec::new();
    for c in head.claims.iter().filter(|c| c.live(now) && c.section_id.is_some()) {
        let Some(t) = c.tab_id.as_deref().and_then(|t| head.tab_index(t)) else { continue };
        let tab = &head.tabs[t];
        if tab.kind == TabKind::Markdown && !out.iter().any(|g| g.before.id == tab.id) {
            out.push(Guard { before: tab.clone() });
        }
    }
    out
}

/// What [`enforce`] refused.
pub(crate) enum Breach {
    /// Another holder's section would change: the index of its claim.
    Claimed(usize),
    /// The writer's change reaches outside its own section.
    Outside(Refusal),
}

/// Checks the invariant for a commit by `who` that turned the `guards`' tabs
/// into what `head` holds now (`before` reads committed content, `after` the
/// content this commit staged), and moves the writer's claims to their
/// sections' new ids.
pub(crate) fn enforce(before: &TenantKv, after: &TenantKv, head: &mut Head, guards: &[Guard], who: &Identity, now: u64) -> Result<Result<(), Breach>, Failure> {
    for g in guards {
        let now_tab = head.tab_index(&g.before.id).map(|i| head.tabs[i].clone());
        if now_tab.as_ref().is_some_and(|t| t.content_hash == g.before.content_hash) {
            continue;
        }
        let claims: Vec<usize> = (0..head.claims.len())
            .filter(|&i| {
                let c = &head.claims[i];
                c.live(now) && c.section_id.is_some() && c.tab_id.as_deref() == Some(g.before.id.as_str())
            })
            .collect();
        let old_text = load_text(before, &g.before)?;
        let old = outline(&old_text);
        let new_text = match &now_tab {
            Some(t) if t.kind == TabKind::Markdown => Some(load_text(after, t)?),
            _ => None,
        };
        let new = new_text.as_deref().map(outline).unwrap_or_default();
        // Others' claims first: a writer who both enters someone's section and
        // leaves its own is told about the holder, whatever order the claims
        // were taken in.
        let mut claims = claims;
        claims.sort_by_key(|&i| head.claims[i].holder.subject == who.subject);
        for &i in &claims {
            let c = &head.claims[i];
            let Some(s) = old.iter().find(|s| Some(&s.id) == c.section_id.as_ref()) else { continue };
            if c.holder.subject != who.subject {
                let kept = new_text.as_deref().is_some_and(|t| new.iter().any(|n| n.id == s.id && n.body(t) == s.body(&old_text)));
                if !kept {
                    return Ok(Err(Breach::Claimed(i)));
                }
                continue;
            }
            let Some(text) = new_text.as_deref() else {
                return Ok(Err(Breach::Outside(outside(head, i, s, 1, "the change deletes the tab"))));
            };
            if let Some(line) = first_change_outside(&old_text, text, s) {
                return Ok(Err(Breach::Outside(outside(head, i, s, line, "the change reaches outside it"))));
            }
            if let Some(moved) = new.iter().find(|n| n.start_line == s.start_line) {
                head.claims[i].section_id = Some(moved.id.clone());
            }
        }
    }
    Ok(Ok(()))
}

/// The first line (of the old text, from 1) outside `s` that the new text
/// does not keep in place; `None` when only `s`'s lines changed.
fn first_change_outside(old: &str, new: &str, s: &Section) -> Option<usize> {
    let (old, new) = (lines(old), lines(new));
    let before = s.start_line - 1;
    let after = old.len() - s.end_line;
    if let Some(k) = (0..before).find(|&k| new.get(k) != Some(&old[k])) {
        return Some(k + 1);
    }
    if new.len() < before + after {
        return Some(s.end_line + 1);
    }
    (0..after).rev().find(|&k| new[new.len() - after + k] != old[s.end_line + k]).map(|k| s.end_line + k + 1)
}

/// The `outside_claim` refusal of the holder of claim `i` on section `s`.
fn outside(head: &Head, i: usize, s: &Section, line: usize, why: &str) -> Refusal {
    let c = &head.claims[i];
    Refusal::new(
        Code::OutsideClaim,
        format!(
            "you hold section {} (lines {}-{}) of tab {}, and {why} (line {line}): nothing was written",
            s.id,
            s.start_line,
            s.end_line,
            c.tab_id.as_deref().unwrap_or("")
        ),
    )
    .with_version(head.version)
    .with("claim_id", c.claim_id.clone())
    .with("tab_id", c.tab_id.clone())
    .with("section_id", s.id.clone())
    .with("start_line", s.start_line)
    .with("end_line", s.end_line)
    .with("line", line)
}

/// The lines (first, last) of section `id` of `text`, if it has one.
pub(crate) fn range(sections: &[Section], id: &str) -> Option<(usize, usize)> {
    sections.iter().find(|s| s.id == id).map(|s| (s.start_line, s.end_line))
}

/// Loads a markdown tab's outline (for the claim checks of [`crate::claims`]).
pub(crate) fn tab_outline(kv: &TenantKv, tab: &Tab) -> Out<Vec<Section>> {
    Ok(outline(&load_text(kv, tab)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sec(text: &str, id: &str) -> Section {
        outline(text).into_iter().find(|s| s.id == id).unwrap()
    }

    #[test]
    fn a_change_inside_the_section_is_not_outside() {
        let old = "# A\na\n# B\nb\n# C\nc\n";
        let new = "# A\na\n# B renamed\nb\nmore\n# C\nc\n";
        assert_eq!(first_change_outside(old, new, &sec(old, "b")), None);
    }

    #[test]
    fn a_change_before_or_after_the_section_is_named_by_its_line() {
        let old = "# A\na\n# B\nb\n# C\nc\n";
        assert_eq!(first_change_outside(old, "# A\nx\n# B\nb\n# C\nc\n", &sec(old, "b")), Some(2));
        assert_eq!(first_change_outside(old, "# A\na\n# B\nb\n# C\nx\n", &sec(old, "b")), Some(6));
        assert_eq!(first_change_outside(old, "# A\na\n# B\n", &sec(old, "b")), Some(5));
    }
}
