//! Index round trips on seeded random data: build each kind into memory
//! storage, reopen it, and check every query against evaluating the
//! predicate on every row with the Arrow kernels the filter engine uses.

use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{Array, ArrayRef, BooleanArray, Float64Array, Int32Array, Scalar, StringArray, UInt64Array};
use arrow_ord::cmp;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::rowset::RowSet;
use super::*;
use crate::file::FileVersion;
use crate::io::Storage;

fn store(name: &str) -> Storage {
    let n = crate::ids::new_uuid();
    Storage::open(&format!("memory://idx-{name}-{n}/dir")).unwrap()
}

fn expected(mask: &BooleanArray, ids: &UInt64Array) -> RowSet {
    RowSet::from_ids((0..mask.len()).filter(|&i| mask.is_valid(i) && mask.value(i)).map(|i| ids.value(i)).collect())
}

fn ids_for(n: usize, rng: &mut StdRng) -> UInt64Array {
    // Addresses over a few fragments, in scan order.
    let mut v = Vec::with_capacity(n);
    let (mut frag, mut off) = (0u64, 0u64);
    for _ in 0..n {
        if rng.random_ratio(1, 3000) {
            frag += 1 + rng.random_range(0..3);
            off = 0;
        }
        off += 1 + u64::from(rng.random_ratio(1, 10));
        v.push((frag << 32) | off);
    }
    UInt64Array::from(v)
}

fn check_queries(kind: IndexKind, values: ArrayRef, ids: UInt64Array, probes: &ArrayRef, version: FileVersion) {
    let dir = store(kind.param_name());
    let data = TrainingData { values: values.clone(), ids: ids.clone() };
    let files = build(kind, &dir, version, &data).unwrap();
    assert!(!files.is_empty());
    let idx = open(kind, &dir).unwrap();
    for p in 0..probes.len() {
        let v = probes.slice(p, 1);
        if v.is_null(0) {
            continue;
        }
        let s = Scalar::new(v.clone());
        let eq = cmp::eq(&values, &s).unwrap();
        assert_eq!(idx.search(&IndexQuery::Equals(v.clone())).unwrap(), expected(&eq, &ids), "{kind:?} = {v:?}");
        for (incl, lt) in [(false, cmp::lt(&values, &s).unwrap()), (true, cmp::lt_eq(&values, &s).unwrap())] {
            let q = IndexQuery::Range { lower: None, upper: Some(RangeEnd { value: v.clone(), inclusive: incl }) };
            assert_eq!(idx.search(&q).unwrap(), expected(&lt, &ids), "{kind:?} < {v:?} ({incl})");
        }
        for (incl, gt) in [(false, cmp::gt(&values, &s).unwrap()), (true, cmp::gt_eq(&values, &s).unwrap())] {
            let q = IndexQuery::Range { lower: Some(RangeEnd { value: v.clone(), inclusive: incl }), upper: None };
            assert_eq!(idx.search(&q).unwrap(), expected(&gt, &ids), "{kind:?} > {v:?} ({incl})");
        }
        let w = probes.slice((p * 7 + 3) % probes.len(), 1);
        if w.is_valid(0) {
            let both = arrow_arith::boolean::and(&cmp::gt_eq(&values, &s).unwrap(), &cmp::lt(&values, &Scalar::new(w.clone())).unwrap()).unwrap();
            let q = IndexQuery::Range {
                lower: Some(RangeEnd { value: v.clone(), inclusive: true }),
                upper: Some(RangeEnd { value: w.clone(), inclusive: false }),
            };
            assert_eq!(idx.search(&q).unwrap(), expected(&both, &ids), "{kind:?} between");
            let inl = arrow_select::concat::concat(&[v.as_ref(), w.as_ref()]).unwrap();
            let either = arrow_arith::boolean::or(&eq, &cmp::eq(&values, &Scalar::new(w.clone())).unwrap()).unwrap();
            assert_eq!(idx.search(&IndexQuery::In(inl)).unwrap(), expected(&either, &ids), "{kind:?} in");
        }
    }
    let nulls = arrow_arith::boolean::is_null(&values).unwrap();
    assert_eq!(idx.search(&IndexQuery::IsNull).unwrap(), expected(&nulls, &ids), "{kind:?} is null");
}

