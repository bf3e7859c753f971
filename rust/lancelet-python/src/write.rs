//! Python glue for the write side of datasets: `write_dataset`, and the
//! committing methods of a dataset (insert, delete, restore, tags). Each
//! returns the new version as a `Dataset`. The `staged_*` functions are the
//! two halves of a distributed write (workers stage, a driver commits). The
//! GIL is released while data is written (pyarrow takes it back when a
//! Python-backed stream needs it).

use std::sync::Arc;

use lancelet::file::FileVersion;
use lancelet::io::StorageOptions;
use lancelet::table::staged::{self, StagePlan};
use lancelet::table::tags;
use lancelet::table::write::{self, WriteMode, WriteParams};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::wrap_pyfunction;

use crate::commit_args::{run_op, CommitArgs};
use crate::dataset::NativeDataset;
use crate::errors::{guard, IntoPy};

fn batches(
    reader: impl Iterator<Item = Result<arrow_array::RecordBatch, arrow_schema::ArrowError>>,
) -> impl Iterator<Item = lancelet::Result<arrow_array::RecordBatch>> {
    reader.map(|b| b.map_err(|e| lancelet::Error::invalid_input(format!("reading input batch: {e}")).with_source(e)))
}

/// Write an Arrow stream as a dataset (mode create / append / overwrite).
#[pyfunction]
#[pyo3(signature = (uri, data, mode="create", max_rows_per_file=1048576, data_storage_version=None, enable_stable_row_ids=false, storage_options=None, group_bytes=0, commit=None, initial_bases=None, target_bases=None))]
#[allow(clippy::too_many_arguments)]
fn write_dataset(
    py: Python<'_>,
    uri: String,
    data: &Bound<'_, PyAny>,
    mode: &str,
    max_rows_per_file: u64,
    data_storage_version: Option<&str>,
    enable_stable_row_ids: bool,
    storage_options: Option<lancelet::io::StorageOptions>,
    group_bytes: usize,
    commit: Option<CommitArgs>,
    initial_bases: Option<Vec<crate::bases::BaseArg>>,
    target_bases: Option<Vec<String>>,
) -> PyResult<NativeDataset> {
    let params = WriteParams {
        group_bytes,
        mode: WriteMode::parse(mode).py_err()?,
        max_rows_per_file,
        data_storage_version: file_version(data_storage_version)?,
        enable_stable_row_ids,
        storage_options: storage_options.unwrap_or_default(),
        initial_bases: initial_bases.unwrap_or_default().into_iter().map(crate::bases::base_of).collect(),
        target_bases: target_bases.unwrap_or_default(),
    };
    let reader = crate::arrow_ffi::import_stream(data)?;
    let schema = arrow_array::RecordBatchReader::schema(&reader);
    run_op(py, commit, move |props, _| write::write_dataset(&uri, schema, batches(reader), &params, props)).map(|r| r.0)
}

/// Append an Arrow stream to the dataset (read at its version).
#[pyfunction]
#[pyo3(signature = (ds, data, commit=None))]
fn dataset_insert(py: Python<'_>, ds: &NativeDataset, data: &Bound<'_, PyAny>, commit: Option<CommitArgs>) -> PyResult<NativeDataset> {
    let reader = crate::arrow_ffi::import_stream(data)?;
    let inner = ds.inner.clone();
    run_op(py, commit, move |props, _| write::insert(&inner, batches(reader), props)).map(|r| r.0)
}

/// Delete rows matching a predicate: `(new dataset, rows deleted)`.
#[pyfunction]
#[pyo3(signature = (ds, predicate, commit=None))]
fn dataset_delete(py: Python<'_>, ds: &NativeDataset, predicate: String, commit: Option<CommitArgs>) -> PyResult<(NativeDataset, u64)> {
    let inner = ds.inner.clone();
    run_op(py, commit, move |props, _| lancelet::table::ops::delete::delete(&inner, &predicate, props))
}

