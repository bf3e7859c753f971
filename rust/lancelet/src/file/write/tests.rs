//! Writer tests: round trips through [`crate::file::FileReader`], shredder
//! properties, and an ignored interop helper used with pylance.

use std::sync::Arc;

use arrow_array::builder::*;
use arrow_array::*;
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields, Schema};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::file::write::shred::{shred, LeafPath, PageLevels};
use crate::file::{FileReader, FileVersion, FileWriter};

fn nulls(rng: &mut StdRng, n: usize, p: f64) -> Option<NullBuffer> {
    Some(NullBuffer::from((0..n).map(|_| !rng.random_bool(p)).collect::<Vec<bool>>()))
}

fn strings(rng: &mut StdRng, n: usize, maxlen: usize, card: Option<usize>) -> ArrayRef {
    let mut b = StringBuilder::new();
    for _ in 0..n {
        if rng.random_bool(0.1) {
            b.append_null();
        } else {
            let k = match card {
                Some(c) => rng.random_range(0..c),
                None => rng.random_range(0..1_000_000),
            };
            let len = (k * 7) % (maxlen + 1);
            let s: String = format!("v{k}-").chars().cycle().take(len).collect();
            b.append_value(s);
        }
    }
    Arc::new(b.finish())
}

/// A batch with one column per interesting type.
fn sample(rng: &mut StdRng, n: usize, maps: bool, struct_nulls: bool) -> RecordBatch {
    let i32s: ArrayRef = Arc::new(Int32Array::new((0..n).map(|_| rng.random_range(-1000..1000)).collect(), nulls(rng, n, 0.2)));
    let seq: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n as i64));
    let f64s: ArrayRef = Arc::new(Float64Array::from_iter_values((0..n).map(|_| rng.random::<f64>())));
    let bools: ArrayRef = Arc::new(BooleanArray::new((0..n).map(|_| rng.random_bool(0.5)).collect(), nulls(rng, n, 0.1)));
    let runs: ArrayRef = Arc::new(Int32Array::from_iter_values((0..n).map(|i| (i / 300) as i32)));
    let konst: ArrayRef = Arc::new(Int16Array::from_iter_values((0..n).map(|_| 7)));
    let allnull: ArrayRef = Arc::new(Int32Array::new_null(n));
    let s = strings(rng, n, 20, None);
    let lowcard = strings(rng, n, 12, Some(5));
    let big = strings(rng, n, 600, None);
    let dec: ArrayRef = Arc::new(Decimal128Array::from_iter_values((0..n).map(|i| i as i128 * 3)).with_precision_and_scale(20, 2).unwrap());
    let fsb: ArrayRef = Arc::new(FixedSizeBinaryArray::try_from_iter((0..n).map(|i| [(i % 251) as u8; 3])).unwrap());
    let ts: ArrayRef = Arc::new(TimestampMicrosecondArray::from_iter_values((0..n).map(|i| i as i64 * 1000)).with_timezone("UTC"));
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let fsl: ArrayRef = Arc::new(FixedSizeListArray::new(
        item.clone(),
        4,
        Arc::new(Float32Array::new((0..4 * n).map(|i| i as f32).collect(), nulls(rng, 4 * n, 0.05))),
        nulls(rng, n, 0.1),
    ));
    let wide_item = Arc::new(Field::new("item", DataType::Float32, true));
    let wide: ArrayRef = Arc::new(FixedSizeListArray::new(
        wide_item.clone(),
        80,
        Arc::new(Float32Array::from_iter_values((0..80 * n).map(|i| i as f32))),
        nulls(rng, n, 0.2),
    ));
    // list<int32> with nulls, empties and null items.
    let mut offs = vec![0i32];
    for _ in 0..n {
        let len = rng.random_range(0..4);
        offs.push(offs.last().unwrap() + len);
    }
    let total = *offs.last().unwrap() as usize;
    let li = Arc::new(Field::new("item", DataType::Int32, true));
    let list: ArrayRef = Arc::new(ListArray::new(
        li.clone(),
        OffsetBuffer::new(offs.clone().into()),
        Arc::new(Int32Array::new((0..total as i32).collect(), nulls(rng, total, 0.1))),
        nulls(rng, n, 0.1).map(|nb| {
            // Null lists must be empty here (arrow allows garbage; keep it simple).
            NullBuffer::from((0..n).map(|i| nb.is_valid(i) || offs[i] != offs[i + 1]).collect::<Vec<_>>())
        }),
    ));
    // struct<x: int32, y: string>
    let sf = Fields::from(vec![Field::new("x", DataType::Int32, true), Field::new("y", DataType::Utf8, true)]);
    let st: ArrayRef = Arc::new(StructArray::new(
        sf.clone(),
        vec![Arc::new(Int32Array::from_iter_values(0..n as i32)), strings(rng, n, 8, None)],
        if struct_nulls { nulls(rng, n, 0.2) } else { None },
    ));
    // large_list<struct<a: int64>>
    let ef = Fields::from(vec![Field::new("a", DataType::Int64, true)]);
    let mut loffs = vec![0i64];
    for _ in 0..n {
        loffs.push(loffs.last().unwrap() + rng.random_range(0..3));
    }
    let lt = *loffs.last().unwrap() as usize;
    let items = StructArray::new(
        ef.clone(),
        vec![Arc::new(Int64Array::from_iter_values(0..lt as i64))],
        if struct_nulls { nulls(rng, lt, 0.1) } else { None },
    );
    let litem = Arc::new(Field::new("item", DataType::Struct(ef.clone()), true));
    let lls: ArrayRef = Arc::new(LargeListArray::new(litem.clone(), OffsetBuffer::new(loffs.into()), Arc::new(items), None));
    let dict: ArrayRef = Arc::new((0..n).map(|i| ["a", "bb", "ccc"][i % 3]).collect::<DictionaryArray<arrow_array::types::Int32Type>>());
    let nul: ArrayRef = Arc::new(NullArray::new(n));
    let mut fields = vec![
        Field::new("i32", DataType::Int32, true),
        Field::new("seq", DataType::Int64, false),
        Field::new("f64", DataType::Float64, false),
        Field::new("b", DataType::Boolean, true),
        Field::new("runs", DataType::Int32, false),
        Field::new("konst", DataType::Int16, false),
        Field::new("allnull", DataType::Int32, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("lowcard", DataType::Utf8, true),
        Field::new("big", DataType::Utf8, true),
        Field::new("dec", DataType::Decimal128(20, 2), false),
        Field::new("fsb", DataType::FixedSizeBinary(3), false),
        Field::new("ts", DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, Some("UTC".into())), false),
        Field::new("fsl", DataType::FixedSizeList(item, 4), true),
        Field::new("wide", DataType::FixedSizeList(wide_item, 80), true),
        Field::new("list", DataType::List(li), true),
        Field::new("st", DataType::Struct(sf), true),
        Field::new("lls", DataType::LargeList(litem), false),
        Field::new("dict", DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)), false),
        Field::new("nul", DataType::Null, true),
    ];
    let mut cols = vec![i32s, seq, f64s, bools, runs, konst, allnull, s, lowcard, big, dec, fsb, ts, fsl, wide, list, st, lls, dict, nul];
    if maps {
        let mut mb = MapBuilder::new(None, StringBuilder::new(), Int32Builder::new());
        for i in 0..n {
            match i % 4 {
                0 => mb.append(false).unwrap(),
                1 => mb.append(true).unwrap(),
                _ => {
                    mb.keys().append_value(format!("k{i}"));
                    mb.values().append_value(i as i32);
                    mb.append(true).unwrap();
                }
            }
        }
        let m = mb.finish();
        fields.push(Field::new("m", m.data_type().clone(), true));
        cols.push(Arc::new(m));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap()
}

