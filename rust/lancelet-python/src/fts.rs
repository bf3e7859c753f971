//! Python glue for `full_text_query=` searches: one dict (built by
//! `lancelet._fts`) holding the query tree (`lancelet.query` objects'
//! `to_dict()`) and the scan options in, the result batch or the plan text
//! out. The GIL is released for the search.

use lancelet::table::fts::{self, FtsQuery, FtsScan, Occur, Operator};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3::wrap_pyfunction;

use crate::arrow_ffi::ArrowStream;
use crate::dataset::NativeDataset;
use crate::errors::{guard, IntoPy};

fn get<'py, T: pyo3::conversion::FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<T>> {
    match d.get_item(key)? {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => Ok(Some(v.extract::<T>().map_err(Into::into)?)),
    }
}

fn bad(what: String) -> PyErr {
    crate::errors::to_py(lancelet::Error::invalid_input(what))
}

fn operator(d: &Bound<'_, PyDict>) -> PyResult<Operator> {
    match get::<String>(d, "operator")?.as_deref() {
        None | Some("OR") => Ok(Operator::Or),
        Some("AND") => Ok(Operator::And),
        Some(o) => Err(bad(format!("unknown full-text operator {o:?}"))),
    }
}

fn query(d: &Bound<'_, PyDict>) -> PyResult<FtsQuery> {
    let text = || -> PyResult<String> { get::<String>(d, "query")?.ok_or_else(|| bad("the full-text query has no text".into())) };
    let kind: String = get(d, "type")?.unwrap_or_default();
    Ok(match kind.as_str() {
        "match" => FtsQuery::Match {
            query: text()?,
            column: get(d, "column")?,
            boost: get(d, "boost")?.unwrap_or(1.0),
            fuzziness: get(d, "fuzziness")?,
            max_expansions: get(d, "max_expansions")?.unwrap_or(50),
            operator: operator(d)?,
            prefix_length: get(d, "prefix_length")?.unwrap_or(0),
        },
        "phrase" => FtsQuery::Phrase { query: text()?, column: get(d, "column")?, slop: get(d, "slop")?.unwrap_or(0) },
        "multi_match" => FtsQuery::MultiMatch {
            query: text()?,
            columns: get(d, "columns")?.unwrap_or_default(),
            boosts: get(d, "boosts")?,
            operator: operator(d)?,
        },
        "boost" => {
            let sub = |k: &str| -> PyResult<Box<FtsQuery>> {
                let v = d.get_item(k)?.ok_or_else(|| bad(format!("the boost query has no {k} query")))?;
                Ok(Box::new(query(v.cast::<PyDict>().map_err(|_| bad(format!("{k} is not a query")))?)?))
            };
            FtsQuery::Boost { positive: sub("positive")?, negative: sub("negative")?, negative_boost: get(d, "negative_boost")?.unwrap_or(0.5) }
        }
        "boolean" => {
            let clauses = d.get_item("clauses")?.ok_or_else(|| bad("the boolean query has no clauses".into()))?;
            let list = clauses.cast::<PyList>().map_err(|_| bad("clauses is not a list".into()))?;
            let mut out = Vec::new();
            for item in list.iter() {
                let (occ, q): (String, Bound<'_, PyDict>) = item.extract()?;
                let occ = match occ.as_str() {
                    "SHOULD" => Occur::Should,
                    "MUST" => Occur::Must,
                    "MUST_NOT" => Occur::MustNot,
                    o => return Err(bad(format!("unknown occur {o:?}"))),
                };
                out.push((occ, query(&q)?));
            }
            FtsQuery::Boolean(out)
        }
        k => return Err(bad(format!("unknown full-text query type {k:?}"))),
    })
}

/// The parameters dict → the core's search.
fn parse(ds: &NativeDataset, d: &Bound<'_, PyDict>) -> PyResult<FtsScan> {
    let q = d.get_item("query")?.ok_or_else(|| bad("no full-text query".into()))?;
    let q = query(q.cast::<PyDict>().map_err(|_| bad("the full-text query is not a dict".into()))?)?;
    let filter: Option<String> = get(d, "filter")?;
    let filter = filter.map(|f| lancelet::expr::parse_filter(&f, ds.inner.schema())).transpose().py_err()?;
    Ok(FtsScan {
        query: q,
        columns: get(d, "columns")?,
        filter,
        prefilter: get(d, "prefilter")?.unwrap_or(false),
        with_row_id: get(d, "with_row_id")?.unwrap_or(false),
        limit: get(d, "limit")?,
        offset: get(d, "offset")?.unwrap_or(0),
    })
}

/// Run a full-text search; the result as one batch.
#[pyfunction]
fn fts_search(py: Python<'_>, ds: &NativeDataset, params: &Bound<'_, PyDict>) -> PyResult<ArrowStream> {
    let s = parse(ds, params)?;
    let inner = ds.inner.clone();
    let batch = py.detach(move || guard(move || fts::search(&inner, &s))).py_err()?;
    Ok(ArrowStream::from_batches(batch.schema(), vec![batch]))
}

/// The plan text of a full-text search.
#[pyfunction]
fn fts_plan(py: Python<'_>, ds: &NativeDataset, params: &Bound<'_, PyDict>) -> PyResult<String> {
    let s = parse(ds, params)?;
    let inner = ds.inner.clone();
    py.detach(move || guard(move || fts::plan::explain(&inner, &s))).py_err()
}

/// Register the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fts_search, m)?)?;
    m.add_function(wrap_pyfunction!(fts_plan, m)?)?;
    Ok(())
}
