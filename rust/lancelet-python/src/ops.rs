//! Python glue for the operations that change existing rows (update,
//! merge_insert; delete lives with the other committing methods in
//! `write.rs`): argument conversion only.

use lancelet::table::ops::merge_insert::{self, MergeInsertParams, WhenMatched, WhenNotMatchedBySource};
use lancelet::table::ops::update::{self, UpdateParams};
use pyo3::prelude::*;
use pyo3::wrap_pyfunction;

use crate::commit_args::{run_op, CommitArgs};
use crate::dataset::NativeDataset;
use crate::errors::IntoPy;

/// Update rows: `(new dataset, rows updated)`.
#[pyfunction]
#[pyo3(signature = (ds, updates, predicate=None, commit=None))]
fn dataset_update(
    py: Python<'_>,
    ds: &NativeDataset,
    updates: Vec<(String, String)>,
    predicate: Option<String>,
    commit: Option<CommitArgs>,
) -> PyResult<(NativeDataset, u64)> {
    let inner = ds.inner.clone();
    run_op(py, commit, |props, _| update::update(&inner, &UpdateParams { updates, predicate }, props))
}

/// merge_insert of an Arrow stream: `(new dataset, (inserted, updated, deleted))`.
/// `when_matched` is `"nothing"`, `"update"` or `"delete"`.
#[pyfunction]
#[pyo3(signature = (ds, data, on, when_matched, matched_condition, insert, by_source_delete, by_source_condition, commit=None))]
#[allow(clippy::too_many_arguments)]
fn dataset_merge_insert(
    py: Python<'_>,
    ds: &NativeDataset,
    data: &Bound<'_, PyAny>,
    on: Vec<String>,
    when_matched: &str,
    matched_condition: Option<String>,
    insert: bool,
    by_source_delete: bool,
    by_source_condition: Option<String>,
    commit: Option<CommitArgs>,
) -> PyResult<(NativeDataset, (u64, u64, u64))> {
    let when_matched = match when_matched {
        "nothing" => WhenMatched::DoNothing,
        "update" => WhenMatched::UpdateAll { condition: matched_condition },
        "delete" => WhenMatched::Delete,
        other => return Err(lancelet::Error::invalid_input(format!("unknown when_matched action {other:?}"))).py_err(),
    };
    let when_not_matched_by_source =
        if by_source_delete { WhenNotMatchedBySource::Delete { condition: by_source_condition } } else { WhenNotMatchedBySource::Keep };
    let reader = crate::arrow_ffi::import_stream(data)?;
    let schema = arrow_array::RecordBatchReader::schema(&reader);
    let inner = ds.inner.clone();
    let (out, stats) = run_op(py, commit, |props, _| {
        let params = MergeInsertParams { on, when_matched, insert_not_matched: insert, when_not_matched_by_source };
        let batches = reader
            .map(|b| b.map_err(|e| lancelet::Error::invalid_input(format!("reading the merge_insert source: {e}")).with_source(e)))
            .collect::<lancelet::Result<Vec<_>>>()?;
        merge_insert::merge_insert(&inner, schema, batches, &params, props)
    })?;
    Ok((out, (stats.inserted, stats.updated, stats.deleted)))
}

/// Register the functions of this module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dataset_update, m)?)?;
    m.add_function(wrap_pyfunction!(dataset_merge_insert, m)?)?;
    Ok(())
}
