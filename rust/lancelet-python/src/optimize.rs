//! Python glue for table maintenance: compaction (planned, run as tasks,
//! committed — locally or spread over Spark) and cleanup of old versions.
//!
//! Fragments cross the boundary as encoded `DataFragment` protobufs
//! (`bytes`), so plans, tasks and results are plain picklable data on the
//! Python side. Options arrive as `{name: text}` (the Python layer checks
//! their types) on top of the dataset's `lance.compaction.*` config.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use lancelet::table::cleanup::{self, CleanupPolicy};
use lancelet::table::optimize::{self, decode_fragments, encode_fragments, CompactionMetrics, CompactionOptions, CompactionTask, RewriteResult};
use lancelet::table::{Dataset, VersionRef};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::wrap_pyfunction;

use crate::commit_args::{run_op, CommitArgs};
use crate::dataset::NativeDataset;
use crate::errors::{guard, IntoPy};

/// `(fragments_removed, fragments_added, files_removed, files_added)`.
type MetricsRow = (u64, u64, u64, u64);
/// `(read_version, old fragments, new fragments, metrics)`.
type ResultRow = (u64, Vec<Vec<u8>>, Vec<Vec<u8>>, MetricsRow);

fn metrics_row(m: &CompactionMetrics) -> MetricsRow {
    (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added)
}

fn options(ds: &Dataset, given: &HashMap<String, String>) -> lancelet::Result<CompactionOptions> {
    let mut o = CompactionOptions::from_config(&ds.config())?;
    for (k, v) in given {
        o.set(k, v)?;
    }
    o.validated()
}

fn at_version(ds: &Arc<Dataset>, version: u64) -> lancelet::Result<Arc<Dataset>> {
    if ds.version() == version {
        Ok(ds.clone())
    } else {
        Ok(Arc::new(ds.checkout(VersionRef::Number(version))?))
    }
}

/// Plan a compaction: `(read_version, [[fragment bytes]] per task, options)`.
#[pyfunction]
fn compaction_plan(
    py: Python<'_>,
    ds: &NativeDataset,
    given: HashMap<String, String>,
) -> PyResult<(u64, Vec<Vec<Py<PyBytes>>>, HashMap<String, String>)> {
    let inner = ds.inner.clone();
    let (plan, resolved) = py
        .detach(move || {
            guard(move || {
                let o = options(&inner, &given)?;
                let plan = optimize::plan_compaction(&inner, &o)?;
                Ok((plan, o))
            })
        })
        .py_err()?;
    let tasks = plan
        .tasks
        .iter()
        .map(|t| t.fragments.iter().map(|f| PyBytes::new(py, &encode_fragments(std::slice::from_ref(f))[0]).unbind()).collect())
        .collect();
    Ok((plan.read_version, tasks, options_text(&resolved)))
}

/// The resolved options as text (what tasks and the commit run with).
fn options_text(o: &CompactionOptions) -> HashMap<String, String> {
    let mut m = HashMap::new();
    m.insert("target_rows_per_fragment".into(), o.target_rows_per_fragment.to_string());
    if let Some(b) = o.max_bytes_per_file {
        m.insert("max_bytes_per_file".into(), b.to_string());
    }
    m.insert("materialize_deletions".into(), o.materialize_deletions.to_string());
    m.insert("materialize_deletions_threshold".into(), o.materialize_deletions_threshold.to_string());
    m.insert("defer_index_remap".into(), o.defer_index_remap.to_string());
    if let Some(n) = o.num_threads {
        m.insert("num_threads".into(), n.to_string());
    }
    if let Some(b) = o.batch_size {
        m.insert("batch_size".into(), b.to_string());
    }
    m
}

/// Run one task at its read version: `(read_version, old, new, metrics)`.
#[pyfunction]
#[pyo3(signature = (ds, read_version, fragments, given, name_prefix=String::new()))]
fn compaction_execute(
    py: Python<'_>,
    ds: &NativeDataset,
    read_version: u64,
    fragments: Vec<Vec<u8>>,
    given: HashMap<String, String>,
    name_prefix: String,
) -> PyResult<ResultRow> {
    let inner = ds.inner.clone();
    let r = py
        .detach(move || {
            guard(move || {
                let ds = at_version(&inner, read_version)?;
                let o = options(&ds, &given)?;
                let task = CompactionTask { fragments: decode_fragments(&fragments)? };
                optimize::execute_task(&ds, &task, &o, &name_prefix)
            })
        })
        .py_err()?;
    Ok((r.read_version, encode_fragments(&r.old_fragments), encode_fragments(&r.new_fragments), metrics_row(&r.metrics)))
}

