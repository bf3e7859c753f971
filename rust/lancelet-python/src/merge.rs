//! Python glue for the distributed merge_insert
//! (`lancelet::table::ops::merge_staged`) and the transaction properties
//! a streaming sink reads back: argument conversion only.

use std::collections::HashMap;
use std::sync::Arc;

use lancelet::io::StorageOptions;
use lancelet::table::ops::merge_deletions as deletions_core;
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
/// `(updated fragments, inserted fragments, [(fragment id, offsets of the
/// rows it updated or deleted there as little-endian u32 bytes)],
/// (inserted, updated, deleted))`.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn merge_task(
    py: Python<'_>,
    ds: &NativeDataset,
    data: &Bound<'_, PyAny>,
    spec: JobSpec,
    name_prefix: String,
) -> PyResult<(Vec<Vec<u8>>, Vec<Vec<u8>>, Vec<(u64, Vec<u8>)>, (u64, u64, u64))> {
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
    let mut affected: std::collections::BTreeMap<u64, Vec<u8>> = Default::default();
    for a in &out.affected {
        affected.entry(a >> 32).or_default().extend_from_slice(&(*a as u32).to_le_bytes());
    }
    let affected = affected.into_iter().collect();
    let s = out.stats;
    Ok((out.updated_fragments, out.inserted_fragments, affected, (s.inserted, s.updated, s.deleted)))
}

/// `(fragment id, encoded DeletionFile or None, serialized rows)`.
type Deletion = (u64, Option<Vec<u8>>, Vec<u8>);

/// One deletion task: mark `offsets` (little-endian u32s, from every
/// merge task) of fragment `fragment_id` deleted in a new deletion file
/// tagged for the job `name_prefix`. Returns the staged deletion and the
/// file's name under `_deletions/` (None when the fragment goes whole).
#[pyfunction]
fn merge_deletions(
    py: Python<'_>,
    ds: &NativeDataset,
    fragment_id: u64,
    offsets: Vec<u8>,
    name_prefix: String,
) -> PyResult<(Deletion, Option<String>)> {
    let inner = ds.inner.clone();
    py.detach(move || {
        guard(move || {
            if offsets.len() % 4 != 0 {
                return Err(lancelet::Error::invalid_input("merge deletions: offsets must be whole u32s"));
            }
            let offs: Vec<u32> = offsets.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            let d = deletions_core::stage_deletion(&inner, fragment_id, &offs, &name_prefix)?;
            let name = d.path().map(|p| p.trim_start_matches("_deletions/").to_string());
            Ok((d.encode()?, name))
        })
    })
    .py_err()
}

/// Commit a distributed merge: `(new dataset or None, why)`; `None` means
/// a concurrent commit made the job stale and it must run again.
#[pyfunction]
#[pyo3(signature = (ds, updated, inserted, deletions, stats, commit=None))]
fn merge_commit(
    py: Python<'_>,
    ds: &NativeDataset,
    updated: Vec<Vec<u8>>,
    inserted: Vec<Vec<u8>>,
    deletions: Vec<Deletion>,
    stats: (u64, u64, u64),
    commit: Option<CommitArgs>,
) -> PyResult<(Option<NativeDataset>, Option<String>)> {
    let inner = ds.inner.clone();
    let commit = commit.unwrap_or_default();
    let out = callback::run(py, move |raised| {
        let deletions =
            deletions.iter().map(|(f, d, r)| deletions_core::StagedDeletion::decode(*f, d.as_deref(), r)).collect::<lancelet::Result<Vec<_>>>()?;
        let props = commit.properties(raised)?;
        let stats = MergeStats { inserted: stats.0, updated: stats.1, deleted: stats.2 };
        merge_staged::commit_merge(&inner, &updated, &inserted, &deletions, stats, &props)
    })?;
    Ok(match out {
        MergeCommit::Committed(c) => (Some(NativeDataset { inner: Arc::new(c.dataset) }), None),
        MergeCommit::Rerun(why) => (None, Some(why)),
    })
}

/// Delete named files of `_deletions/`.
#[pyfunction]
#[pyo3(signature = (uri, names, storage_options=None))]
fn merge_remove_deletions(py: Python<'_>, uri: String, names: Vec<String>, storage_options: Option<StorageOptions>) -> PyResult<usize> {
    let options = storage_options.unwrap_or_default();
    py.detach(move || guard(move || deletions_core::remove_deletion_files(&uri, &options, &names))).py_err()
}

/// Delete the deletion files the job `name_prefix` (read at
/// `read_version`) wrote that are not in `keep`.
#[pyfunction]
#[pyo3(signature = (uri, name_prefix, read_version, keep, storage_options=None))]
fn merge_cleanup_deletions(
    py: Python<'_>,
    uri: String,
    name_prefix: String,
    read_version: u64,
    keep: Vec<String>,
    storage_options: Option<StorageOptions>,
) -> PyResult<usize> {
    let options = storage_options.unwrap_or_default();
    py.detach(move || guard(move || deletions_core::remove_staged_deletions(&uri, &options, &name_prefix, read_version, &keep))).py_err()
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
    m.add_function(wrap_pyfunction!(merge_deletions, m)?)?;
    m.add_function(wrap_pyfunction!(merge_commit, m)?)?;
    m.add_function(wrap_pyfunction!(merge_remove_deletions, m)?)?;
    m.add_function(wrap_pyfunction!(merge_cleanup_deletions, m)?)?;
    m.add_function(wrap_pyfunction!(transaction_properties, m)?)?;
    Ok(())
}
