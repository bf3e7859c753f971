//! Python glue for scalar indices: create / drop / optimize (each returns
//! the new version as a `Dataset`), list, and scan plans. The GIL is
//! released for every core call.

use lancelet::table::ops::index as ops;
use lancelet::table::{ScanOptions, Scanner};
use pyo3::prelude::*;
use pyo3::wrap_pyfunction;

use crate::commit_args::{run_op, CommitArgs};
use crate::dataset::NativeDataset;
use crate::errors::{guard, IntoPy};

/// `((name, type, uuid, field names, field ids, dataset_version),
/// (fragment ids, base_id, type_url, index_version, created_at ms, files,
/// rows indexed))`.
type IndexRow = ((String, String, String, Vec<String>, Vec<i32>, u64), (Vec<u32>, Option<u32>, String, i32, Option<u64>, Vec<(String, u64)>, u64));

/// Build (or with `replace`, rebuild) a scalar index.
/// `params`: the type's parameters as a JSON object under pylance's names
/// (ZONEMAP `rows_per_zone`, BLOOMFILTER `number_of_items`/`probability`),
/// or None for the defaults.
#[pyfunction]
#[pyo3(signature = (ds, column, index_type, name=None, replace=true, commit=None, params=None))]
#[allow(clippy::too_many_arguments)]
fn dataset_create_scalar_index(
    py: Python<'_>,
    ds: &NativeDataset,
    column: String,
    index_type: String,
    name: Option<String>,
    replace: bool,
    commit: Option<CommitArgs>,
    params: Option<String>,
) -> PyResult<NativeDataset> {
    let inner = ds.inner.clone();
    run_op(py, commit, |props, _| ops::create_scalar_index_with(&inner, &column, &index_type, params.as_deref(), name.as_deref(), replace, props))
        .map(|r| r.0)
}

/// Drop every segment of the named index.
#[pyfunction]
#[pyo3(signature = (ds, name, commit=None))]
fn dataset_drop_index(py: Python<'_>, ds: &NativeDataset, name: String, commit: Option<CommitArgs>) -> PyResult<NativeDataset> {
    let inner = ds.inner.clone();
    run_op(py, commit, |props, _| ops::drop_index(&inner, &name, props)).map(|r| r.0)
}

/// Rebuild scalar indices that do not cover every fragment in one
/// segment; extend, merge or retrain vector indices.
#[pyfunction]
#[pyo3(signature = (ds, index_names=None, commit=None, num_indices_to_merge=None, retrain=false))]
fn dataset_optimize_indices(
    py: Python<'_>,
    ds: &NativeDataset,
    index_names: Option<Vec<String>>,
    commit: Option<CommitArgs>,
    num_indices_to_merge: Option<usize>,
    retrain: bool,
) -> PyResult<NativeDataset> {
    let inner = ds.inner.clone();
    let vector = lancelet::table::ops::vector_optimize::VectorOptimizeOptions { num_indices_to_merge, retrain };
    run_op(py, commit, |props, _| ops::optimize_indices_with(&inner, index_names.as_deref(), &vector, props)).map(|r| r.0)
}

/// Every index entry (see `IndexRow`).
#[pyfunction]
fn dataset_list_indices(py: Python<'_>, ds: &NativeDataset) -> PyResult<Vec<IndexRow>> {
    let inner = ds.inner.clone();
    let rows = py.detach(move || guard(move || ops::list_indices(&inner))).py_err()?;
    Ok(rows
        .into_iter()
        .map(|r| {
            (
                (r.name, r.type_name, r.uuid, r.fields, r.field_ids, r.version),
                (r.fragment_ids, r.base_id, r.type_url, r.index_version, r.created_at, r.files, r.num_rows_indexed),
            )
        })
        .collect())
}

/// The plan of a scan (`analyze`: run it and report what happened).
#[pyfunction]
#[pyo3(signature = (ds, columns=None, filter=None, limit=None, offset=0, with_row_id=false, with_row_address=false, fragments=None, use_scalar_index=true, verbose=false, analyze=false))]
#[allow(clippy::too_many_arguments)]
fn scan_plan(
    py: Python<'_>,
    ds: &NativeDataset,
    columns: Option<Vec<String>>,
    filter: Option<String>,
    limit: Option<u64>,
    offset: u64,
    with_row_id: bool,
    with_row_address: bool,
    fragments: Option<Vec<u64>>,
    use_scalar_index: bool,
    verbose: bool,
    analyze: bool,
) -> PyResult<String> {
    let inner = ds.inner.clone();
    py.detach(move || {
        guard(move || {
            let mut opts = ScanOptions {
                columns,
                limit,
                offset,
                with_row_id,
                with_row_address,
                fragments,
                disable_scalar_index: !use_scalar_index,
                ..Default::default()
            };
            if let Some(f) = filter {
                opts.filter = Some(lancelet::expr::parse_filter(&f, inner.schema())?);
            }
            let s = Scanner::new(inner, opts)?;
            if analyze {
                lancelet::table::explain::analyze(&s)
            } else {
                lancelet::table::explain::explain(&s, verbose)
            }
        })
    })
    .py_err()
}

/// Add the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dataset_create_scalar_index, m)?)?;
    m.add_function(wrap_pyfunction!(dataset_drop_index, m)?)?;
    m.add_function(wrap_pyfunction!(dataset_optimize_indices, m)?)?;
    m.add_function(wrap_pyfunction!(dataset_list_indices, m)?)?;
    m.add_function(wrap_pyfunction!(scan_plan, m)?)?;
    Ok(())
}
