//! Product quantization as pylance 14 stores and searches it.
//!
//! The codebook (global buffer 2 of `auxiliary.idx`) is a Tensor of shape
//! `[2^bits, dim]` whose data is laid out sub-vector major:
//! `[M][2^bits][dim / M]` (centroid `c` of sub-vector `j` starts at
//! `(j * 2^bits + c) * dim / M`). Codes encode residuals `x - centroid[p]`
//! (cosine: of the normalized vector) for L2 and cosine indices and raw
//! vectors for dot ones.
//!
//! Search is asymmetric (ADC), as pylance computes it (verified to 1e-7
//! against pylance's `_distance`):
//! * L2 and cosine: `r = q - centroid[p]` (cosine: `q` normalized; with an
//!   f16 codebook the subtraction is rounded to f16, as pylance does it in
//!   the vectors' type); `table[j][c] = |r_j - codebook[j][c]|²`; the
//!   distance is the sum of `table[j][code_j]` over `j` in order;
//! * dot: one table per query, `table[j][c] = q_j · codebook[j][c]`; the
//!   distance is `1 - sum`.

use half::f16;

use super::distance;
use super::tensor;
use super::DistanceType;
use crate::error::{Error, Result};
use crate::proto::index::{Tensor, TensorDataType};

/// A PQ codebook and its parameters.
#[derive(Debug)]
pub struct PqModel {
    /// Bits per code: 4 or 8.
    pub nbits: usize,
    /// Sub-vectors per vector.
    pub num_sub_vectors: usize,
    /// Vector dimension.
    pub dim: usize,
    /// Whether the stored codes are transposed per partition.
    pub transposed: bool,
    /// `[M][2^nbits][dim / M]` values.
    codebook: Vec<f32>,
    /// Residuals are rounded to f16 (codebooks of f16 vectors).
    f16_residuals: bool,
    metric: DistanceType,
}

impl PqModel {
    /// Check and keep a codebook.
    pub fn new(codebook: &Tensor, nbits: usize, m: usize, dim: usize, transposed: bool, metric: DistanceType) -> Result<Self> {
        if nbits != 4 && nbits != 8 {
            return Err(Error::unsupported(format!("PQ with {nbits} bits per code")));
        }
        if m == 0 || dim == 0 || dim % m != 0 || (nbits == 4 && m % 2 != 0) {
            return Err(Error::corrupt(format!("PQ of {m} sub-vectors ({nbits} bits) over dimension {dim}")));
        }
        if metric == DistanceType::Hamming {
            return Err(Error::unsupported("PQ with the hamming metric"));
        }
        let t = tensor::decode(codebook)?;
        let k = 1usize << nbits;
        if t.shape != [k, dim] {
            return Err(Error::corrupt(format!("PQ codebook of shape {:?}, expected [{k}, {dim}]", t.shape)));
        }
        let f16_residuals = codebook.data_type == TensorDataType::Float16 as i32;
        Ok(PqModel { nbits, num_sub_vectors: m, dim, transposed, codebook: t.values, f16_residuals, metric })
    }

    /// Byte columns of `__pq_code` (`M`, or `M / 2` with 4 bits).
    pub fn code_columns(&self) -> usize {
        if self.nbits == 8 {
            self.num_sub_vectors
        } else {
            self.num_sub_vectors / 2
        }
    }

    fn k(&self) -> usize {
        1 << self.nbits
    }

    /// Codes of `n` rows as read (row by row) into the transposed layout
    /// the scan uses (a copy only when the file was not transposed).
    pub fn transpose_in(&self, bytes: &[u8], n: usize) -> Vec<u8> {
        let cols = self.code_columns();
        if self.transposed || n <= 1 {
            return bytes.to_vec();
        }
        let mut out = vec![0u8; bytes.len()];
        for (i, row) in bytes.chunks_exact(cols).enumerate() {
            for (j, &b) in row.iter().enumerate() {
                out[j * n + i] = b;
            }
        }
        out
    }

    /// Whether distances need a table per partition (residual codes).
    pub fn per_partition(&self) -> bool {
        self.metric != DistanceType::Dot
    }

