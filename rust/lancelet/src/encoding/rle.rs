//! Run-length encoding (`Rle` compressive encoding).
//!
//! A run is a value plus a repeat count. Lance keeps the two in separate
//! streams:
//!
//! * run values: one little-endian value of the original width `T` per run
//!   (`values: Flat{bits_per_value: T}`);
//! * run lengths: one `u8` per run (`run_lengths: Flat{8}`). A run longer
//!   than 255 is split into several entries of the same value
//!   (`255, 255, …, rest`), so there are always as many lengths as values.
//!
//! # Mini-block form
//! A chunk has two value buffers, buffer 0 = run values, buffer 1 = run
//! lengths. Non-final chunks hold a power-of-two number of values (at most
//! 4096) and the encoded chunk stays under ~8 KiB.
//!
//! # Block form
//! Used for whole-page buffers (e.g. rep/def levels of a constant page):
//! ```text
//! [u64 LE byte length of the run-values stream][run values][u8 run lengths]
//! ```
//!
//! Like Lance's decoder, ours stops once the expected number of values has
//! been produced (surplus runs are ignored) and reports too few as corrupt.
//! A zero run length is accepted and contributes nothing.

use crate::corrupt;
use crate::encoding::bitpack::Word;
use crate::error::Result;

/// Largest value count of one mini-block chunk.
pub const MAX_CHUNK_VALUES: usize = 4096;
/// Largest encoded size of one mini-block chunk (values + lengths); the same
/// budget Lance leaves after the chunk header of an 8 KiB mini-block.
pub const MAX_CHUNK_BYTES: usize = 8 * 1024 - 6;

/// Decodes runs into `out`, appending exactly `num_values` values.
pub fn decode_typed<T: Word>(run_values: &[u8], run_lengths: &[u8], num_values: usize, out: &mut Vec<T>) -> Result<()> {
    if run_values.len() % T::BYTES != 0 {
        return Err(corrupt!("rle: {} value bytes is not a whole number of {}-byte values", run_values.len(), T::BYTES));
    }
    let num_runs = run_values.len() / T::BYTES;
    if num_runs != run_lengths.len() {
        return Err(corrupt!("rle: {num_runs} run values but {} run lengths", run_lengths.len()));
    }
    // Each length byte yields at most 255 values, which bounds what a
    // corrupt count can make us allocate.
    let producible = num_runs.saturating_mul(255);
    if num_values > producible {
        return Err(corrupt!("rle: {num_runs} runs cannot hold {num_values} values"));
    }
    let start = out.len();
    let end = start + num_values;
    out.reserve(num_values);
    for (v, &len) in run_values.chunks_exact(T::BYTES).zip(run_lengths) {
        let remaining = end - out.len();
        if remaining == 0 {
            break;
        }
        let n = (len as usize).min(remaining);
        out.resize(out.len() + n, T::read_le(v));
    }
    if out.len() != end {
        let got = out.len() - start;
        out.truncate(start);
        return Err(corrupt!("rle: runs hold {got} values, expected {num_values}"));
    }
    Ok(())
}

/// Decodes a mini-block chunk (run values of `bits_per_value` bits + u8 run
/// lengths), appending `num_values` little-endian values to `out`.
pub fn decode(bits_per_value: u32, run_values: &[u8], run_lengths: &[u8], num_values: usize, out: &mut Vec<u8>) -> Result<()> {
    fn go<T: Word>(v: &[u8], l: &[u8], n: usize, out: &mut Vec<u8>) -> Result<()> {
        let mut vals: Vec<T> = Vec::new();
        decode_typed::<T>(v, l, n, &mut vals)?;
        let start = out.len();
        out.resize(start + vals.len() * T::BYTES, 0);
        for (dst, x) in out[start..].chunks_exact_mut(T::BYTES).zip(&vals) {
            x.put_le(dst);
        }
        Ok(())
    }
    match bits_per_value {
        8 => go::<u8>(run_values, run_lengths, num_values, out),
        16 => go::<u16>(run_values, run_lengths, num_values, out),
        32 => go::<u32>(run_values, run_lengths, num_values, out),
        64 => go::<u64>(run_values, run_lengths, num_values, out),
        other => Err(corrupt!("rle: unsupported value width {other}")),
    }
}

/// Encodes all of `values` as runs; returns `(run values LE, run lengths)`.
pub fn encode_typed<T: Word>(values: &[T]) -> (Vec<u8>, Vec<u8>) {
    let mut run_values = Vec::new();
    let mut run_lengths = Vec::new();
    let mut i = 0;
    while i < values.len() {
        let v = values[i];
        let mut j = i + 1;
        while j < values.len() && values[j] == v {
            j += 1;
        }
        let mut len = j - i;
        let mut buf = [0u8; 8];
        v.put_le(&mut buf[..T::BYTES]);
        while len > 0 {
            let piece = len.min(255);
            run_values.extend_from_slice(&buf[..T::BYTES]);
            run_lengths.push(piece as u8);
            len -= piece;
        }
        i = j;
    }
    (run_values, run_lengths)
}

