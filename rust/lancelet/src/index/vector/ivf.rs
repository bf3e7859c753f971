//! The IVF model of a vector index: centroids and where each partition's
//! rows are.
//!
//! Both files of `_indices/{uuid}/` carry a `lance.index.pb.IVF` message in
//! global buffer 1 (the schema metadata key `lance:ivf` names it):
//!
//! ```text
//! IVF { 2 offsets: packed u64, 3 lengths: packed u32,
//!       4 centroids_tensor: Tensor [num_partitions, dim] (index.idx only),
//!       5 loss: f64 (index.idx only) }
//! ```
//!
//! In `auxiliary.idx` partition `p` is rows `offsets[p] .. offsets[p] +
//! lengths[p]`; pylance writes the partitions back to back, so the offsets
//! are the running sums of the lengths and the lengths sum to the file's
//! rows. In the `index.idx` of non-HNSW types both are zero (no graph
//! rows). Readers check all of this: a message that disagrees with its file
//! is `Corrupt`.

use std::ops::Range;

use prost::Message;

use super::distance;
use super::tensor;
use super::DistanceType;
use crate::error::{Error, Result};
use crate::proto::index::Ivf as IVF;

/// Decode the IVF message of a file.
pub fn decode(bytes: &[u8]) -> Result<IVF> {
    IVF::decode(bytes).map_err(|e| Error::corrupt(format!("IVF message does not decode: {e}")))
}

/// The row range of every partition in a file of `num_rows` rows, checked:
/// as many offsets as lengths (`expect` of each when given), offsets the
/// running sums of the lengths, lengths summing to `num_rows`.
pub fn partition_ranges(ivf: &IVF, num_rows: u64, expect: Option<usize>) -> Result<Vec<Range<u64>>> {
    let n = ivf.lengths.len();
    if ivf.offsets.len() != n {
        return Err(Error::corrupt(format!("IVF message has {} offsets and {n} lengths", ivf.offsets.len())));
    }
    if let Some(e) = expect {
        if e != n {
            return Err(Error::corrupt(format!("IVF message has {n} partitions, the index has {e}")));
        }
    }
    let mut ranges = Vec::with_capacity(n);
    let mut at = 0u64;
    for (p, (&off, &len)) in ivf.offsets.iter().zip(&ivf.lengths).enumerate() {
        if off != at {
            return Err(Error::corrupt(format!("IVF partition {p} starts at row {off}, expected {at}")));
        }
        let end = at + u64::from(len);
        if end > num_rows {
            return Err(Error::corrupt(format!("IVF partition {p} ends at row {end}, the file has {num_rows} rows")));
        }
        ranges.push(at..end);
        at = end;
    }
    if at != num_rows {
        return Err(Error::corrupt(format!("IVF partition lengths sum to {at}, the file has {num_rows} rows")));
    }
    Ok(ranges)
}

/// Centroids as f32 rows.
#[derive(Debug, Clone)]
pub struct Centroids {
    /// Row-major `[num_partitions][dim]`.
    pub values: Vec<f32>,
    /// Vector dimension.
    pub dim: usize,
}

impl Centroids {
    /// The centroids of an `index.idx` IVF message (at least one partition).
    pub fn from_ivf(ivf: &IVF) -> Result<Self> {
        let t = ivf.centroids_tensor.as_ref().ok_or_else(|| Error::corrupt("IVF message without centroids"))?;
        let f = tensor::decode(t)?;
        match f.shape[..] {
            [n, dim] if n > 0 && dim > 0 => Ok(Centroids { values: f.values, dim }),
            _ => Err(Error::corrupt(format!("IVF centroids of shape {:?}, expected [partitions, dim]", f.shape))),
        }
    }

    /// Number of partitions.
    pub fn len(&self) -> usize {
        self.values.len() / self.dim
    }

    /// True without partitions (never, once checked).
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Centroid `p`.
    pub fn row(&self, p: usize) -> &[f32] {
        &self.values[p * self.dim..(p + 1) * self.dim]
    }

    /// Partitions nearest first for `query` (already normalized for
    /// cosine), with their distances. pylance trains cosine indices with L2
    /// on normalized vectors and dot indices with the dot distance, so that
    /// is how they rank: squared L2, or `1 - q·c`; ties keep partition order.
    pub fn rank(&self, metric: DistanceType, query: &[f32]) -> Vec<(usize, f32)> {
        let mut d: Vec<(f32, usize)> = (0..self.len())
            .map(|p| {
                let c = self.row(p);
                let v = match metric {
                    DistanceType::Dot => 1.0 - distance::dot(c, query),
                    DistanceType::Hamming => distance::distance(metric, c, query),
                    DistanceType::L2 | DistanceType::Cosine => distance::l2_sq(c, query),
                };
                (v, p)
            })
            .collect();
        d.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        d.into_iter().map(|(v, p)| (p, v)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ivf(offsets: Vec<u64>, lengths: Vec<u32>) -> IVF {
        IVF { offsets, lengths, ..Default::default() }
    }

    #[test]
    fn ranges_are_checked() {
        assert_eq!(partition_ranges(&ivf(vec![0, 3, 3], vec![3, 0, 2]), 5, Some(3)).unwrap(), vec![0..3, 3..3, 3..5]);
        for (i, rows, expect) in [
            (ivf(vec![0], vec![3, 2]), 5, None),
            (ivf(vec![0, 3], vec![3, 2]), 6, None),
            (ivf(vec![0, 2], vec![3, 2]), 5, None),
            (ivf(vec![0, 3], vec![3, u32::MAX]), 5, None),
            (ivf(vec![0, 3], vec![3, 2]), 5, Some(3)),
        ] {
            assert!(matches!(partition_ranges(&i, rows, expect), Err(Error::Corrupt { .. })), "{i:?}");
        }
    }

    #[test]
    fn ranks_by_metric() {
        let c = Centroids { values: vec![1.0, 0.0, 0.0, 3.0, 2.0, 2.0], dim: 2 };
        let order = |m, q: &[f32]| c.rank(m, q).into_iter().map(|(p, _)| p).collect::<Vec<_>>();
        assert_eq!(order(DistanceType::L2, &[0.9, 0.1]), vec![0, 2, 1]);
        assert_eq!(order(DistanceType::Dot, &[0.0, 1.0]), vec![1, 2, 0]);
        assert_eq!(c.rank(DistanceType::Dot, &[0.0, 1.0])[0], (1, -2.0));
        assert!(Centroids::from_ivf(&IVF::default()).is_err());
    }
}
