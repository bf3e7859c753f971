//! Cheap distinct-value estimates for the encoding choice.
//!
//! Building an exact dictionary of a high-cardinality page (hashing and
//! storing up to a quarter or half of its values before giving up) was the
//! single largest cost of writing such columns. A HyperLogLog sketch over
//! the page costs one fast hash per value and no allocation, and tells
//! early that a dictionary cannot fit its limit; only pages that might fit
//! build the exact dictionary. [`FastHasher`] is also the hasher of that
//! exact dictionary (SipHash was most of its time).

pub use crate::hashing::FastBuild;
use crate::hashing::{fmix, hash_bytes, K};

/// Registers of the sketch: 2^12 gives a standard error of about 1.6 %.
const P: u32 = 12;

/// A HyperLogLog sketch with 2^[`P`] one-byte registers.
struct Sketch(Vec<u8>);

impl Sketch {
    fn new() -> Self {
        Sketch(vec![0u8; 1 << P])
    }

    #[inline(always)]
    fn add(&mut self, h: u64) {
        let idx = (h >> (64 - P)) as usize;
        let rank = ((h << P) | (1 << (P - 1))).leading_zeros() as u8 + 1;
        // Branch-free: whether a register grows is unpredictable.
        let r = &mut self.0[idx & ((1 << P) - 1)];
        *r = (*r).max(rank);
    }

    /// The estimate once it is beyond the small range (where it only grows
    /// as values are added), else None.
    fn large_estimate(&self) -> Option<f64> {
        let mf = self.0.len() as f64;
        let alpha = 0.7213 / (1.0 + 1.079 / mf);
        let sum: f64 = self.0.iter().map(|&r| f64::from_bits((1023u64.saturating_sub(u64::from(r))) << 52)).sum();
        let raw = alpha * mf * mf / sum;
        (raw > 2.5 * mf).then_some(raw)
    }

    /// The estimate, with the small-range correction.
    fn estimate(&self) -> f64 {
        let mf = self.0.len() as f64;
        let alpha = 0.7213 / (1.0 + 1.079 / mf);
        let sum: f64 = self.0.iter().map(|&r| 2f64.powi(-(r as i32))).sum();
        let raw = alpha * mf * mf / sum;
        let zeros = self.0.iter().filter(|&&r| r == 0).count();
        if raw <= 2.5 * mf && zeros > 0 {
            mf * (mf / zeros as f64).ln()
        } else {
            raw
        }
    }
}

/// Values added between two looks at a sketch that may stop early.
const LOOK_EVERY: usize = 1 << 14;

/// Estimate the number of distinct values among `items` (HyperLogLog with
/// the small-range correction); `None` entries (nulls) are not counted.
pub fn estimate_distinct<'a>(items: impl Iterator<Item = Option<&'a [u8]>>) -> f64 {
    estimate_distinct_capped(items, f64::INFINITY)
}

/// [`estimate_distinct`], stopped as soon as the estimate exceeds `cap`
/// (returning an estimate above `cap`). Past the small range a sketch's
/// estimate never falls as values are added, so whether the whole input's
/// estimate exceeds `cap` is decided exactly as without stopping; random
/// and unique values, the common case, stop after about `cap` of them.
pub fn estimate_distinct_capped<'a>(items: impl Iterator<Item = Option<&'a [u8]>>, cap: f64) -> f64 {
    let mut sketch = Sketch::new();
    for (i, v) in items.flatten().enumerate() {
        sketch.add(hash_bytes(v));
        if (i + 1) % LOOK_EVERY == 0 {
            if let Some(e) = sketch.large_estimate().filter(|e| *e > cap) {
                return e;
            }
        }
    }
    sketch.estimate()
}

/// [`estimate_distinct`] of fixed-width values (`width` bytes each, packed
/// in `data`; `valid[i]` false for a null). Word-sized values are hashed as
/// one integer, several times faster than the byte-string hash.
pub fn estimate_distinct_fixed(data: &[u8], width: usize, valid: Option<&[bool]>) -> f64 {
    estimate_distinct_fixed_capped(data, width, valid, f64::INFINITY)
}

/// [`estimate_distinct_fixed`], stopped once the estimate exceeds `cap`
/// (see [`estimate_distinct_capped`]).
pub fn estimate_distinct_fixed_capped(data: &[u8], width: usize, valid: Option<&[bool]>, cap: f64) -> f64 {
    let w = width.max(1);
    let step = LOOK_EVERY * w;
    let mut sketch = Sketch::new();
    let mut start = 0;
    while start < data.len() {
        let end = (start + step).min(data.len() / w * w).max(start);
        if end == start {
            break;
        }
        let v = valid.map(|v| &v[start / w..end / w]);
        add_fixed(&mut sketch, &data[start..end], width, v);
        start = end;
        if start < data.len() {
            if let Some(e) = sketch.large_estimate().filter(|e| *e > cap) {
                return e;
            }
        }
    }
    sketch.estimate()
}

