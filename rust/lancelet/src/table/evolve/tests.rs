//! Round trips of every schema operation on small datasets of each
//! version, with deletions and stable row ids; failure injection at each
//! step; conflicts through a stale dataset.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray, StructArray};
use arrow_schema::{DataType, Field, Fields, Schema};

use super::add::{add_columns_from_stream, add_columns_sql, add_columns_with, add_null_columns, AddOptions};
use super::alter::{alter_columns, cast_allowed, drop_columns, Alteration};
use super::join::merge;
use super::*;
use crate::error::Error;
use crate::ids::random_u64;
use crate::table::dataset::{Dataset, VersionRef};
use crate::table::hooks::{install, FailHook};
use crate::table::ops::delete::delete;
use crate::table::scan::{ScanOptions, Scanner};
use crate::table::write::{write_dataset, WriteParams};
use pb::transaction::Operation;

const VERSIONS: [FileVersion; 3] = [FileVersion::V2_0, FileVersion::V2_1, FileVersion::V2_2];

fn tmp(name: &str) -> String {
    std::env::temp_dir().join(format!("lancelet-evolve-{name}-{}", random_u64())).to_string_lossy().into_owned()
}

/// x: 0..n (not null), s: "s{x}" (null every 3rd), st: {a: x*10, b: -x}.
fn base(n: i64) -> RecordBatch {
    let st_fields = Fields::from(vec![Field::new("a", DataType::Int64, true), Field::new("b", DataType::Int64, true)]);
    let st = StructArray::new(
        st_fields.clone(),
        vec![Arc::new(Int64Array::from_iter_values((0..n).map(|i| i * 10))), Arc::new(Int64Array::from_iter_values((0..n).map(|i| -i)))],
        None,
    );
    let schema = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Int64, false),
        Field::new("s", DataType::Utf8, true),
        Field::new("st", DataType::Struct(st_fields), true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(0..n)),
            Arc::new(StringArray::from_iter((0..n).map(|i| (i % 3 != 0).then(|| format!("s{i}"))))),
            Arc::new(st),
        ],
    )
    .unwrap()
}

/// A dataset of 25 rows in fragments of 10, rows 3, 4 and 12 deleted.
fn dataset(version: FileVersion, stable: bool) -> (String, Arc<Dataset>) {
    let uri = tmp("ds");
    let b = base(25);
    let p = WriteParams { max_rows_per_file: 10, data_storage_version: Some(version), enable_stable_row_ids: stable, ..Default::default() };
    let ds = Arc::new(write_dataset(&uri, b.schema(), vec![Ok(b)].into_iter(), &p, &Default::default()).unwrap().dataset);
    let (ds, n) = delete(&ds, "x = 3 or x = 4 or x = 12", &Default::default()).unwrap().into_parts();
    assert_eq!(n, 3);
    (uri, Arc::new(ds))
}

fn live_x() -> Vec<i64> {
    (0..25).filter(|x| ![3, 4, 12].contains(x)).collect()
}

fn scan(ds: &Dataset, cols: &[&str]) -> RecordBatch {
    let ds = Arc::new(Dataset::open(ds.uri(), Some(VersionRef::Number(ds.version()))).unwrap());
    let s = Scanner::new(ds, ScanOptions { columns: Some(cols.iter().map(|c| c.to_string()).collect()), ..Default::default() }).unwrap();
    let batches = s.collect().unwrap();
    arrow_select::concat::concat_batches(s.schema(), &batches).unwrap()
}

fn i64s(a: &ArrayRef) -> Vec<Option<i64>> {
    a.as_primitive::<Int64Type>().iter().collect()
}

fn op_of(ds: &Dataset) -> pb::transaction::Operation {
    ds.manifest_file().transaction().unwrap().unwrap().operation.unwrap()
}

