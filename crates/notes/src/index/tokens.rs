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

/// One word of a text, as ids the [`Tokenizer`] that read it gives out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Word {
    /// Its folded form: what a prefix query compares with ([`Tokenizer::folded`]).
    pub folded: u32,
    /// Its stem: what the index and word queries compare ([`Tokenizer::stem_text`]).
    pub stem: u32,
    /// Byte range of the word in the text it came from (for snippets).
    pub start: usize,
    pub end: usize,
}

/// The English stemmer (it holds no data of its own).
pub(crate) fn stemmer() -> Stemmer {
    Stemmer::create(Algorithm::English)
}

/// Lower case without accents: `Éclair` → `eclair`.
#[cfg(test)]
pub(crate) fn fold(word: &str) -> String {
    let mut out = String::new();
    fold_into(word, &mut out);
    out
}

fn fold_into(word: &str, out: &mut String) {
    out.clear();
    if word.is_ascii() {
        // Canonical decomposition leaves ASCII as it is: only the case changes.
        out.push_str(word);
        out.make_ascii_lowercase();
        return;
    }
    out.extend(word.nfd().filter(|c| !is_combining_mark(*c)).flat_map(char::to_lowercase));
}

/// FNV-1a: words are short and chosen by nobody hostile to a query's own table.
#[derive(Default, Clone, Copy)]
pub(crate) struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for b in bytes {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = h;
    }
}

type FnvMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<Fnv>>;

/// Words of texts, by the one rule. It interns every folded word and stem
/// it meets (a [`Word`] is two ids and a range, no allocation) and stems
/// each distinct folded word once, however often a text (or a batch of
/// texts) repeats it.
pub(crate) struct Tokenizer {
    stemmer: Stemmer,
    folded_ids: FnvMap<String, u32>,
    folded: Vec<String>,
    /// The stem id of each folded id.
    stem_of: Vec<u32>,
    stem_ids: FnvMap<String, u32>,
    stems: Vec<String>,
    buf: String,
}

impl Default for Tokenizer {
    fn default() -> Self {
        Tokenizer {
            stemmer: stemmer(),
            folded_ids: FnvMap::default(),
            folded: Vec::new(),
            stem_of: Vec::new(),
            stem_ids: FnvMap::default(),
            stems: Vec::new(),
            buf: String::new(),
        }
    }
}

impl Tokenizer {
    /// The id of a stem (interned now if new).
    pub(crate) fn stem_id(&mut self, stem: &str) -> u32 {
        if let Some(id) = self.stem_ids.get(stem) {
            return *id;
        }
        let id = self.stems.len() as u32;
        self.stems.push(stem.to_string());
        self.stem_ids.insert(stem.to_string(), id);
        id
    }

    /// The text of a stem id.
    pub(crate) fn stem_text(&self, id: u32) -> &str {
        &self.stems[id as usize]
    }

    /// The text of a folded id.
    pub(crate) fn folded(&self, id: u32) -> &str {
        &self.folded[id as usize]
    }

    /// The ids of the folded word in `self.buf`.
    fn intern_buf(&mut self) -> (u32, u32) {
        if let Some(&f) = self.folded_ids.get(self.buf.as_str()) {
            return (f, self.stem_of[f as usize]);
        }
        let stem = self.stemmer.stem(&self.buf).into_owned();
        let s = self.stem_id(&stem);
        let f = self.folded.len() as u32;
        self.folded.push(self.buf.clone());
        self.stem_of.push(s);
        self.folded_ids.insert(self.buf.clone(), f);
        (f, s)
    }

    /// Calls `f(word)` for every indexable word of `text`, in order.
    pub(crate) fn each_id(&mut self, text: &str, mut f: impl FnMut(&Self, Word)) {
        for (at, w) in text.unicode_word_indices() {
            let mut offset = 0;
            for part in w.split(['.', '_']) {
                let start = at + offset;
                offset += part.len() + 1;
                if part.is_empty() {
                    continue;
                }
                let mut buf = std::mem::take(&mut self.buf);
                fold_into(part, &mut buf);
                self.buf = buf;
                if self.buf.is_empty() || self.buf.len() > MAX_WORD_BYTES {
                    continue;
                }
                let (folded, stem) = self.intern_buf();
                f(self, Word { folded, stem, start, end: start + part.len() });
            }
        }
    }

    /// Calls `f(folded, stem, start, end)` for every indexable word of
    /// `text`, in order (`start..end`: its bytes in `text`).
    pub(crate) fn each(&mut self, text: &str, mut f: impl FnMut(&str, &str, usize, usize)) {
        self.each_id(text, |t, w| f(t.folded(w.folded), t.stem_text(w.stem), w.start, w.end));
    }

    /// Every indexable word of `text`, in order.
    pub(crate) fn words(&mut self, text: &str) -> Vec<Word> {
        let mut out = Vec::new();
        self.each_id(text, |_, w| out.push(w));
        out
    }

    /// The stem of one folded word.
    pub(crate) fn stem(&mut self, folded: &str) -> String {
        self.stemmer.stem(folded).into_owned()
    }
}

/// Every indexable word of `text`, in order, as (folded, stem, start, end).
#[cfg(test)]
pub(crate) fn words(text: &str) -> Vec<(String, String, usize, usize)> {
    let mut out = Vec::new();
    Tokenizer::default().each(text, |f, s, a, b| out.push((f.to_string(), s.to_string(), a, b)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stems(text: &str) -> Vec<String> {
        words(text).into_iter().map(|w| w.1).collect()
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
        for (folded, _, start, end) in words(text) {
            assert_eq!(fold(&text[start..end]), folded);
        }
    }

    #[test]
    fn the_ascii_fast_path_folds_as_the_unicode_rule_does() {
        for w in ["Launch", "MIXED-case", "a1B2", "o'Brien"] {
            let slow: String = w.nfd().filter(|c| !is_combining_mark(*c)).flat_map(char::to_lowercase).collect();
            assert_eq!(fold(w), slow, "{w}");
        }
    }

    #[test]
    fn a_remembered_stem_is_the_stem() {
        let mut t = Tokenizer::default();
        let text = "launches launched launches Launching running runs";
        let first = t.words(text);
        assert_eq!(first, t.words(text), "the second pass gives the same ids");
        let texts: Vec<(String, String)> = first.iter().map(|w| (t.folded(w.folded).to_string(), t.stem_text(w.stem).to_string())).collect();
        let fresh: Vec<(String, String)> = words(text).into_iter().map(|(f, s, _, _)| (f, s)).collect();
        assert_eq!(texts, fresh);
        assert_eq!(first[0].stem, first[1].stem, "launches and launched share a stem id");
    }

    #[test]
    fn overlong_words_are_left_out() {
        let long = "x".repeat(MAX_WORD_BYTES + 1);
        assert_eq!(stems(&format!("short {long} word")), vec!["short", "word"]);
    }
}
