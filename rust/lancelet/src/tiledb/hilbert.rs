//! Hilbert values of coordinates, the cell order of arrays created with
//! `cell_order="hilbert"`: sparse reads in "U" order return cells by
//! ascending Hilbert value, ties by row-major coordinates (TileDB's global
//! order for such arrays).
//!
//! Each coordinate is first mapped to an integer of `bits = 63 / dims`
//! bits: numbers by `(v - lo) / (hi - lo) * (2^bits - 1)` computed in f64
//! over the dimension's domain and truncated; strings by their first 8
//! bytes as a big-endian u64 (zero padded) shifted right by `64 - bits`.
//! The integers are then placed on the curve with Skilling's transform
//! ("Programming the Hilbert curve", 2004), the bits of the transposed
//! axes interleaved from the lowest bit up, last dimension first.

use super::schema::{float_value, int_value, ArraySchema};

/// Bits per dimension for `dims` dimensions.
pub fn bits_for(dims: usize) -> u32 {
    63 / dims.max(1) as u32
}

/// One coordinate mapped onto `bits` bits.
pub fn map_coordinate(schema: &ArraySchema, d: usize, v: &[u8], bits: u32) -> u64 {
    let dim = &schema.dims[d];
    let max_bucket = ((1u64 << bits) - 1) as f64;
    if dim.is_var() || dim.datatype.is_bytes() {
        let mut word = 0u64;
        for i in 0..8 {
            word = (word << 8) | v.get(i).copied().unwrap_or(0) as u64;
        }
        return word >> (64 - bits);
    }
    let Some((lo, hi)) = &dim.domain else { return 0 };
    let as_f64 = |b: &[u8]| int_value(dim.datatype, b).map(|i| i as f64).or_else(|| float_value(dim.datatype, b)).unwrap_or(0.0);
    let (lo, hi, x) = (as_f64(lo), as_f64(hi), as_f64(v));
    let range = hi - lo;
    let scaled = (x - lo) / range * max_bucket;
    // `as` saturates: NaN (a one-value domain) maps to 0 like TileDB's
    // conversion on x86.
    scaled as u64
}

/// Skilling's axes-to-transpose step, in place.
fn axes_to_transpose(x: &mut [u64], bits: u32) {
    let n = x.len();
    let mut q = 1u64 << (bits - 1);
    while q > 1 {
        let p = q - 1;
        if x[0] & q != 0 {
            x[0] ^= p;
        }
        for i in 1..n {
            if x[i] & q != 0 {
                x[0] ^= p;
            } else {
                let t = (x[0] ^ x[i]) & p;
                x[0] ^= t;
                x[i] ^= t;
            }
        }
        q >>= 1;
    }
    for i in 1..n {
        x[i] ^= x[i - 1];
    }
    let mut t = x[n - 1];
    let mut i = 1u32;
    while i < bits {
        x[n - 1] ^= x[n - 1] >> i;
        i <<= 1;
    }
    t ^= x[n - 1];
    for v in x[..n - 1].iter_mut().rev() {
        *v ^= t;
    }
}

/// The Hilbert value of mapped coordinates (`bits` each).
pub fn hilbert_index(coords: &[u64], bits: u32) -> u64 {
    let mut x = coords.to_vec();
    if x.is_empty() || bits == 0 {
        return 0;
    }
    axes_to_transpose(&mut x, bits);
    let mut out = 0u64;
    let mut h = 1u64;
    for j in 0..bits {
        let c = 1u64 << j;
        for v in x.iter().rev() {
            if v & c != 0 {
                out |= h;
            }
            h = h.wrapping_shl(1);
        }
    }
    out
}

/// The Hilbert value of a cell given its stored coordinate bytes.
pub fn cell_hilbert(schema: &ArraySchema, coords: &[&[u8]]) -> u64 {
    let bits = bits_for(schema.dims.len());
    let mapped: Vec<u64> = coords.iter().enumerate().map(|(d, v)| map_coordinate(schema, d, v, bits)).collect();
    hilbert_index(&mapped, bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_bit_curve_in_two_dimensions() {
        // The order-1 curve in 2-D visits (0,0), (0,1), (1,1), (1,0).
        let order: Vec<u64> = [[0, 0], [0, 1], [1, 1], [1, 0]].iter().map(|c| hilbert_index(c, 1)).collect();
        assert_eq!(order, vec![0, 1, 2, 3]);
        // Every cell of a 4x4 grid gets a distinct value below 16, and
        // consecutive values are neighbours.
        let mut by_h = vec![(0u64, 0u64); 16];
        for x in 0..4u64 {
            for y in 0..4u64 {
                let h = hilbert_index(&[x, y], 2);
                by_h[h as usize] = (x, y);
            }
        }
        for w in by_h.windows(2) {
            let d = w[0].0.abs_diff(w[1].0) + w[0].1.abs_diff(w[1].1);
            assert_eq!(d, 1, "{w:?}");
        }
    }
}
