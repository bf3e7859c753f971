//! Searching an opened IVF index (FLAT, PQ or SQ storage, optionally an
//! HNSW graph per partition) the way pylance 14 does.
//!
//! 1. The query is normalized for cosine indices; partitions are ranked by
//!    the distance of their centroid ([`super::ivf::Centroids::rank`]).
//! 2. [`super::probes::plan`] gives how many are searched first; they are
//!    searched in parallel when they hold enough rows to pay for it.
//! 3. Late expansion: while fewer than `min(k, allowed rows)` candidates
//!    were seen, the next partition is searched, up to the plan's limit.
//! 4. Every partition yields its `k` best `(distance, row id)` among the
//!    allowed rows whose distance is in `distance_range`; the union is
//!    sorted by distance then row id and cut to `k`.
//!
//! Distances are the storage's: exact for FLAT, ADC for PQ, code distances
//! for SQ ([`super::pq`], [`super::sq`]). An HNSW partition is searched
//! over its graph ([`super::hnsw`]) unless a prefilter is given, in which
//! case all its allowed rows are scored (exact for the storage, and never
//! short of allowed rows).

use std::borrow::Cow;
use std::sync::Arc;

use rayon::prelude::*;

use super::hnsw::Graphs;
use super::ivf::Centroids;
use super::probes;
use super::storage::{Partition, StorageKind, VectorStorage};
use super::{distance, AllowedRows, AnnQuery, AnnResult, DistanceType, VectorIndex, VectorIndexType};
use crate::error::{Error, Result};

/// Rows of the initial partitions above which they are searched in parallel.
const PARALLEL_ROWS: usize = 32 * 1024;

/// An opened IVF index.
#[derive(Debug)]
pub struct IvfIndex {
    pub(crate) index_type: VectorIndexType,
    pub(crate) metric: DistanceType,
    pub(crate) centroids: Centroids,
    pub(crate) storage: VectorStorage,
    pub(crate) graphs: Option<Graphs>,
}

/// A query prepared once for every partition.
struct Prepared {
    /// The query (normalized for cosine).
    q: Vec<f32>,
    /// SQ: the query's codes.
    sq_codes: Vec<u8>,
    /// PQ dot: the one distance table.
    pq_table: Option<Vec<f32>>,
}

/// Scores rows of one loaded partition.
pub(crate) struct Scorer<'a> {
    part: &'a Partition,
    storage: &'a VectorStorage,
    metric: DistanceType,
    q: &'a [f32],
    sq_codes: &'a [u8],
    pq_table: Cow<'a, [f32]>,
}

impl Scorer<'_> {
    /// The distance of row `i` of the partition.
    pub(crate) fn one(&self, i: usize) -> f32 {
        let dim = self.storage.dim;
        match &self.storage.kind {
            StorageKind::Flat => flat_distance(self.metric, &self.part.vectors[i * dim..(i + 1) * dim], self.q),
            StorageKind::Pq(m) => m.one(&self.pq_table, &self.part.codes, self.part.len(), i),
            StorageKind::Sq(m) => m.one(self.q, self.sq_codes, &self.part.codes[i * dim..(i + 1) * dim]),
        }
    }

    /// The distances of every row, into `out`.
    fn all(&self, out: &mut Vec<f32>) {
        let dim = self.storage.dim;
        match &self.storage.kind {
            StorageKind::Flat => {
                out.clear();
                out.extend(self.part.vectors.chunks_exact(dim).map(|v| flat_distance(self.metric, v, self.q)));
            }
            StorageKind::Pq(m) => m.scan(&self.pq_table, &self.part.codes, self.part.len(), out),
            StorageKind::Sq(m) => m.scan(self.q, self.sq_codes, &self.part.codes, dim, out),
        }
    }

    /// Rows in the partition.
    pub(crate) fn len(&self) -> usize {
        self.part.len()
    }
}

/// FLAT storage keeps cosine vectors normalized, and the query is
/// normalized too: pylance's cosine distance is then `1 - v·q`.
fn flat_distance(metric: DistanceType, v: &[f32], q: &[f32]) -> f32 {
    match metric {
        DistanceType::L2 => lanes(v, q, |x, y| (x - y) * (x - y)),
        DistanceType::Cosine | DistanceType::Dot => 1.0 - lanes(v, q, |x, y| x * y),
        DistanceType::Hamming => distance::distance(metric, v, q),
    }
}

