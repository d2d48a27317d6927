//! A markdown tab in parts: its sections (the outline) and windows of its
//! lines, so an agent reads only what it needs.
//!
//! **Lines** are numbered from 1, as editors number them; a line is its text
//! without the `\n` that ends it. A text of `n` lines ends with or without a
//! final `\n`; either way it has `n` lines (`""` has none).
//!
//! **Sections** are the ATX headings (`#` to `######` followed by a space or
//! the end of the line, up to three spaces of indent) outside fenced code
//! blocks (``` or ~~~). A section runs from its heading to the line before
//! the next heading of the same or a higher level (fewer `#`), or to the
//! end: a section holds its subsections, as in every outline view. Its id
//! is the heading's slug (lowercase letters and digits kept, every other run
//! of characters one `-`) and, for the second and later headings with the
//! same slug, `-2`, `-3`…: edits elsewhere in the note leave it as it is,
//! unless they add or remove a heading with the same slug before it. Its
//! hash is the SHA-256 of its lines, each with its `\n`.

use crate::model::sha_hex;

/// One section of a markdown text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    /// The slug and occurrence: `results`, `results-2`.
    pub id: String,
    /// 1 to 6 (the number of `#`).
    pub level: u8,
    /// The heading's text, without the `#`s and closing `#`s.
    pub heading: String,
    /// Its first line (the heading), from 1.
    pub start_line: usize,
    /// Its last line, inclusive.
    pub end_line: usize,
    /// Characters in its lines, `\n`s included.
    pub chars: usize,
    /// Where its lines are in the text it was outlined from (the last
    /// line's `\n` included when the text has one).
    bytes: std::ops::Range<usize>,
}

impl Section {
    /// Its lines as they stand in `text`, the text it was outlined from.
    pub fn body<'t>(&self, text: &'t str) -> &'t str {
        &text[self.bytes.clone()]
    }

    /// SHA-256 (hex) of its lines, each with its `\n` (`text`: the text it
    /// was outlined from). Computed on demand: a section edit or a section
    /// read hashes one section, not the note.
    pub fn hash(&self, text: &str) -> String {
        let body = self.body(text);
        if body.ends_with('\n') { sha_hex(body.as_bytes()) } else { sha_hex(format!("{body}\n").as_bytes()) }
    }
}

/// The lines of `text`, without their `\n`s.
pub(crate) fn lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').collect()
}

/// The heading on `line`: its level and text, if it is one.
fn heading(line: &str) -> Option<(u8, String)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let level = rest.bytes().take_while(|b| *b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = &rest[level..];
    if !(after.is_empty() || after.starts_with(' ') || after.starts_with('\t')) {
        return None;
    }
    let mut text = after.trim();
    // A closing run of `#` preceded by a space is not part of the text.
    let closed = text.trim_end_matches('#');
    if closed.len() < text.len() && (closed.is_empty() || closed.ends_with(' ')) {
        text = closed.trim_end();
    }
    Some((level as u8, text.to_string()))
}

/// Whether `line` opens or closes a fenced code block, and with what.
fn fence(line: &str) -> Option<char> {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return None;
    }
    ['`', '~'].into_iter().find(|c| t.chars().take_while(|x| x == c).count() >= 3)
}

/// A heading's slug: lowercase letters and digits kept, every other run one `-`.
pub(crate) fn slug(heading: &str) -> String {
    let mut out = String::new();
    for c in heading.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() { "section".to_string() } else { out }
}

/// The sections of `text`, in order.
pub(crate) fn outline(text: &str) -> Vec<Section> {
    let ls = lines(text);
    let mut heads: Vec<(usize, u8, String)> = Vec::new();
    let mut open_fence: Option<char> = None;
    for (i, line) in ls.iter().enumerate() {
        if let Some(f) = fence(line) {
            match open_fence {
                None => open_fence = Some(f),
                Some(o) if o == f => open_fence = None,
                Some(_) => {}
            }
            continue;
        }
        if open_fence.is_none()
            && let Some((level, h)) = heading(line)
        {
            heads.push((i, level, h));
        }
    }
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut out = Vec::with_capacity(heads.len());
    let offset = |l: &str| l.as_ptr() as usize - text.as_ptr() as usize;
    for (k, (start, level, h)) in heads.iter().enumerate() {
        let end = heads[k + 1..].iter().find(|(_, l, _)| l <= level).map_or(ls.len(), |(i, _, _)| *i);
        let base = slug(h);
        let n = seen.entry(base.clone()).or_insert(0);
        *n += 1;
        let id = if *n == 1 { base } else { format!("{base}-{n}") };
        let last = ls[end - 1];
        let to = (offset(last) + last.len() + 1).min(text.len());
        let bytes = offset(ls[*start])..to;
        let body = &text[bytes.clone()];
        let chars = body.chars().count() + usize::from(!body.ends_with('\n'));
        out.push(Section { id, level: *level, heading: h.clone(), start_line: start + 1, end_line: end, chars, bytes });
    }
    out
}