#[test]
fn sql_columns_on_every_version() {
    for version in VERSIONS {
        for stable in [false, true] {
            let (uri, ds) = dataset(version, stable);
            let out = add_columns_sql(
                &ds,
                &[("y".into(), "x * 2".into()), ("t".into(), "s".into())],
                &AddOptions { batch_size: Some(4) },
                &Default::default(),
            )
            .unwrap()
            .dataset;
            let b = scan(&out, &["x", "y", "t", "s"]);
            let want: Vec<Option<i64>> = live_x().into_iter().map(|x| Some(x * 2)).collect();
            assert_eq!(i64s(b.column(1)), want, "{version} {stable}");
            assert_eq!(b.column(2).as_ref(), b.column(3).as_ref());
            // Schema: y not null (x is), t nullable; new ids after the largest (4).
            let y = out.lance_schema().fields.iter().find(|f| f.arrow.name() == "y").unwrap();
            assert_eq!((y.id, y.arrow.is_nullable()), (5, false));
            let Operation::Merge(m) = op_of(&out) else { panic!("not a merge") };
            assert!(!m.preserves_nullability, "a new non-nullable column");
            for f in &out.manifest().fragments {
                assert_eq!(f.files.len(), 2);
                assert_eq!(f.files[1].fields, vec![5, 6]);
                assert_eq!(f.files[1].column_indices, vec![0, 1]);
            }
            // The fragment files keep physical rows (deleted ones included).
            assert_eq!(out.fragments()[0].physical_rows, 10);
            let _ = std::fs::remove_dir_all(&uri);
        }
    }
}

#[test]
fn udf_reader_and_nulls() {
    let (uri, ds) = dataset(FileVersion::V2_2, true);
    // A function of _rowid and x.
    let output = Schema::new(vec![Field::new("rid", DataType::UInt64, true), Field::new("x3", DataType::Int64, true)]);
    let mut calls = 0;
    let mut f = |b: RecordBatch| -> crate::error::Result<RecordBatch> {
        calls += 1;
        assert_eq!(b.schema().field(0).name(), "x");
        assert_eq!(b.schema().field(1).name(), "_rowid");
        let x3 = arrow_arith::numeric::mul(b.column(0), &Int64Array::new_scalar(3)).unwrap();
        Ok(RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("rid", DataType::UInt64, true), Field::new("x3", DataType::Int64, true)])),
            vec![b.column(1).clone(), x3],
        )
        .unwrap())
    };
    let cols = vec!["x".to_string(), "_rowid".to_string()];
    let out = add_columns_with(&ds, &output, Some(&cols), &mut f, &AddOptions { batch_size: Some(5) }, &Default::default()).unwrap().dataset;
    assert_eq!(calls, 5); // 7 + 9 + 5 live rows in batches of 5
    let b = scan(&out, &["x", "rid", "x3"]);
    let xs: Vec<i64> = live_x();
    assert_eq!(i64s(b.column(2)), xs.iter().map(|x| Some(x * 3)).collect::<Vec<_>>());
    // stable row ids of a fresh dataset equal the positions
    assert_eq!(b.column(1).as_primitive::<arrow_array::types::UInt64Type>().values().to_vec(), xs.iter().map(|x| *x as u64).collect::<Vec<_>>());
    // A stream of values, one per live row.
    let vals: Vec<i64> = (0..22).map(|i| 100 + i).collect();
    let sch = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, true)]));
    let batches = vec![
        Ok(RecordBatch::try_new(sch.clone(), vec![Arc::new(Int64Array::from(vals[..7].to_vec()))]).unwrap()),
        Ok(RecordBatch::try_new(sch.clone(), vec![Arc::new(Int64Array::from(vals[7..].to_vec()))]).unwrap()),
    ];
    let out2 = add_columns_from_stream(&out, sch.clone(), batches.into_iter(), &AddOptions::default(), &Default::default()).unwrap().dataset;
    assert_eq!(i64s(scan(&out2, &["v"]).column(0)), vals.iter().map(|v| Some(*v)).collect::<Vec<_>>());
    // Too few and too many rows are refused and leave nothing behind.
    let files_before = std::fs::read_dir(format!("{uri}/data")).unwrap().count();
    for n in [21usize, 23] {
        let b = RecordBatch::try_new(sch.clone(), vec![Arc::new(Int64Array::from((0..n as i64).collect::<Vec<_>>()))]).unwrap();
        let sch2 = Arc::new(Schema::new(vec![Field::new("w", DataType::Int64, true)]));
        let b = RecordBatch::try_new(sch2.clone(), b.columns().to_vec()).unwrap();
        let e = add_columns_from_stream(&out2, sch2, vec![Ok(b)].into_iter(), &AddOptions::default(), &Default::default()).unwrap_err();
        assert!(matches!(e, Error::InvalidInput { .. }), "{e}");
    }
    assert_eq!(std::fs::read_dir(format!("{uri}/data")).unwrap().count(), files_before);
    assert_eq!(Dataset::open(&uri, None).unwrap().version(), out2.version());
    // All-null columns: no files.
    let nulls = Schema::new(vec![Field::new("n", DataType::Int32, true)]);
    let out3 = add_null_columns(&out2, &nulls, &Default::default()).unwrap().dataset;
    assert_eq!(out3.fragments()[0].files.len(), out2.fragments()[0].files.len());
    assert_eq!(scan(&out3, &["n"]).column(0).null_count(), 22);
    let bad = Schema::new(vec![Field::new("m", DataType::Int32, false)]);
    assert!(matches!(add_null_columns(&out3, &bad, &Default::default()), Err(Error::InvalidInput { .. })));
    let _ = std::fs::remove_dir_all(&uri);
}