/// Commit the dataset's version as the new latest version.
#[pyfunction]
#[pyo3(signature = (ds, commit=None))]
fn dataset_restore(py: Python<'_>, ds: &NativeDataset, commit: Option<CommitArgs>) -> PyResult<NativeDataset> {
    let inner = ds.inner.clone();
    run_op(py, commit, move |props, _| write::restore(&inner, props)).map(|r| r.0)
}

/// Create tag `name` → `version`.
#[pyfunction]
fn tag_create(py: Python<'_>, ds: &NativeDataset, name: String, version: u64) -> PyResult<()> {
    let inner = ds.inner.clone();
    py.detach(move || guard(move || tags::create_tag(inner.root(), &name, version))).py_err()
}

/// Delete tag `name`.
#[pyfunction]
fn tag_delete(py: Python<'_>, ds: &NativeDataset, name: String) -> PyResult<()> {
    let inner = ds.inner.clone();
    py.detach(move || guard(move || tags::delete_tag(inner.root(), &name))).py_err()
}

/// `None` (the dataset's version) or a version name (an unknown or empty
/// name is `InvalidInputError` listing the names accepted).
fn file_version(name: Option<&str>) -> PyResult<Option<FileVersion>> {
    name.map(FileVersion::parse).transpose().py_err()
}

fn stage_plan(
    uri: String,
    mode: &str,
    read_version: u64,
    data_storage_version: Option<&str>,
    schema: arrow_schema::SchemaRef,
    storage_options: Option<StorageOptions>,
) -> PyResult<StagePlan> {
    Ok(StagePlan {
        uri,
        mode: WriteMode::parse(mode).py_err()?,
        read_version,
        data_storage_version: file_version(data_storage_version)?,
        schema,
        storage_options: storage_options.unwrap_or_default(),
    })
}

/// Latest version of the dataset at `uri` (0 when there is none).
#[pyfunction]
#[pyo3(signature = (uri, storage_options=None))]
fn staged_latest_version(py: Python<'_>, uri: String, storage_options: Option<StorageOptions>) -> PyResult<u64> {
    let options = storage_options.unwrap_or_default();
    py.detach(move || guard(move || staged::latest_version(&uri, &options))).py_err()
}

/// Check that data of `schema` can be written with this plan (before any task runs).
#[pyfunction]
#[pyo3(signature = (uri, mode, read_version, data_storage_version, schema, storage_options=None))]
fn staged_check(
    py: Python<'_>,
    uri: String,
    mode: &str,
    read_version: u64,
    data_storage_version: Option<&str>,
    schema: &Bound<'_, PyAny>,
    storage_options: Option<StorageOptions>,
) -> PyResult<()> {
    let plan = stage_plan(uri, mode, read_version, data_storage_version, Arc::new(crate::arrow_ffi::import_schema(schema)?), storage_options)?;
    py.detach(move || guard(move || plan.check())).py_err()
}

/// Write an Arrow stream as uncommitted data files: encoded fragments.
#[pyfunction]
#[pyo3(signature = (uri, mode, read_version, data_storage_version, data, max_rows_per_file, name_prefix, storage_options=None))]
#[allow(clippy::too_many_arguments)]
fn staged_write(
    py: Python<'_>,
    uri: String,
    mode: &str,
    read_version: u64,
    data_storage_version: Option<&str>,
    data: &Bound<'_, PyAny>,
    max_rows_per_file: u64,
    name_prefix: String,
    storage_options: Option<StorageOptions>,
) -> PyResult<Vec<Py<PyBytes>>> {
    let reader = crate::arrow_ffi::import_stream(data)?;
    let schema = arrow_array::RecordBatchReader::schema(&reader);
    let plan = stage_plan(uri, mode, read_version, data_storage_version, schema, storage_options)?;
    let frags = py.detach(move || guard(move || staged::write_fragments(&plan, batches(reader), max_rows_per_file, &name_prefix))).py_err()?;
    Ok(frags.iter().map(|f| PyBytes::new(py, f).unbind()).collect())
}

