//! Scalar quantization as pylance 14 stores and searches it.
//!
//! `__sq_code` holds one byte per dimension, row-major:
//! `code = clamp(floor((v - start) * 255 / (end - start)), 0, 255)`
//! computed in f64 (cosine: of the normalized vector), with `bounds =
//! {start, end}` in the storage metadata (all codes 0 when start = end).
//!
//! Search quantizes the query the same way and compares codes (verified to
//! 1e-7 against pylance's `_distance` for L2 and cosine):
//! `distance = sum((code - query_code)²) * ((end - start) / 255)²`.
//! For dot indices the distance is `1 - q · decoded` with
//! `decoded = start + code * (end - start) / 255` (checked against an
//! IVF_SQ dot index of pylance 14 to 5e-7; no fixture kept).

use super::DistanceType;
use crate::error::{Error, Result};

/// SQ bounds and metric.
#[derive(Debug)]
pub struct SqModel {
    start: f64,
    end: f64,
    metric: DistanceType,
}

impl SqModel {
    /// Check the parameters (8 bits only: what pylance 14 builds).
    pub fn new(num_bits: usize, start: f64, end: f64, metric: DistanceType) -> Result<Self> {
        if num_bits != 8 {
            return Err(Error::unsupported(format!("SQ with {num_bits} bits")));
        }
        if !start.is_finite() || !end.is_finite() || end < start {
            return Err(Error::corrupt(format!("SQ bounds {start}..{end}")));
        }
        if metric == DistanceType::Hamming {
            return Err(Error::unsupported("SQ with the hamming metric"));
        }
        Ok(SqModel { start, end, metric })
    }

    fn range(&self) -> f64 {
        self.end - self.start
    }

    /// What a query turns into before the scan: its codes (L2, cosine) or
    /// itself (dot).
    pub fn prepare(&self, query: &[f32]) -> Vec<u8> {
        let range = self.range();
        query.iter().map(|&v| if range > 0.0 { ((f64::from(v) - self.start) * 255.0 / range).floor().clamp(0.0, 255.0) as u8 } else { 0 }).collect()
    }

    /// The distance of one row of codes.
    pub fn one(&self, query: &[f32], query_codes: &[u8], row: &[u8]) -> f32 {
        if self.metric == DistanceType::Dot {
            let step = (self.range() / 255.0) as f32;
            let start = self.start as f32;
            return 1.0 - row.iter().zip(query).map(|(&c, q)| (start + f32::from(c) * step) * q).sum::<f32>();
        }
        let s: u32 = row
            .iter()
            .zip(query_codes)
            .map(|(&a, &b)| {
                let d = i32::from(a) - i32::from(b);
                (d * d) as u32
            })
            .sum();
        s as f32 * self.scale()
    }

    fn scale(&self) -> f32 {
        ((self.range() / 255.0) * (self.range() / 255.0)) as f32
    }

    /// Distances of `n` rows of `dim` codes each, into `out`.
    pub fn scan(&self, query: &[f32], query_codes: &[u8], codes: &[u8], dim: usize, out: &mut Vec<f32>) {
        out.clear();
        out.extend(codes.chunks_exact(dim).map(|row| self.one(query, query_codes, row)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantizes_like_pylance() {
        let m = SqModel::new(8, -1.0, 1.0, DistanceType::L2).unwrap();
        assert_eq!(m.prepare(&[-2.0, -1.0, 0.0, 0.999, 1.0, 5.0]), vec![0, 0, 127, 254, 255, 255]);
        let mut out = Vec::new();
        m.scan(&[0.0, 0.0], &[127, 127], &[127, 127, 130, 123], 2, &mut out);
        let s = (2.0f64 / 255.0).powi(2) as f32;
        assert_eq!(out, vec![0.0, 25.0 * s]);
        assert!(SqModel::new(4, 0.0, 1.0, DistanceType::L2).is_err());
        assert!(SqModel::new(8, 1.0, 0.0, DistanceType::L2).is_err());
        assert!(SqModel::new(8, 0.0, f64::NAN, DistanceType::L2).is_err());
    }
}
