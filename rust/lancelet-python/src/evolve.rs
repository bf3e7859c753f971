//! Python glue for schema evolution: add/drop/alter columns, merge, and
//! the distributed `add_columns` job. Python functions (UDFs, progress
//! callbacks) are called back with the GIL taken; an exception they raise
//! stops the operation and is re-raised as it was (the dataset unchanged).

use std::sync::{Arc, Mutex};

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, SchemaRef};
use lancelet::io::StorageOptions;
use lancelet::table::evolve::add::{self, AddOptions};
use lancelet::table::evolve::alter::{self, Alteration};
use lancelet::table::evolve::join;
use lancelet::table::evolve::staged::ColumnsJob;
use lancelet::table::Dataset;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::wrap_pyfunction;

use crate::arrow_ffi::{import_schema, import_stream, ArrowStream};
use crate::dataset::NativeDataset;
use crate::errors::{guard, to_py, IntoPy};

fn wrap(ds: Dataset) -> NativeDataset {
    NativeDataset { inner: Arc::new(ds) }
}

/// Python errors raised inside callbacks, kept until the call returns.
#[derive(Default)]
struct Raised(Mutex<Option<PyErr>>);

impl Raised {
    /// Keep `e` (the first one wins) and stop the core with a marker error.
    fn keep(&self, e: PyErr) -> lancelet::Error {
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
        lancelet::Error::Internal { what: "a Python callback raised an exception".into() }
    }

    /// The kept Python exception, else the core error.
    fn result<T>(&self, r: lancelet::Result<T>) -> PyResult<T> {
        match r {
            Ok(v) => Ok(v),
            Err(e) => match self.0.lock().unwrap_or_else(|p| p.into_inner()).take() {
                Some(py_err) => Err(py_err),
                None => Err(to_py(e)),
            },
        }
    }
}

/// Call a Python function with a batch (as a one-batch Arrow stream) and
/// read back the Arrow stream it returns as one batch.
fn call_udf(func: &Py<PyAny>, batch: RecordBatch) -> PyResult<RecordBatch> {
    Python::attach(|py| {
        let input = Py::new(py, ArrowStream::from_batches(batch.schema(), vec![batch]))?;
        let out = func.call1(py, (input,))?;
        let reader = import_stream(out.bind(py))?;
        let schema = reader.schema();
        let batches = reader
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("reading the function's result: {e}")))?;
        lancelet::table::evolve::columns::concat(&schema, &batches).map_err(to_py)
    })
}

/// A progress callback for the core: calls `cb(done, total)` in Python.
fn progress_fn<'a>(cb: &'a Option<Py<PyAny>>, raised: &'a Raised) -> Option<impl Fn(u64, u64) -> lancelet::Result<()> + Sync + 'a> {
    cb.as_ref().map(|cb| {
        move |done: u64, total: u64| Python::attach(|py| cb.call1(py, (done, total)).map(|_| ())).map_err(|e| raised.keep(e))
    })
}

/// Add columns computed by SQL expressions (`[(name, sql)]`).
#[pyfunction]
#[pyo3(signature = (ds, exprs, batch_size=None, progress=None))]
fn add_columns_sql(py: Python<'_>, ds: &NativeDataset, exprs: Vec<(String, String)>, batch_size: Option<usize>, progress: Option<Py<PyAny>>) -> PyResult<NativeDataset> {
    let inner = ds.inner.clone();
    let raised = Raised::default();
    let r = py.detach(|| {
        guard(|| {
            let p = progress_fn(&progress, &raised);
            let opts = AddOptions { batch_size, progress: p.as_ref().map(|f| f as _), hook: None };
            add::add_columns_sql(&inner, &exprs, &opts)
        })
    });
    raised.result(r).map(wrap)
}

