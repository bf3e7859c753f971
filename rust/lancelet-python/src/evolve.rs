//! Python glue for schema evolution: add/drop/alter columns, merge, and
//! the distributed `add_columns` job. Python functions (UDFs, progress
//! callbacks) are called back as [`crate::callback`] says: an exception
//! they raise stops the operation and is re-raised as it was (the dataset
//! unchanged).

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, SchemaRef};
use lancelet::io::StorageOptions;
use lancelet::table::evolve::add::{self, AddOptions};
use lancelet::table::evolve::alter::{self, Alteration};
use lancelet::table::evolve::join;
use lancelet::table::evolve::staged::ColumnsJob;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::wrap_pyfunction;

use crate::arrow_ffi::{import_schema, import_stream, ArrowStream};
use crate::callback;
use crate::commit_args::{run_op, CommitArgs};
use crate::dataset::NativeDataset;
use crate::errors::{guard, to_py, IntoPy};

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

/// Add columns computed by SQL expressions (`[(name, sql)]`).
#[pyfunction]
#[pyo3(signature = (ds, exprs, batch_size=None, commit=None))]
fn add_columns_sql(
    py: Python<'_>,
    ds: &NativeDataset,
    exprs: Vec<(String, String)>,
    batch_size: Option<usize>,
    commit: Option<CommitArgs>,
) -> PyResult<NativeDataset> {
    let inner = ds.inner.clone();
    run_op(py, commit, |props, _| add::add_columns_sql(&inner, &exprs, &AddOptions { batch_size }, props)).map(|r| r.0)
}

/// Add columns computed by a Python function of batches (returning the
/// columns of `output` as an Arrow stream).
#[pyfunction]
#[pyo3(signature = (ds, func, output, read_columns=None, batch_size=None, commit=None))]
fn add_columns_udf(
    py: Python<'_>,
    ds: &NativeDataset,
    func: Py<PyAny>,
    output: &Bound<'_, PyAny>,
    read_columns: Option<Vec<String>>,
    batch_size: Option<usize>,
    commit: Option<CommitArgs>,
) -> PyResult<NativeDataset> {
    let output = import_schema(output)?;
    let inner = ds.inner.clone();
    run_op(py, commit, |props, raised| {
        let mut f = |b: RecordBatch| call_udf(&func, b).map_err(|e| raised.keep(e));
        add::add_columns_with(&inner, &output, read_columns.as_deref(), &mut f, &AddOptions { batch_size }, props)
    })
    .map(|r| r.0)
}

/// Add columns whose values come from an Arrow stream (one row per live
/// row, in scan order).
#[pyfunction]
#[pyo3(signature = (ds, data, batch_size=None, commit=None))]
fn add_columns_stream(
    py: Python<'_>,
    ds: &NativeDataset,
    data: &Bound<'_, PyAny>,
    batch_size: Option<usize>,
    commit: Option<CommitArgs>,
) -> PyResult<NativeDataset> {
    let reader = import_stream(data)?;
    let schema: SchemaRef = reader.schema();
    let inner = ds.inner.clone();
    run_op(py, commit, |props, _| {
        let batches = reader.map(|b| b.map_err(|e| lancelet::Error::invalid_input(format!("reading the new column values: {e}")).with_source(e)));
        add::add_columns_from_stream(&inner, schema.clone(), batches, &AddOptions { batch_size }, props)
    })
    .map(|r| r.0)
}

/// Add all-null columns (metadata only).
#[pyfunction]
#[pyo3(signature = (ds, schema, commit=None))]
fn add_null_columns(py: Python<'_>, ds: &NativeDataset, schema: &Bound<'_, PyAny>, commit: Option<CommitArgs>) -> PyResult<NativeDataset> {
    let schema = import_schema(schema)?;
    run_op(py, commit, |props, _| add::add_null_columns(&ds.inner, &schema, props)).map(|r| r.0)
}

/// Drop columns (names or dotted paths).
#[pyfunction]
#[pyo3(signature = (ds, columns, commit=None))]
fn drop_columns(py: Python<'_>, ds: &NativeDataset, columns: Vec<String>, commit: Option<CommitArgs>) -> PyResult<NativeDataset> {
    run_op(py, commit, |props, _| alter::drop_columns(&ds.inner, &columns, props)).map(|r| r.0)
}

