//! Unit tests of nearest search: the flat top-k against a brute-force
//! sort, and the index orchestration (§11) with a fake [`VectorIndex`]
//! whose distances are the exact ones plus an offset, so that re-ranking
//! shows in the results.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int64Type};
use arrow_array::{FixedSizeListArray, Float32Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use roaring::RoaringBitmap;

use super::ann::IndexRoute;
use super::*;
use crate::ids::random_u64;
use crate::index::vector::{AllowedRows, AnnQuery, AnnResult, VectorIndexType};
use crate::table::write::{write_dataset, WriteParams};

const DIM: usize = 8;

/// Deterministic clustered vectors: 5 centres, small noise.
fn vectors(n: usize) -> Vec<f32> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let centres: Vec<f32> = (0..5 * DIM).map(|_| rnd() * 20.0).collect();
    (0..n).flat_map(|i| (0..DIM).map(move |d| (i, d)).collect::<Vec<_>>()).map(|(i, d)| centres[(i % 5) * DIM + d] + rnd()).collect()
}

fn create(n: usize, per_file: u64) -> (Arc<Dataset>, Vec<f32>) {
    let uri = std::env::temp_dir().join(format!("lancelet-nearest-{}", random_u64())).to_string_lossy().into_owned();
    let v = vectors(n);
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("vec", DataType::FixedSizeList(item.clone(), DIM as i32), true),
    ]));
    let fsl = FixedSizeListArray::new(item, DIM as i32, Arc::new(Float32Array::from(v.clone())), None);
    let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from_iter_values(0..n as i64)), Arc::new(fsl)]).unwrap();
    let p = WriteParams { max_rows_per_file: per_file, ..Default::default() };
    let ds = write_dataset(&uri, schema, vec![Ok(b)].into_iter(), &p, &Default::default()).unwrap().dataset;
    (Arc::new(ds), v)
}

fn query(q: Vec<f32>, k: usize) -> NearestScan {
    NearestScan {
        nearest: Nearest {
            column: "vec".into(),
            queries: q,
            num_queries: 1,
            batch: false,
            k,
            metric: None,
            probes: Probes::default(),
            refine_factor: None,
            ef: None,
            use_index: true,
            distance_range: (None, None),
        },
        columns: Some(vec!["id".into()]),
        filter: None,
        prefilter: false,
        fast_search: false,
        with_row_id: true,
        limit: None,
        offset: 0,
    }
}

/// `(id, distance)` of a result.
fn ids(b: &RecordBatch) -> Vec<(i64, f32)> {
    let id = b.column(0).as_primitive::<Int64Type>();
    let d = b.column(1).as_primitive::<Float32Type>();
    (0..b.num_rows()).map(|i| (id.value(i), d.value(i))).collect()
}

/// Brute force: ids of the k nearest (squared L2), ties by id (= address
/// order here).
fn brute(v: &[f32], q: &[f32], k: usize, keep: impl Fn(usize) -> bool) -> Vec<(i64, f32)> {
    let mut all: Vec<(i64, f32)> =
        v.chunks_exact(DIM).enumerate().filter(|(i, _)| keep(*i)).map(|(i, x)| (i as i64, crate::index::vector::distance::l2_sq(x, q))).collect();
    all.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    all.truncate(k);
    all
}

#[test]
fn flat_equals_brute_force() {
    let (ds, v) = create(1000, 300);
    let q: Vec<f32> = v[17 * DIM..18 * DIM].iter().map(|x| x + 0.25).collect();
    let got = ids(&search(&ds, &query(q.clone(), 12)).unwrap());
    assert_eq!(got, brute(&v, &q, 12, |_| true));
    // k above the row count: every row.
    assert_eq!(search(&ds, &query(q.clone(), 5000)).unwrap().num_rows(), 1000);
    // distance_range is applied before the top-k.
    let mut s = query(q.clone(), 5);
    let lo = got[3].1;
    s.nearest.distance_range = (Some(lo), None);
    let r = ids(&search(&ds, &s).unwrap());
    assert_eq!(r, brute(&v, &q, 1000, |_| true).into_iter().filter(|x| x.1 >= lo).take(5).collect::<Vec<_>>());
}

/// An exact in-memory "index" over the rows of some fragments; its
/// distances are the exact ones plus `offset`.
#[derive(Debug)]
struct FakeIndex {
    rows: Vec<(u64, Vec<f32>)>,
    offset: f32,
}