#[test]
fn ints_strings_floats_round_trip() {
    for (seed, version) in [(1u64, FileVersion::V2_0), (2, FileVersion::V2_1), (3, FileVersion::V2_2)] {
        let mut rng = StdRng::seed_from_u64(seed);
        let n = 9000 + rng.random_range(0..3000);
        let ids = ids_for(n, &mut rng);
        let ints: ArrayRef = Arc::new((0..n).map(|_| (!rng.random_ratio(1, 15)).then(|| rng.random_range(-50..200))).collect::<Int32Array>());
        let strs: ArrayRef =
            Arc::new((0..n).map(|_| (!rng.random_ratio(1, 20)).then(|| format!("k{:03}", rng.random_range(0..300)))).collect::<StringArray>());
        let specials = [f64::NAN, -0.0, 0.0, f64::INFINITY, -1.5];
        let floats: ArrayRef = Arc::new(
            (0..n)
                .map(|_| match rng.random_range(0..10) {
                    0 => None,
                    1 => Some(specials[rng.random_range(0..specials.len())]),
                    _ => Some(rng.random_range(-20..20) as f64 / 4.0),
                })
                .collect::<Float64Array>(),
        );
        let int_probes: ArrayRef = Arc::new(Int32Array::from(vec![-60, -50, 0, 7, 100, 199, 250]));
        let str_probes: ArrayRef = Arc::new(StringArray::from(vec!["", "k000", "k150", "k299", "z"]));
        let float_probes: ArrayRef = Arc::new(Float64Array::from(vec![f64::NAN, -0.0, 0.0, 1.25, -30.0, f64::INFINITY]));
        for kind in [IndexKind::BTree, IndexKind::Bitmap] {
            check_queries(kind, ints.clone(), ids.clone(), &int_probes, version);
            check_queries(kind, strs.clone(), ids.clone(), &str_probes, version);
            check_queries(kind, floats.clone(), ids.clone(), &float_probes, version);
        }
    }
}

#[test]
fn empty_and_all_null() {
    let ids = UInt64Array::from(Vec::<u64>::new());
    let v: ArrayRef = Arc::new(Int32Array::from(Vec::<i32>::new()));
    let probes: ArrayRef = Arc::new(Int32Array::from(vec![1]));
    for kind in [IndexKind::BTree, IndexKind::Bitmap] {
        check_queries(kind, v.clone(), ids.clone(), &probes, FileVersion::V2_1);
        let nulls: ArrayRef = Arc::new(Int32Array::from(vec![None; 5000]));
        check_queries(kind, nulls, UInt64Array::from((0..5000u64).collect::<Vec<_>>()), &probes, FileVersion::V2_2);
    }
}

#[test]
fn label_lists() {
    let mut rng = StdRng::seed_from_u64(7);
    let n = 3000;
    let mut b = ListBuilder::new(StringBuilder::new());
    for _ in 0..n {
        if rng.random_ratio(1, 12) {
            b.append(false);
            continue;
        }
        for _ in 0..rng.random_range(0..4) {
            if rng.random_ratio(1, 20) {
                b.values().append_null();
            } else {
                b.values().append_value(format!("t{}", rng.random_range(0..8)));
            }
        }
        b.append(true);
    }
    let lists: ArrayRef = Arc::new(b.finish());
    let ids = UInt64Array::from((0..n as u64).map(|i| (i / 1000) << 32 | (i % 1000)).collect::<Vec<_>>());
    for version in [FileVersion::V2_0, FileVersion::V2_1, FileVersion::V2_2] {
        let dir = store("ll");
        build(IndexKind::LabelList, &dir, version, &TrainingData { values: lists.clone(), ids: ids.clone() }).unwrap();
        let idx = open(IndexKind::LabelList, &dir).unwrap();
        for vals in [vec![Some("t1")], vec![Some("t1"), Some("t3")], vec![None], vec![Some("t2"), None], vec![Some("nope")]] {
            let va: ArrayRef = Arc::new(StringArray::from(vals.clone()));
            for (func, q) in [
                (crate::expr::array::ArrayFunc::Any, IndexQuery::HasAny(va.clone())),
                (crate::expr::array::ArrayFunc::All, IndexQuery::HasAll(va.clone())),
            ] {
                let mask = crate::expr::array::eval(func, &lists, &va).unwrap();
                assert_eq!(idx.search(&q).unwrap(), expected(&mask, &ids), "{func:?} {vals:?} {version:?}");
            }
        }
        let nulls = arrow_arith::boolean::is_null(&lists).unwrap();
        assert_eq!(idx.search(&IndexQuery::IsNull).unwrap(), expected(&nulls, &ids));
    }
}

#[test]
fn corrupt_index_files_are_errors() {
    let dir = store("corrupt");
    let v: ArrayRef = Arc::new(Int32Array::from((0..10_000).collect::<Vec<i32>>()));
    let ids = UInt64Array::from((0..10_000u64).collect::<Vec<_>>());
    build(IndexKind::BTree, &dir, FileVersion::V2_1, &TrainingData { values: v, ids }).unwrap();
    // A lookup that is not a lookup.
    let bad = dir.child(btree::LOOKUP_FILE).unwrap();
    let bytes = dir.child(btree::DATA_FILE).unwrap().read_all().unwrap();
    bad.write_all(bytes).unwrap();
    let e = open(IndexKind::BTree, &dir).unwrap_err();
    assert!(matches!(e, crate::Error::Corrupt { .. }), "{e}");
    // Truncated files.
    let short = dir.child(btree::DATA_FILE).unwrap().read_all().unwrap().slice(..100);
    dir.child(btree::LOOKUP_FILE).unwrap().write_all(short).unwrap();
    assert!(open(IndexKind::BTree, &dir).is_err());
    // Missing directory.
    assert!(matches!(open(IndexKind::Bitmap, &store("missing")), Err(crate::Error::NotFound { .. })));
}
