//! Exact (flat) KNN: every live row's distance to every query, keeping the
//! best `k` per query in a bounded heap (never all distances).
//!
//! The scan reads the vector column (and, for a prefilter, the filter's
//! columns, which the scanner evaluates first) with `_rowid` and
//! `_rowaddr`; its units are decoded ahead on the rayon pool, and the
//! distance pass runs on a window of batches at a time, in parallel, each
//! batch into heaps of its own that are then merged. Rows with a null
//! vector or a NaN distance are left out (pylance drops null distances with
//! `FilterExec: _distance IS NOT NULL`); `distance_range` is applied before
//! the top-k, as pylance's flat search does (k rows inside the range).

use std::borrow::Cow;
use std::collections::BinaryHeap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float16Type, Float32Type, Float64Type, UInt64Type, UInt8Type};
use arrow_array::{Array, FixedSizeListArray, RecordBatch};
use rayon::prelude::*;

use super::{ElementType, Hit, Nearest, VectorColumn};
use crate::error::{Error, Result};
use crate::index::vector::distance::{dot, hamming, l2_sq, norm_sq};
use crate::index::vector::DistanceType;
use crate::table::dataset::Dataset;
use crate::table::scan::{RowFilter, ScanOptions, Scanner};

/// Rows per scanned batch.
const BATCH_ROWS: usize = 8192;

/// A heap entry ordered by pylance's key (distance, then row id).
#[derive(Debug, Clone, Copy)]
struct Entry(Hit);

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.0.cmp_key(&o.0).is_eq()
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.cmp_key(&o.0)
    }
}

/// The best `k` hits seen (a max-heap of the worst kept on top).
#[derive(Debug, Clone)]
pub struct TopK {
    k: usize,
    heap: BinaryHeap<Entry>,
}

impl TopK {
    /// Keep at most `k`.
    pub fn new(k: usize) -> Self {
        TopK { k, heap: BinaryHeap::with_capacity(k.min(1 << 16) + 1) }
    }

    /// Offer a hit.
    #[inline]
    pub fn push(&mut self, h: Hit) {
        if self.heap.len() < self.k {
            self.heap.push(Entry(h));
        } else if let Some(top) = self.heap.peek() {
            if h.cmp_key(&top.0).is_lt() {
                self.heap.pop();
                self.heap.push(Entry(h));
            }
        }
    }

    /// The distance a hit must beat to enter (infinite until full).
    #[inline]
    fn bound(&self) -> f32 {
        if self.heap.len() < self.k {
            f32::INFINITY
        } else {
            self.heap.peek().map_or(f32::INFINITY, |e| e.0.distance)
        }
    }

    /// Take in another heap's hits.
    pub fn merge(&mut self, o: TopK) {
        for e in o.heap {
            self.push(e.0);
        }
    }

    /// The hits, best first.
    pub fn into_sorted(self) -> Vec<Hit> {
        self.heap.into_sorted_vec().into_iter().map(|e| e.0).collect()
    }
}

/// Distances of one metric against prepared queries.
#[derive(Debug)]
pub struct Kernel {
    metric: DistanceType,
    dim: usize,
    queries: Vec<f32>,
    /// Query norms (cosine).
    norms: Vec<f32>,
    /// Queries as bytes (hamming).
    bytes: Vec<u8>,
}

impl Kernel {
    /// Prepare `queries` (row-major, `dim` each).
    pub fn new(metric: DistanceType, dim: usize, queries: &[f32]) -> Self {
        let norms = queries.chunks_exact(dim.max(1)).map(|q| norm_sq(q).sqrt()).collect();
        // pylance coerces the query to float32, then compares it as uint8.
        let bytes = queries.iter().map(|&v| v as u8).collect();
        Kernel { metric, dim, queries: queries.to_vec(), norms, bytes }
    }

    /// A kernel of query `q` of `k` alone.
    pub fn single(k: &Kernel, q: usize) -> Kernel {
        Kernel::new(k.metric, k.dim, &k.queries[q * k.dim..(q + 1) * k.dim])
    }

    /// Distance of float vector `x` to query `q`.
    #[inline]
    pub fn float(&self, q: usize, x: &[f32]) -> f32 {
        let qv = &self.queries[q * self.dim..(q + 1) * self.dim];
        match self.metric {
            DistanceType::L2 => l2_sq(x, qv),
            DistanceType::Dot => 1.0 - dot(x, qv),
            DistanceType::Cosine => 1.0 - dot(x, qv) / (norm_sq(x).sqrt() * self.norms[q]),
            DistanceType::Hamming => {
                let xb: Vec<u8> = x.iter().map(|&v| v as u8).collect();
                self.bytes_distance(q, &xb)
            }
        }
    }

    /// Distance of uint8 vector `x` to query `q` (hamming).
    #[inline]
    pub fn bytes_distance(&self, q: usize, x: &[u8]) -> f32 {
        hamming(x, &self.bytes[q * self.dim..(q + 1) * self.dim]) as f32
    }
}

