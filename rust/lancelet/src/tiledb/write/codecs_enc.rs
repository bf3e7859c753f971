//! The encode side of the small TileDB codecs (`codecs.rs` reverses them):
//! XOR, float scaling, RLE of fixed-size values, delta, double delta,
//! bit-width reduction and positive-delta windows (the byte shuffle is
//! `encoding::bss::encode_keep_tail`). Values are little-endian integers of
//! the tile's width; arithmetic wraps at that width as TileDB's fixed-width
//! C++ arithmetic does.

use super::super::codecs::{read_int, write_int};
use crate::error::{Error, Result};

/// XOR each value with the previous original value.
pub fn xor_encode(data: &[u8], width: usize) -> Result<Vec<u8>> {
    if width == 0 || data.len() % width != 0 {
        return Err(Error::invalid_input(format!("XOR input of {} bytes is not whole {width}-byte values", data.len())));
    }
    let mut out = data.to_vec();
    for i in (width..out.len()).rev() {
        out[i] ^= data[i - width];
    }
    Ok(out)
}

/// Float scaling: `round((v - offset) / factor)` stored as signed integers
/// of `bytewidth` bytes.
pub fn float_scale(data: &[u8], float_width: usize, bytewidth: usize, factor: f64, offset: f64) -> Result<Vec<u8>> {
    if !matches!(bytewidth, 1 | 2 | 4 | 8) {
        return Err(Error::invalid_input(format!("FloatScaleFilter byte width {bytewidth} (use 1, 2, 4 or 8)")));
    }
    let mut out = Vec::with_capacity(data.len() / float_width * bytewidth);
    for v in data.chunks_exact(float_width) {
        let f = if float_width == 4 {
            f32::from_le_bytes(v.try_into().unwrap_or_default()) as f64
        } else {
            f64::from_le_bytes(v.try_into().unwrap_or_default())
        };
        let scaled = ((f - offset) / factor).round();
        write_int(&mut out, scaled as i64, bytewidth);
    }
    Ok(out)
}

/// RLE of `value_size`-byte values: each run is the value then a
/// big-endian u16 length (runs longer than 65535 are split).
pub fn rle_encode(data: &[u8], value_size: usize) -> Result<Vec<u8>> {
    if data.len() % value_size != 0 {
        return Err(Error::invalid_input(format!("RLE input of {} bytes is not whole {value_size}-byte values", data.len())));
    }
    let mut out = Vec::new();
    let mut vals = data.chunks_exact(value_size).peekable();
    while let Some(v) = vals.next() {
        let mut run: u16 = 1;
        while run < u16::MAX && vals.peek() == Some(&v) {
            vals.next();
            run += 1;
        }
        out.extend_from_slice(v);
        out.extend_from_slice(&run.to_be_bytes());
    }
    Ok(out)
}

/// Delta: u64 count, the first value, then the differences.
pub fn delta_encode(data: &[u8], width: usize) -> Result<Vec<u8>> {
    if width == 0 || data.len() % width != 0 {
        return Err(Error::invalid_input(format!("delta input of {} bytes is not whole {width}-byte values", data.len())));
    }
    let n = data.len() / width;
    let mut out = Vec::with_capacity(8 + data.len());
    out.extend_from_slice(&(n as u64).to_le_bytes());
    let mut prev = 0i64;
    for (i, v) in data.chunks_exact(width).enumerate() {
        let x = read_int(v, width, false);
        write_int(&mut out, if i == 0 { x } else { x.wrapping_sub(prev) }, width);
        prev = x;
    }
    Ok(out)
}