/// A window of a text's lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Window {
    /// The window's lines, each with its `\n` (the text's last line keeps
    /// the text's own ending).
    pub text: String,
    /// Its first line (from 1); for an empty window, the line asked for.
    pub start_line: usize,
    /// Its last line, inclusive (`start_line - 1` when empty).
    pub end_line: usize,
    /// Lines in the whole text.
    pub total_lines: usize,
    /// The first line of the next window, when lines follow.
    pub next: Option<usize>,
    /// Whether the character cap, not `max_lines` or the end, ended it.
    pub truncated: bool,
}

/// Lines from `start_line` (from 1), at most `max_lines` of them and at
/// most `cap` characters, though never less than one whole line: a window
/// that stops before the end says where the next one starts, and whether
/// the cap stopped it.
pub(crate) fn window(text: &str, start_line: usize, max_lines: Option<usize>, cap: usize) -> Window {
    let ls = lines(text);
    let total = ls.len();
    let first = start_line.max(1);
    let mut out = String::new();
    let mut end = first - 1;
    let mut truncated = false;
    let mut chars = 0usize;
    let limit = max_lines.map_or(total, |m| (first - 1).saturating_add(m).min(total));
    for (i, line) in ls.iter().enumerate().take(limit).skip(first - 1) {
        let n = line.chars().count() + 1;
        if end >= first && chars + n > cap {
            truncated = true;
            break;
        }
        chars += n;
        out.push_str(line);
        if i + 1 < total || text.ends_with('\n') {
            out.push('\n');
        }
        end = i + 1;
    }
    // An empty window past the end ends before it starts, and nothing follows.
    let next = (end < total).then_some(end + 1);
    assert!(end + 1 >= first && (end <= total || end + 1 == first));
    Window { text: out, start_line: first, end_line: end, total_lines: total, next, truncated }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTE: &str = "intro\n# Plan\nsteps\n## Risks\nnone\n```\n# not a heading\n```\n# Plan\nagain\n";

    #[test]
    fn sections_hold_their_subsections_and_skip_fenced_code() {
        let o = outline(NOTE);
        let ids: Vec<_> = o.iter().map(|s| (s.id.as_str(), s.level, s.start_line, s.end_line)).collect();
        assert_eq!(ids, vec![("plan", 1, 2, 8), ("risks", 2, 4, 8), ("plan-2", 1, 9, 10)]);
        assert_eq!(o[1].chars, "## Risks\nnone\n```\n# not a heading\n```\n".chars().count());
        assert_eq!(o[2].hash(NOTE), sha_hex(b"# Plan\nagain\n"));
        // A text without a final newline hashes its last section as if it had one.
        let open = NOTE.trim_end_matches('\n');
        let last = &outline(open)[2];
        assert_eq!((last.hash(open), last.chars), (o[2].hash(NOTE), o[2].chars));
    }

    #[test]
    fn headings_follow_atx_rules() {
        assert_eq!(heading("## Done ##"), Some((2, "Done".into())));
        assert_eq!(heading("#hashtag"), None);
        assert_eq!(heading("    # code"), None);
        assert_eq!(heading("####### seven"), None);
        assert_eq!(heading("#"), Some((1, String::new())));
        assert_eq!(slug("Q3: Results & Next steps!"), "q3-results-next-steps");
        assert_eq!(slug("!!!"), "section");
    }

    #[test]
    fn an_edit_elsewhere_keeps_a_sections_id_and_hash() {
        let edited = NOTE.replace("steps\n", "steps\nmore steps\n");
        let (before, after) = (outline(NOTE), outline(&edited));
        assert_eq!(before[2].id, after[2].id);
        assert_eq!(before[2].hash(NOTE), after[2].hash(&edited));
        assert_ne!(before[0].hash(NOTE), after[0].hash(&edited));
    }

    #[test]
    fn windows_page_through_every_line_once() {
        let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let mut got = String::new();
        let mut at = 1;
        loop {
            let w = window(&text, at, Some(3), 1_000);
            got.push_str(&w.text);
            assert_eq!(w.total_lines, 10);
            match w.next {
                Some(n) => at = n,
                None => break,
            }
        }
        assert_eq!(got, text);
        let capped = window(&text, 1, None, 15);
        assert_eq!((capped.end_line, capped.next, capped.truncated), (2, Some(3), true));
        let beyond = window(&text, 40, None, 100);
        assert_eq!((beyond.text.as_str(), beyond.end_line, beyond.next, beyond.truncated), ("", 39, None, false));
        let one_long = window("x".repeat(50).as_str(), 1, None, 10);
        assert_eq!((one_long.end_line, one_long.truncated, one_long.next), (1, false, None));
        assert_eq!(window("a\nb", 2, None, 10).text, "b");
    }
}
