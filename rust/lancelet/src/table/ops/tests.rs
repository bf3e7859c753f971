//! Tests of update / merge_insert / delete and their conflict handling.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt64Type};
use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};

use super::delete::delete;
use super::merge_insert::{merge_insert, MergeInsertParams, WhenMatched, WhenNotMatchedBySource};
use super::retry::RetryPolicy;
use super::update::{update, UpdateParams};
use crate::error::Error;
use crate::ids::random_u64;
use crate::proto::table as pb;
use crate::table::commit::transaction_of;
use crate::table::dataset::{Dataset, VersionRef};
use crate::table::hooks::{install, FailHook};
use crate::table::manifest::{list_versions, read_manifest};
use crate::table::properties::CommitProperties;
use crate::table::scan::{ScanOptions, Scanner};
use crate::table::write::{write_dataset, WriteParams};

use pb::transaction::Operation;

fn batch(ids: impl IntoIterator<Item = i64>) -> RecordBatch {
    let ids: Vec<i64> = ids.into_iter().collect();
    let s: Vec<String> = ids.iter().map(|i| format!("s{i}")).collect();
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false), Field::new("s", DataType::Utf8, true)]));
    RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(ids)), Arc::new(StringArray::from(s))]).unwrap()
}

fn create(name: &str, n: i64, stable: bool) -> (String, Arc<Dataset>) {
    let uri = std::env::temp_dir().join(format!("lancelet-ops-{name}-{}", random_u64())).to_string_lossy().into_owned();
    let b = batch(0..n);
    let p = WriteParams { max_rows_per_file: 10, enable_stable_row_ids: stable, ..Default::default() };
    let ds = write_dataset(&uri, b.schema(), vec![Ok(b)].into_iter(), &p, &Default::default()).unwrap().dataset;
    (uri, Arc::new(ds))
}

/// (id, s, _rowid) of every row, in scan order.
fn rows(ds: &Dataset) -> Vec<(i64, String, u64)> {
    let ds = Arc::new(ds.checkout(VersionRef::Number(ds.version())).unwrap());
    let s = Scanner::new(ds, ScanOptions { with_row_id: true, ..Default::default() }).unwrap();
    let mut out = Vec::new();
    for b in s.collect().unwrap() {
        let id = b.column(0).as_primitive::<Int64Type>();
        let st = b.column(1).as_string::<i32>();
        let rid = b.column(2).as_primitive::<UInt64Type>();
        for i in 0..b.num_rows() {
            out.push((id.value(i), st.value(i).to_string(), rid.value(i)));
        }
    }
    out
}

fn txn(ds: &Dataset, version: u64) -> pb::Transaction {
    let loc = list_versions(ds.root()).unwrap().into_iter().find(|l| l.version == version).unwrap();
    transaction_of(ds.root(), &read_manifest(ds.root(), &loc.name).unwrap()).unwrap().unwrap()
}

fn set(col: &str, sql: &str, predicate: Option<&str>) -> UpdateParams {
    UpdateParams { updates: vec![(col.into(), sql.into())], predicate: predicate.map(Into::into) }
}

#[test]
fn update_rewrites_rows_keeping_stable_ids() {
    let (uri, ds) = create("upd", 25, true);
    let (ds2, n) = update(&ds, &set("s", "upper(s)", Some("id % 4 = 1")), &Default::default()).unwrap().into_parts();
    assert_eq!(n, 6);
    let got = rows(&ds2);
    assert_eq!(got.len(), 25);
    // untouched rows first (scan order), then the rewritten ones in scan order
    let moved: Vec<_> = got[19..].to_vec();
    assert_eq!(moved.iter().map(|r| r.0).collect::<Vec<_>>(), vec![1, 5, 9, 13, 17, 21]);
    assert!(moved.iter().all(|r| r.1 == format!("S{}", r.0) && r.2 == r.0 as u64), "{moved:?}");
    let t = txn(&ds2, 2);
    let Some(Operation::Update(u)) = &t.operation else { panic!("{t:?}") };
    assert_eq!(u.updated_fragments.len(), 3);
    assert!(u.removed_fragment_ids.is_empty());
    assert_eq!(u.new_fragments.len(), 1);
    assert_eq!(u.fields_for_preserving_frag_bitmap, vec![1]);
    // the new fragment follows the old ones and keeps created-at versions
    let last = ds2.fragments().last().unwrap();
    assert_eq!(last.id, 3);
    assert_eq!(ds2.manifest().next_row_id, 25);
    let created = crate::table::row_meta::created_at(None, last).unwrap();
    assert_eq!(created, vec![(6, 1)]);
    // an update matching nothing still commits
    let (ds3, n) = update(&Arc::new(ds2), &set("s", "'x'", Some("id > 1000")), &Default::default()).unwrap().into_parts();
    assert_eq!((n, ds3.version()), (0, 3));
    assert!(matches!(&txn(&ds3, 3).operation, Some(Operation::Update(u)) if u.new_fragments.is_empty() && u.updated_fragments.is_empty()));
    let _ = std::fs::remove_dir_all(&uri);
}