fn add_fixed(sketch: &mut Sketch, data: &[u8], width: usize, valid: Option<&[bool]>) {
    let word = |c: &[u8]| -> u64 {
        match c.len() {
            8 => u64::from_le_bytes(c.try_into().expect("8 bytes")),
            4 => u64::from(u32::from_le_bytes(c.try_into().expect("4 bytes"))),
            2 => u64::from(u16::from_le_bytes(c.try_into().expect("2 bytes"))),
            _ => u64::from(c[0]),
        }
    };
    match (width, valid) {
        (1 | 2 | 4 | 8, None) => data.chunks_exact(width).for_each(|c| sketch.add(fmix(word(c) ^ K))),
        (1 | 2 | 4 | 8, Some(v)) => data.chunks_exact(width).zip(v).filter(|(_, ok)| **ok).for_each(|(c, _)| sketch.add(fmix(word(c) ^ K))),
        (w, v) => data.chunks_exact(w.max(1)).enumerate().filter(|(i, _)| v.is_none_or(|v| v[*i])).for_each(|(_, c)| sketch.add(hash_bytes(c))),
    }
}

/// True when a page certainly (beyond the sketch's error) holds more than
/// `limit` distinct values, so an exact dictionary need not be attempted.
pub fn surely_more_than<'a>(items: impl Iterator<Item = Option<&'a [u8]>>, limit: usize) -> bool {
    // 10 % margin: over six standard errors of the sketch.
    let bound = 1.1 * limit as f64 + 64.0;
    estimate_distinct_capped(items, bound) > bound
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(n: u64, distinct: u64) -> f64 {
        let vals: Vec<[u8; 8]> = (0..n).map(|i| (i % distinct).to_le_bytes()).collect();
        estimate_distinct(vals.iter().map(|v| Some(&v[..])))
    }

    #[test]
    fn estimates_within_a_few_percent() {
        for (n, d) in [(1000u64, 10u64), (100_000, 1000), (200_000, 50_000), (300_000, 300_000)] {
            let e = est(n, d);
            assert!((e - d as f64).abs() <= 0.06 * d as f64 + 2.0, "{d} distinct estimated as {e}");
        }
        let strs: Vec<String> = (0..50_000).map(|i| format!("https://example.com/item/{}", i % 20_000)).collect();
        let e = estimate_distinct(strs.iter().map(|s| Some(s.as_bytes())));
        assert!((e - 20_000.0).abs() < 1200.0, "{e}");
        assert!(surely_more_than(strs.iter().map(|s| Some(s.as_bytes())), 10_000));
        assert!(!surely_more_than(strs.iter().map(|s| Some(s.as_bytes())), 20_000));
    }

    #[test]
    fn fixed_width_estimates_within_a_few_percent() {
        for width in [1usize, 2, 4, 8, 3] {
            let distinct = if width == 1 { 200u64 } else { 30_000 };
            let n = 200_000u64;
            let data: Vec<u8> = (0..n).flat_map(|i| (i % distinct).to_le_bytes().into_iter().take(width)).collect();
            let e = estimate_distinct_fixed(&data, width, None);
            assert!((e - distinct as f64).abs() <= 0.06 * distinct as f64 + 2.0, "width {width}: {distinct} estimated as {e}");
            // Nulls are not counted: keep only the even values.
            let valid: Vec<bool> = (0..n).map(|i| (i % distinct) % 2 == 0).collect();
            let e = estimate_distinct_fixed(&data, width, Some(&valid));
            let want = distinct as f64 / 2.0;
            assert!((e - want).abs() <= 0.06 * want + 2.0, "width {width} with nulls: {want} estimated as {e}");
        }
    }

    /// Stopping once the estimate passes a cap never changes whether the
    /// whole input's estimate passes it (the early exits only skip work).
    #[test]
    fn stopping_early_decides_like_the_whole_input() {
        let n = 200_000u64;
        let inputs: Vec<Vec<u64>> = vec![
            (0..n).collect(),
            (0..n).map(|i| i % 1000).collect(),
            // Few values first, then a late burst of new ones.
            (0..n).map(|i| if i < n / 2 { i % 10 } else { i }).collect(),
            (0..n).map(|i| i.wrapping_mul(0x9E37_79B9) % 70_000).collect(),
        ];
        for vals in &inputs {
            let data: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
            let valid: Vec<bool> = (0..vals.len()).map(|i| i % 7 != 3).collect();
            for cap in [50.0, 5_000.0, 20_000.0, 50_000.0, 66_000.0, 150_000.0, 300_000.0] {
                for v in [None, Some(&valid[..])] {
                    let whole = estimate_distinct_fixed(&data, 8, v);
                    let capped = estimate_distinct_fixed_capped(&data, 8, v, cap);
                    assert_eq!(whole > cap, capped > cap, "cap {cap}: {whole} vs {capped}");
                    if capped <= cap {
                        assert_eq!(whole, capped);
                    }
                }
                let items = || vals.iter().enumerate().map(|(i, _)| (i % 5 != 0).then(|| &data[8 * i..8 * i + 8]));
                let whole = estimate_distinct(items());
                let capped = estimate_distinct_capped(items(), cap);
                assert_eq!(whole > cap, capped > cap, "bytes, cap {cap}: {whole} vs {capped}");
            }
        }
    }

    #[test]
    fn hasher_distinguishes_lengths() {
        assert_ne!(hash_bytes(b"a"), hash_bytes(b"a\0"));
        assert_ne!(hash_bytes(b""), hash_bytes(b"\0"));
    }
}