/// Byte-level [`encode_typed`].
///
/// # Panics
/// On a width other than 8/16/32/64 or a partial value (caller bugs).
pub fn encode(bits_per_value: u32, values_le: &[u8]) -> (Vec<u8>, Vec<u8>) {
    fn go<T: Word>(b: &[u8]) -> (Vec<u8>, Vec<u8>) {
        assert_eq!(b.len() % T::BYTES, 0, "value bytes not a multiple of the value size");
        let v: Vec<T> = b.chunks_exact(T::BYTES).map(T::read_le).collect();
        encode_typed(&v)
    }
    match bits_per_value {
        8 => go::<u8>(values_le),
        16 => go::<u16>(values_le),
        32 => go::<u32>(values_le),
        64 => go::<u64>(values_le),
        other => panic!("rle: unsupported value width {other}"),
    }
}

/// Encoded size (values + lengths) of `values` as runs.
fn encoded_size<T: Word>(values: &[T]) -> usize {
    let mut size = 0;
    let mut i = 0;
    while i < values.len() {
        let mut j = i + 1;
        while j < values.len() && values[j] == values[i] {
            j += 1;
        }
        size += (j - i).div_ceil(255) * (T::BYTES + 1);
        i = j;
    }
    size
}

/// Splits `values` into mini-block chunk sizes: every chunk but the last
/// holds a power of two ≤ [`MAX_CHUNK_VALUES`] values, and every chunk
/// encodes to ≤ [`MAX_CHUNK_BYTES`]. Returns the value count of each chunk.
pub fn plan_chunks<T: Word>(values: &[T]) -> Vec<usize> {
    let mut chunks = Vec::new();
    let mut pos = 0;
    while pos < values.len() {
        let rest = &values[pos..];
        if rest.len() <= MAX_CHUNK_VALUES && encoded_size(rest) <= MAX_CHUNK_BYTES {
            chunks.push(rest.len());
            break;
        }
        // Largest power of two that fits; a single value always does.
        let cap = MAX_CHUNK_VALUES.min(rest.len());
        let mut n = 1usize << (usize::BITS - 1 - cap.leading_zeros());
        while n > 1 && encoded_size(&rest[..n]) > MAX_CHUNK_BYTES {
            n /= 2;
        }
        chunks.push(n);
        pos += n;
    }
    chunks
}

/// Decodes the block form `[u64 byte length of values][values][lengths]`,
/// appending `num_values` little-endian values to `out`.
pub fn decode_block(bits_per_value: u32, data: &[u8], num_values: usize, out: &mut Vec<u8>) -> Result<()> {
    let (values, lengths) = split_block(data)?;
    decode(bits_per_value, values, lengths, num_values, out)
}

/// Typed [`decode_block`].
pub fn decode_block_typed<T: Word>(data: &[u8], num_values: usize, out: &mut Vec<T>) -> Result<()> {
    let (values, lengths) = split_block(data)?;
    decode_typed(values, lengths, num_values, out)
}

fn split_block(data: &[u8]) -> Result<(&[u8], &[u8])> {
    let header = data.get(..8).ok_or_else(|| corrupt!("rle block: {} bytes, too short for the length header", data.len()))?;
    let values_len = u64::from_le_bytes(header.try_into().expect("8 bytes"));
    let body = &data[8..];
    if values_len > body.len() as u64 {
        return Err(corrupt!("rle block: values claim {values_len} bytes, only {} follow", body.len()));
    }
    Ok(body.split_at(values_len as usize))
}

/// Encodes the block form of `values_le`.
///
/// # Panics
/// As [`encode`].
pub fn encode_block(bits_per_value: u32, values_le: &[u8]) -> Vec<u8> {
    let (values, lengths) = encode(bits_per_value, values_le);
    let mut out = Vec::with_capacity(8 + values.len() + lengths.len());
    out.extend_from_slice(&(values.len() as u64).to_le_bytes());
    out.extend_from_slice(&values);
    out.extend_from_slice(&lengths);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_runs_split_at_255() {
        let mut v = vec![42i32 as u32; 1000];
        v.extend(std::iter::repeat_n(100u32, 300));
        let (vals, lens) = encode_typed(&v);
        assert_eq!(lens, vec![255, 255, 255, 235, 255, 45]);
        assert_eq!(vals.len(), 6 * 4);
        let mut dec = Vec::new();
        decode_typed::<u32>(&vals, &lens, v.len(), &mut dec).unwrap();
        assert_eq!(dec, v);
    }

    #[test]
    fn block_layout() {
        let levels: Vec<u8> = [1u16, 1, 1, 0, 0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let b = encode_block(16, &levels);
        assert_eq!(b, vec![4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 3, 2]);
        let mut out = Vec::new();
        decode_block(16, &b, 5, &mut out).unwrap();
        assert_eq!(out, levels);
    }

    #[test]
    fn chunk_plan() {
        let v: Vec<u32> = (0..10_000).map(|i| i / 7).collect();
        let plan = plan_chunks(&v);
        assert_eq!(plan.iter().sum::<usize>(), v.len());
        let mut pos = 0;
        for (i, &n) in plan.iter().enumerate() {
            if i + 1 < plan.len() {
                assert!(n.is_power_of_two() && n <= MAX_CHUNK_VALUES);
            }
            assert!(encoded_size(&v[pos..pos + n]) <= MAX_CHUNK_BYTES);
            pos += n;
        }
        // Distinct values: 5 bytes per value, so at most 1024 per chunk.
        let v: Vec<u32> = (0..3000).collect();
        assert_eq!(plan_chunks(&v), vec![1024, 1024, 952]);
    }
}
