//! The small TileDB codecs lancelet implements itself: RLE of fixed-size
//! values, delta, double delta, bit-width reduction windows, positive-delta
//! windows, XOR and float scaling. Each function reverses one filter on
//! bytes already split from its metadata (see `filters.rs` for the metadata
//! layouts); values are little-endian. The byte shuffle is Lance's
//! byte-stream split (`encoding::bss`, `decode_keep_tail`).
//!
//! Integer arithmetic is done on 64-bit values and truncated to the width
//! of the stored type, which is what wrapping fixed-width arithmetic gives.

use crate::error::{Error, Result};

/// Undo TileDB's RLE of fixed-size values: runs of `value_size` bytes
/// followed by a big-endian u16 run length.
pub fn rle_decode(data: &[u8], value_size: usize, expected: usize) -> Result<Vec<u8>> {
    let run = value_size + 2;
    if value_size == 0 || data.len() % run != 0 {
        return Err(Error::corrupt(format!("RLE data of {} bytes is not whole runs of {run} bytes", data.len())));
    }
    // Each run repeats its value at most u16::MAX times.
    let most = (data.len() / run).saturating_mul(usize::from(u16::MAX)).saturating_mul(value_size);
    let mut out = Vec::with_capacity(expected.min(most));
    for r in data.chunks_exact(run) {
        let len = u16::from_be_bytes([r[value_size], r[value_size + 1]]) as usize;
        if out.len() + len * value_size > expected {
            return Err(Error::corrupt("RLE runs decode to more bytes than the chunk holds"));
        }
        for _ in 0..len {
            out.extend_from_slice(&r[..value_size]);
        }
    }
    Ok(out)
}

/// A little-endian integer of `width` bytes at `b`, sign- or zero-extended.
pub fn read_int(b: &[u8], width: usize, signed: bool) -> i64 {
    let mut a = [0u8; 8];
    a[..width].copy_from_slice(&b[..width]);
    let v = u64::from_le_bytes(a);
    if signed && width < 8 {
        let shift = 64 - 8 * width as u32;
        ((v << shift) as i64) >> shift
    } else {
        v as i64
    }
}

/// Append the low `width` bytes of `v`.
pub fn write_int(out: &mut Vec<u8>, v: i64, width: usize) {
    out.extend_from_slice(&v.to_le_bytes()[..width]);
}

/// Undo TileDB's delta compressor: u64 count, first value, then deltas,
/// all of `width` bytes.
pub fn delta_decode(data: &[u8], width: usize, signed: bool) -> Result<Vec<u8>> {
    let mut c = super::cursor::Cursor::new(data);
    let n = c.count(width, "delta value count")?;
    let mut out = Vec::with_capacity(n * width);
    if n == 0 {
        return Ok(out);
    }
    let mut last = read_int(c.take(width, "delta first value")?, width, signed);
    write_int(&mut out, last, width);
    for _ in 1..n {
        let d = read_int(c.take(width, "delta")?, width, signed);
        last = truncate(last.wrapping_add(d), width, signed);
        write_int(&mut out, last, width);
    }
    Ok(out)
}

fn truncate(v: i64, width: usize, signed: bool) -> i64 {
    let mut b = Vec::with_capacity(8);
    write_int(&mut b, v, width);
    read_int(&b, width, signed)
}

/// Undo TileDB's double-delta compressor: u8 bit size, u64 count, the
/// first two values verbatim, then per value a sign bit and `bitsize`
/// magnitude bits of the second difference, most significant first, packed
/// into little-endian u64 words read from their top bit down. A bit size of
/// at least the value width minus one means the values follow verbatim.
pub fn double_delta_decode(data: &[u8], width: usize, signed: bool) -> Result<Vec<u8>> {
    let mut c = super::cursor::Cursor::new(data);
    let bitsize = c.u8("double delta bit size")? as usize;
    let n = c.u64("double delta value count")?;
    if bitsize >= width * 8 - 1 {
        return Ok(c.rest().to_vec());
    }
    let n = usize::try_from(n).map_err(|_| Error::corrupt("double delta count too large"))?;
    if n.saturating_mul(width) > (1usize << 40) {
        return Err(Error::corrupt(format!("double delta count {n} is implausible")));
    }
    // Each value after the first two takes at least its sign bit.
    let most = 2usize.saturating_add(c.remaining().saturating_mul(8) / (bitsize + 1));
    let mut vals: Vec<i64> = Vec::with_capacity(n.min(most));
    for _ in 0..n.min(2) {
        vals.push(read_int(c.take(width, "double delta leading value")?, width, signed));
    }
    if n > 2 {
        let words = c.rest();
        let mut bit = 0usize;
        let total_bits = words.len() / 8 * 64;
        let next_bit = |bit: &mut usize| -> Result<u64> {
            if *bit >= total_bits {
                return Err(Error::corrupt("double delta bit stream ends early"));
            }
            let w = super::cursor::u64_at(words, *bit / 64);
            let v = (w >> (63 - (*bit % 64))) & 1;
            *bit += 1;
            Ok(v)
        };
        for i in 2..n {
            let negative = next_bit(&mut bit)? == 1;
            let mut mag: i64 = 0;
            for _ in 0..bitsize {
                mag = (mag << 1) | next_bit(&mut bit)? as i64;
            }
            let dd = if negative { -mag } else { mag };
            let v = dd.wrapping_add(vals[i - 1].wrapping_mul(2)).wrapping_sub(vals[i - 2]);
            vals.push(truncate(v, width, signed));
        }
    }
    let mut out = Vec::with_capacity(vals.len() * width);
    for v in vals {
        write_int(&mut out, v, width);
    }
    Ok(out)
}