impl VectorIndex for FakeIndex {
    fn index_type(&self) -> VectorIndexType {
        VectorIndexType::IvfFlat
    }
    fn distance_type(&self) -> DistanceType {
        DistanceType::L2
    }
    fn dimension(&self) -> usize {
        DIM
    }
    fn num_partitions(&self) -> usize {
        1
    }
    fn search(&self, q: &AnnQuery, allowed: Option<&AllowedRows>) -> Result<AnnResult> {
        let mut rows: Vec<(u64, f32)> = self
            .rows
            .iter()
            .filter(|(id, _)| allowed.is_none_or(|a| a.contains(*id)))
            .map(|(id, x)| (*id, crate::index::vector::distance::l2_sq(x, &q.vector) + self.offset))
            .filter(|(_, d)| super::flat::in_range(*d, q.distance_range))
            .collect();
        rows.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        rows.truncate(q.k);
        Ok(AnnResult { rows, partitions_searched: 1 })
    }
}

fn fake(ds: &Dataset, v: &[f32], fragments: &[u64], offset: f32) -> (IndexRoute, Vec<Arc<dyn VectorIndex>>) {
    let mut covered = RoaringBitmap::new();
    let mut rows = Vec::new();
    let mut first = 0usize;
    for f in ds.fragments() {
        let n = f.physical_rows as usize;
        if fragments.contains(&f.id) {
            covered.insert(f.id as u32);
            for o in 0..n {
                rows.push(((f.id << 32) | o as u64, v[(first + o) * DIM..(first + o + 1) * DIM].to_vec()));
            }
        }
        first += n;
    }
    let route = IndexRoute { name: "vec_idx".into(), metric: DistanceType::L2, segments: Vec::new(), covered };
    (route, vec![Arc::new(FakeIndex { rows, offset }) as Arc<dyn VectorIndex>])
}

#[test]
fn index_distances_are_the_index_s_without_refine() {
    let (ds, v) = create(600, 300);
    let q: Vec<f32> = v[5 * DIM..6 * DIM].to_vec();
    let (r, ix) = fake(&ds, &v, &[0, 1], 100.0);
    let got = ids(&search_with_index(&ds, &query(q.clone(), 6), &r, &ix).unwrap());
    let want: Vec<(i64, f32)> = brute(&v, &q, 6, |_| true).into_iter().map(|(i, d)| (i, d + 100.0)).collect();
    assert_eq!(got, want);
}

#[test]
fn refine_and_unindexed_fragments_use_exact_distances() {
    let (ds, v) = create(900, 300);
    let q: Vec<f32> = v[7 * DIM..8 * DIM].iter().map(|x| x - 0.1).collect();
    // refine_factor re-ranks with exact distances.
    let (r, ix) = fake(&ds, &v, &[0, 1, 2], 100.0);
    let mut s = query(q.clone(), 5);
    s.nearest.refine_factor = Some(2);
    assert_eq!(ids(&search_with_index(&ds, &s, &r, &ix).unwrap()), brute(&v, &q, 5, |_| true));
    // Fragment 2 not covered: searched flat, the union re-ranked exactly.
    let (r, ix) = fake(&ds, &v, &[0, 1], 100.0);
    assert_eq!(ids(&search_with_index(&ds, &query(q.clone(), 5), &r, &ix).unwrap()), brute(&v, &q, 5, |_| true));
    // fast_search: the indexed fragments only, index distances.
    let mut s = query(q.clone(), 5);
    s.fast_search = true;
    let want: Vec<(i64, f32)> = brute(&v, &q, 5, |i| i < 600).into_iter().map(|(i, d)| (i, d + 100.0)).collect();
    assert_eq!(ids(&search_with_index(&ds, &s, &r, &ix).unwrap()), want);
}

#[test]
fn prefilter_reaches_the_index_and_postfilter_cuts() {
    let (ds, v) = create(600, 300);
    let q: Vec<f32> = v[3 * DIM..4 * DIM].to_vec();
    let (r, ix) = fake(&ds, &v, &[0, 1], 0.0);
    let mut s = query(q.clone(), 6);
    s.filter = Some(crate::expr::parse_filter("id >= 250", ds.schema()).unwrap());
    s.prefilter = true;
    assert_eq!(ids(&search_with_index(&ds, &s, &r, &ix).unwrap()), brute(&v, &q, 6, |i| i >= 250));
    s.prefilter = false;
    let post: Vec<(i64, f32)> = brute(&v, &q, 6, |_| true).into_iter().filter(|x| x.0 >= 250).collect();
    assert_eq!(ids(&search_with_index(&ds, &s, &r, &ix).unwrap()), post);
    // The flat path agrees.
    assert_eq!(ids(&search(&ds, &s).unwrap()), post);
}

#[test]
fn bad_queries_are_typed_errors() {
    let (ds, v) = create(50, 100);
    let mut s = query(v[..DIM - 1].to_vec(), 3);
    assert!(matches!(search(&ds, &s), Err(Error::InvalidInput { .. })));
    s.nearest.queries = v[..DIM].to_vec();
    s.nearest.k = 0;
    assert!(matches!(search(&ds, &s), Err(Error::InvalidInput { .. })));
    s.nearest.k = 3;
    s.nearest.column = "id".into();
    assert!(matches!(search(&ds, &s), Err(Error::InvalidInput { .. })));
}
