//! Python glue for the full-text-search analyzer: tokenize texts with the
//! parameters of an INVERTED index, and list an index's token set. Used by
//! the tests that compare lancelet's analyzer with pylance's.

use lancelet::index::inverted::tokenizer::{Tokenizer, TokenizerParams};
use pyo3::prelude::*;
use pyo3::wrap_pyfunction;

use crate::errors::IntoPy;

/// Tokens `(text, position)` of each text, analyzed with `params` (the
/// `params` JSON of `metadata.lance`); with `options`, `params` is instead
/// the JSON of `create_scalar_index` keyword arguments.
#[pyfunction]
#[pyo3(signature = (params, texts, options=false))]
fn fts_tokenize(py: Python<'_>, params: String, texts: Vec<String>, options: bool) -> PyResult<Vec<Vec<(String, u32)>>> {
    py.detach(move || {
        let p = if options {
            let map: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&params).map_err(|e| lancelet::Error::invalid_input(format!("FTS options are not a JSON object: {e}")))?;
            TokenizerParams::from_options(&map)?
        } else {
            TokenizerParams::from_json(&params)?
        };
        let t = Tokenizer::new(&p)?;
        Ok(texts.iter().map(|s| t.tokens(s).into_iter().map(|t| (t.text, t.position)).collect()).collect())
    })
    .py_err()
}

/// The stored `params` JSON for `create_scalar_index` keyword arguments.
#[pyfunction]
fn fts_params_json(options: String) -> PyResult<String> {
    let map: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&options).map_err(|e| lancelet::Error::invalid_input(format!("FTS options are not a JSON object: {e}"))).py_err()?;
    TokenizerParams::from_options(&map).map(|p| p.to_json()).py_err()
}

/// `(token, id)` of an FST token set (`_token_fst_bytes`), in key order.
#[pyfunction]
fn fts_token_set(py: Python<'_>, fst_bytes: Vec<u8>) -> PyResult<Vec<(String, u64)>> {
    py.detach(move || lancelet::index::inverted::write::token_set_entries(&fst_bytes)).py_err()
}

/// The built-in stop words of a language (empty when it has none).
#[pyfunction]
fn fts_stop_words(language: String) -> Vec<String> {
    lancelet::index::inverted::tokenizer::builtin_stop_words(&language).map(|l| l.iter().map(|s| s.to_string()).collect()).unwrap_or_default()
}

/// Add the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fts_tokenize, m)?)?;
    m.add_function(wrap_pyfunction!(fts_params_json, m)?)?;
    m.add_function(wrap_pyfunction!(fts_stop_words, m)?)?;
    m.add_function(wrap_pyfunction!(fts_token_set, m)?)
}