fn path(name: &str) -> String {
    let dir = std::env::temp_dir().join("lancelet-writer-tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name).display().to_string()
}

fn write_file(p: &str, batches: &[RecordBatch], version: FileVersion, page_bytes: Option<usize>) -> u64 {
    let mut w = FileWriter::create(p, &batches[0].schema(), version).unwrap();
    if let Some(b) = page_bytes {
        w.set_page_bytes(b);
    }
    for b in batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap()
}

fn check_roundtrip(version: FileVersion, maps: bool, struct_nulls: bool, page_bytes: Option<usize>, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let batches = vec![sample(&mut rng, 700, maps, struct_nulls), sample(&mut rng, 1500, maps, struct_nulls)];
    let p = path(&format!("rt-{version}-{seed}-{}.lance", page_bytes.unwrap_or(0)));
    write_file(&p, &batches, version, page_bytes);
    let r = FileReader::open(&p).unwrap();
    assert_eq!(r.num_rows(), 2200);
    let all = r.read_range(&r.projection(None).unwrap(), 0..2200).unwrap();
    let expected = arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
    let mut bad = Vec::new();
    for (i, f) in expected.schema().fields().iter().enumerate() {
        let (got, want) = (all.column(i), expected.column(i));
        if got.data_type() != want.data_type() {
            bad.push(format!("{}: type {} vs {}", f.name(), got.data_type(), want.data_type()));
            continue;
        }
        if let Some(row) = (0..want.len()).find(|&r| got.slice(r, 1).to_data() != want.slice(r, 1).to_data()) {
            bad.push(format!("{}: row {row}: got {:?} want {:?}", f.name(), got.slice(row, 1), want.slice(row, 1)));
        }
    }
    assert!(bad.is_empty(), "{version}: {}", bad.join("\n"));
}

#[test]
fn roundtrip_v2_2() {
    check_roundtrip(FileVersion::V2_2, true, true, None, 1);
}

#[test]
fn roundtrip_v2_1() {
    check_roundtrip(FileVersion::V2_1, false, true, None, 2);
}

#[test]
fn roundtrip_v2_2_many_pages() {
    check_roundtrip(FileVersion::V2_2, true, true, Some(4096), 3);
}

#[test]
fn rejects_maps_before_2_2_and_mismatched_batches() {
    let mut rng = StdRng::seed_from_u64(4);
    let b = sample(&mut rng, 10, true, false);
    for v in [FileVersion::V2_0, FileVersion::V2_1] {
        let e = FileWriter::create(&path("map.lance"), &b.schema(), v).unwrap_err();
        assert!(matches!(e, crate::Error::InvalidInput { .. }), "{e}");
    }
    let other = sample(&mut rng, 10, false, false);
    let mut w = FileWriter::create(&path("mismatch.lance"), &b.schema(), FileVersion::V2_2).unwrap();
    let e = w.write(&other).unwrap_err();
    assert!(e.to_string().contains("columns"), "{e}");
}

#[test]
fn v2_0_rejects_null_structs() {
    let mut rng = StdRng::seed_from_u64(5);
    let b = sample(&mut rng, 50, false, true);
    let mut w = FileWriter::create(&path("v20.lance"), &b.schema(), FileVersion::V2_0).unwrap();
    let e = w.write(&b).unwrap_err();
    assert!(e.to_string().contains("struct validity"), "{e}");
}

#[test]
fn v2_0_writes() {
    let mut rng = StdRng::seed_from_u64(6);
    let b = sample(&mut rng, 300, false, false);
    let p = path("v20-ok.lance");
    write_file(&p, &[b], FileVersion::V2_0, None);
    let r = FileReader::open(&p).unwrap();
    assert_eq!(r.num_rows(), 300);
}

#[test]
fn levels_of_list_of_nullable_struct() {
    // [[{a:1}, null], null, [], [{a: null}]]
    let ef = Fields::from(vec![Field::new("a", DataType::Int32, true)]);
    let items =
        StructArray::new(ef.clone(), vec![Arc::new(Int32Array::from(vec![Some(1), Some(9), None]))], Some(NullBuffer::from(vec![true, false, true])));
    let item = Arc::new(Field::new("item", DataType::Struct(ef), true));
    let f = Field::new("l", DataType::List(item.clone()), true);
    let l: ArrayRef = Arc::new(ListArray::new(
        item,
        OffsetBuffer::new(vec![0, 2, 2, 2, 3].into()),
        Arc::new(items),
        Some(NullBuffer::from(vec![true, false, true, true])),
    ));
    let pieces = shred(&f, &l).unwrap();
    assert_eq!(pieces.len(), 1);
    let p = &pieces[0];
    assert_eq!(p.rep.as_deref(), Some(&[1u16, 0, 1, 1, 1][..]));
    // full numbering: a null=1, struct null=2, list null=3, list empty=4
    assert_eq!(p.def, vec![0, 2, 3, 4, 1]);
    let path = LeafPath { kinds: vec![super::shred::LayerKind::Item, super::shred::LayerKind::Item, super::shred::LayerKind::List], max_rep: 1 };
    let lv = PageLevels::finish(&path, p.rep.clone(), p.def.clone());
    assert_eq!(lv.def.as_deref(), Some(&[0u16, 2, 3, 4, 1][..]));
    assert_eq!(lv.first_invisible, 3);
    assert_eq!(p.values.len(), 3);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Rows, visible values and levels agree for random list<int32?>.
        #[test]
        fn list_levels_are_consistent(rows in proptest::collection::vec(proptest::option::of(proptest::collection::vec(proptest::option::of(any::<i32>()), 0..5)), 0..40)) {
            let mut b = ListBuilder::new(Int32Builder::new());
            for r in &rows {
                match r {
                    None => b.append(false),
                    Some(items) => {
                        for it in items { b.values().append_option(*it); }
                        b.append(true);
                    }
                }
            }
            let a: ArrayRef = Arc::new(b.finish());
            let f = Field::new("l", a.data_type().clone(), true);
            let pieces = shred(&f, &a).unwrap();
            let p = &pieces[0];
            let rep = p.rep.as_ref().unwrap();
            prop_assert_eq!(rep.iter().filter(|&&r| r == 1).count(), rows.len());
            let visible: usize = rows.iter().flatten().map(|v| v.len()).sum();
            prop_assert_eq!(p.values.len(), visible);
            let entries: usize = rows.iter().map(|r| match r { Some(v) if !v.is_empty() => v.len(), _ => 1 }).sum();
            prop_assert_eq!(p.def.len(), entries);
            let nulls = rows.iter().flatten().flatten().filter(|x| x.is_none()).count();
            prop_assert_eq!(p.def.iter().filter(|&&d| d == 1).count(), nulls);
        }
    }
}