/// Double delta: u8 bit size, u64 count, the first two values, then per
/// value a sign bit and `bitsize` magnitude bits of the second difference,
/// packed from the top bit of little-endian u64 words down. When the bit
/// size reaches the width minus one the values follow verbatim.
pub fn double_delta_encode(data: &[u8], width: usize, signed: bool) -> Result<Vec<u8>> {
    if width == 0 || data.len() % width != 0 {
        return Err(Error::invalid_input(format!("double delta input of {} bytes is not whole values", data.len())));
    }
    let vals: Vec<i128> = data
        .chunks_exact(width)
        .map(|v| {
            let x = read_int(v, width, signed);
            if signed || width < 8 {
                x as i128
            } else {
                x as u64 as i128
            }
        })
        .collect();
    let n = vals.len();
    let mut dds = Vec::with_capacity(n.saturating_sub(2));
    let mut bitsize = 0u32;
    let mut verbatim = false;
    for i in 2..n {
        let dd = (vals[i] - vals[i - 1]) - (vals[i - 1] - vals[i - 2]);
        let mag = dd.unsigned_abs();
        let bits = 128 - mag.leading_zeros();
        if bits as usize >= width * 8 - 1 {
            verbatim = true;
            break;
        }
        bitsize = bitsize.max(bits);
        dds.push(dd);
    }
    let mut out = Vec::with_capacity(9 + data.len());
    if verbatim {
        out.push((width * 8 - 1) as u8);
        out.extend_from_slice(&(n as u64).to_le_bytes());
        out.extend_from_slice(data);
        return Ok(out);
    }
    out.push(bitsize as u8);
    out.extend_from_slice(&(n as u64).to_le_bytes());
    out.extend_from_slice(&data[..n.min(2) * width]);
    let mut word: u64 = 0;
    let mut used = 0u32;
    let mut push_bit = |bit: u64, out: &mut Vec<u8>| {
        word |= bit << (63 - used);
        used += 1;
        if used == 64 {
            out.extend_from_slice(&word.to_le_bytes());
            word = 0;
            used = 0;
        }
    };
    for dd in &dds {
        push_bit((*dd < 0) as u64, &mut out);
        let mag = dd.unsigned_abs();
        for b in (0..bitsize).rev() {
            push_bit(((mag >> b) & 1) as u64, &mut out);
        }
    }
    if used > 0 {
        out.extend_from_slice(&word.to_le_bytes());
    }
    Ok(out)
}

fn window_bytes(len: usize, max_window: usize, width: usize) -> usize {
    (len.min(max_window) / width * width).max(width)
}

/// Bit-width reduction: per window of at most `max_window` bytes the
/// minimum is the offset and values minus it are stored in 8, 16 or 32
/// bits (windows needing the full width stay raw). Returns (header, data):
/// header `u32 input length, u32 windows`, per window `offset, u8 bits, u32
/// window bytes`.
pub fn bit_width_reduce(data: &[u8], width: usize, signed: bool, max_window: usize) -> (Vec<u8>, Vec<u8>) {
    let mut header = Vec::new();
    header.extend_from_slice(&(data.len() as u32).to_le_bytes());
    let mut windows = Vec::new();
    let mut out = Vec::with_capacity(data.len());
    if data.is_empty() {
        header.extend_from_slice(&0u32.to_le_bytes());
        return (header, out);
    }
    let wb = window_bytes(data.len(), max_window, width);
    let full_bits = (width * 8) as u32;
    let as_i128 = |v: &[u8]| -> i128 {
        let x = read_int(v, width, signed);
        if signed || width < 8 {
            x as i128
        } else {
            x as u64 as i128
        }
    };
    let tmax: i128 = if signed { (1i128 << (full_bits - 1)) - 1 } else { (1i128 << full_bits) - 1 };
    for win in data.chunks(wb) {
        let mut w = Vec::new();
        if win.len() % width != 0 {
            let mut first = win.to_vec();
            first.resize(width, 0);
            w.extend_from_slice(&first);
            w.push(full_bits as u8);
            w.extend_from_slice(&(win.len() as u32).to_le_bytes());
            out.extend_from_slice(win);
            windows.push(w);
            continue;
        }
        let vals: Vec<i128> = win.chunks_exact(width).map(as_i128).collect();
        let lo = *vals.iter().min().unwrap_or(&0);
        let hi = *vals.iter().max().unwrap_or(&0);
        let range = hi - lo;
        let bits = if range + 1 > tmax {
            full_bits
        } else if signed {
            let r = range + 1;
            if r <= i8::MAX as i128 {
                8
            } else if r <= i16::MAX as i128 {
                16
            } else if r <= i32::MAX as i128 {
                32
            } else {
                64
            }
        } else {
            let r = (range + 1) as u128;
            let b = 128 - r.leading_zeros();
            if b <= 8 {
                8
            } else if b <= 16 {
                16
            } else if b <= 32 {
                32
            } else {
                64
            }
        };
        write_int(&mut w, lo as i64, width);
        w.push(bits as u8);
        w.extend_from_slice(&(win.len() as u32).to_le_bytes());
        if bits >= full_bits {
            out.extend_from_slice(win);
        } else {
            for v in &vals {
                write_int(&mut out, (v - lo) as i64, bits as usize / 8);
            }
        }
        windows.push(w);
    }
    header.extend_from_slice(&(windows.len() as u32).to_le_bytes());
    for w in windows {
        header.extend_from_slice(&w);
    }
    (header, out)
}

