//! Python glue for the distributed merge_insert
//! (`lancelet::table::ops::merge_staged`) and the transaction properties
//! a streaming sink reads back: argument conversion only.

use std::collections::HashMap;
use std::sync::Arc;

use lancelet::table::ops::merge_insert::{MergeInsertParams, MergeStats, WhenMatched, WhenNotMatchedBySource};
use lancelet::table::ops::merge_staged::{self, MergeCommit, MergeJob};
use pyo3::prelude::*;
use pyo3::wrap_pyfunction;

use crate::callback;
use crate::commit_args::CommitArgs;
use crate::dataset::NativeDataset;
use crate::errors::{guard, IntoPy};

/// `(on, when_matched, matched_condition, insert, by_source_delete,
/// by_source_condition)`; `when_matched` is `"nothing"`, `"update"`,
/// `"delete"` or `"fail"`.
type JobSpec = (Vec<String>, String, Option<String>, bool, bool, Option<String>);

fn job(spec: JobSpec) -> lancelet::Result<MergeJob> {
    let (on, when_matched, matched_condition, insert, by_source_delete, by_source_condition) = spec;
    let (when_matched, fail_on_match) = match when_matched.as_str() {
        "nothing" => (WhenMatched::DoNothing, false),
        "fail" => (WhenMatched::DoNothing, true),
        "update" => (WhenMatched::UpdateAll { condition: matched_condition }, false),
        "delete" => (WhenMatched::Delete, false),
        other => return Err(lancelet::Error::invalid_input(format!("unknown when_matched action {other:?}"))),
    };
    let when_not_matched_by_source =
        if by_source_delete { WhenNotMatchedBySource::Delete { condition: by_source_condition } } else { WhenNotMatchedBySource::Keep };
    Ok(MergeJob { params: MergeInsertParams { on, when_matched, insert_not_matched: insert, when_not_matched_by_source }, fail_on_match })
}

/// Check a merge of source rows of `schema` into `ds`; returns the dataset
/// columns the join must carry (keys first).
#[pyfunction]
fn merge_columns(py: Python<'_>, ds: &NativeDataset, schema: &Bound<'_, PyAny>, spec: JobSpec) -> PyResult<Vec<String>> {
    let schema = crate::arrow_ffi::import_schema(schema)?;
    let inner = ds.inner.clone();
    py.detach(move || guard(move || merge_staged::merge_columns(&inner, &schema, &job(spec)?))).py_err()
}

/// One merge task over the joined rows of `data` (an Arrow stream):
/// `(updated fragments, inserted fragments, affected row addresses as
/// little-endian u64 bytes, (inserted, updated, deleted))`.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn merge_task(
    py: Python<'_>,
    ds: &NativeDataset,
    data: &Bound<'_, PyAny>,
    spec: JobSpec,
    name_prefix: String,
) -> PyResult<(Vec<Vec<u8>>, Vec<Vec<u8>>, Vec<u8>, (u64, u64, u64))> {
    let reader = crate::arrow_ffi::import_stream(data)?;
    let schema = arrow_array::RecordBatchReader::schema(&reader);
    let inner = ds.inner.clone();
    let out = py
        .detach(move || {
            guard(move || {
                let batches = reader
                    .map(|b| b.map_err(|e| lancelet::Error::invalid_input(format!("reading the joined rows: {e}")).with_source(e)))
                    .collect::<lancelet::Result<Vec<_>>>()?;
                merge_staged::merge_task(&inner, &job(spec)?, schema, &batches, &name_prefix)
            })
        })
        .py_err()?;
    let affected = out.affected.iter().flat_map(|a| a.to_le_bytes()).collect();
    let s = out.stats;
    Ok((out.updated_fragments, out.inserted_fragments, affected, (s.inserted, s.updated, s.deleted)))
}

/// Commit a distributed merge: `(new dataset or None, why)`; `None` means
/// a concurrent commit made the job stale and it must run again.
#[pyfunction]
#[pyo3(signature = (ds, updated, inserted, affected, stats, commit=None))]
fn merge_commit(
    py: Python<'_>,
    ds: &NativeDataset,
    updated: Vec<Vec<u8>>,
    inserted: Vec<Vec<u8>>,
    affected: Vec<u8>,
    stats: (u64, u64, u64),
    commit: Option<CommitArgs>,
) -> PyResult<(Option<NativeDataset>, Option<String>)> {
    let inner = ds.inner.clone();
    let commit = commit.unwrap_or_default();
    let out = callback::run(py, move |raised| {
        if affected.len() % 8 != 0 {
            return Err(lancelet::Error::invalid_input("merge commit: affected addresses must be whole u64s"));
        }
        let addrs: Vec<u64> = affected.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default())).collect();
        let props = commit.properties(raised)?;
        let stats = MergeStats { inserted: stats.0, updated: stats.1, deleted: stats.2 };
        merge_staged::commit_merge(&inner, &updated, &inserted, &addrs, stats, &props)
    })?;
    Ok(match out {
        MergeCommit::Committed(c) => (Some(NativeDataset { inner: Arc::new(c.dataset) }), None),
        MergeCommit::Rerun(why) => (None, Some(why)),
    })
}

/// The transaction properties recorded with the dataset's version (`None`
/// when the version has no transaction).
#[pyfunction]
fn transaction_properties(py: Python<'_>, ds: &NativeDataset) -> PyResult<Option<HashMap<String, String>>> {
    let inner = ds.inner.clone();
    py.detach(move || {
        guard(move || {
            let t = lancelet::table::commit::transaction_of(inner.root(), inner.manifest_file())?;
            Ok(t.map(|t| t.transaction_properties))
        })
    })
    .py_err()
}

/// Register the functions of this module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(merge_columns, m)?)?;
    m.add_function(wrap_pyfunction!(merge_task, m)?)?;
    m.add_function(wrap_pyfunction!(merge_commit, m)?)?;
    m.add_function(wrap_pyfunction!(transaction_properties, m)?)?;
    Ok(())
}