/// A random nested column: struct<inner: struct<a: int32, b: string>,
/// f: float64, l: list<int16>> and list<struct<x: int32, l2: list<string>>>,
/// with nulls at every level (null parents keep garbage children, null lists
/// may cover a non-empty range, as Arrow allows).
fn nested_batch(rng: &mut StdRng, n: usize, p: f64) -> RecordBatch {
    let nb = |rng: &mut StdRng, n: usize| if p > 0.0 { nulls(rng, n, p) } else { None };
    let a: ArrayRef = Arc::new(Int32Array::new((0..n as i32).collect(), nb(rng, n)));
    let b = strings(rng, n, 9, None);
    let inner_f = Fields::from(vec![Field::new("a", DataType::Int32, true), Field::new("b", DataType::Utf8, true)]);
    let inner: ArrayRef = Arc::new(StructArray::new(inner_f.clone(), vec![a, b], nb(rng, n)));
    let f: ArrayRef = Arc::new(Float64Array::new((0..n).map(|i| i as f64).collect(), nb(rng, n)));
    let mut offs = vec![0i32];
    for _ in 0..n {
        offs.push(offs.last().unwrap() + rng.random_range(0..4));
    }
    let total = *offs.last().unwrap() as usize;
    let li = Arc::new(Field::new("item", DataType::Int16, true));
    let l: ArrayRef = Arc::new(ListArray::new(
        li.clone(),
        OffsetBuffer::new(offs.into()),
        Arc::new(Int16Array::new((0..total as i16).collect(), nb(rng, total))),
        nb(rng, n),
    ));
    let top_f = Fields::from(vec![
        Field::new("inner", DataType::Struct(inner_f), true),
        Field::new("f", DataType::Float64, true),
        Field::new("l", DataType::List(li), true),
    ]);
    let top: ArrayRef = Arc::new(StructArray::new(top_f.clone(), vec![inner, f, l], nb(rng, n)));
    // list<struct<x, l2: list<string>>>
    let mut offs = vec![0i32];
    for _ in 0..n {
        offs.push(offs.last().unwrap() + rng.random_range(0..3));
    }
    let m = *offs.last().unwrap() as usize;
    let mut offs2 = vec![0i32];
    for _ in 0..m {
        offs2.push(offs2.last().unwrap() + rng.random_range(0..3));
    }
    let k = *offs2.last().unwrap() as usize;
    let si = Arc::new(Field::new("item", DataType::Utf8, true));
    let l2: ArrayRef = Arc::new(ListArray::new(si.clone(), OffsetBuffer::new(offs2.into()), strings(rng, k, 5, None), nb(rng, m)));
    let x: ArrayRef = Arc::new(Int32Array::new((0..m as i32).collect(), nb(rng, m)));
    let sf = Fields::from(vec![Field::new("x", DataType::Int32, true), Field::new("l2", DataType::List(si), true)]);
    let st: ArrayRef = Arc::new(StructArray::new(sf.clone(), vec![x, l2], nb(rng, m)));
    let item = Arc::new(Field::new("item", DataType::Struct(sf), true));
    let los: ArrayRef = Arc::new(ListArray::new(item.clone(), OffsetBuffer::new(offs.into()), st, nb(rng, n)));
    // fixed_size_list<fixed_size_list<int32, 2>, 3>
    let leaf = Arc::new(Field::new("item", DataType::Int32, true));
    let vals: ArrayRef = Arc::new(Int32Array::new((0..6 * n as i32).collect(), nb(rng, 6 * n)));
    let inner_fsl: ArrayRef = Arc::new(FixedSizeListArray::new(leaf.clone(), 2, vals, nb(rng, 3 * n)));
    let mid = Arc::new(Field::new("item", DataType::FixedSizeList(leaf, 2), true));
    let fsl2: ArrayRef = Arc::new(FixedSizeListArray::new(mid.clone(), 3, inner_fsl, nb(rng, n)));
    let schema = Schema::new(vec![
        Field::new("s", DataType::Struct(top_f), true),
        Field::new("los", DataType::List(item), true),
        Field::new("fsl2", DataType::FixedSizeList(mid, 3), true),
    ]);
    RecordBatch::try_new(Arc::new(schema), vec![top, los, fsl2]).unwrap()
}