/// Commit task results: `(new dataset, metrics)`.
#[pyfunction]
#[pyo3(signature = (ds, results, given, commit=None))]
fn compaction_commit(
    py: Python<'_>,
    ds: &NativeDataset,
    results: Vec<ResultRow>,
    given: HashMap<String, String>,
    commit: Option<CommitArgs>,
) -> PyResult<(NativeDataset, MetricsRow)> {
    let inner = ds.inner.clone();
    let (out, m) = run_op(py, commit, |props, _| {
        let o = options(&inner, &given)?;
        let results = results
            .into_iter()
            .map(|(read_version, old, new, m)| {
                Ok(RewriteResult {
                    read_version,
                    old_fragments: decode_fragments(&old)?,
                    new_fragments: decode_fragments(&new)?,
                    metrics: CompactionMetrics { fragments_removed: m.0, fragments_added: m.1, files_removed: m.2, files_added: m.3 },
                })
            })
            .collect::<lancelet::Result<Vec<_>>>()?;
        optimize::commit_compaction(&inner, results, &o, props)
    })?;
    Ok((out, metrics_row(&m)))
}

/// Plan, run and commit a compaction: `(new dataset, metrics)`.
#[pyfunction]
#[pyo3(signature = (ds, given, commit=None))]
fn compact_files(
    py: Python<'_>,
    ds: &NativeDataset,
    given: HashMap<String, String>,
    commit: Option<CommitArgs>,
) -> PyResult<(NativeDataset, MetricsRow)> {
    let inner = ds.inner.clone();
    let (out, m) = run_op(py, commit, |props, _| {
        let o = options(&inner, &given)?;
        optimize::compact_files(&inner, &o, props)
    })?;
    Ok((out, metrics_row(&m)))
}

/// `(id, physical_rows, [data file paths], deleted rows)` of an encoded fragment.
#[pyfunction]
fn fragment_summary(fragment: Vec<u8>) -> PyResult<(u64, u64, Vec<String>, u64)> {
    let f = guard(|| decode_fragments(&[fragment])).py_err()?.remove(0);
    let deleted = f.deletion_file.as_ref().map(|d| d.num_deleted_rows).unwrap_or(0);
    Ok((f.id, f.physical_rows, f.files.iter().map(|d| d.path.clone()).collect(), deleted))
}

/// Remove old versions: the seven counts of `CleanupStats`, in its order.
#[pyfunction]
#[pyo3(signature = (ds, older_than_micros=None, retain_versions=None, delete_unverified=false, error_if_tagged_old_versions=true, commit=None))]
fn cleanup_old_versions(
    py: Python<'_>,
    ds: &NativeDataset,
    older_than_micros: Option<i64>,
    retain_versions: Option<u64>,
    delete_unverified: bool,
    error_if_tagged_old_versions: bool,
    commit: Option<CommitArgs>,
) -> PyResult<(u64, u64, u64, u64, u64, u64, u64)> {
    let inner = ds.inner.clone();
    let (_, s) = run_op(py, commit, |props, _| {
        let before_timestamp = older_than_micros.map(|us| {
            let now = SystemTime::now();
            if us >= 0 {
                now.checked_sub(Duration::from_micros(us as u64)).unwrap_or(SystemTime::UNIX_EPOCH)
            } else {
                now + Duration::from_micros(us.unsigned_abs())
            }
        });
        let before_version = retain_versions.map(|n| cleanup::retain_versions_bound(&inner, n)).transpose()?;
        let policy = CleanupPolicy { before_timestamp, before_version, delete_unverified, error_if_tagged_old_versions };
        cleanup::cleanup_old_versions(&inner, &policy, props)
    })?;
    Ok((
        s.bytes_removed,
        s.old_versions,
        s.data_files_removed,
        s.transaction_files_removed,
        s.deletion_files_removed,
        s.index_files_removed,
        s.failed_deletes,
    ))
}

/// Add the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compaction_plan, m)?)?;
    m.add_function(wrap_pyfunction!(compaction_execute, m)?)?;
    m.add_function(wrap_pyfunction!(compaction_commit, m)?)?;
    m.add_function(wrap_pyfunction!(compact_files, m)?)?;
    m.add_function(wrap_pyfunction!(fragment_summary, m)?)?;
    m.add_function(wrap_pyfunction!(cleanup_old_versions, m)?)?;
    Ok(())
}
