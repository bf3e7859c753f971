//! The tokenizer parameters of an INVERTED index, as pylance 14 stores them.
//!
//! `metadata.lance` of an INVERTED index carries them as the schema metadata
//! value `params`, a compact JSON object whose keys come in this fixed order
//! (the defaults shown):
//!
//! ```json
//! {"lance_tokenizer":"text","base_tokenizer":"simple","language":"English","with_position":false,
//!  "max_token_length":40,"lower_case":true,"stem":true,"remove_stop_words":true,
//!  "custom_stop_words":null,"ascii_folding":true,"min_ngram_length":3,"max_ngram_length":3,
//!  "prefix_only":false,"block_size":128,"split_identifiers":false,"split_on_numerics":false,
//!  "preserve_original":false,"index_operators":false}
//! ```
//!
//! `create_scalar_index` takes the same names as keyword arguments
//! ([`TokenizerParams::from_options`]); `memory_limit` and `num_workers` are
//! accepted there but not stored.

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// Every parameter pylance 14 records for an INVERTED index's analyzer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenizerParams {
    /// How a document is read: `"text"` (the only kind lancelet builds) or
    /// `"json"`; `None` when the stored JSON has `null`.
    pub lance_tokenizer: Option<String>,
    /// `simple`, `whitespace`, `raw` or `ngram`.
    pub base_tokenizer: String,
    /// Snowball language name as pylance spells it (`English`, `French` ...).
    pub language: String,
    /// Whether the index stores token positions (phrase queries).
    pub with_position: bool,
    /// Tokens of this many UTF-8 bytes or more are dropped; `None`: no limit.
    pub max_token_length: Option<u64>,
    /// Lower-case tokens.
    pub lower_case: bool,
    /// Snowball-stem tokens.
    pub stem: bool,
    /// Drop stop words (after stemming).
    pub remove_stop_words: bool,
    /// Replaces the language's built-in stop words when set.
    pub custom_stop_words: Option<Vec<String>>,
    /// Fold non-ASCII characters to ASCII (pylance's table), last.
    pub ascii_folding: bool,
    /// Shortest n-gram (characters) of the `ngram` tokenizer.
    pub min_ngram_length: u32,
    /// Longest n-gram (characters) of the `ngram` tokenizer.
    pub max_ngram_length: u32,
    /// Only n-grams starting at the first character.
    pub prefix_only: bool,
    /// Documents per posting block (128; 256 is pylance's experimental v3).
    pub block_size: u32,
    /// Code-analysis options of pylance 14 (lancelet accepts only `false`).
    pub split_identifiers: bool,
    /// See `split_identifiers`.
    pub split_on_numerics: bool,
    /// See `split_identifiers`.
    pub preserve_original: bool,
    /// See `split_identifiers`.
    pub index_operators: bool,
}

impl Default for TokenizerParams {
    fn default() -> Self {
        TokenizerParams {
            lance_tokenizer: Some("text".into()),
            base_tokenizer: "simple".into(),
            language: "English".into(),
            with_position: false,
            max_token_length: Some(40),
            lower_case: true,
            stem: true,
            remove_stop_words: true,
            custom_stop_words: None,
            ascii_folding: true,
            min_ngram_length: 3,
            max_ngram_length: 3,
            prefix_only: false,
            block_size: 128,
            split_identifiers: false,
            split_on_numerics: false,
            preserve_original: false,
            index_operators: false,
        }
    }
}

/// Options `create_scalar_index` accepts for INVERTED but does not store.
const BUILD_ONLY_OPTIONS: &[&str] = &["memory_limit", "num_workers"];

impl TokenizerParams {
    /// Parses the `params` JSON of `metadata.lance`. Missing keys take
    /// pylance's defaults (older indices store fewer keys); unknown keys are
    /// ignored, as a reader of a newer index should.
    pub fn from_json(s: &str) -> Result<Self> {
        let value: Value = serde_json::from_str(s).map_err(|e| Error::corrupt(format!("INVERTED index params are not JSON: {e}")))?;
        let Value::Object(map) = value else {
            return Err(Error::corrupt("INVERTED index params are not a JSON object"));
        };
        let mut params = TokenizerParams::default();
        // The ngram tokenizer's own defaults apply only to create_scalar_index
        // keyword arguments; stored params always spell stem/stop words out.
        params.apply(&map, false).map_err(|e| match e {
            Error::InvalidInput { what, .. } => Error::corrupt(format!("INVERTED index params: {what}")),
            other => other,
        })?;
        Ok(params)
    }

    /// The `params` JSON as pylance 14 writes it (same keys, order, spacing).
    pub fn to_json(&self) -> String {
        fn s(v: &str) -> String {
            Value::String(v.to_string()).to_string()
        }
        let opt_str = |v: &Option<String>| v.as_deref().map_or("null".to_string(), s);
        let words = match &self.custom_stop_words {
            None => "null".to_string(),
            Some(w) => format!("[{}]", w.iter().map(|x| s(x)).collect::<Vec<_>>().join(",")),
        };
        let max_len = self.max_token_length.map_or("null".to_string(), |v| v.to_string());
        format!(
            concat!(
                "{{\"lance_tokenizer\":{},\"base_tokenizer\":{},\"language\":{},",
                "\"with_position\":{},\"max_token_length\":{},\"lower_case\":{},\"stem\":{},",
                "\"remove_stop_words\":{},\"custom_stop_words\":{},\"ascii_folding\":{},",
                "\"min_ngram_length\":{},\"max_ngram_length\":{},\"prefix_only\":{},",
                "\"block_size\":{},\"split_identifiers\":{},\"split_on_numerics\":{},",
                "\"preserve_original\":{},\"index_operators\":{}}}"
            ),
            opt_str(&self.lance_tokenizer),
            s(&self.base_tokenizer),
            s(&self.language),
            self.with_position,
            max_len,
            self.lower_case,
            self.stem,
            self.remove_stop_words,
            words,
            self.ascii_folding,
            self.min_ngram_length,
            self.max_ngram_length,
            self.prefix_only,
            self.block_size,
            self.split_identifiers,
            self.split_on_numerics,
            self.preserve_original,
            self.index_operators,
        )
    }