fn assert_same(got: &RecordBatch, want: &RecordBatch) -> std::result::Result<(), String> {
    for (i, f) in want.schema().fields().iter().enumerate() {
        let (g, w) = (got.column(i), want.column(i));
        if g.len() != w.len() {
            return Err(format!("{}: {} rows vs {}", f.name(), g.len(), w.len()));
        }
        if let Some(row) = (0..w.len()).find(|&r| g.slice(r, 1).to_data() != w.slice(r, 1).to_data()) {
            return Err(format!("{}: row {row}: got {:?} want {:?}", f.name(), g.slice(row, 1), w.slice(row, 1)));
        }
    }
    Ok(())
}

mod nested_props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Sliced nested batches (nulls everywhere, empty slices included)
        /// are written without panics and read back unchanged.
        #[test]
        fn sliced_nested_roundtrip(seed in any::<u64>(), n in 0usize..60, cut in (0usize..60, 0usize..60), p in prop_oneof![Just(0.0), Just(0.3), Just(1.0)], v22 in any::<bool>()) {
            let mut rng = StdRng::seed_from_u64(seed);
            let b = nested_batch(&mut rng, n, p);
            let off = cut.0.min(n);
            let len = cut.1.min(n - off);
            let b = b.slice(off, len);
            let version = if v22 { FileVersion::V2_2 } else { FileVersion::V2_1 };
            let file = path(&format!("nested-prop-{seed}-{n}-{off}-{len}.lance"));
            let mut w = FileWriter::create(&file, &b.schema(), version).unwrap();
            w.write(&b).unwrap();
            w.write(&b).unwrap();
            w.finish().unwrap();
            let r = FileReader::open(&file).unwrap();
            let got = r.read_range(&r.projection(None).unwrap(), 0..2 * len as u64).unwrap();
            let want = arrow_select::concat::concat_batches(&b.schema(), &[b.clone(), b.clone()]).unwrap();
            if let Err(e) = assert_same(&got, &want) {
                prop_assert!(false, "{}", e);
            }
            std::fs::remove_file(&file).ok();
        }
    }
}