/// The queries as the search compares them: pylance casts the float32
/// query to a float16 column's type (its distances then differ from a
/// float32 query's by up to 1e-3 relative), and computes in float32.
pub fn column_queries(q: &[f32], element: ElementType) -> Vec<f32> {
    match element {
        ElementType::F16 => q.iter().map(|&v| half::f16::from_f32(v).to_f32()).collect(),
        _ => q.to_vec(),
    }
}

/// Whether `d` is kept by `distance_range` (lower inclusive, upper
/// exclusive); NaN never is.
#[inline]
pub fn in_range(d: f32, range: (Option<f32>, Option<f32>)) -> bool {
    !d.is_nan() && range.0.is_none_or(|lo| d >= lo) && range.1.is_none_or(|hi| d < hi)
}

/// The values of a vector batch as f32 (borrowed when they are f32) or
/// bytes.
enum Values<'a> {
    Floats(Cow<'a, [f32]>),
    Bytes(&'a [u8]),
}

fn values<'a>(fsl: &'a FixedSizeListArray, element: ElementType) -> Values<'a> {
    let v = fsl.values();
    match element {
        ElementType::F32 => Values::Floats(Cow::Borrowed(v.as_primitive::<Float32Type>().values())),
        ElementType::F16 => Values::Floats(Cow::Owned(v.as_primitive::<Float16Type>().values().iter().map(|x| x.to_f32()).collect())),
        ElementType::F64 => Values::Floats(Cow::Owned(v.as_primitive::<Float64Type>().values().iter().map(|&x| x as f32).collect())),
        ElementType::U8 => Values::Bytes(v.as_primitive::<UInt8Type>().values()),
    }
}

/// Top-k of one batch `[vector, _rowid, _rowaddr]` for every query.
pub fn batch_topk(
    batch: &RecordBatch,
    vc: &VectorColumn,
    kernel: &Kernel,
    k: usize,
    nq: usize,
    range: (Option<f32>, Option<f32>),
) -> Result<Vec<TopK>> {
    let fsl = batch.column(0).as_fixed_size_list_opt().ok_or_else(|| Error::internal("vector column is not a fixed-size list"))?;
    let ids = batch.column(1).as_primitive::<UInt64Type>().values();
    let addrs = batch.column(2).as_primitive::<UInt64Type>().values();
    let dim = vc.dim;
    let vals = values(fsl, vc.element);
    let mut heaps = vec![TopK::new(k); nq];
    for i in 0..fsl.len() {
        if fsl.is_null(i) {
            continue;
        }
        let off = fsl.value_offset_at(i);
        for (q, heap) in heaps.iter_mut().enumerate() {
            let d = match &vals {
                Values::Floats(f) => kernel.float(q, &f[off..off + dim]),
                Values::Bytes(b) => kernel.bytes_distance(q, &b[off..off + dim]),
            };
            // Cheap rejection before building the hit.
            if d > heap.bound() || !in_range(d, range) {
                continue;
            }
            heap.push(Hit { distance: d, row_id: ids[i], addr: addrs[i] });
        }
    }
    Ok(heaps)
}

/// Exact top-k of every query over the live rows (of `fragments` when
/// given; rows passing `prefilter` when given).
pub fn search(
    ds: &Arc<Dataset>,
    n: &Nearest,
    vc: &VectorColumn,
    metric: DistanceType,
    prefilter: Option<Arc<dyn RowFilter>>,
    fragments: Option<Vec<u64>>,
) -> Result<Vec<Vec<Hit>>> {
    let nq = n.num_queries;
    let mut total = vec![TopK::new(n.k); nq];
    if fragments.as_ref().is_some_and(|f| f.is_empty()) {
        return Ok(vec![Vec::new(); nq]);
    }
    let opts = ScanOptions {
        columns: Some(vec![n.column.clone()]),
        filter: prefilter,
        with_row_id: true,
        with_row_address: true,
        batch_size: Some(BATCH_ROWS),
        fragments,
        ..Default::default()
    };
    let scanner = Scanner::new(ds.clone(), opts)?;
    let kernel = Kernel::new(metric, vc.dim, &column_queries(&n.queries, vc.element));
    let window = crate::process::pool().current_num_threads().max(1) * 2;
    let mut pending: Vec<RecordBatch> = Vec::with_capacity(window);
    let flush = |pending: &mut Vec<RecordBatch>, total: &mut Vec<TopK>| -> Result<()> {
        let parts = crate::process::install(|| {
            pending.par_iter().map(|b| batch_topk(b, vc, &kernel, n.k, nq, n.distance_range)).collect::<Result<Vec<_>>>()
        })?;
        pending.clear();
        for heaps in parts {
            for (t, h) in total.iter_mut().zip(heaps) {
                t.merge(h);
            }
        }
        Ok(())
    };
    for b in scanner.stream()? {
        pending.push(b?);
        if pending.len() >= window {
            flush(&mut pending, &mut total)?;
        }
    }
    flush(&mut pending, &mut total)?;
    Ok(total.into_iter().map(TopK::into_sorted).collect())
}