#[test]
fn update_bad_input() {
    let (uri, ds) = create("updbad", 5, false);
    for (col, sql, pred, want) in [
        ("zz", "1", None, "no column \"zz\""),
        ("id", "zz + 1", None, "zz"),
        ("id", "id +", None, "syntax"),
        ("id", "'abc'", None, "abc"),
        ("id", "1", Some("zz > 1"), "zz"),
        ("id", "NULL", None, "non-nullable"),
    ] {
        let e = update(&ds, &set(col, sql, pred), &Default::default()).unwrap_err();
        assert!(matches!(e, Error::InvalidInput { .. }) && e.to_string().contains(want), "{col} {sql}: {e}");
    }
    assert!(update(&ds, &UpdateParams::default(), &Default::default()).is_err());
    assert_eq!(Dataset::open(&uri, None).unwrap().version(), 1);
    let _ = std::fs::remove_dir_all(&uri);
}

fn failing(step: &str) -> FailHook {
    let name = step.to_string();
    Arc::new(move |s: &str| if s == name { Err(Error::io("hook", format!("injected failure at {s}"))) } else { Ok(()) })
}

#[test]
fn failure_at_each_step_leaves_dataset_unchanged() {
    for step in ["data_file", "deletion_file", "transaction_file", "manifest"] {
        for op in ["update", "merge_insert", "delete"] {
            if step == "data_file" && op == "delete" {
                continue;
            }
            let (uri, ds) = create("fail", 25, true);
            let before = rows(&ds);
            let _hook = install(&uri, failing(step));
            let r = match op {
                "update" => update(&ds, &set("s", "'x'", Some("id < 12")), &Default::default()).map(|_| ()),
                "delete" => delete(&ds, "id < 12", &Default::default()).map(|_| ()),
                _ => {
                    let p = MergeInsertParams {
                        on: vec!["id".into()],
                        when_matched: WhenMatched::UpdateAll { condition: None },
                        insert_not_matched: true,
                        ..Default::default()
                    };
                    let b = batch([3, 30]);
                    merge_insert(&ds, b.schema(), vec![b], &p, &Default::default()).map(|_| ())
                }
            };
            let e = r.unwrap_err();
            assert!(e.to_string().contains("injected"), "{step} {op}: {e}");
            let now = Dataset::open(&uri, None).unwrap();
            assert_eq!(now.version(), 1, "{step} {op}");
            assert_eq!(rows(&now), before);
            let _ = std::fs::remove_dir_all(&uri);
        }
    }
}

#[test]
fn concurrent_deletes_of_other_rows_are_merged() {
    let (uri, ds) = create("merge", 25, false);
    let stale = ds.clone();
    // Another writer deletes id 2 (fragment 0) after we read version 1.
    delete(&ds, "id = 2", &Default::default()).unwrap();
    // Our update touches fragment 0 too, other rows: rebased, deletions merged.
    let no_rerun = CommitProperties { retry: RetryPolicy { conflict_retries: 0, ..Default::default() }, ..Default::default() };
    let (ds3, n) = update(&stale, &set("s", "'u'", Some("id = 1 or id = 11")), &no_rerun).unwrap().into_parts();
    assert_eq!(n, 2);
    let got = rows(&ds3);
    assert_eq!(got.len(), 24);
    assert!(!got.iter().any(|r| r.0 == 2));
    assert_eq!(got.iter().filter(|r| r.1 == "u").count(), 2);
    let t = txn(&ds3, 3);
    assert_eq!(t.read_version, 2, "a rebased update records the version it was rebased on");
    // A stale delete of a row the update moved must re-run; with no re-runs it fails.
    let e = delete(&stale, "id = 1", &no_rerun).unwrap_err();
    assert!(matches!(e, Error::Conflict { .. }), "{e}");
    assert_eq!(Dataset::open(&uri, None).unwrap().version(), 3);
    // With re-runs it deletes the row where it now lives.
    let (ds4, n) = delete(&stale, "id = 1", &Default::default()).unwrap().into_parts();
    assert_eq!((n, ds4.version()), (1, 4));
    assert!(!rows(&ds4).iter().any(|r| r.0 == 1));
    let _ = std::fs::remove_dir_all(&uri);
}