/// Rewrites every `*.lance` file in `$LANCELET_INTEROP_IN` with our writer
/// into `$LANCELET_INTEROP_OUT/{stem}.{version}.lance` (for checking with
/// pylance from Python).
#[test]
#[ignore]
fn interop_rewrite() {
    let (Ok(input), Ok(out)) = (std::env::var("LANCELET_INTEROP_IN"), std::env::var("LANCELET_INTEROP_OUT")) else {
        return;
    };
    for e in std::fs::read_dir(&input).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "lance") {
            continue;
        }
        let stem = p.file_stem().unwrap().to_string_lossy().to_string();
        let r = match FileReader::open(&p.display().to_string()) {
            Ok(r) => r,
            Err(e) => {
                println!("READ-FAIL {stem}: {e}");
                continue;
            }
        };
        let batch = match r.read_range(&r.projection(None).unwrap(), 0..r.num_rows()) {
            Ok(b) => b,
            Err(e) => {
                println!("READ-FAIL {stem}: {e}");
                continue;
            }
        };
        for v in [FileVersion::V2_0, FileVersion::V2_1, FileVersion::V2_2] {
            let o = format!("{out}/{stem}.{v}.lance");
            let res = FileWriter::create(&o, &batch.schema(), v).and_then(|mut w| {
                w.write(&batch)?;
                w.finish()
            });
            match res {
                Ok(n) => println!("WROTE {stem} {v} {n}"),
                Err(e) => println!("WRITE-FAIL {stem} {v}: {e}"),
            }
        }
    }
}

/// `fixed_size_list<struct<a: int32, b: utf8>, 2>` with nulls at the list,
/// struct and leaf levels (every `p`), plus an all-null column.
fn fsl_struct_batch(rng: &mut StdRng, n: usize, p: f64) -> RecordBatch {
    let sf = Fields::from(vec![Field::new("a", DataType::Int32, true), Field::new("b", DataType::Utf8, true)]);
    let mk = |rng: &mut StdRng, n: usize, p: f64| -> ArrayRef {
        let nb = |rng: &mut StdRng, k: usize| nulls(rng, k, p);
        let a: ArrayRef = Arc::new(Int32Array::new((0..2 * n as i32).collect(), nb(rng, 2 * n)));
        let b = strings(rng, 2 * n, 9, None);
        let st: ArrayRef = Arc::new(StructArray::new(sf.clone(), vec![a, b], nb(rng, 2 * n)));
        let item = Arc::new(Field::new("item", DataType::Struct(sf.clone()), true));
        Arc::new(FixedSizeListArray::new(item, 2, st, nb(rng, n)))
    };
    let c1 = mk(rng, n, p);
    let c2 = arrow_array::new_null_array(c1.data_type(), n);
    let schema = Schema::new(vec![Field::new("fs", c1.data_type().clone(), true), Field::new("fs_null", c1.data_type().clone(), true)]);
    RecordBatch::try_new(Arc::new(schema), vec![c1, c2]).unwrap()
}

#[test]
fn fsl_of_struct_v2_2_roundtrip() {
    let mut rng = StdRng::seed_from_u64(21);
    for (i, p) in [0.0, 0.2, 1.0].into_iter().enumerate() {
        let batches = vec![fsl_struct_batch(&mut rng, 40, p), fsl_struct_batch(&mut rng, 25, p)];
        let file = path(&format!("fsl-struct-{i}.lance"));
        write_file(&file, &batches, FileVersion::V2_2, if i == 1 { Some(64) } else { None });
        let r = FileReader::open(&file).unwrap();
        assert_eq!(r.num_rows(), 65);
        let got = r.read_range(&r.projection(None).unwrap(), 0..65).unwrap();
        let want = arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
        assert_same(&got, &want).unwrap();
        let got = r.read_range(&r.projection(None).unwrap(), 30..50).unwrap();
        assert_same(&got, &want.slice(30, 20)).unwrap();
    }
}