/// Undo XOR: each value was XORed with the previous original value.
pub fn xor_decode(data: &[u8], width: usize) -> Result<Vec<u8>> {
    if width == 0 || data.len() % width != 0 {
        return Err(Error::corrupt(format!("XOR part of {} bytes is not whole {width}-byte values", data.len())));
    }
    let mut out = data.to_vec();
    for i in width..out.len() {
        out[i] ^= out[i - width];
    }
    Ok(out)
}

/// Undo float scaling: `bytewidth`-byte signed integers become
/// `value * scale + offset` as f32 (`float_width` 4) or f64 (8).
pub fn float_unscale(data: &[u8], bytewidth: usize, float_width: usize, scale: f64, offset: f64) -> Result<Vec<u8>> {
    if !matches!(bytewidth, 1 | 2 | 4 | 8) || data.len() % bytewidth != 0 {
        return Err(Error::corrupt(format!("float scale part of {} bytes with byte width {bytewidth}", data.len())));
    }
    let mut out = Vec::with_capacity(data.len() / bytewidth * float_width);
    for v in data.chunks_exact(bytewidth) {
        let i = read_int(v, bytewidth, true);
        if float_width == 4 {
            let f = (scale as f32) * (i as f32) + offset as f32;
            out.extend_from_slice(&f.to_le_bytes());
        } else {
            let f = scale * (i as f64) + offset;
            out.extend_from_slice(&f.to_le_bytes());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn delta_round_trips(vals in proptest::collection::vec(any::<i32>(), 1..100)) {
            let mut enc = (vals.len() as u64).to_le_bytes().to_vec();
            enc.extend_from_slice(&vals[0].to_le_bytes());
            for w in vals.windows(2) {
                enc.extend_from_slice(&w[1].wrapping_sub(w[0]).to_le_bytes());
            }
            let dec = delta_decode(&enc, 4, true).unwrap();
            let want: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
            prop_assert_eq!(dec, want);
        }

        #[test]
        fn xor_round_trips(vals in proptest::collection::vec(any::<u64>(), 0..50)) {
            let mut enc = Vec::new();
            for (i, v) in vals.iter().enumerate() {
                let x = if i == 0 { *v } else { v ^ vals[i - 1] };
                enc.extend_from_slice(&x.to_le_bytes());
            }
            let want: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
            prop_assert_eq!(xor_decode(&enc, 8).unwrap(), want);
        }
    }

    #[test]
    fn rle_decodes_runs_and_rejects_ragged_input() {
        let enc = [7u8, 0, 0, 3, 9, 0, 0, 1];
        assert_eq!(rle_decode(&enc, 2, 8).unwrap(), vec![7, 0, 7, 0, 7, 0, 9, 0]);
        assert!(rle_decode(&enc[..5], 2, 8).is_err());
        assert!(rle_decode(&enc, 2, 4).is_err());
        // A claimed length is room to fill, not an allocation to make.
        assert_eq!(rle_decode(&enc, 2, 1 << 62).unwrap().len(), 8);
    }

    #[test]
    fn double_delta_count_beyond_the_bit_stream_allocates_nothing() {
        let mut enc = vec![0u8];
        enc.extend_from_slice(&(1u64 << 36).to_le_bytes());
        enc.extend_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0]);
        enc.extend_from_slice(&0u64.to_le_bytes());
        let e = double_delta_decode(&enc, 4, true).unwrap_err();
        assert!(e.to_string().contains("ends early"), "{e}");
    }

    #[test]
    fn double_delta_decodes_a_hand_packed_stream() {
        // values 1, 3, 6, 10: second differences +1, +1 with bitsize 1.
        let mut enc = vec![1u8];
        enc.extend_from_slice(&4u64.to_le_bytes());
        enc.extend_from_slice(&1i32.to_le_bytes());
        enc.extend_from_slice(&3i32.to_le_bytes());
        // bits: sign 0, mag 1, sign 0, mag 1 -> 0101 at the top of the word.
        let word: u64 = 0b0101 << 60;
        enc.extend_from_slice(&word.to_le_bytes());
        let dec = double_delta_decode(&enc, 4, true).unwrap();
        let want: Vec<u8> = [1i32, 3, 6, 10].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(dec, want);
    }
}