#[test]
fn drop_rename_and_cast() {
    for version in VERSIONS {
        let (uri, ds) = dataset(version, false);
        let d = drop_columns(&ds, &["s".into()], &Default::default()).unwrap().dataset;
        assert_eq!(d.schema().fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>(), vec!["x", "st"]);
        let Operation::Project(p) = op_of(&d) else { panic!() };
        assert!(p.preserves_nullability);
        assert_eq!(d.fragments(), ds.fragments(), "data files untouched");
        let d = Arc::new(d);
        let alts = [
            Alteration { path: "x".into(), name: Some("xx".into()), ..Default::default() },
            Alteration { path: "st.a".into(), name: Some("aa".into()), nullable: Some(false), ..Default::default() },
        ];
        let r = Arc::new(alter_columns(&d, &alts, &Default::default()).unwrap().dataset);
        let Operation::Project(p) = op_of(&r) else { panic!() };
        assert!(!p.preserves_nullability);
        let b = scan(&r, &["xx", "st"]);
        assert_eq!(
            b.schema().field(1).data_type(),
            &DataType::Struct(Fields::from(vec![Field::new("aa", DataType::Int64, false), Field::new("b", DataType::Int64, true)]))
        );
        // Casts: top level and nested; new ids, old files keep the old ones.
        let casts = [
            Alteration { path: "xx".into(), data_type: Some(DataType::Int32), ..Default::default() },
            Alteration { path: "st.b".into(), data_type: Some(DataType::Int32), ..Default::default() },
        ];
        let c = alter_columns(&r, &casts, &Default::default()).unwrap().dataset;
        let Operation::Merge(_) = op_of(&c) else { panic!() };
        let b = scan(&c, &["xx", "st"]);
        assert_eq!(b.column(0).as_primitive::<Int32Type>().values().to_vec(), live_x().iter().map(|x| *x as i32).collect::<Vec<_>>());
        let st = b.column(1).as_struct();
        assert_eq!(i64s(st.column(0)), live_x().iter().map(|x| Some(x * 10)).collect::<Vec<_>>());
        assert_eq!(st.column(1).as_primitive::<Int32Type>().values().to_vec(), live_x().iter().map(|x| -*x as i32).collect::<Vec<_>>());
        let ids: Vec<i32> = c.lance_schema().fields.iter().flat_map(|f| f.preorder()).map(|f| f.id).collect();
        assert_eq!(ids, vec![5, 2, 3, 6], "{version}"); // xx and st.b got 5 and 6
        let f0 = &c.fragments()[0];
        match version {
            // 2.0 lists struct parents: the new file holds st (2), whose id
            // becomes a tombstone in the first file.
            FileVersion::V2_0 => assert_eq!((f0.files[0].fields.clone(), f0.files[1].fields.clone()), (vec![0, 1, -2, 3, 4], vec![5, 2, 6])),
            _ => assert_eq!((f0.files[0].fields.clone(), f0.files[1].fields.clone()), (vec![0, 1, 3, 4], vec![5, 6])),
        }
        // Bad alterations.
        let c = Arc::new(c);
        for (alt, what) in [
            (Alteration { path: "nope".into(), name: Some("z".into()), ..Default::default() }, "nope"),
            (Alteration { path: "xx".into(), name: Some("st".into()), ..Default::default() }, "st"),
            (Alteration { path: "xx".into(), data_type: Some(DataType::Utf8), ..Default::default() }, "xx"),
            (Alteration { path: "xx".into(), ..Default::default() }, "xx"),
        ] {
            let e = alter_columns(&c, &[alt], &Default::default()).unwrap_err();
            assert!(matches!(e, Error::InvalidInput { .. }) && e.to_string().contains(what), "{e}");
        }
        assert!(matches!(drop_columns(&c, &["xx".into(), "st".into()], &Default::default()), Err(Error::InvalidInput { .. })));
        assert_eq!(Dataset::open(&uri, None).unwrap().version(), c.version());
        let _ = std::fs::remove_dir_all(&uri);
    }
}