#[test]
fn fsl_of_struct_levels() {
    // Each row is `dim` level entries: layers [leaf, struct, fsl].
    let mut rng = StdRng::seed_from_u64(22);
    let b = fsl_struct_batch(&mut rng, 6, 0.3);
    let f = b.schema().field(0).clone();
    let pieces = shred(&f, b.column(0)).unwrap();
    assert_eq!(pieces.len(), 2);
    for p in &pieces {
        assert_eq!(p.num_rows, 12);
        assert_eq!(p.def.len(), 12);
        assert!(p.rep.is_none());
    }
    let paths = super::shred::leaf_paths(&f);
    assert_eq!(paths[0].1.kinds.len(), 3);
}

#[test]
fn fsl_of_struct_rejected_where_pylance_rejects() {
    let mut rng = StdRng::seed_from_u64(23);
    let b = fsl_struct_batch(&mut rng, 4, 0.0);
    for v in [FileVersion::V2_0, FileVersion::V2_1] {
        let e = FileWriter::create(&path("fsl-struct-rej.lance"), &b.schema(), v).unwrap_err();
        assert!(matches!(e, crate::Error::Unsupported { .. }) && e.to_string().contains("\"fs\""), "{e}");
    }
    // fixed_size_list<utf8> (pylance panics) and list<fsl<struct>>.
    let s = Schema::new(vec![Field::new("fstr", DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Utf8, true)), 2), true)]);
    assert!(FileWriter::create(&path("fsl-str.lance"), &s, FileVersion::V2_2).is_err());
    let l = Schema::new(vec![Field::new("l", DataType::List(Arc::new(b.schema().field(0).clone().with_name("item"))), true)]);
    assert!(FileWriter::create(&path("l-fsl-struct.lance"), &l, FileVersion::V2_2).is_err());
}

