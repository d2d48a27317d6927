//! Words as search sees them, from one rule used by the index and the query
//! alike: Unicode word boundaries (UAX #29, `unicode-segmentation`), split
//! once more at `.` and `_` (so `example.com` and `launch_brief` give their
//! parts), folded (canonical decomposition with the combining marks dropped,
//! then lower case: `Café` → `cafe`) and stemmed with the Snowball English
//! stemmer (`rust-stemmers`: `launches` → `launch`). Words longer than
//! [`MAX_WORD_BYTES`] after folding are not indexed.

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;
use unicode_segmentation::UnicodeSegmentation;

/// Longest indexed word, in bytes after folding: keeps every posting key short.
pub(crate) const MAX_WORD_BYTES: usize = 48;

/// One word of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// Folded form: what a prefix query compares with.
    pub folded: String,
    /// Stem of the folded form: what the index and word queries compare.
    pub stem: String,
    /// Byte range of the word in the text it came from (for snippets).
    pub start: usize,
    pub end: usize,
}

/// The English stemmer (built once per call: it holds no data of its own).
pub(crate) fn stemmer() -> Stemmer {
    Stemmer::create(Algorithm::English)
}

/// Lower case without accents: `Éclair` → `eclair`.
pub(crate) fn fold(word: &str) -> String {
    word.nfd().filter(|c| !is_combining_mark(*c)).flat_map(char::to_lowercase).collect()
}

/// Every indexable word of `text`, in order.
pub(crate) fn words(stemmer: &Stemmer, text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    for (at, w) in text.unicode_word_indices() {
        let mut offset = 0;
        for part in w.split(['.', '_']) {
            let start = at + offset;
            offset += part.len() + 1;
            if part.is_empty() {
                continue;
            }
            let folded = fold(part);
            if folded.is_empty() || folded.len() > MAX_WORD_BYTES {
                continue;
            }
            let stem = stemmer.stem(&folded).into_owned();
            out.push(Word { folded, stem, start, end: start + part.len() });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stems(text: &str) -> Vec<String> {
        words(&stemmer(), text).into_iter().map(|w| w.stem).collect()
    }

    #[test]
    fn case_accents_and_endings_fold_to_one_term() {
        assert_eq!(stems("Launches"), stems("launch"));
        assert_eq!(stems("CAFÉ"), stems("cafe"));
        assert_eq!(stems("Crème brûlée"), stems("creme brulee"));
    }

    #[test]
    fn dotted_and_underscored_words_give_their_parts() {
        assert_eq!(stems("example.com launch_brief"), vec!["exampl", "com", "launch", "brief"]);
    }

    #[test]
    fn ranges_point_at_the_word_in_the_original_text() {
        let text = "Das Café öffnet";
        for w in words(&stemmer(), text) {
            assert_eq!(fold(&text[w.start..w.end]), w.folded);
        }
    }

    #[test]
    fn overlong_words_are_left_out() {
        let long = "x".repeat(MAX_WORD_BYTES + 1);
        assert_eq!(stems(&format!("short {long} word")), vec!["short", "word"]);
    }
}
