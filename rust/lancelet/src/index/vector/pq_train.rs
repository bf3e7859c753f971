//! Product quantization as pylance 14 builds it (docs/research/vector-index.md
//! §5, §7): the vector is cut into `num_sub_vectors` sub-vectors of
//! `dim / num_sub_vectors` values, each coded by the nearest of `2^num_bits`
//! sub-codewords (squared L2 for every metric). The codebook is trained by
//! one k-means per sub-vector on residuals (`x - centroid`, L2 and cosine)
//! or raw vectors (dot). The codebook is kept sub-vector major:
//! `[num_sub_vectors][2^num_bits][sub_dim]`, as the file stores it.

use rayon::prelude::*;

use super::kmeans::{self, KMeansParams};
use super::DistanceType;

/// A PQ codebook.
#[derive(Debug, Clone, PartialEq)]
pub struct Codebook {
    /// Sub-vectors per vector.
    pub num_sub_vectors: usize,
    /// Bits per code (4 or 8).
    pub num_bits: u32,
    /// Vector dimension.
    pub dim: usize,
    /// `[num_sub_vectors][2^num_bits][dim / num_sub_vectors]` values.
    pub values: Vec<f32>,
}

impl Codebook {
    /// Values per sub-vector.
    pub fn sub_dim(&self) -> usize {
        self.dim / self.num_sub_vectors
    }

    /// Codewords per sub-vector.
    pub fn num_centroids(&self) -> usize {
        1 << self.num_bits
    }

    /// The codewords of sub-vector `j`.
    fn sub(&self, j: usize) -> &[f32] {
        let n = self.num_centroids() * self.sub_dim();
        &self.values[j * n..(j + 1) * n]
    }

    /// Codes (one per sub-vector, unpacked) of every row of `data`.
    pub fn encode(&self, data: &[f32]) -> Vec<u8> {
        let (m, sd) = (self.num_sub_vectors, self.sub_dim());
        let mut out = vec![0u8; data.len() / self.dim * m];
        crate::process::install(|| {
            out.par_chunks_mut(m).zip(data.par_chunks_exact(self.dim)).with_min_len(256).for_each(|(codes, x)| {
                for (j, c) in codes.iter_mut().enumerate() {
                    *c = kmeans::nearest(&x[j * sd..(j + 1) * sd], self.sub(j), sd, DistanceType::L2).0 as u8;
                }
            })
        });
        out
    }
}

/// Train a codebook on `data` (rows of `dim`, already residuals or raw as
/// the metric asks). Sub-vectors with fewer rows than codewords keep the
/// rows they have and zeros for the rest.
pub fn train(data: &[f32], dim: usize, num_sub_vectors: usize, num_bits: u32, max_iters: usize, seed: u64) -> Codebook {
    let sd = dim / num_sub_vectors;
    let k = 1usize << num_bits;
    let n = data.len() / dim;
    let subs: Vec<Vec<f32>> = (0..num_sub_vectors)
        .into_par_iter()
        .map(|j| {
            let mut part = Vec::with_capacity(n * sd);
            for x in data.chunks_exact(dim) {
                part.extend_from_slice(&x[j * sd..(j + 1) * sd]);
            }
            let p = KMeansParams { k, max_iters, metric: DistanceType::L2, seed: seed.wrapping_add(j as u64) };
            let mut c = kmeans::train(&part, sd, p).centroids;
            c.resize(k * sd, 0.0);
            c
        })
        .collect();
    Codebook { num_sub_vectors, num_bits, dim, values: subs.concat() }
}

/// The `__pq_code` bytes of one partition's codes (`rows` rows of
/// `num_sub_vectors` unpacked codes): 4-bit codes packed two per byte
/// (sub-vector 2k low nibble, 2k+1 high), then transposed — byte column
/// `j` of all rows first, then column `j + 1`, ... — as pylance stores
/// them (`"transposed": true`).
pub fn transpose_partition(codes: &[u8], num_sub_vectors: usize, num_bits: u32) -> Vec<u8> {
    let packed: Vec<u8> = if num_bits == 4 { codes.chunks_exact(2).map(|p| (p[0] & 0x0f) | (p[1] << 4)).collect() } else { codes.to_vec() };
    let width = if num_bits == 4 { num_sub_vectors / 2 } else { num_sub_vectors };
    let rows = packed.len().checked_div(width).unwrap_or(0);
    let mut out = vec![0u8; packed.len()];
    for (i, row) in packed.chunks_exact(width).enumerate() {
        for (j, b) in row.iter().enumerate() {
            out[j * rows + i] = *b;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_to_nearest_codeword_and_transposes() {
        let cb = Codebook { num_sub_vectors: 2, num_bits: 4, dim: 2, values: (0..32).map(|i| (i % 16) as f32).collect() };
        assert_eq!(cb.encode(&[3.2, 14.9, 0.0, 7.6]), vec![3, 15, 0, 8]);
        // Two rows, 2 sub-vectors at 4 bits: one byte per row.
        assert_eq!(transpose_partition(&[3, 15, 0, 8], 2, 4), vec![0xf3, 0x80]);
        assert_eq!(transpose_partition(&[1, 2, 3, 4, 5, 6], 2, 8), vec![1, 3, 5, 2, 4, 6]);
    }

    #[test]
    fn trains_one_codebook_per_sub_vector() {
        let data: Vec<f32> = (0..600).map(|i| (i % 3) as f32 * if i % 2 == 0 { 1.0 } else { 10.0 }).collect();
        let cb = train(&data, 2, 2, 4, 10, 1);
        assert_eq!(cb.values.len(), 2 * 16);
        let codes = cb.encode(&data[..2]);
        let sub0 = &cb.values[codes[0] as usize..codes[0] as usize + 1];
        assert!((sub0[0] - data[0]).abs() < 1e-4);
    }
}
