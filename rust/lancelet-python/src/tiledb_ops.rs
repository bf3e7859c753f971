//! Python glue for operations over whole TileDB arrays (`lancelet.tiledb`
//! `to_lance`, the `lancelet_tiledb` Spark source): planning a read as
//! disjoint regions and reading one region, optionally filtered.

use lancelet::tiledb::{Bound as Value, DimRanges};
use lancelet::tiledb::{Order, ReadOptions};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use crate::arrow_ffi::ArrowStream;
use crate::errors::{guard, IntoPy};
use crate::tiledb::NativeTileDBArray;

/// A subarray as Python gives it: per dimension None or a list of `(lo, hi)`.
type PySubarray<'py> = Option<Vec<Option<Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>>>>;

fn value_from_py(v: &Bound<'_, PyAny>) -> PyResult<Value> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Value::Bytes(s.to_cow()?.as_bytes().to_vec()));
    }
    if let Ok(b) = v.cast::<PyBytes>() {
        return Ok(Value::Bytes(b.as_bytes().to_vec()));
    }
    if let Ok(i) = v.extract::<i128>() {
        return Ok(Value::Int(i));
    }
    if let Ok(f) = v.extract::<f64>() {
        return Ok(Value::Float(f));
    }
    Err(crate::errors::to_py(lancelet::Error::invalid_input(format!("subarray bound {v} is not an int, float, str or bytes"))))
}

fn subarray_from_py(sub: PySubarray<'_>) -> PyResult<Vec<Option<DimRanges>>> {
    let mut out = Vec::new();
    for dim in sub.unwrap_or_default() {
        out.push(match dim {
            None => None,
            Some(ranges) => Some(ranges.iter().map(|(lo, hi)| Ok((value_from_py(lo)?, value_from_py(hi)?))).collect::<PyResult<DimRanges>>()?),
        });
    }
    Ok(out)
}

fn value_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => f.into_pyobject(py)?.into_any(),
        Value::Bytes(b) => PyBytes::new(py, b).into_any(),
    })
}

/// Disjoint subarrays of about `target` cells that together select what
/// `subarray` does: a list of subarrays, each per dimension a list of
/// `(lo, hi)` (strings as bytes).
#[pyfunction]
#[pyo3(signature = (array, subarray, target))]
fn tiledb_plan_regions<'py>(py: Python<'py>, array: &NativeTileDBArray, subarray: PySubarray<'py>, target: u64) -> PyResult<Bound<'py, PyList>> {
    let sub = subarray_from_py(subarray)?;
    let inner = array.inner.clone();
    let regions = py.detach(|| guard(|| inner.plan_regions(&sub, target))).py_err()?;
    let out = PyList::empty(py);
    for region in &regions {
        let dims = PyList::empty(py);
        for dim in region {
            match dim {
                None => dims.append(py.None())?,
                Some(ranges) => {
                    let items: Vec<Bound<'py, PyTuple>> =
                        ranges.iter().map(|(lo, hi)| PyTuple::new(py, [value_to_py(py, lo)?, value_to_py(py, hi)?])).collect::<PyResult<_>>()?;
                    dims.append(PyList::new(py, items)?)?;
                }
            }
        }
        out.append(dims)?;
    }
    Ok(out)
}

/// Read one subarray (row-major for dense arrays, cell order for sparse)
/// keeping the cells where `filter` holds, as a one-batch Arrow stream.
#[pyfunction]
#[pyo3(signature = (array, subarray, attrs=None, dims=true, filter=None))]
fn tiledb_read_region<'py>(
    py: Python<'py>,
    array: &NativeTileDBArray,
    subarray: PySubarray<'py>,
    attrs: Option<Vec<String>>,
    dims: bool,
    filter: Option<String>,
) -> PyResult<ArrowStream> {
    let mut opts = ReadOptions { subarray: subarray_from_py(subarray)?, attrs, dims, ..Default::default() };
    opts.order = Order::Unordered;
    let inner = array.inner.clone();
    let batch = py.detach(|| guard(|| inner.read_where(&opts, filter.as_deref()))).py_err()?;
    Ok(ArrowStream::from_batches(batch.schema(), vec![batch]))
}

/// Raise `InvalidInputError` unless `filter` parses against the array.
#[pyfunction]
fn tiledb_check_filter(array: &NativeTileDBArray, filter: &str) -> PyResult<()> {
    guard(|| array.inner.check_filter(filter)).py_err()
}

/// Consolidate the array at `uri` in `mode` ("fragments", "commits" or
/// "fragment_meta"); returns the name of the file or fragment written.
#[pyfunction]
#[pyo3(signature = (uri, mode, start=0, end=u64::MAX, amplification=1.0, storage_options=None))]
fn tiledb_consolidate(
    py: Python<'_>,
    uri: String,
    mode: String,
    start: u64,
    end: u64,
    amplification: f64,
    storage_options: Option<lancelet::io::StorageOptions>,
) -> PyResult<Option<String>> {
    use lancelet::tiledb::consolidate::{consolidate_commits, consolidate_fragment_meta, consolidate_fragments, ConsolidationMode};
    let options = storage_options.unwrap_or_default();
    py.detach(|| {
        guard(|| match ConsolidationMode::parse(&mode)? {
            ConsolidationMode::Commits => consolidate_commits(&uri, &options),
            ConsolidationMode::FragmentMeta => consolidate_fragment_meta(&uri, &options),
            ConsolidationMode::Fragments => consolidate_fragments(&uri, &options, (start, end), amplification),
            ConsolidationMode::ArrayMeta => lancelet::tiledb::array_meta::consolidate_array_meta(&uri, &options, (start, end)),
        })
    })
    .py_err()
}

/// Consolidate exactly the fragments `names` lists (tiledb-py's
/// `fragment_uris`); returns the new fragment's name.
#[pyfunction]
#[pyo3(signature = (uri, names, storage_options=None))]
fn tiledb_consolidate_fragment_list(
    py: Python<'_>,
    uri: String,
    names: Vec<String>,
    storage_options: Option<lancelet::io::StorageOptions>,
) -> PyResult<Option<String>> {
    let options = storage_options.unwrap_or_default();
    py.detach(|| guard(|| lancelet::tiledb::consolidate::consolidate_fragment_list(&uri, &options, &names))).py_err()
}

/// Vacuum the array at `uri` in `mode`; returns the relative paths removed
/// and the ignore file written (if any).
#[pyfunction]
#[pyo3(signature = (uri, mode, start=0, end=u64::MAX, storage_options=None))]
fn tiledb_vacuum(
    py: Python<'_>,
    uri: String,
    mode: String,
    start: u64,
    end: u64,
    storage_options: Option<lancelet::io::StorageOptions>,
) -> PyResult<(Vec<String>, Option<String>)> {
    use lancelet::tiledb::consolidate::ConsolidationMode;
    let options = storage_options.unwrap_or_default();
    let done = py.detach(|| guard(|| lancelet::tiledb::vacuum::vacuum(&uri, &options, ConsolidationMode::parse(&mode)?, (start, end)))).py_err()?;
    Ok((done.removed, done.ignore_file))
}

/// Register the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tiledb_plan_regions, m)?)?;
    m.add_function(wrap_pyfunction!(tiledb_check_filter, m)?)?;
    m.add_function(wrap_pyfunction!(tiledb_consolidate, m)?)?;
    m.add_function(wrap_pyfunction!(tiledb_vacuum, m)?)?;
    m.add_function(wrap_pyfunction!(tiledb_consolidate_fragment_list, m)?)?;
    m.add_function(wrap_pyfunction!(tiledb_read_region, m)?)
}