/// Positive delta: per window the first value is the offset and every
/// value is stored as its (non-negative) difference from the previous one.
/// Returns (header, data): header `u32 windows`, per window `offset, u32
/// window bytes`. A decreasing value is an error, as in TileDB.
pub fn positive_delta(data: &[u8], width: usize, signed: bool, max_window: usize) -> Result<(Vec<u8>, Vec<u8>)> {
    let mut header = Vec::new();
    let mut out = Vec::with_capacity(data.len());
    if data.is_empty() {
        header.extend_from_slice(&0u32.to_le_bytes());
        return Ok((header, out));
    }
    let wb = window_bytes(data.len(), max_window, width);
    let mut windows = Vec::new();
    let as_i128 = |v: &[u8]| -> i128 {
        let x = read_int(v, width, signed);
        if signed || width < 8 {
            x as i128
        } else {
            x as u64 as i128
        }
    };
    for win in data.chunks(wb) {
        let mut w = Vec::new();
        if win.len() % width != 0 {
            let mut first = win.to_vec();
            first.resize(width, 0);
            w.extend_from_slice(&first);
            w.extend_from_slice(&(win.len() as u32).to_le_bytes());
            out.extend_from_slice(win);
            windows.push(w);
            continue;
        }
        let vals: Vec<i128> = win.chunks_exact(width).map(as_i128).collect();
        w.extend_from_slice(&win[..width]);
        w.extend_from_slice(&(win.len() as u32).to_le_bytes());
        let mut prev = vals[0];
        for &v in &vals {
            if v < prev {
                return Err(Error::invalid_input("PositiveDeltaFilter: values decrease (delta is not positive)"));
            }
            write_int(&mut out, (v - prev) as i64, width);
            prev = v;
        }
        windows.push(w);
    }
    header.extend_from_slice(&(windows.len() as u32).to_le_bytes());
    for w in windows {
        header.extend_from_slice(&w);
    }
    Ok((header, out))
}

#[cfg(test)]
mod tests {
    use super::super::super::codecs;
    use super::*;
    use crate::encoding::bss;
    use proptest::prelude::*;

    fn ints(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    proptest! {
        #[test]
        fn shuffle_and_xor_invert(vals in proptest::collection::vec(any::<i32>(), 0..100)) {
            let d = ints(&vals);
            prop_assert_eq!(bss::decode_keep_tail(4, &bss::encode_keep_tail(4, &d)), d.clone());
            prop_assert_eq!(codecs::xor_decode(&xor_encode(&d, 4).unwrap(), 4).unwrap(), d);
        }

        #[test]
        fn deltas_invert(vals in proptest::collection::vec(any::<i32>(), 0..100), small in proptest::collection::vec(-50i32..50, 0..100)) {
            for v in [&vals, &small] {
                let d = ints(v);
                prop_assert_eq!(codecs::delta_decode(&delta_encode(&d, 4).unwrap(), 4, true).unwrap(), d.clone());
                prop_assert_eq!(codecs::double_delta_decode(&double_delta_encode(&d, 4, true).unwrap(), 4, true).unwrap(), d.clone());
            }
        }

        #[test]
        fn rle_inverts(vals in proptest::collection::vec(0u16..3, 0..300)) {
            let d: Vec<u8> = vals.iter().flat_map(|x| x.to_le_bytes()).collect();
            prop_assert_eq!(codecs::rle_decode(&rle_encode(&d, 2).unwrap(), 2, d.len()).unwrap(), d);
        }
    }

    #[test]
    fn bit_width_windows_pick_the_narrowest_width() {
        let d = ints(&[1000, 1001, 1100, -5]);
        let (h, out) = bit_width_reduce(&d, 4, true, 256);
        // one window: offset -5, 16 bits (range 1105 + 1 > 127).
        assert_eq!(&h[8..12], &(-5i32).to_le_bytes());
        assert_eq!(h[12], 16);
        assert_eq!(out.len(), 8);
    }
}
