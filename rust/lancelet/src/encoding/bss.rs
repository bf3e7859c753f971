//! Byte-stream split (`ByteStreamSplit` compressive encoding), also known
//! as byte shuffle (TileDB's `ByteShuffleFilter`).
//!
//! `n` values of `W` bytes each are stored as `W` streams of `n` bytes:
//! stream `k` holds byte `k` (little-endian position) of every value, so
//! ```text
//! encoded[k·n + i] = value_i[k]
//! ```
//! It compresses nothing by itself; it groups the similar high bytes of
//! floats so a following general compressor does better. Lance applies it per
//! mini-block chunk (1024 f32 or 512 f64 values per chunk), each chunk
//! transposed on its own; there is no header. TileDB shuffles each filter
//! chunk the same way and keeps a trailing remainder shorter than one value
//! as it is ([`encode_keep_tail`], [`decode_keep_tail`]).

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
    let mut out = Vec::with_capacity(values.len());
    split(bytes_per_value, values, &mut out);
    out
}

/// Reassembles `num_values` values from byte streams, appending them to
/// `out`. The input must be exactly `num_values·bytes_per_value` bytes.
pub fn decode(bytes_per_value: usize, data: &[u8], num_values: usize, out: &mut Vec<u8>) -> Result<()> {
    if bytes_per_value == 0 {
        return Err(corrupt!("bss: zero value width"));
    }
    let expected = num_values.checked_mul(bytes_per_value).ok_or_else(|| corrupt!("bss: {num_values} values overflow"))?;
    if data.len() != expected {
        return Err(corrupt!("bss: {num_values} values of {bytes_per_value} bytes need {expected} bytes, got {}", data.len()));
    }
    join(bytes_per_value, data, out);
    Ok(())
}

/// Splits the whole `width`-byte values at the front of `data` into byte
/// streams and keeps the remainder (shorter than a value) after them as it
/// is: TileDB's byte shuffle of one chunk. Widths 0 and 1 copy `data`.
pub fn encode_keep_tail(width: usize, data: &[u8]) -> Vec<u8> {
    if width <= 1 {
        return data.to_vec();
    }
    let whole = data.len() / width * width;
    let mut out = Vec::with_capacity(data.len());
    split(width, &data[..whole], &mut out);
    out.extend_from_slice(&data[whole..]);
    out
}

/// Reverses [`encode_keep_tail`]. Any input is valid: every length has a
/// remainder, however short.
pub fn decode_keep_tail(width: usize, data: &[u8]) -> Vec<u8> {
    if width <= 1 {
        return data.to_vec();
    }
    let whole = data.len() / width * width;
    let mut out = Vec::with_capacity(data.len());
    join(width, &data[..whole], &mut out);
    out.extend_from_slice(&data[whole..]);
    out
}

/// Appends the byte streams of `values` (whole values of `width > 0`
/// bytes) to `out`.
fn split(width: usize, values: &[u8], out: &mut Vec<u8>) {
    let n = values.len() / width;
    let start = out.len();
    out.resize(start + values.len(), 0);
    for (k, stream) in out[start..].chunks_exact_mut(n.max(1)).enumerate().take(width) {
        for (dst, v) in stream.iter_mut().zip(values.chunks_exact(width)) {
            *dst = v[k];
        }
    }
}

/// Appends the values whose byte streams are `data` (`width > 0` streams
/// of equal length) to `out`.
fn join(width: usize, data: &[u8], out: &mut Vec<u8>) {
    let n = data.len() / width;
    if n == 0 {
        return;
    }
    let start = out.len();
    out.resize(start + data.len(), 0);
    let dst = &mut out[start..];
    for (k, stream) in data.chunks_exact(n).enumerate() {
        for (v, &b) in dst.chunks_exact_mut(width).zip(stream) {
            v[k] = b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn layout() {
        let v = [1u8, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(encode(4, &v), vec![1, 5, 2, 6, 3, 7, 4, 8]);
        let mut out = Vec::new();
        decode(4, &encode(4, &v), 2, &mut out).unwrap();
        assert_eq!(out, v);
        // TileDB's form: the two bytes after the last whole value stay.
        assert_eq!(encode_keep_tail(4, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), vec![1, 5, 2, 6, 3, 7, 4, 8, 9, 10]);
    }

    /// TileDB's byte shuffle as a plain loop (what lancelet's TileDB codec
    /// did before sharing this module).
    fn tiledb_shuffle(data: &[u8], width: usize) -> Vec<u8> {
        if width <= 1 || data.len() < width {
            return data.to_vec();
        }
        let n = data.len() / width;
        let mut out = Vec::new();
        for b in 0..width {
            for i in 0..n {
                out.push(data[i * width + b]);
            }
        }
        out.extend_from_slice(&data[n * width..]);
        out
    }

    proptest! {
        /// Byte for byte TileDB's shuffle, and undone by the unshuffle.
        #[test]
        fn keep_tail_is_tiledbs_byte_shuffle(data in proptest::collection::vec(any::<u8>(), 0..200), w in 0usize..9) {
            let shuffled = encode_keep_tail(w, &data);
            prop_assert_eq!(&shuffled, &tiledb_shuffle(&data, w));
            prop_assert_eq!(decode_keep_tail(w, &shuffled), data);
        }

        /// Lance's whole-value form is the same transposition.
        #[test]
        fn whole_values_match_keep_tail(data in proptest::collection::vec(any::<u8>(), 0..200), w in 1usize..9) {
            let whole = &data[..data.len() / w * w];
            prop_assert_eq!(encode(w, whole), encode_keep_tail(w, whole));
            let mut out = Vec::new();
            decode(w, whole, whole.len() / w, &mut out).unwrap();
            prop_assert_eq!(out, decode_keep_tail(w, whole));
        }
    }
}
