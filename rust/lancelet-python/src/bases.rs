//! Python glue for multi-base datasets and clones: `shallow_clone`,
//! `deep_clone`, the manifest's base paths, `add_bases`. Each committing
//! call returns the new version as a `Dataset`.

use lancelet::io::StorageOptions;
use lancelet::proto::table as pb;
use lancelet::table::clone;
use pyo3::prelude::*;
use pyo3::wrap_pyfunction;

use crate::commit_args::{run_op, CommitArgs};
use crate::dataset::NativeDataset;

/// `(id, name, is_dataset_root, path)` of one base path.
pub type BaseRow = (u32, Option<String>, bool, String);

/// `(id, name, is_dataset_root, path)` as Python hands a `DatasetBasePath`
/// over (`id` `None` when to be given).
pub type BaseArg = (Option<u32>, Option<String>, bool, String);

/// The core's `(id, base)` of one argument.
pub fn base_of((id, name, is_dataset_root, path): BaseArg) -> (Option<u32>, pb::BasePath) {
    (id, pb::BasePath { id: id.unwrap_or(0), name, is_dataset_root, path })
}

/// Register more base paths (`UpdateBases`).
#[pyfunction]
#[pyo3(signature = (ds, bases, commit=None))]
fn dataset_add_bases(py: Python<'_>, ds: &NativeDataset, bases: Vec<BaseArg>, commit: Option<CommitArgs>) -> PyResult<NativeDataset> {
    let inner = ds.inner.clone();
    let new: Vec<pb::BasePath> = bases.into_iter().map(|b| base_of(b).1).collect();
    run_op(py, commit, move |props, _| clone::add_bases(&inner, &new, props)).map(|r| r.0)
}

/// Shallow-clone the dataset's version to `target`.
#[pyfunction]
#[pyo3(signature = (ds, target, storage_options=None, commit=None))]
fn dataset_shallow_clone(
    py: Python<'_>,
    ds: &NativeDataset,
    target: String,
    storage_options: Option<StorageOptions>,
    commit: Option<CommitArgs>,
) -> PyResult<NativeDataset> {
    let inner = ds.inner.clone();
    let options = storage_options.unwrap_or_else(|| inner.root().options().clone());
    run_op(py, commit, move |props, _| clone::shallow_clone(&inner, &target, &options, props)).map(|r| r.0)
}

/// Deep-clone the dataset's version to `target`: `(dataset, files, bytes)`.
#[pyfunction]
#[pyo3(signature = (ds, target, storage_options=None, commit=None))]
fn dataset_deep_clone(
    py: Python<'_>,
    ds: &NativeDataset,
    target: String,
    storage_options: Option<StorageOptions>,
    commit: Option<CommitArgs>,
) -> PyResult<(NativeDataset, u64, u64)> {
    let inner = ds.inner.clone();
    let options = storage_options.unwrap_or_else(|| inner.root().options().clone());
    let (d, m) = run_op(py, commit, move |props, _| clone::deep_clone(&inner, &target, &options, props))?;
    Ok((d, m.files_copied, m.bytes_copied))
}

/// The base paths of the dataset's version.
#[pyfunction]
fn dataset_base_paths(ds: &NativeDataset) -> Vec<BaseRow> {
    ds.inner.manifest().base_paths.iter().map(|b| (b.id, b.name.clone(), b.is_dataset_root, b.path.clone())).collect()
}

/// Add the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dataset_shallow_clone, m)?)?;
    m.add_function(wrap_pyfunction!(dataset_deep_clone, m)?)?;
    m.add_function(wrap_pyfunction!(dataset_base_paths, m)?)?;
    m.add_function(wrap_pyfunction!(dataset_add_bases, m)?)?;
    Ok(())
}