/// `sum(f(v_i, q_i))` in eight independent lanes, which the compiler turns
/// into vector instructions (a plain iterator sum is one serial chain).
#[inline]
fn lanes(v: &[f32], q: &[f32], f: impl Fn(f32, f32) -> f32) -> f32 {
    let mut acc = [0.0f32; 8];
    let (vc, qc) = (v.chunks_exact(8), q.chunks_exact(8));
    let (vr, qr) = (vc.remainder(), qc.remainder());
    for (a, b) in vc.zip(qc) {
        for i in 0..8 {
            acc[i] += f(a[i], b[i]);
        }
    }
    let tail: f32 = vr.iter().zip(qr).map(|(&x, &y)| f(x, y)).sum();
    acc.iter().sum::<f32>() + tail
}

/// What one partition gave: its best rows and how many allowed rows it had.
#[derive(Default)]
struct Found {
    rows: Vec<(f32, u64)>,
    seen: usize,
}

fn by_distance(a: &(f32, u64), b: &(f32, u64)) -> std::cmp::Ordering {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
}

/// Keep the `k` best of `rows`.
fn keep_best(rows: &mut Vec<(f32, u64)>, k: usize) {
    if rows.len() > k {
        if k > 0 {
            rows.select_nth_unstable_by(k - 1, by_distance);
        }
        rows.truncate(k);
    }
}

impl IvfIndex {
    fn prepare(&self, vector: &[f32]) -> Result<Prepared> {
        if vector.len() != self.centroids.dim {
            return Err(Error::invalid_input(format!("Query vector size {} does not match index column size {}", vector.len(), self.centroids.dim)));
        }
        let mut q = vector.to_vec();
        if self.metric == DistanceType::Cosine {
            let norm = distance::norm_sq(&q).sqrt();
            if norm > 0.0 {
                q.iter_mut().for_each(|x| *x /= norm);
            }
        }
        let sq_codes = match &self.storage.kind {
            StorageKind::Sq(m) => m.prepare(&q),
            _ => Vec::new(),
        };
        let pq_table = match &self.storage.kind {
            StorageKind::Pq(m) if !m.per_partition() => Some(m.table(&q, &[])),
            _ => None,
        };
        Ok(Prepared { q, sq_codes, pq_table })
    }

    fn scorer<'a>(&'a self, prep: &'a Prepared, part: &'a Partition, p: usize) -> Scorer<'a> {
        let pq_table = match (&self.storage.kind, &prep.pq_table) {
            (StorageKind::Pq(_), Some(t)) => Cow::Borrowed(t.as_slice()),
            (StorageKind::Pq(m), None) => Cow::Owned(m.table(&prep.q, self.centroids.row(p))),
            _ => Cow::Borrowed(&[][..]),
        };
        Scorer { part, storage: &self.storage, metric: self.metric, q: &prep.q, sq_codes: &prep.sq_codes, pq_table }
    }

    fn search_partition(&self, p: usize, prep: &Prepared, query: &AnnQuery, allowed: Option<&AllowedRows>) -> Result<Found> {
        let part = self.storage.partition(p)?;
        if part.is_empty() {
            return Ok(Found::default());
        }
        let scorer = self.scorer(prep, &part, p);
        let (lo, hi) = query.distance_range;
        let in_range = |d: f32| lo.is_none_or(|l| d >= l) && hi.is_none_or(|h| d < h);
        let mut found = Found::default();
        match (&self.graphs, allowed) {
            (Some(g), None) => {
                let ef = query.ef.unwrap_or(query.k + query.k / 2).max(query.k);
                let graph = g.partition(p, part.len())?;
                for (d, i) in graph.search(&scorer, ef) {
                    if in_range(d) {
                        found.rows.push((d, part.row_ids[i]));
                    }
                }
                found.seen = part.len();
            }
            _ => {
                let mut dists = Vec::new();
                scorer.all(&mut dists);
                for (&d, &id) in dists.iter().zip(&part.row_ids) {
                    if allowed.is_some_and(|a| !a.contains(id)) {
                        continue;
                    }
                    found.seen += 1;
                    if in_range(d) {
                        found.rows.push((d, id));
                    }
                }
            }
        }
        keep_best(&mut found.rows, query.k);
        Ok(found)
    }
}

impl VectorIndex for IvfIndex {
    fn index_type(&self) -> VectorIndexType {
        self.index_type
    }

    fn distance_type(&self) -> DistanceType {
        self.metric
    }

    fn dimension(&self) -> usize {
        self.centroids.dim
    }

    fn num_partitions(&self) -> usize {
        self.centroids.len()
    }