fn packed_var_batch(n: usize, struct_nulls: bool) -> RecordBatch {
    let sf = Fields::from(vec![
        Field::new("a", DataType::Int32, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("f", DataType::Float64, false),
        Field::new("b", DataType::LargeBinary, true),
    ]);
    let a: ArrayRef = Arc::new(Int32Array::from_iter_values(0..n as i32));
    let s: ArrayRef = Arc::new(StringArray::from_iter_values((0..n).map(|i| "x".repeat(i % 13))));
    let f: ArrayRef = Arc::new(Float64Array::from_iter_values((0..n).map(|i| i as f64 / 3.0)));
    let b: ArrayRef = Arc::new(LargeBinaryArray::from_iter_values((0..n).map(|i| vec![i as u8; i % 5])));
    let nb = struct_nulls.then(|| NullBuffer::from((0..n).map(|i| i % 4 != 1).collect::<Vec<_>>()));
    let st: ArrayRef = Arc::new(StructArray::new(sf.clone(), vec![a, s, f, b], nb));
    let md = std::collections::HashMap::from([("lance-encoding:packed".to_string(), "true".to_string())]);
    let schema = Schema::new(vec![Field::new("p", DataType::Struct(sf), true).with_metadata(md)]);
    RecordBatch::try_new(Arc::new(schema), vec![st]).unwrap()
}

#[test]
fn variable_packed_struct_v2_2() {
    for nulls in [false, true] {
        let b = packed_var_batch(300, nulls);
        let file = path(&format!("packed-var-{nulls}.lance"));
        write_file(&file, &[b.clone(), b.slice(7, 50)], FileVersion::V2_2, None);
        let r = FileReader::open(&file).unwrap();
        let got = r.read_range(&r.projection(None).unwrap(), 0..350).unwrap();
        let want = arrow_select::concat::concat_batches(&b.schema(), &[b.clone(), b.slice(7, 50)]).unwrap();
        assert_same(&got, &want).unwrap();
    }
    let b = packed_var_batch(3, false);
    let e = FileWriter::create(&path("packed-var-21.lance"), &b.schema(), FileVersion::V2_1).unwrap_err();
    assert!(e.to_string().contains("Variable packed struct"), "{e}");
}

#[test]
fn variable_packed_struct_rejects_child_nulls() {
    let b = packed_var_batch(3, false);
    let (fs, mut cols, nb) = b.column(0).as_any().downcast_ref::<StructArray>().unwrap().clone().into_parts();
    cols[0] = Arc::new(Int32Array::from(vec![Some(1), None, Some(3)]));
    let st: ArrayRef = Arc::new(StructArray::new(fs, cols, nb));
    let b = RecordBatch::try_new(b.schema(), vec![st]).unwrap();
    let mut w = FileWriter::create(&path("packed-var-cn.lance"), &b.schema(), FileVersion::V2_2).unwrap();
    let e = w.write(&b).unwrap_err();
    assert!(e.to_string().contains("null"), "{e}");
}

#[test]
fn packed_struct_v2_0() {
    let n = 500;
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let sf = Fields::from(vec![
        Field::new("a", DataType::Int32, true),
        Field::new("v", DataType::FixedSizeList(item.clone(), 2), true),
        Field::new("c", DataType::UInt8, true),
    ]);
    let a: ArrayRef = Arc::new(Int32Array::from_iter_values(0..n));
    let v: ArrayRef = Arc::new(FixedSizeListArray::new(item, 2, Arc::new(Float32Array::from_iter_values((0..2 * n).map(|i| i as f32))), None));
    let c: ArrayRef = Arc::new(UInt8Array::from_iter_values((0..n).map(|i| i as u8)));
    let st: ArrayRef = Arc::new(StructArray::new(sf.clone(), vec![a, v, c], None));
    let md = std::collections::HashMap::from([("lance-encoding:packed".to_string(), "true".to_string())]);
    let schema = Arc::new(Schema::new(vec![Field::new("p", DataType::Struct(sf.clone()), true).with_metadata(md.clone())]));
    let b = RecordBatch::try_new(schema.clone(), vec![st]).unwrap();
    let file = path("packed-20.lance");
    write_file(&file, &[b.clone(), b.slice(3, 100)], FileVersion::V2_0, None);
    let r = FileReader::open(&file).unwrap();
    let got = r.read_range(&r.projection(None).unwrap(), 0..600).unwrap();
    let want = arrow_select::concat::concat_batches(&schema, &[b.clone(), b.slice(3, 100)]).unwrap();
    assert_same(&got, &want).unwrap();
    // Child nulls and non fixed-width children are refused.
    let (fs, mut cols, _) = b.column(0).as_any().downcast_ref::<StructArray>().unwrap().clone().slice(0, 3).into_parts();
    cols[0] = Arc::new(Int32Array::from(vec![Some(1), None, Some(3)]));
    let nb = RecordBatch::try_new(schema.clone(), vec![Arc::new(StructArray::new(fs, cols, None))]).unwrap();
    let mut w = FileWriter::create(&path("packed-20-null.lance"), &schema, FileVersion::V2_0).unwrap();
    w.write(&nb).unwrap();
    assert!(w.finish().unwrap_err().to_string().contains("nulls"));
    let bad = Schema::new(vec![Field::new("p", DataType::Struct(Fields::from(vec![Field::new("s", DataType::Utf8, true)])), true).with_metadata(md)]);
    let e = FileWriter::create(&path("packed-20-str.lance"), &bad, FileVersion::V2_0).unwrap_err();
    assert!(matches!(e, crate::Error::Unsupported { .. }), "{e}");
}

#[test]
fn v2_0_all_null_list_of_struct_keeps_empty_item_pages() {
    let sf = Fields::from(vec![Field::new("a", DataType::Int32, true), Field::new("b", DataType::Utf8, true)]);
    let item = Arc::new(Field::new("item", DataType::Struct(sf.clone()), true));
    let empty: ArrayRef = Arc::new(StructArray::new(
        sf.clone(),
        vec![Arc::new(Int32Array::from(Vec::<i32>::new())), Arc::new(StringArray::from(Vec::<&str>::new()))],
        None,
    ));
    let l: ArrayRef = Arc::new(ListArray::new(item.clone(), OffsetBuffer::new(vec![0i32; 6].into()), empty, Some(NullBuffer::new_null(5))));
    let schema = Arc::new(Schema::new(vec![Field::new("l", DataType::List(item), true)]));
    let b = RecordBatch::try_new(schema, vec![l]).unwrap();
    let file = path("v20-null-list-struct.lance");
    write_file(&file, std::slice::from_ref(&b), FileVersion::V2_0, None);
    let r = FileReader::open(&file).unwrap();
    let got = r.read_range(&r.projection(None).unwrap(), 0..5).unwrap();
    assert_same(&got, &b).unwrap();
    // An item column without values still gets one page of 0 rows.
    for (dt, kind) in
        [(DataType::Int32, super::v2_0::Kind::Leaf), (DataType::Utf8, super::v2_0::Kind::Leaf), (DataType::Struct(sf), super::v2_0::Kind::Struct)]
    {
        let f = Field::new("x", dt.clone(), true);
        let mut c = super::v2_0::ColumnEncoder20::new(f, kind);
        c.push(arrow_array::new_empty_array(&dt)).unwrap();
        c.finish().unwrap();
        assert_eq!(c.pages.len(), 1);
        assert_eq!(c.pages[0].num_rows, 0);
    }
}

#[test]
fn blob_columns_v2_1_v2_2() {
    let md = std::collections::HashMap::from([("lance-encoding:blob".to_string(), "true".to_string())]);
    let n = 200;
    let vals: Vec<Option<Vec<u8>>> = (0..n)
        .map(|i| match i % 4 {
            0 => None,
            1 => Some(vec![]),
            _ => Some(vec![i as u8; 1 + i * 37 % 5000]),
        })
        .collect();
    let a: ArrayRef = Arc::new(LargeBinaryArray::from_iter(vals.iter().map(|v| v.as_deref())));
    let schema = Arc::new(Schema::new(vec![Field::new("b", DataType::LargeBinary, true).with_metadata(md.clone())]));
    let b = RecordBatch::try_new(schema.clone(), vec![a]).unwrap();
    for v in [FileVersion::V2_1, FileVersion::V2_2] {
        let file = path(&format!("blob-{v}.lance"));
        write_file(&file, &[b.slice(0, 120), b.slice(120, 80)], v, Some(50_000));
        let r = FileReader::open(&file).unwrap();
        let got = r.read_range(&r.projection(None).unwrap(), 0..n as u64).unwrap();
        assert_same(&got, &b).unwrap();
    }
    // Only large_binary can be a blob; 2.0 blobs are not written.
    let bad = Schema::new(vec![Field::new("b", DataType::Binary, true).with_metadata(md)]);
    assert!(matches!(FileWriter::create(&path("blob-bad.lance"), &bad, FileVersion::V2_2).unwrap_err(), crate::Error::InvalidInput { .. }));
    assert!(FileWriter::create(&path("blob-20.lance"), &schema, FileVersion::V2_0).is_err());
}

/// Sparse reads fetch only the chunks / full-zip entries holding the wanted
/// rows (`crate::file::fetch`); they must give what a full read gives.
#[test]
fn sparse_takes_match_full_reads() {
    let mut rng = StdRng::seed_from_u64(11);
    let batches = vec![sample(&mut rng, 3000, true, true), sample(&mut rng, 2000, true, true)];
    for (page_bytes, tag) in [(Some(16 * 1024), "small-pages"), (None, "one-page")] {
        let p = path(&format!("sparse-take-{tag}.lance"));
        write_file(&p, &batches, FileVersion::V2_2, page_bytes);
        let r = FileReader::open(&p).unwrap();
        let proj = r.projection(None).unwrap();
        let all = r.read_range(&proj, 0..5000).unwrap();
        for draw in 0..6 {
            let k = [1, 3, 17, 40, 90, 300][draw];
            let mut idx: Vec<u64> = (0..k).map(|_| rng.random_range(0..5000u64)).collect();
            if draw % 2 == 0 {
                idx.sort_unstable();
            }
            let got = r.take(&proj, &idx).unwrap();
            let pos = UInt32Array::from(idx.iter().map(|&i| i as u32).collect::<Vec<_>>());
            let want = crate::table::fragment::take_batch(&all, &pos).unwrap();
            assert_same(&got, &want).unwrap_or_else(|e| panic!("{tag}, {k} rows: {e}"));
        }
    }
}

/// Pages are cut as pylance cuts them: a batch of wide fixed-width values
/// (full-zip, addressed by row) stays one page however big, narrow columns
/// flush once their buffered values reach the page size (a validity bit per
/// level counted, not two bytes), and the file reads back whole and by rows.
#[test]
fn page_cuts_follow_pylance() {
    let n = 20_000usize;
    let ids: ArrayRef = Arc::new(Int64Array::from((0..n as i64).collect::<Vec<_>>()));
    let vals = Float32Array::from((0..n * 128).map(|i| (i % 9973) as f32 * 0.5).collect::<Vec<_>>());
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let vec: ArrayRef = Arc::new(FixedSizeListArray::new(item.clone(), 128, Arc::new(vals), None));
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true), Field::new("vec", DataType::FixedSizeList(item, 128), true)]));
    let batch = RecordBatch::try_new(schema, vec![ids, vec]).unwrap();
    let p = path("page-cuts.lance");
    // 160 KB of ids and 10 MB of vectors, with 1 MiB pages: the vectors
    // stay one page, the ids (under the page size) another.
    write_file(&p, std::slice::from_ref(&batch), FileVersion::V2_2, Some(1 << 20));
    let r = FileReader::open(&p).unwrap();
    assert_eq!(r.pages_for(0, &[0..n as u64]).len(), 1, "ids");
    assert_eq!(r.pages_for(1, &[0..n as u64]).len(), 1, "vectors");
    let proj = r.projection(None).unwrap();
    assert_same(&r.read_range(&proj, 0..n as u64).unwrap(), &batch).unwrap();
    let got = r.read_ranges(&proj, &[5..9, 12_345..12_400]).unwrap();
    let want = arrow_select::concat::concat_batches(&batch.schema(), &[batch.slice(5, 4), batch.slice(12_345, 55)]).unwrap();
    assert_same(&got, &want).unwrap();
    // Streamed in small batches, the vectors flush a page at the page size.
    let small: Vec<RecordBatch> = (0..n).step_by(1000).map(|s| batch.slice(s, 1000)).collect();
    write_file(&p, &small, FileVersion::V2_2, Some(1_000_000));
    let r = FileReader::open(&p).unwrap();
    let pages = r.pages_for(1, &[0..n as u64]);
    assert_eq!(pages.len(), 10, "2 batches of 512 KB per 1 MB page");
    assert!(pages.iter().all(|(_, pg)| pg.length == 2000));
    assert_same(&r.read_range(&proj, 0..n as u64).unwrap(), &batch).unwrap();
}