/// Add columns computed by a Python function of batches (returning the
/// columns of `output` as an Arrow stream).
#[pyfunction]
#[pyo3(signature = (ds, func, output, read_columns=None, batch_size=None, progress=None))]
fn add_columns_udf(
    py: Python<'_>,
    ds: &NativeDataset,
    func: Py<PyAny>,
    output: &Bound<'_, PyAny>,
    read_columns: Option<Vec<String>>,
    batch_size: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<NativeDataset> {
    let output = import_schema(output)?;
    let inner = ds.inner.clone();
    let raised = Raised::default();
    let r = py.detach(|| {
        guard(|| {
            let p = progress_fn(&progress, &raised);
            let opts = AddOptions { batch_size, progress: p.as_ref().map(|f| f as _), hook: None };
            let mut f = |b: RecordBatch| call_udf(&func, b).map_err(|e| raised.keep(e));
            add::add_columns_with(&inner, &output, read_columns.as_deref(), &mut f, &opts)
        })
    });
    raised.result(r).map(wrap)
}

/// Add columns whose values come from an Arrow stream (one row per live
/// row, in scan order).
#[pyfunction]
#[pyo3(signature = (ds, data, batch_size=None, progress=None))]
fn add_columns_stream(py: Python<'_>, ds: &NativeDataset, data: &Bound<'_, PyAny>, batch_size: Option<usize>, progress: Option<Py<PyAny>>) -> PyResult<NativeDataset> {
    let reader = import_stream(data)?;
    let schema: SchemaRef = reader.schema();
    let inner = ds.inner.clone();
    let raised = Raised::default();
    let r = py.detach(|| {
        guard(|| {
            let p = progress_fn(&progress, &raised);
            let opts = AddOptions { batch_size, progress: p.as_ref().map(|f| f as _), hook: None };
            let batches = reader.map(|b| b.map_err(|e| lancelet::Error::invalid_input(format!("reading the new column values: {e}"))));
            add::add_columns_from_stream(&inner, schema.clone(), batches, &opts)
        })
    });
    raised.result(r).map(wrap)
}

/// Add all-null columns (metadata only).
#[pyfunction]
fn add_null_columns(py: Python<'_>, ds: &NativeDataset, schema: &Bound<'_, PyAny>) -> PyResult<NativeDataset> {
    let schema = import_schema(schema)?;
    let inner = ds.inner.clone();
    py.detach(move || guard(move || add::add_null_columns(&inner, &schema, None))).py_err().map(wrap)
}

/// Drop columns (names or dotted paths).
#[pyfunction]
fn drop_columns(py: Python<'_>, ds: &NativeDataset, columns: Vec<String>) -> PyResult<NativeDataset> {
    let inner = ds.inner.clone();
    py.detach(move || guard(move || alter::drop_columns(&inner, &columns, None))).py_err().map(wrap)
}

/// Alter columns: `[(path, name, nullable, data_type)]`, the type given as
/// a one-field schema.
#[pyfunction]
fn alter_columns(py: Python<'_>, ds: &NativeDataset, alterations: Vec<(String, Option<String>, Option<bool>, Option<Bound<'_, PyAny>>)>) -> PyResult<NativeDataset> {
    let mut alts = Vec::with_capacity(alterations.len());
    for (path, name, nullable, dt) in alterations {
        let data_type: Option<DataType> = match dt {
            Some(s) => Some(import_schema(&s)?.field(0).data_type().clone()),
            None => None,
        };
        alts.push(Alteration { path, name, nullable, data_type });
    }
    let inner = ds.inner.clone();
    py.detach(move || guard(move || alter::alter_columns(&inner, &alts, None))).py_err().map(wrap)
}

/// Left-join an Arrow stream into the dataset on `left_on == right_on`.
#[pyfunction]
fn merge(py: Python<'_>, ds: &NativeDataset, data: &Bound<'_, PyAny>, left_on: String, right_on: String) -> PyResult<NativeDataset> {
    let reader = import_stream(data)?;
    let schema = reader.schema();
    let inner = ds.inner.clone();
    py.detach(move || {
        guard(move || {
            let batches = reader
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| lancelet::Error::invalid_input(format!("reading the data to merge: {e}")))?;
            join::merge(&inner, schema, batches, &left_on, &right_on, None)
        })
    })
    .py_err()
    .map(wrap)
}