    /// The distance table of `query` (normalized for cosine) in the
    /// partition of `centroid` (ignored for dot): `[M][2^bits]`.
    pub fn table(&self, query: &[f32], centroid: &[f32]) -> Vec<f32> {
        let sd = self.dim / self.num_sub_vectors;
        let k = self.k();
        let r: Vec<f32> = if self.metric == DistanceType::Dot {
            query.to_vec()
        } else if self.f16_residuals {
            query.iter().zip(centroid).map(|(q, c)| f16::from_f32(f16::from_f32(*q).to_f32() - c).to_f32()).collect()
        } else {
            query.iter().zip(centroid).map(|(q, c)| q - c).collect()
        };
        let mut table = Vec::with_capacity(self.num_sub_vectors * k);
        for (j, sub) in r.chunks_exact(sd).enumerate() {
            let book = &self.codebook[j * k * sd..(j + 1) * k * sd];
            for cw in book.chunks_exact(sd) {
                table.push(if self.metric == DistanceType::Dot { distance::dot(sub, cw) } else { distance::l2_sq(sub, cw) });
            }
        }
        table
    }

    /// The distance of row `i` of the `n` rows whose transposed `codes`
    /// are given (what a graph search asks for one node at a time).
    pub fn one(&self, table: &[f32], codes: &[u8], n: usize, i: usize) -> f32 {
        let mut d = 0.0f32;
        for j in 0..self.code_columns() {
            let c = codes[j * n + i] as usize;
            if self.nbits == 8 {
                d += table[j * 256 + c];
            } else {
                d += table[2 * j * 16 + (c & 15)];
                d += table[(2 * j + 1) * 16 + (c >> 4)];
            }
        }
        if self.metric == DistanceType::Dot {
            1.0 - d
        } else {
            d
        }
    }

    /// Distances of the `n` rows whose transposed `codes` are given, into
    /// `out` (cleared first).
    pub fn scan(&self, table: &[f32], codes: &[u8], n: usize, out: &mut Vec<f32>) {
        out.clear();
        out.resize(n, 0.0);
        if n == 0 {
            return;
        }
        if self.nbits == 8 {
            for (j, run) in codes.chunks_exact(n).enumerate() {
                let t = &table[j * 256..(j + 1) * 256];
                for (d, &c) in out.iter_mut().zip(run) {
                    *d += t[c as usize];
                }
            }
        } else {
            for (j, run) in codes.chunks_exact(n).enumerate() {
                let lo = &table[2 * j * 16..2 * j * 16 + 16];
                let hi = &table[(2 * j + 1) * 16..(2 * j + 2) * 16];
                for (d, &c) in out.iter_mut().zip(run) {
                    *d += lo[(c & 15) as usize];
                    *d += hi[(c >> 4) as usize];
                }
            }
        }
        if self.metric == DistanceType::Dot {
            for d in out.iter_mut() {
                *d = 1.0 - *d;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(nbits: usize, m: usize, metric: DistanceType) -> PqModel {
        let k = 1 << nbits;
        let dim = 4;
        let values: Vec<f32> = (0..k * dim).map(|i| (i % 7) as f32).collect();
        let t = tensor::encode(TensorDataType::Float32, &[k, dim], &values);
        PqModel::new(&t, nbits, m, dim, true, metric).unwrap()
    }

    #[test]
    fn scans_8_and_4_bit_codes() {
        for nbits in [8, 4] {
            let m = model(nbits, 2, DistanceType::L2);
            let q = [1.0, 2.0, 3.0, 4.0];
            let c = [0.5, 0.5, 0.5, 0.5];
            let table = m.table(&q, &c);
            // Two rows: codes (3, 5) and (0, 1).
            let codes = if nbits == 8 { vec![3, 0, 5, 1] } else { vec![3 | (5 << 4), 1 << 4] };
            let mut out = Vec::new();
            m.scan(&table, &codes, 2, &mut out);
            let k = 1 << nbits;
            let expect = |a: usize, b: usize| table[a] + table[k + b];
            assert_eq!(out, vec![expect(3, 5), expect(0, 1)]);
            assert_eq!((0..2).map(|i| m.one(&table, &codes, 2, i)).collect::<Vec<_>>(), out);
        }
    }

    #[test]
    fn checks_shapes() {
        let t = tensor::encode(TensorDataType::Float32, &[256, 4], &vec![0.0; 1024]);
        assert!(matches!(PqModel::new(&t, 8, 3, 4, true, DistanceType::L2), Err(Error::Corrupt { .. })));
        assert!(matches!(PqModel::new(&t, 8, 2, 8, true, DistanceType::L2), Err(Error::Corrupt { .. })));
        assert!(matches!(PqModel::new(&t, 4, 2, 4, true, DistanceType::L2), Err(Error::Corrupt { .. })));
        assert!(matches!(PqModel::new(&t, 7, 2, 4, true, DistanceType::L2), Err(Error::Unsupported { .. })));
        let m = model(8, 2, DistanceType::L2);
        let untransposed = PqModel { transposed: false, ..m };
        assert_eq!(untransposed.transpose_in(&[1, 2, 3, 4, 5, 6], 3), vec![1, 3, 5, 2, 4, 6]);
    }
}