#[test]
fn merge_insert_upsert_and_deletes() {
    let (uri, ds) = create("mi", 12, true);
    let p = MergeInsertParams {
        on: vec!["id".into()],
        when_matched: WhenMatched::UpdateAll { condition: None },
        insert_not_matched: true,
        ..Default::default()
    };
    let src = batch([6, 50, 1, 51]);
    let (ds2, st) = merge_insert(&ds, src.schema(), vec![src.clone()], &p, &Default::default()).unwrap().into_parts();
    assert_eq!((st.inserted, st.updated, st.deleted), (2, 2, 0));
    let got = rows(&ds2);
    let tail: Vec<(i64, u64)> = got[10..].iter().map(|r| (r.0, r.2)).collect();
    assert_eq!(tail, vec![(1, 1), (6, 6), (50, 12), (51, 13)]);
    // created-at: updated rows keep version 1, inserted rows are version 2
    let last = ds2.fragments().last().unwrap();
    assert_eq!(crate::table::row_meta::created_at(None, last).unwrap(), vec![(2, 1), (2, 2)]);
    assert_eq!(ds2.manifest().next_row_id, 14);
    // Ambiguous: two source rows match one dataset row.
    let dup = batch([3, 3]);
    let e = merge_insert(&Arc::new(ds2), dup.schema(), vec![dup.clone()], &p, &Default::default()).unwrap_err();
    assert!(matches!(e, Error::InvalidInput { .. }) && e.to_string().contains("id = 3"), "{e}");
    // Delete matched rows and, by source, the rest where id > 8.
    let ds = Arc::new(Dataset::open(&uri, None).unwrap());
    let p = MergeInsertParams {
        on: vec!["id".into()],
        when_matched: WhenMatched::Delete,
        when_not_matched_by_source: WhenNotMatchedBySource::Delete { condition: Some("id > 8 and id < 50".into()) },
        ..Default::default()
    };
    let src = batch([0, 1, 99]);
    let (ds3, st) = merge_insert(&ds, src.schema(), vec![src], &p, &Default::default()).unwrap().into_parts();
    assert_eq!((st.inserted, st.updated, st.deleted), (0, 0, 5));
    let ids: Vec<i64> = rows(&ds3).iter().map(|r| r.0).collect();
    assert_eq!(ids, vec![2, 3, 4, 5, 7, 8, 6, 50, 51]);
    // Condition naming both sides.
    let p = MergeInsertParams {
        on: vec!["id".into()],
        when_matched: WhenMatched::UpdateAll { condition: Some("target.s < source.s and target.id > 3".into()) },
        ..Default::default()
    };
    let src = batch([2, 4, 5]);
    let src = RecordBatch::try_new(src.schema(), vec![src.column(0).clone(), Arc::new(StringArray::from(vec!["s9", "s0", "s9"]))]).unwrap();
    let (ds4, st) = merge_insert(&Arc::new(ds3), src.schema(), vec![src.clone()], &p, &Default::default()).unwrap().into_parts();
    assert_eq!(st.updated, 1);
    assert!(rows(&ds4).iter().any(|r| r.0 == 5 && r.1 == "s9"));
    // A bare name both sides have is ambiguous.
    let p =
        MergeInsertParams { on: vec!["id".into()], when_matched: WhenMatched::UpdateAll { condition: Some("s > 'a'".into()) }, ..Default::default() };
    let e = merge_insert(&Arc::new(ds4), src.schema(), vec![src], &p, &Default::default()).unwrap_err();
    assert!(e.to_string().contains("both the source and the dataset"), "{e}");
    let _ = std::fs::remove_dir_all(&uri);
}