/// The shared description of a distributed `add_columns` job.
#[allow(clippy::too_many_arguments)]
fn job(
    uri: String,
    read_version: u64,
    output: &Bound<'_, PyAny>,
    read_columns: Option<Vec<String>>,
    batch_size: Option<usize>,
    name_prefix: String,
    storage_options: Option<StorageOptions>,
) -> PyResult<ColumnsJob> {
    Ok(ColumnsJob {
        uri,
        read_version,
        output: Arc::new(import_schema(output)?),
        read_columns,
        batch_size,
        name_prefix,
        storage_options: storage_options.unwrap_or_default(),
    })
}

/// Check a job and list the fragment ids its tasks must process.
#[pyfunction]
#[pyo3(signature = (uri, read_version, output, read_columns=None, batch_size=None, name_prefix=String::new(), storage_options=None))]
#[allow(clippy::too_many_arguments)]
fn columns_job_fragments(
    py: Python<'_>,
    uri: String,
    read_version: u64,
    output: &Bound<'_, PyAny>,
    read_columns: Option<Vec<String>>,
    batch_size: Option<usize>,
    name_prefix: String,
    storage_options: Option<StorageOptions>,
) -> PyResult<Vec<u64>> {
    let j = job(uri, read_version, output, read_columns, batch_size, name_prefix, storage_options)?;
    py.detach(move || guard(move || j.fragment_ids())).py_err()
}

/// Compute one fragment's new columns with `func`: the staged fragment.
#[pyfunction]
#[pyo3(signature = (uri, read_version, output, fragment_id, func, read_columns=None, batch_size=None, name_prefix=String::new(), storage_options=None))]
#[allow(clippy::too_many_arguments)]
fn columns_job_write(
    py: Python<'_>,
    uri: String,
    read_version: u64,
    output: &Bound<'_, PyAny>,
    fragment_id: u64,
    func: Py<PyAny>,
    read_columns: Option<Vec<String>>,
    batch_size: Option<usize>,
    name_prefix: String,
    storage_options: Option<StorageOptions>,
) -> PyResult<Py<PyBytes>> {
    let j = job(uri, read_version, output, read_columns, batch_size, name_prefix, storage_options)?;
    let raised = Raised::default();
    let r = py.detach(|| {
        guard(|| {
            let mut f = |b: RecordBatch| call_udf(&func, b).map_err(|e| raised.keep(e));
            j.write(fragment_id, &mut f)
        })
    });
    let bytes = raised.result(r)?;
    Ok(PyBytes::new(py, &bytes).unbind())
}

/// Commit the staged fragments of a job as one `Merge`.
#[pyfunction]
#[pyo3(signature = (uri, read_version, output, staged, read_columns=None, batch_size=None, name_prefix=String::new(), storage_options=None))]
#[allow(clippy::too_many_arguments)]
fn columns_job_commit(
    py: Python<'_>,
    uri: String,
    read_version: u64,
    output: &Bound<'_, PyAny>,
    staged: Vec<Vec<u8>>,
    read_columns: Option<Vec<String>>,
    batch_size: Option<usize>,
    name_prefix: String,
    storage_options: Option<StorageOptions>,
) -> PyResult<NativeDataset> {
    let j = job(uri, read_version, output, read_columns, batch_size, name_prefix, storage_options)?;
    py.detach(move || guard(move || j.commit(&staged))).py_err().map(wrap)
}

/// Add the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(add_columns_sql, m)?)?;
    m.add_function(wrap_pyfunction!(add_columns_udf, m)?)?;
    m.add_function(wrap_pyfunction!(add_columns_stream, m)?)?;
    m.add_function(wrap_pyfunction!(add_null_columns, m)?)?;
    m.add_function(wrap_pyfunction!(drop_columns, m)?)?;
    m.add_function(wrap_pyfunction!(alter_columns, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(columns_job_fragments, m)?)?;
    m.add_function(wrap_pyfunction!(columns_job_write, m)?)?;
    m.add_function(wrap_pyfunction!(columns_job_commit, m)?)?;
    Ok(())
}