    fn search(&self, query: &AnnQuery, allowed: Option<&AllowedRows>) -> Result<AnnResult> {
        let prep = self.prepare(&query.vector)?;
        if query.k == 0 {
            return Ok(AnnResult::default());
        }
        let (ranked, dists): (Vec<usize>, Vec<f32>) = self.centroids.rank(self.metric, &prep.q).into_iter().unzip();
        let plan = probes::plan(&query.probes, query.k, self.metric, &dists);
        let first = &ranked[..plan.initial];
        let rows: usize = first.iter().map(|&p| self.storage.partition_len(p)).sum();
        let found: Vec<Found> = if first.len() > 1 && rows >= PARALLEL_ROWS {
            crate::process::install(|| first.par_iter().map(|&p| self.search_partition(p, &prep, query, allowed)).collect::<Result<_>>())?
        } else {
            first.iter().map(|&p| self.search_partition(p, &prep, query, allowed)).collect::<Result<_>>()?
        };
        let mut seen: usize = found.iter().map(|f| f.seen).sum();
        let mut all: Vec<(f32, u64)> = found.into_iter().flat_map(|f| f.rows).collect();
        let mut searched = plan.initial;
        // Late expansion stops once as many rows as could ever be found were.
        let wanted = allowed.map_or(query.k, |a| query.k.min(usize::try_from(a.len()).unwrap_or(usize::MAX)));
        while seen < wanted && searched < plan.limit {
            let f = self.search_partition(ranked[searched], &prep, query, allowed)?;
            seen += f.seen;
            all.extend(f.rows);
            searched += 1;
        }
        keep_best(&mut all, query.k);
        all.sort_unstable_by(by_distance);
        Ok(AnnResult { rows: all.into_iter().map(|(d, id)| (id, d)).collect(), partitions_searched: searched })
    }
}

/// Segments of one index (after `optimize_indices` appended deltas): each
/// is searched with the same query, and the results merged.
#[derive(Debug)]
pub struct Segments {
    pub(crate) parts: Vec<Arc<dyn VectorIndex>>,
}

impl VectorIndex for Segments {
    fn index_type(&self) -> VectorIndexType {
        self.parts[0].index_type()
    }

    fn distance_type(&self) -> DistanceType {
        self.parts[0].distance_type()
    }

    fn dimension(&self) -> usize {
        self.parts.iter().map(|p| p.dimension()).max().unwrap_or(0)
    }

    fn num_partitions(&self) -> usize {
        self.parts.iter().map(|p| p.num_partitions()).max().unwrap_or(0)
    }

    /// `partitions_searched` is the sum over segments, as pylance's
    /// `ANNSubIndex` metric counts them.
    fn search(&self, query: &AnnQuery, allowed: Option<&AllowedRows>) -> Result<AnnResult> {
        let mut rows: Vec<(f32, u64)> = Vec::new();
        let mut searched = 0;
        for part in &self.parts {
            let r = part.search(query, allowed)?;
            searched += r.partitions_searched;
            rows.extend(r.rows.into_iter().map(|(id, d)| (d, id)));
        }
        keep_best(&mut rows, query.k);
        rows.sort_unstable_by(by_distance);
        Ok(AnnResult { rows: rows.into_iter().map(|(d, id)| (id, d)).collect(), partitions_searched: searched })
    }
}

/// An index with no files (pylance commits one when there were too few
/// rows to train): it finds nothing, so the caller's flat search over the
/// fragments it does not cover answers.
#[derive(Debug)]
pub struct EmptyIndex {
    pub(crate) index_type: VectorIndexType,
    pub(crate) metric: DistanceType,
}

impl VectorIndex for EmptyIndex {
    fn index_type(&self) -> VectorIndexType {
        self.index_type
    }

    fn distance_type(&self) -> DistanceType {
        self.metric
    }

    fn dimension(&self) -> usize {
        0
    }

    fn num_partitions(&self) -> usize {
        0
    }

    fn search(&self, _query: &AnnQuery, _allowed: Option<&AllowedRows>) -> Result<AnnResult> {
        Ok(AnnResult::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_match_the_definitions() {
        let v: Vec<f32> = (0..19).map(|i| i as f32 * 0.5).collect();
        let q: Vec<f32> = (0..19).map(|i| 3.0 - i as f32).collect();
        assert!((flat_distance(DistanceType::L2, &v, &q) - distance::l2_sq(&v, &q)).abs() < 1e-3);
        assert!((flat_distance(DistanceType::Dot, &v, &q) - (1.0 - distance::dot(&v, &q))).abs() < 1e-3);
        let mut rows = vec![(3.0, 1), (1.0, 9), (1.0, 2), (0.5, 4)];
        keep_best(&mut rows, 2);
        rows.sort_by(by_distance);
        assert_eq!(rows, vec![(0.5, 4), (1.0, 2)]);
    }
}
