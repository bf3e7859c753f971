//! Python glue for `nearest=` queries: one dict of checked parameters
//! (built by `lancelet._nearest`) in, the result batch or the plan text
//! out. The GIL is released for the search.

use lancelet::index::vector::{DistanceType, Probes};
use lancelet::table::nearest::{self, Nearest, NearestScan};
use pyo3::prelude::*;
use pyo3::types::PyDict;
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

/// The parameters dict → the core's query (the filter parsed against the
/// dataset's schema).
fn parse(ds: &NativeDataset, d: &Bound<'_, PyDict>) -> PyResult<NearestScan> {
    let bytes: Vec<u8> = get(d, "q")?.unwrap_or_default();
    let queries: Vec<f32> = bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let metric = get::<String>(d, "metric")?.map(|m| DistanceType::parse(&m)).transpose().py_err()?;
    let filter: Option<String> = get(d, "filter")?;
    let filter = filter.map(|f| lancelet::expr::parse_filter(&f, ds.inner.schema())).transpose().py_err()?;
    Ok(NearestScan {
        nearest: Nearest {
            column: get(d, "column")?.unwrap_or_default(),
            queries,
            num_queries: get(d, "num_queries")?.unwrap_or(1),
            batch: get(d, "batch")?.unwrap_or(false),
            k: get(d, "k")?.unwrap_or(nearest::DEFAULT_K),
            metric,
            probes: Probes { minimum: get(d, "minimum_nprobes")?, maximum: get(d, "maximum_nprobes")?, search_effort: get(d, "search_effort")? },
            refine_factor: get(d, "refine_factor")?,
            ef: get(d, "ef")?,
            use_index: get(d, "use_index")?.unwrap_or(true),
            distance_range: (get(d, "distance_lo")?, get(d, "distance_hi")?),
        },
        columns: get(d, "columns")?,
        filter,
        prefilter: get(d, "prefilter")?.unwrap_or(false),
        fast_search: get(d, "fast_search")?.unwrap_or(false),
        with_row_id: get(d, "with_row_id")?.unwrap_or(false),
        limit: get(d, "limit")?,
        offset: get(d, "offset")?.unwrap_or(0),
    })
}

/// Run a nearest query; the result as one batch.
#[pyfunction]
fn nearest_search(py: Python<'_>, ds: &NativeDataset, params: &Bound<'_, PyDict>) -> PyResult<ArrowStream> {
    let s = parse(ds, params)?;
    let inner = ds.inner.clone();
    let batch = py.detach(move || guard(move || nearest::search(&inner, &s))).py_err()?;
    Ok(ArrowStream::from_batches(batch.schema(), vec![batch]))
}

/// The plan text of a nearest query.
#[pyfunction]
fn nearest_plan(py: Python<'_>, ds: &NativeDataset, params: &Bound<'_, PyDict>) -> PyResult<String> {
    let s = parse(ds, params)?;
    let inner = ds.inner.clone();
    py.detach(move || guard(move || nearest::plan::explain(&inner, &s))).py_err()
}

/// Register the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(nearest_search, m)?)?;
    m.add_function(wrap_pyfunction!(nearest_plan, m)?)?;
    Ok(())
}