/// Every operation takes the same commit properties and records them in
/// its transaction; each returns the dataset it made and its metrics.
#[test]
fn every_operation_records_its_commit_properties() {
    use crate::table::evolve::{add, alter};
    use crate::table::optimize::{compact_files, CompactionOptions};
    use crate::table::properties::COMMIT_MESSAGE_KEY;
    use crate::table::write::{insert, restore};

    let (uri, _) = create("props", 25, true);
    let props = |op: &str| CommitProperties {
        commit_message: Some(format!("{op} by a test")),
        transaction_properties: [("op".to_string(), op.to_string()), ("job".to_string(), "42".to_string())].into(),
        ..Default::default()
    };
    let check = |ds: &Dataset, op: &str| {
        let t = txn(ds, ds.version());
        assert_eq!(t.transaction_properties.get("op").map(String::as_str), Some(op), "{op}: {:?}", t.transaction_properties);
        assert_eq!(t.transaction_properties.get("job").map(String::as_str), Some("42"), "{op}");
        assert_eq!(t.transaction_properties.get(COMMIT_MESSAGE_KEY), Some(&format!("{op} by a test")), "{op}");
        // The `.txn` file holds the same transaction as the manifest.
        let name = &ds.manifest().transaction_file;
        let bytes = std::fs::read(format!("{uri}/_transactions/{name}")).unwrap();
        assert_eq!(<pb::Transaction as prost::Message>::decode(bytes.as_slice()).unwrap(), t, "{op}");
    };
    let ds = Arc::new(Dataset::open(&uri, None).unwrap());
    let b = batch(100..105);
    let c = insert(&ds, vec![Ok(b)].into_iter(), &props("insert")).unwrap();
    assert_eq!((c.metrics.fragments_added, c.metrics.rows_written), (1, 5));
    check(&c.dataset, "insert");
    let c = delete(&Arc::new(c.dataset), "id < 3", &props("delete")).unwrap();
    assert_eq!(c.metrics, 3);
    check(&c.dataset, "delete");
    let c = update(&Arc::new(c.dataset), &set("s", "'u'", Some("id = 7")), &props("update")).unwrap();
    assert_eq!(c.metrics, 1);
    check(&c.dataset, "update");
    let src = batch([8, 200]);
    let p = MergeInsertParams {
        on: vec!["id".into()],
        when_matched: WhenMatched::UpdateAll { condition: None },
        insert_not_matched: true,
        ..Default::default()
    };
    let c = merge_insert(&Arc::new(c.dataset), src.schema(), vec![src], &p, &props("merge_insert")).unwrap();
    assert_eq!((c.metrics.inserted, c.metrics.updated), (1, 1));
    check(&c.dataset, "merge_insert");
    let c = add::add_columns_sql(&c.dataset, &[("d".into(), "id * 2".into())], &Default::default(), &props("add_columns")).unwrap();
    check(&c.dataset, "add_columns");
    let c = alter::drop_columns(&c.dataset, &["d".into()], &props("drop_columns")).unwrap();
    check(&c.dataset, "drop_columns");
    let c = crate::table::ops::index::create_scalar_index(&Arc::new(c.dataset), "id", "BTREE", None, false, &props("create_index")).unwrap();
    check(&c.dataset, "create_index");
    let opts = CompactionOptions { target_rows_per_fragment: 1000, ..Default::default() };
    let c = compact_files(&Arc::new(c.dataset), &opts, &props("compact")).unwrap();
    assert!(c.metrics.fragments_removed > 1, "{:?}", c.metrics);
    check(&c.dataset, "compact");
    let old = c.dataset.checkout(VersionRef::Number(2)).unwrap();
    let c = restore(&old, &props("restore")).unwrap();
    check(&c.dataset, "restore");
    // Without properties, nothing is recorded.
    let c = delete(&Arc::new(c.dataset), "id = 100", &Default::default()).unwrap();
    assert!(txn(&c.dataset, c.dataset.version()).transaction_properties.is_empty());
    let _ = std::fs::remove_dir_all(&uri);
}

/// A delete rebased over a concurrent one keeps its properties.
#[test]
fn rebased_commits_keep_their_properties() {
    let (uri, ds) = create("propsrebase", 25, false);
    let stale = ds.clone();
    delete(&ds, "id = 2", &Default::default()).unwrap();
    let props = CommitProperties { commit_message: Some("late".into()), ..Default::default() };
    let c = delete(&stale, "id = 15", &props).unwrap();
    let t = txn(&c.dataset, c.dataset.version());
    assert_eq!(t.read_version, 2, "rebased");
    assert_eq!(t.transaction_properties.get(crate::table::properties::COMMIT_MESSAGE_KEY).map(String::as_str), Some("late"));
    let _ = std::fs::remove_dir_all(&uri);
}