/// Commit encoded fragments as one new version.
#[pyfunction]
#[pyo3(signature = (uri, mode, read_version, data_storage_version, schema, fragments, enable_stable_row_ids=false, storage_options=None, commit=None))]
#[allow(clippy::too_many_arguments)]
fn staged_commit(
    py: Python<'_>,
    uri: String,
    mode: &str,
    read_version: u64,
    data_storage_version: Option<&str>,
    schema: &Bound<'_, PyAny>,
    fragments: Vec<Vec<u8>>,
    enable_stable_row_ids: bool,
    storage_options: Option<StorageOptions>,
    commit: Option<CommitArgs>,
) -> PyResult<NativeDataset> {
    let plan = stage_plan(uri, mode, read_version, data_storage_version, Arc::new(crate::arrow_ffi::import_schema(schema)?), storage_options)?;
    run_op(py, commit, move |props, _| staged::commit_fragments(&plan, &fragments, enable_stable_row_ids, props)).map(|r| r.0)
}

/// Data file names referenced by encoded fragments.
#[pyfunction]
fn staged_file_names(fragments: Vec<Vec<u8>>) -> PyResult<Vec<String>> {
    guard(|| staged::staged_file_names(&fragments)).py_err()
}

/// Delete data files named with `name_prefix` that are not in `keep`.
#[pyfunction]
#[pyo3(signature = (uri, name_prefix, keep, storage_options=None))]
fn staged_cleanup(py: Python<'_>, uri: String, name_prefix: String, keep: Vec<String>, storage_options: Option<StorageOptions>) -> PyResult<usize> {
    let options = storage_options.unwrap_or_default();
    py.detach(move || guard(move || staged::remove_staged_files(&uri, &options, &name_prefix, &keep))).py_err()
}

/// Mark a distributed write job closed (committed or aborted).
#[pyfunction]
#[pyo3(signature = (uri, name_prefix, storage_options=None))]
fn staged_close_job(py: Python<'_>, uri: String, name_prefix: String, storage_options: Option<StorageOptions>) -> PyResult<()> {
    let options = storage_options.unwrap_or_default();
    py.detach(move || guard(move || staged::close_job(&uri, &options, &name_prefix))).py_err()
}

/// Whether the job was closed.
#[pyfunction]
#[pyo3(signature = (uri, name_prefix, storage_options=None))]
fn staged_job_closed(py: Python<'_>, uri: String, name_prefix: String, storage_options: Option<StorageOptions>) -> PyResult<bool> {
    let options = storage_options.unwrap_or_default();
    py.detach(move || guard(move || staged::job_closed(&uri, &options, &name_prefix))).py_err()
}

/// Delete named files of `data/`.
#[pyfunction]
#[pyo3(signature = (uri, names, storage_options=None))]
fn staged_remove_files(py: Python<'_>, uri: String, names: Vec<String>, storage_options: Option<StorageOptions>) -> PyResult<usize> {
    let options = storage_options.unwrap_or_default();
    py.detach(move || guard(move || staged::remove_data_files(&uri, &options, &names))).py_err()
}

/// Add the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(write_dataset, m)?)?;
    m.add_function(wrap_pyfunction!(dataset_insert, m)?)?;
    m.add_function(wrap_pyfunction!(dataset_delete, m)?)?;
    m.add_function(wrap_pyfunction!(dataset_restore, m)?)?;
    m.add_function(wrap_pyfunction!(tag_create, m)?)?;
    m.add_function(wrap_pyfunction!(tag_delete, m)?)?;
    m.add_function(wrap_pyfunction!(staged_latest_version, m)?)?;
    m.add_function(wrap_pyfunction!(staged_check, m)?)?;
    m.add_function(wrap_pyfunction!(staged_write, m)?)?;
    m.add_function(wrap_pyfunction!(staged_commit, m)?)?;
    m.add_function(wrap_pyfunction!(staged_file_names, m)?)?;
    m.add_function(wrap_pyfunction!(staged_cleanup, m)?)?;
    m.add_function(wrap_pyfunction!(staged_close_job, m)?)?;
    m.add_function(wrap_pyfunction!(staged_job_closed, m)?)?;
    m.add_function(wrap_pyfunction!(staged_remove_files, m)?)?;
    Ok(())
}
