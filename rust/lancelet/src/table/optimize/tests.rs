//! End-to-end compaction tests on datasets lancelet writes (pylance
//! interop and planner parity are in `tests/test_compaction.py`).

use std::sync::Arc;

use arrow_array::{Array, Int64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema};

use super::*;
use crate::error::Error;
use crate::ids::random_u64;
use crate::table::dataset::{Dataset, VersionRef};
use crate::table::hooks::{install, FailHook};
use crate::table::ops::delete::delete;
use crate::table::scan::{ScanOptions, Scanner};
use crate::table::write::{insert, write_dataset, WriteParams};

fn batch(start: i64, n: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false), Field::new("s", DataType::Utf8, true)]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(start..start + n)),
            Arc::new(StringArray::from_iter((start..start + n).map(|i| (i % 5 != 0).then(|| format!("value {i}"))))),
        ],
    )
    .unwrap()
}

fn tmp(name: &str) -> String {
    std::env::temp_dir().join(format!("lancelet-compact-{name}-{}", random_u64())).to_string_lossy().into_owned()
}

/// A dataset of `n` fragments of `rows` rows each (x = 0, 1, ...).
fn dataset(uri: &str, n: i64, rows: i64, stable: bool) -> Dataset {
    let p = WriteParams { max_rows_per_file: rows as u64, enable_stable_row_ids: stable, ..Default::default() };
    let b = batch(0, n * rows);
    write_dataset(uri, b.schema(), vec![Ok(b)].into_iter(), &p, &Default::default()).unwrap().dataset
}

/// `(x, _rowid)` of every row, in scan order.
fn rows(ds: &Dataset) -> Vec<(i64, u64)> {
    let ds = Arc::new(Dataset::open(ds.uri(), Some(VersionRef::Number(ds.version()))).unwrap());
    let opts = ScanOptions { columns: Some(vec!["x".into()]), with_row_id: true, ..Default::default() };
    let mut out = Vec::new();
    for b in Scanner::new(ds, opts).unwrap().collect().unwrap() {
        let x = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        let id = b.column(1).as_any().downcast_ref::<UInt64Array>().unwrap();
        out.extend((0..b.num_rows()).map(|i| (x.value(i), id.value(i))));
    }
    out
}

fn data_files(uri: &str) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(format!("{uri}/data")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

fn op_of(ds: &Dataset, version: u64) -> &'static str {
    let v = ds.checkout(VersionRef::Number(version)).unwrap();
    let t = crate::table::commit::transaction_of(v.root(), v.manifest_file()).unwrap().unwrap();
    crate::table::transaction::op_name(t.operation.as_ref())
}

const NO_PROGRESS: &Option<Progress> = &None;

#[test]
fn compacts_small_fragments_with_deletions() {
    for stable in [false, true] {
        let uri = tmp("basic");
        let ds = Arc::new(dataset(&uri, 10, 100, stable));
        let (ds, _) = delete(&ds, "x % 7 = 3 or x >= 940", &Default::default()).unwrap().into_parts();
        let before = rows(&ds);
        let opts = CompactionOptions { target_rows_per_fragment: 250, ..Default::default() };
        let plan = plan_compaction(&ds, &opts).unwrap();
        let ids: Vec<Vec<u64>> = plan.tasks.iter().map(|t| t.fragments.iter().map(|f| f.id).collect()).collect();
        assert_eq!(ids, vec![vec![0, 1, 2], vec![3, 4, 5], vec![6, 7, 8, 9]]);
        let (after, m) = compact_files(&Arc::new(ds), &opts, &Default::default()).unwrap().into_parts();
        assert_eq!((m.fragments_removed, m.fragments_added, m.files_removed), (10, 3, 20));
        assert_eq!(after.version(), 4);
        assert_eq!((op_of(&after, 3), op_of(&after, 4)), ("ReserveFragments", "Rewrite"));
        assert_eq!(after.fragments().iter().map(|f| f.id).collect::<Vec<_>>(), vec![10, 11, 12]);
        assert!(after.fragments().iter().all(|f| f.deletion_file.is_none()));
        let now = rows(&after);
        assert_eq!(now.iter().map(|r| r.0).collect::<Vec<_>>(), before.iter().map(|r| r.0).collect::<Vec<_>>());
        if stable {
            assert_eq!(now, before, "stable row ids carry over");
        }
        // nothing left to do: no new version
        let (same, m) = compact_files(&Arc::new(after), &opts, &Default::default()).unwrap().into_parts();
        assert_eq!((same.version(), m), (4, CompactionMetrics::default()));
        let _ = std::fs::remove_dir_all(&uri);
    }
}