#[test]
fn nulls_block_not_null_and_overflow_blocks_cast() {
    let (uri, ds) = dataset(FileVersion::V2_1, false);
    let e = alter_columns(&ds, &[Alteration { path: "s".into(), nullable: Some(false), ..Default::default() }], &Default::default()).unwrap_err();
    assert!(e.to_string().contains("\"s\""), "{e}");
    let big = add_columns_sql(&ds, &[("big".into(), "x * 1000".into())], &AddOptions::default(), &Default::default()).unwrap().dataset;
    let e = alter_columns(
        &Arc::new(big),
        &[Alteration { path: "big".into(), data_type: Some(DataType::Int8), ..Default::default() }],
        &Default::default(),
    )
    .unwrap_err();
    assert!(matches!(e, Error::InvalidInput { .. }), "{e}");
    assert!(cast_allowed(&DataType::Int64, &DataType::UInt8));
    assert!(!cast_allowed(&DataType::Float64, &DataType::Utf8));
    assert!(cast_allowed(&DataType::Date32, &DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, None)));
    let _ = std::fs::remove_dir_all(&uri);
}

#[test]
fn merge_joins_on_a_key() {
    let (uri, ds) = dataset(FileVersion::V2_2, false);
    let sch = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true), Field::new("w", DataType::Utf8, true)]));
    let right = RecordBatch::try_new(
        sch.clone(),
        vec![
            Arc::new(Int64Array::from(vec![Some(5), Some(0), Some(5), Some(99), None])),
            Arc::new(StringArray::from(vec!["five", "zero", "FIVE", "x", "null"])),
        ],
    )
    .unwrap();
    let out = merge(&ds, sch.clone(), vec![right.clone()], "x", "k", &Default::default()).unwrap().dataset;
    let b = scan(&out, &["x", "w"]);
    let w: Vec<Option<&str>> = b.column(1).as_string::<i32>().iter().collect();
    let want: Vec<Option<&str>> = live_x()
        .iter()
        .map(|x| match x {
            0 => Some("zero"),
            5 => Some("FIVE"),
            _ => None,
        })
        .collect();
    assert_eq!(w, want);
    for (l, r, msg) in [("nope", "k", "nope"), ("x", "nope", "nope"), ("s", "k", "type")] {
        let e = merge(&ds, sch.clone(), vec![right.clone()], l, r, &Default::default()).unwrap_err();
        assert!(matches!(e, Error::InvalidInput { .. }) && e.to_string().contains(msg), "{e}");
    }
    let sch2 = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true), Field::new("s", DataType::Utf8, true)]));
    let r2 = RecordBatch::try_new(sch2.clone(), right.columns().to_vec()).unwrap();
    assert!(merge(&ds, sch2, vec![r2], "x", "k", &Default::default()).unwrap_err().to_string().contains("\"s\""));
    let _ = std::fs::remove_dir_all(&uri);
}