/// Alter columns: `[(path, name, nullable, data_type)]`, the type given as
/// a one-field schema.
#[pyfunction]
#[pyo3(signature = (ds, alterations, commit=None))]
fn alter_columns(
    py: Python<'_>,
    ds: &NativeDataset,
    alterations: Vec<(String, Option<String>, Option<bool>, Option<Bound<'_, PyAny>>)>,
    commit: Option<CommitArgs>,
) -> PyResult<NativeDataset> {
    let mut alts = Vec::with_capacity(alterations.len());
    for (path, name, nullable, dt) in alterations {
        let data_type: Option<DataType> = match dt {
            Some(s) => Some(import_schema(&s)?.field(0).data_type().clone()),
            None => None,
        };
        alts.push(Alteration { path, name, nullable, data_type });
    }
    run_op(py, commit, |props, _| alter::alter_columns(&ds.inner, &alts, props)).map(|r| r.0)
}

/// Left-join an Arrow stream into the dataset on `left_on == right_on`.
#[pyfunction]
#[pyo3(signature = (ds, data, left_on, right_on, commit=None))]
fn merge(
    py: Python<'_>,
    ds: &NativeDataset,
    data: &Bound<'_, PyAny>,
    left_on: String,
    right_on: String,
    commit: Option<CommitArgs>,
) -> PyResult<NativeDataset> {
    let reader = import_stream(data)?;
    let schema = reader.schema();
    run_op(py, commit, |props, _| {
        let batches = reader
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| lancelet::Error::invalid_input(format!("reading the data to merge: {e}")).with_source(e))?;
        join::merge(&ds.inner, schema, batches, &left_on, &right_on, props)
    })
    .map(|r| r.0)
}

/// A distributed `add_columns` job as the workers and the driver see it:
/// the same description (dataset, read version, new columns, read columns,
/// batch size, file name prefix, storage options) built once per call site.
#[pyclass(frozen, name = "ColumnsJob")]
struct NativeColumnsJob {
    job: ColumnsJob,
}

#[pymethods]
impl NativeColumnsJob {
    #[new]
    #[pyo3(signature = (uri, read_version, output, read_columns=None, batch_size=None, name_prefix=String::new(), storage_options=None))]
    fn new(
        uri: String,
        read_version: u64,
        output: &Bound<'_, PyAny>,
        read_columns: Option<Vec<String>>,
        batch_size: Option<usize>,
        name_prefix: String,
        storage_options: Option<StorageOptions>,
    ) -> PyResult<Self> {
        let job = ColumnsJob {
            uri,
            read_version,
            output: Arc::new(import_schema(output)?),
            read_columns,
            batch_size,
            name_prefix,
            storage_options: storage_options.unwrap_or_default(),
        };
        Ok(NativeColumnsJob { job })
    }

    /// Check the job and list the fragment ids its tasks must process.
    fn fragment_ids(&self, py: Python<'_>) -> PyResult<Vec<u64>> {
        py.detach(|| guard(|| self.job.fragment_ids())).py_err()
    }

    /// Compute one fragment's new columns with `func`: the staged fragment.
    fn write(&self, py: Python<'_>, fragment_id: u64, func: Py<PyAny>) -> PyResult<Py<PyBytes>> {
        let bytes = callback::run(py, |raised| {
            let mut f = |b: RecordBatch| call_udf(&func, b).map_err(|e| raised.keep(e));
            self.job.write(fragment_id, &mut f)
        })?;
        Ok(PyBytes::new(py, &bytes).unbind())
    }

    /// Commit the staged fragments as one `Merge`.
    #[pyo3(signature = (staged, commit=None))]
    fn commit(&self, py: Python<'_>, staged: Vec<Vec<u8>>, commit: Option<CommitArgs>) -> PyResult<NativeDataset> {
        run_op(py, commit, |props, _| self.job.commit(&staged, props)).map(|r| r.0)
    }
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
    m.add_class::<NativeColumnsJob>()?;
    Ok(())
}
