//! Scalar quantization as pylance 14 builds it (docs/research/vector-index.md
//! §5): one code per value, `floor((v - start) * (2^bits - 1) / (end -
//! start))` in f64 clamped to the code range, where `start`/`end` are the
//! minimum and maximum over the training sample. Codes are row-major.

use rayon::prelude::*;

/// The bounds of the values of `data` (`(0, 0)` when empty).
pub fn bounds(data: &[f32]) -> (f64, f64) {
    if data.is_empty() {
        return (0.0, 0.0);
    }
    let (lo, hi) = crate::process::install(|| {
        data.par_chunks(1 << 16)
            .map(|c| c.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v))))
            .reduce(|| (f32::INFINITY, f32::NEG_INFINITY), |(a, b), (c, d)| (a.min(c), b.max(d)))
    });
    (lo as f64, hi as f64)
}

/// The codes of `data` for `bounds` (all 0 when the bounds are equal).
pub fn encode(data: &[f32], bounds: (f64, f64), num_bits: u32) -> Vec<u8> {
    let (start, end) = bounds;
    let range = end - start;
    let top = ((1u32 << num_bits) - 1) as f64;
    if range <= 0.0 {
        return vec![0; data.len()];
    }
    crate::process::install(|| {
        data.par_iter()
            .with_min_len(1 << 14)
            .map(|&v| {
                let c = (v as f64 - start) * top / range;
                c.clamp(0.0, top) as u8
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_codes() {
        let d = [-1.0f32, 0.0, 1.0, 0.999];
        let b = bounds(&d);
        assert_eq!(b, (-1.0, 1.0));
        // (0 + 1) * 255 / 2 = 127.5 -> 127; (0.999 + 1) * 127.5 = 254.87 -> 254.
        assert_eq!(encode(&d, b, 8), vec![0, 127, 255, 254]);
        assert_eq!(encode(&[2.0, 2.0], (2.0, 2.0), 8), vec![0, 0]);
    }
}
