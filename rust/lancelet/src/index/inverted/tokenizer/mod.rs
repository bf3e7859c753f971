//! The text analyzer of INVERTED indices, token for token as pylance 14.
//!
//! pylance analyzes documents and queries with a chain of tantivy-style
//! stages; this module reproduces that chain (checked against pylance 14.0.2
//! as the oracle: `tests/test_fts_tokenizer.py`):
//!
//! 1. base tokenizer
//!    - `simple`: maximal runs of Unicode alphanumeric characters
//!      (`char::is_alphanumeric`): `don't` → `don`, `t`;
//!    - `whitespace`: maximal runs of characters that are not ASCII
//!      whitespace (punctuation stays: `hello,`);
//!    - `raw`: the whole text is one token;
//!    - `ngram`: every substring of `min_ngram_length..=max_ngram_length`
//!      characters, by start then length (`prefix_only`: starting at the
//!      first character only); a text shorter than the minimum gives none;
//! 2. drop tokens whose UTF-8 length is `>= max_token_length` bytes;
//! 3. lower-case (`char::to_lowercase` per character, no final-sigma rule);
//! 4. Snowball 3 stemming of the language (`snowball_stemmers_rs`; pylance
//!    14 stems as Snowball 3 does, e.g. its new Dutch algorithm);
//! 5. stop words, matched against the *stemmed* token: the custom list when
//!    given, else the language's built-in list ([`stopwords`]);
//! 6. ASCII folding, after stemming: each character in [`folding`]'s table
//!    (pylance's, generated from pylance itself) is replaced.
//!
//! Positions are those of the base tokenizer (`simple`/`whitespace`: the
//! token's index among all base tokens, so dropped stop words and long
//! tokens leave gaps that phrase queries count; `raw` and `ngram`: 0).

mod folding;
mod params;
mod stopwords;

pub use params::TokenizerParams;

use std::collections::HashSet;

use snowball_stemmers_rs::{Algorithm, Stemmer};

use crate::error::{Error, Result};

/// One analyzed token and its position in the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The token's text after every filter.
    pub text: String,
    /// The base tokenizer's position of the token (see the module docs).
    pub position: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Base {
    Simple,
    Whitespace,
    Raw,
    Ngram { min: usize, max: usize, prefix_only: bool },
}

/// The languages pylance 14 accepts (tantivy's `Language` names): each has a
/// Snowball stemmer, and those with a list in [`stopwords`] have stop words.
const LANGUAGES: &[(&str, Algorithm, Option<&[&str]>)] = &[
    ("Arabic", Algorithm::Arabic, None),
    ("Danish", Algorithm::Danish, Some(stopwords::DANISH)),
    ("Dutch", Algorithm::Dutch, Some(stopwords::DUTCH)),
    ("English", Algorithm::English, Some(stopwords::ENGLISH)),
    ("Finnish", Algorithm::Finnish, Some(stopwords::FINNISH)),
    ("French", Algorithm::French, Some(stopwords::FRENCH)),
    ("German", Algorithm::German, Some(stopwords::GERMAN)),
    ("Greek", Algorithm::Greek, None),
    ("Hungarian", Algorithm::Hungarian, Some(stopwords::HUNGARIAN)),
    ("Italian", Algorithm::Italian, Some(stopwords::ITALIAN)),
    ("Norwegian", Algorithm::Norwegian, Some(stopwords::NORWEGIAN)),
    ("Portuguese", Algorithm::Portuguese, Some(stopwords::PORTUGUESE)),
    ("Romanian", Algorithm::Romanian, None),
    ("Russian", Algorithm::Russian, Some(stopwords::RUSSIAN)),
    ("Spanish", Algorithm::Spanish, Some(stopwords::SPANISH)),
    ("Swedish", Algorithm::Swedish, Some(stopwords::SWEDISH)),
    ("Tamil", Algorithm::Tamil, None),
    ("Turkish", Algorithm::Turkish, None),
];

/// The built-in stop words of `language` (sorted), if it has any.
pub fn builtin_stop_words(language: &str) -> Option<&'static [&'static str]> {
    LANGUAGES.iter().find(|(name, _, _)| *name == language).and_then(|(_, _, list)| *list)
}

/// Stop words in force: a built-in sorted list or a custom set.
enum StopWords {
    BuiltIn(&'static [&'static str]),
    Custom(HashSet<String>),
}

impl StopWords {
    fn contains(&self, word: &str) -> bool {
        match self {
            StopWords::BuiltIn(list) => list.binary_search(&word).is_ok(),
            StopWords::Custom(set) => set.contains(word),
        }
    }
}

/// An analyzer built from [`TokenizerParams`]; cheap to share across threads.
pub struct Tokenizer {
    base: Base,
    max_token_length: Option<usize>,
    lower_case: bool,
    stemmer: Option<Stemmer>,
    stop_words: Option<StopWords>,
    ascii_folding: bool,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer").field("base", &self.base).finish_non_exhaustive()
    }
}

