//! Python glue for branches: create, list, delete, describe, check out, and
//! tags on branch versions. A branch's versions are ordinary `Dataset`s
//! whose root is the branch's tree (see `lancelet::table::branches`).

use std::sync::Arc;

use lancelet::table::branches::BranchInfo;
use lancelet::table::ops::branch::{self, BranchSource};
use lancelet::table::tags;
use pyo3::prelude::*;
use pyo3::wrap_pyfunction;

use crate::commit_args::{run_op, CommitArgs};
use crate::dataset::NativeDataset;
use crate::errors::{guard, IntoPy};

/// `(name, parent_branch, parent_version, [(version, id)], create_at,
/// manifest_size, [(key, value)])` of one branch record.
type BranchRow = (String, Option<String>, u64, Vec<(u64, String)>, u64, u64, Vec<(String, String)>);

fn row(b: BranchInfo) -> BranchRow {
    (b.name, b.parent_branch, b.parent_version, b.identifier, b.create_at, b.manifest_size, b.metadata)
}

/// Create branch `name` from a version of a branch (`tag` unset; a branch
/// of `None` is the main line) or from the version a tag names.
#[pyfunction]
#[pyo3(signature = (ds, name, source_branch=None, source_version=None, tag=None, commit=None))]
fn branch_create(
    py: Python<'_>,
    ds: &NativeDataset,
    name: String,
    source_branch: Option<String>,
    source_version: Option<u64>,
    tag: Option<String>,
    commit: Option<CommitArgs>,
) -> PyResult<NativeDataset> {
    let inner = ds.inner.clone();
    let source = match tag {
        Some(t) => BranchSource::Tag(t),
        None => BranchSource::Version { branch: source_branch, version: source_version },
    };
    let (out, ()) = run_op(py, commit, move |props, _| branch::create_branch(&inner, &name, source, props))?;
    Ok(out)
}

/// Every branch record, sorted by name.
#[pyfunction]
fn branch_list(py: Python<'_>, ds: &NativeDataset) -> PyResult<Vec<BranchRow>> {
    let inner = ds.inner.clone();
    let list = py.detach(move || guard(move || branch::branches(&inner))).py_err()?;
    Ok(list.into_iter().map(row).collect())
}

/// Delete branch `name` (record and tree).
#[pyfunction]
fn branch_delete(py: Python<'_>, ds: &NativeDataset, name: String) -> PyResult<()> {
    let inner = ds.inner.clone();
    py.detach(move || guard(move || branch::delete_branch(&inner, &name))).py_err()
}

/// Replace the metadata of branch `name`.
#[pyfunction]
fn branch_replace_metadata(py: Python<'_>, ds: &NativeDataset, name: String, metadata: Vec<(String, String)>) -> PyResult<()> {
    let inner = ds.inner.clone();
    py.detach(move || guard(move || branch::replace_branch_metadata(&inner, &name, metadata))).py_err()
}

/// Version `version` (the latest when `None`) of branch `branch` (`None`
/// or `"main"`: the main line) of the dataset `ds` belongs to.
#[pyfunction]
#[pyo3(signature = (ds, branch=None, version=None))]
fn branch_checkout(py: Python<'_>, ds: &NativeDataset, branch: Option<String>, version: Option<u64>) -> PyResult<NativeDataset> {
    let inner = ds.inner.clone();
    let out = py.detach(move || guard(move || inner.checkout_branch(branch.as_deref(), version))).py_err()?;
    Ok(NativeDataset { inner: Arc::new(out) })
}

/// The branch a dataset version is on (`None`: the main line).
#[pyfunction]
fn branch_of(ds: &NativeDataset) -> Option<String> {
    ds.inner.branch().map(str::to_string)
}

/// Create tag `name` naming `version` of `branch` (`None`: the main line).
#[pyfunction]
#[pyo3(signature = (ds, name, branch, version))]
fn branch_tag_create(py: Python<'_>, ds: &NativeDataset, name: String, branch: Option<String>, version: u64) -> PyResult<()> {
    let inner = ds.inner.clone();
    py.detach(move || {
        guard(move || {
            let main = inner.main_root()?;
            tags::create_branch_tag(&main, &name, branch.as_deref().filter(|b| *b != "main"), version)
        })
    })
    .py_err()
}

/// Delete tag `name` (tags live at the main root, also for a branch's
/// dataset).
#[pyfunction]
fn branch_tag_delete(py: Python<'_>, ds: &NativeDataset, name: String) -> PyResult<()> {
    let inner = ds.inner.clone();
    py.detach(move || guard(move || tags::delete_tag(&inner.main_root()?, &name))).py_err()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(branch_create, m)?)?;
    m.add_function(wrap_pyfunction!(branch_list, m)?)?;
    m.add_function(wrap_pyfunction!(branch_delete, m)?)?;
    m.add_function(wrap_pyfunction!(branch_replace_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(branch_checkout, m)?)?;
    m.add_function(wrap_pyfunction!(branch_of, m)?)?;
    m.add_function(wrap_pyfunction!(branch_tag_create, m)?)?;
    m.add_function(wrap_pyfunction!(branch_tag_delete, m)?)?;
    Ok(())
}