#[test]
fn failure_at_every_step_leaves_the_dataset_as_it_was() {
    for step in ["data_file", "transaction_file", "manifest"] {
        for nth in [1, 2] {
            if step == "data_file" && nth == 2 {
                continue;
            }
            let uri = tmp("fail");
            let ds = Arc::new(dataset(&uri, 6, 50, true));
            let (ds, _) = delete(&ds, "x % 4 = 0", &Default::default()).unwrap().into_parts();
            let before = rows(&ds);
            let files_before = data_files(&uri);
            let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let (c, s) = (calls.clone(), step.to_string());
            let hook: FailHook = Arc::new(move |name: &str| {
                if name == s && c.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == nth {
                    return Err(Error::io("hook", format!("injected failure at {name}")));
                }
                Ok(())
            });
            let opts = CompactionOptions { target_rows_per_fragment: 1000, ..Default::default() };
            let _hook = install(&uri, hook);
            let e = compact_files(&Arc::new(ds), &opts, &Default::default()).unwrap_err();
            assert!(e.to_string().contains("injected"), "{step} #{nth}: {e}");
            let now = Dataset::open(&uri, None).unwrap();
            assert_eq!(rows(&now), before, "{step} #{nth}");
            assert_eq!(now.fragments().len(), 6, "{step} #{nth}");
            assert_eq!(data_files(&uri), files_before, "{step} #{nth}: new data files removed");
            // At most the ReserveFragments version (it changes no data) stays.
            assert!(now.version() <= 3, "{step} #{nth}");
            if now.version() == 3 {
                assert_eq!(op_of(&now, 3), "ReserveFragments");
            }
            let _ = std::fs::remove_dir_all(&uri);
        }
    }
}

#[test]
fn conflicts_and_rebases() {
    let uri = tmp("conflict");
    let ds = Arc::new(dataset(&uri, 4, 50, false));
    let opts = CompactionOptions { target_rows_per_fragment: 120, ..Default::default() };
    // tasks {0,1,2,3} -> bins [0,1,2] would cut at 150>=120 with rest 50<120 -> one bin
    let plan = plan_compaction(&ds, &opts).unwrap();
    assert_eq!(plan.tasks.len(), 1);
    let results = run_tasks(&ds, &plan, "", NO_PROGRESS).unwrap();
    // a concurrent append: rebased, the appended rows stay (before the new fragment)
    let appended = insert(&ds, vec![Ok(batch(1000, 3))].into_iter(), &Default::default()).unwrap().dataset;
    let (after, _) = commit_compaction(&ds, results, &opts, &Default::default()).unwrap().into_parts();
    let xs: Vec<i64> = rows(&after).into_iter().map(|r| r.0).collect();
    assert_eq!(xs, (1000..1003).chain(0..200).collect::<Vec<_>>());
    assert_eq!(after.version(), appended.version() + 2);
    // a concurrent delete of a rewritten fragment: refused before anything is committed
    let stale = Arc::new(after);
    let plan = plan_compaction(&stale, &CompactionOptions { target_rows_per_fragment: 10_000, ..Default::default() }).unwrap();
    assert_eq!(plan.tasks.len(), 1);
    let results = run_tasks(&stale, &plan, "", NO_PROGRESS).unwrap();
    let files_before_commit = data_files(&uri);
    let (deleted, _) = delete(&stale, "x = 5", &Default::default()).unwrap().into_parts();
    let e = commit_compaction(&stale, results, &plan.options, &Default::default()).unwrap_err();
    assert!(matches!(e, Error::Conflict { .. }), "{e}");
    let latest = Dataset::open(&uri, None).unwrap();
    assert_eq!(latest.version(), deleted.version(), "a refusal leaves no version");
    assert!(data_files(&uri).len() < files_before_commit.len(), "the refused compaction's files are removed");
    // a stale dataset's compact_files conflicts the same way
    let stale2 = Arc::new(latest.checkout(VersionRef::Number(latest.version())).unwrap());
    let (_, _) = delete(&Arc::new(latest), "x = 6", &Default::default()).unwrap().into_parts();
    let e = compact_files(&stale2, &CompactionOptions { target_rows_per_fragment: 10_000, ..Default::default() }, &Default::default()).unwrap_err();
    assert!(matches!(e, Error::Conflict { .. }), "{e}");
    let _ = std::fs::remove_dir_all(&uri);
}

#[test]
fn results_must_come_from_one_plan() {
    let uri = tmp("mixed");
    let ds = Arc::new(dataset(&uri, 4, 50, false));
    let opts = CompactionOptions { target_rows_per_fragment: 100, ..Default::default() };
    let plan = plan_compaction(&ds, &opts).unwrap();
    let mut results = run_tasks(&ds, &plan, "", NO_PROGRESS).unwrap();
    assert_eq!(results.len(), 2);
    results[1].read_version = 99;
    assert!(matches!(commit_compaction(&ds, results.clone(), &opts, &Default::default()), Err(Error::InvalidInput { .. })));
    results[1] = results[0].clone();
    assert!(matches!(commit_compaction(&ds, results, &opts, &Default::default()), Err(Error::InvalidInput { .. })));
    // a task run on another version is refused
    let other = insert(&ds, vec![Ok(batch(500, 1))].into_iter(), &Default::default()).unwrap().dataset;
    let (d2, _) = delete(&Arc::new(other), "x = 0", &Default::default()).unwrap().into_parts();
    let e = execute_task(&Arc::new(d2), &plan.tasks[0], &opts, "").unwrap_err();
    assert!(matches!(e, Error::InvalidInput { .. }), "{e}");
    let _ = std::fs::remove_dir_all(&uri);
}