impl Tokenizer {
    /// The analyzer of `params`. An unknown base tokenizer or language, a
    /// language without built-in stop words while `remove_stop_words` is set
    /// (and no custom list), or bad n-gram sizes are
    /// [`Error::InvalidInput`] naming the parameter.
    pub fn new(params: &TokenizerParams) -> Result<Self> {
        let base = match params.base_tokenizer.as_str() {
            "simple" => Base::Simple,
            "whitespace" => Base::Whitespace,
            "raw" => Base::Raw,
            "ngram" => {
                let (min, max) = (params.min_ngram_length as usize, params.max_ngram_length as usize);
                if min == 0 {
                    return Err(Error::invalid_input("FTS parameter 'min_ngram_length' must be greater than 0"));
                }
                if min > max {
                    return Err(Error::invalid_input(format!(
                        "FTS parameter 'min_ngram_length' ({min}) must not be greater than 'max_ngram_length' ({max})"
                    )));
                }
                Base::Ngram { min, max, prefix_only: params.prefix_only }
            }
            other => {
                return Err(Error::invalid_input(format!(
                    "unknown base tokenizer {other} (parameter 'base_tokenizer'; lancelet supports simple, whitespace, raw, ngram)"
                )))
            }
        };
        let Some(&(_, algorithm, builtin)) = LANGUAGES.iter().find(|(name, _, _)| *name == params.language) else {
            let names: Vec<&str> = LANGUAGES.iter().map(|(n, _, _)| *n).collect();
            return Err(Error::invalid_input(format!(
                "can't set tokenizer language to {} (parameter 'language'): expected one of {}",
                params.language,
                names.join(", ")
            )));
        };
        let stop_words = if params.remove_stop_words {
            Some(match (&params.custom_stop_words, builtin) {
                (Some(words), _) => StopWords::Custom(words.iter().cloned().collect()),
                (None, Some(list)) => StopWords::BuiltIn(list),
                (None, None) => {
                    return Err(Error::invalid_input(format!(
                        "removing stop words for language {} is not supported (parameter 'remove_stop_words')",
                        params.language
                    )))
                }
            })
        } else {
            None
        };
        Ok(Tokenizer {
            base,
            max_token_length: params.max_token_length.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            lower_case: params.lower_case,
            stemmer: params.stem.then(|| Stemmer::create(algorithm)),
            stop_words,
            ascii_folding: params.ascii_folding,
        })
    }

    /// Appends the tokens of `text` to `out` (which is not cleared).
    pub fn tokenize(&self, text: &str, out: &mut Vec<Token>) {
        match self.base {
            Base::Simple => {
                let mut position = 0u32;
                for piece in text.split(|c: char| !c.is_alphanumeric()).filter(|p| !p.is_empty()) {
                    self.emit(piece, position, out);
                    position = position.wrapping_add(1);
                }
            }
            Base::Whitespace => {
                let mut position = 0u32;
                for piece in text.split(|c: char| c.is_ascii_whitespace()).filter(|p| !p.is_empty()) {
                    self.emit(piece, position, out);
                    position = position.wrapping_add(1);
                }
            }
            Base::Raw => self.emit(text, 0, out),
            Base::Ngram { min, max, prefix_only } => {
                // Byte offsets of every character boundary, end included.
                let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).chain(std::iter::once(text.len())).collect();
                let chars = bounds.len() - 1;
                let starts = if prefix_only { chars.min(1) } else { chars };
                for start in 0..starts {
                    for len in min..=max {
                        if start + len > chars {
                            break;
                        }
                        self.emit(&text[bounds[start]..bounds[start + len]], 0, out);
                    }
                }
            }
        }
    }

    /// Tokens of `text` (convenience for tests and queries).
    pub fn tokens(&self, text: &str) -> Vec<Token> {
        let mut out = Vec::new();
        self.tokenize(text, &mut out);
        out
    }

    /// Runs one base token through the filters and keeps it if it survives.
    fn emit(&self, piece: &str, position: u32, out: &mut Vec<Token>) {
        if let Some(limit) = self.max_token_length {
            if piece.len() >= limit {
                return;
            }
        }
        let mut text = if !self.lower_case {
            piece.to_string()
        } else if piece.is_ascii() {
            piece.to_ascii_lowercase()
        } else {
            // Per character, as tantivy's LowerCaser: no final-sigma rule.
            piece.chars().flat_map(char::to_lowercase).collect()
        };
        if let Some(stemmer) = &self.stemmer {
            let stemmed = stemmer.stem(&text);
            if stemmed != text.as_str() {
                text = stemmed.into_owned();
            }
        }
        if let Some(stop) = &self.stop_words {
            if stop.contains(&text) {
                return;
            }
        }
        if self.ascii_folding && !text.is_ascii() {
            text = fold_to_ascii(&text);
        }
        out.push(Token { text, position });
    }
}

/// Replace each character of `text` found in the folding table.
fn fold_to_ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
            continue;
        }
        match folding::FOLDING.binary_search_by_key(&c, |&(k, _)| k) {
            Ok(i) => out.push_str(folding::FOLDING[i].1),
            Err(_) => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
