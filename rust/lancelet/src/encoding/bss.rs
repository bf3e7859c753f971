//! Byte-stream split (`ByteStreamSplit` compressive encoding).
//!
//! `n` values of `W` bytes each are stored as `W` streams of `n` bytes:
//! stream `k` holds byte `k` (little-endian position) of every value, so
//! ```text
//! encoded[k·n + i] = value_i[k]
//! ```
//! It compresses nothing by itself; it groups the similar high bytes of
//! floats so a following general compressor does better. Lance applies it per
//! mini-block chunk (1024 f32 or 512 f64 values per chunk), each chunk
//! transposed on its own; there is no header.

use crate::corrupt;
use crate::error::Result;

/// Values per mini-block chunk Lance uses for a given value width in bytes.
pub fn chunk_values(bytes_per_value: usize) -> usize {
    if bytes_per_value >= 8 {
        512
    } else {
        1024
    }
}

/// Splits `values` (`n·bytes_per_value` bytes) into byte streams.
///
/// # Panics
/// If `bytes_per_value` is 0 or does not divide the input (caller bugs).
pub fn encode(bytes_per_value: usize, values: &[u8]) -> Vec<u8> {
    assert!(bytes_per_value > 0 && values.len() % bytes_per_value == 0, "bss: bad value width");
    let n = values.len() / bytes_per_value;
    let mut out = vec![0u8; values.len()];
    for (k, stream) in out.chunks_exact_mut(n.max(1)).enumerate().take(bytes_per_value) {
        for (dst, v) in stream.iter_mut().zip(values.chunks_exact(bytes_per_value)) {
            *dst = v[k];
        }
    }
    out
}

/// Reassembles `num_values` values from byte streams, appending them to
/// `out`. The input must be exactly `num_values·bytes_per_value` bytes.
pub fn decode(bytes_per_value: usize, data: &[u8], num_values: usize, out: &mut Vec<u8>) -> Result<()> {
    if bytes_per_value == 0 {
        return Err(corrupt!("bss: zero value width"));
    }
    let expected = num_values
        .checked_mul(bytes_per_value)
        .ok_or_else(|| corrupt!("bss: {num_values} values overflow"))?;
    if data.len() != expected {
        return Err(corrupt!(
            "bss: {num_values} values of {bytes_per_value} bytes need {expected} bytes, got {}",
            data.len()
        ));
    }
    if num_values == 0 {
        return Ok(());
    }
    let start = out.len();
    out.resize(start + expected, 0);
    let dst = &mut out[start..];
    for (k, stream) in data.chunks_exact(num_values).enumerate() {
        for (v, &b) in dst.chunks_exact_mut(bytes_per_value).zip(stream) {
            v[k] = b;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let v = [1u8, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(encode(4, &v), vec![1, 5, 2, 6, 3, 7, 4, 8]);
        let mut out = Vec::new();
        decode(4, &encode(4, &v), 2, &mut out).unwrap();
        assert_eq!(out, v);
    }
}