    /// Parameters from `create_scalar_index(..., "INVERTED", **options)`
    /// (the keyword arguments as a JSON object), with pylance's defaults:
    /// `stem` and `remove_stop_words` default to false for the `ngram`
    /// tokenizer. An unknown option, a value of the wrong type, a block size
    /// other than 128, or an option lancelet cannot honour is
    /// [`Error::InvalidInput`] naming the parameter.
    pub fn from_options(options: &Map<String, Value>) -> Result<Self> {
        let mut params = TokenizerParams::default();
        params.apply(options, true)?;
        if params.block_size != 128 && params.block_size != 256 {
            return Err(Error::invalid_input(format!("FTS inverted index block_size must be one of 128 or 256, got {}", params.block_size)));
        }
        if params.block_size == 256 {
            return Err(Error::invalid_input("block_size=256 (pylance's experimental format v3) is not supported by lancelet; use 128"));
        }
        for (name, set) in [
            ("split_identifiers", params.split_identifiers),
            ("split_on_numerics", params.split_on_numerics),
            ("preserve_original", params.preserve_original),
            ("index_operators", params.index_operators),
        ] {
            if set {
                return Err(Error::invalid_input(format!("FTS parameter '{name}' (code analysis) is not supported by lancelet")));
            }
        }
        if params.lance_tokenizer.as_deref() != Some("text") {
            return Err(Error::invalid_input(format!("FTS parameter 'lance_tokenizer' must be \"text\", got {:?}", params.lance_tokenizer)));
        }
        // Building the analyzer checks the tokenizer, language and n-gram sizes.
        super::Tokenizer::new(&params)?;
        Ok(params)
    }

    fn apply(&mut self, map: &Map<String, Value>, options: bool) -> Result<()> {
        if options {
            // pylance: the ngram tokenizer neither stems nor removes stop words
            // unless asked to.
            if map.get("base_tokenizer").and_then(Value::as_str) == Some("ngram") {
                self.stem = false;
                self.remove_stop_words = false;
            }
        }
        for (key, value) in map {
            match key.as_str() {
                "lance_tokenizer" => self.lance_tokenizer = opt_string(key, value)?,
                "base_tokenizer" => self.base_tokenizer = string(key, value)?,
                "language" => self.language = string(key, value)?,
                "with_position" => self.with_position = boolean(key, value)?,
                "max_token_length" => {
                    self.max_token_length = match value {
                        Value::Null => None,
                        v => Some(v.as_u64().ok_or_else(|| bad(key, "a non-negative integer or None"))?),
                    }
                }
                "lower_case" => self.lower_case = boolean(key, value)?,
                "stem" => self.stem = boolean(key, value)?,
                "remove_stop_words" => self.remove_stop_words = boolean(key, value)?,
                "custom_stop_words" => {
                    self.custom_stop_words = match value {
                        Value::Null => None,
                        Value::Array(items) => Some(
                            items
                                .iter()
                                .map(|v| v.as_str().map(str::to_string).ok_or_else(|| bad(key, "a list of strings")))
                                .collect::<Result<_>>()?,
                        ),
                        _ => return Err(bad(key, "a list of strings or None")),
                    }
                }
                "ascii_folding" => self.ascii_folding = boolean(key, value)?,
                "min_ngram_length" => self.min_ngram_length = small(key, value)?,
                "max_ngram_length" => self.max_ngram_length = small(key, value)?,
                "prefix_only" => self.prefix_only = boolean(key, value)?,
                "block_size" => self.block_size = small(key, value)?,
                "split_identifiers" => self.split_identifiers = boolean(key, value)?,
                "split_on_numerics" => self.split_on_numerics = boolean(key, value)?,
                "preserve_original" => self.preserve_original = boolean(key, value)?,
                "index_operators" => self.index_operators = boolean(key, value)?,
                k if options && BUILD_ONLY_OPTIONS.contains(&k) => build_only(key, value)?,
                k if options => {
                    return Err(Error::invalid_input(format!("unknown FTS index parameter '{k}'")));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// `memory_limit` / `num_workers`: a count or None (not stored).
fn build_only(key: &str, value: &Value) -> Result<()> {
    if value.is_null() || value.as_u64().is_some() {
        Ok(())
    } else {
        Err(bad(key, "a non-negative integer"))
    }
}

fn bad(key: &str, what: &str) -> Error {
    Error::invalid_input(format!("FTS parameter '{key}' must be {what}"))
}

fn boolean(key: &str, v: &Value) -> Result<bool> {
    v.as_bool().ok_or_else(|| bad(key, "a bool"))
}

fn string(key: &str, v: &Value) -> Result<String> {
    v.as_str().map(str::to_string).ok_or_else(|| bad(key, "a string"))
}

fn opt_string(key: &str, v: &Value) -> Result<Option<String>> {
    match v {
        Value::Null => Ok(None),
        v => string(key, v).map(Some),
    }
}

fn small(key: &str, v: &Value) -> Result<u32> {
    v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| bad(key, "a non-negative integer"))
}