#[test]
fn failures_leave_the_dataset_as_it_was() {
    for fail_at in ["data_file", "transaction_file", "manifest"] {
        let (uri, ds) = dataset(FileVersion::V2_2, false);
        let name = fail_at.to_string();
        let hook: FailHook = Arc::new(move |s: &str| if s == name { Err(Error::io("hook", format!("injected failure at {s}"))) } else { Ok(()) });
        let files_before = std::fs::read_dir(format!("{uri}/data")).unwrap().count();
        let _hook = install(&uri, hook);
        let e = add_columns_sql(&ds, &[("y".into(), "x + 1".into())], &AddOptions::default(), &Default::default()).unwrap_err();
        assert!(e.to_string().contains("injected"), "{e}");
        if fail_at != "data_file" {
            let e = drop_columns(&ds, &["s".into()], &Default::default()).unwrap_err();
            assert!(e.to_string().contains("injected"), "{e}");
        }
        let now = Dataset::open(&uri, None).unwrap();
        assert_eq!(now.version(), ds.version(), "{fail_at}");
        assert_eq!(std::fs::read_dir(format!("{uri}/data")).unwrap().count(), files_before, "{fail_at}: new files removed");
        let _ = std::fs::remove_dir_all(&uri);
    }
}

#[test]
fn stale_schema_changes_conflict() {
    let (uri, ds) = dataset(FileVersion::V2_2, false);
    // An append lands first: a Merge read before it conflicts, a Project rebases.
    let b = base(3);
    let appended = crate::table::write::insert(&ds, vec![Ok(b)].into_iter(), &Default::default()).unwrap().dataset;
    let files_before = std::fs::read_dir(format!("{uri}/data")).unwrap().count();
    let e = add_columns_sql(&ds, &[("y".into(), "x + 1".into())], &AddOptions::default(), &Default::default()).unwrap_err();
    assert!(matches!(e, Error::Conflict { .. }), "{e}");
    assert_eq!(std::fs::read_dir(format!("{uri}/data")).unwrap().count(), files_before, "conflicting merge removed its files");
    let p = drop_columns(&ds, &["s".into()], &Default::default()).unwrap().dataset;
    assert_eq!(p.version(), appended.version() + 1);
    assert_eq!(p.fragments().len(), appended.fragments().len());
    assert_eq!(scan(&p, &["x"]).num_rows(), 25);
    // A Project read before another Project conflicts.
    let e = drop_columns(&ds, &["st".into()], &Default::default()).unwrap_err();
    assert!(matches!(e, Error::Conflict { .. }), "{e}");
    let _ = std::fs::remove_dir_all(&uri);
}

#[test]
fn field_id_bookkeeping() {
    let (uri, ds) = dataset(FileVersion::V2_2, false);
    // Dropping the field with the largest id does not free its id.
    let d = Arc::new(drop_columns(&ds, &["st".into()], &Default::default()).unwrap().dataset);
    assert_eq!(max_field_id(d.manifest()), 4);
    let n = add_null_columns(&d, &Schema::new(vec![Field::new("n", DataType::Int64, true)]), &Default::default()).unwrap().dataset;
    assert_eq!(n.lance_schema().fields.last().unwrap().id, 5);
    // Adding a field to a struct (2.1+): ids in pre-order of the merged schema.
    let (uri2, ds2) = dataset(FileVersion::V2_2, false);
    let add = Schema::new(vec![
        Field::new("st", DataType::Struct(Fields::from(vec![Field::new("c", DataType::Int32, true)])), true),
        Field::new("z", DataType::Int32, true),
    ]);
    let m = add_null_columns(&ds2, &add, &Default::default()).unwrap().dataset;
    let ids: Vec<(String, i32)> = m.lance_schema().fields.iter().flat_map(|f| f.preorder()).map(|f| (f.arrow.name().clone(), f.id)).collect();
    assert_eq!(ids.iter().map(|(n, i)| format!("{n}{i}")).collect::<Vec<_>>(), vec!["x0", "s1", "st2", "a3", "b4", "c5", "z6"]);
    let b = scan(&m, &["st"]);
    assert_eq!(b.column(0).as_struct().column(2).null_count(), 22);
    assert_eq!(i64s(b.column(0).as_struct().column(0)), live_x().iter().map(|x| Some(x * 10)).collect::<Vec<_>>());
    // 2.0 cannot add struct fields.
    let (uri3, ds3) = dataset(FileVersion::V2_0, false);
    assert!(matches!(add_null_columns(&ds3, &add, &Default::default()), Err(Error::InvalidInput { .. })));
    for u in [uri, uri2, uri3] {
        let _ = std::fs::remove_dir_all(&u);
    }
}
