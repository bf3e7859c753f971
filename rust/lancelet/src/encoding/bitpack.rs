//! FastLanes bit packing, in the two shapes Lance stores it.
//!
//! # The 1024-value block
//!
//! Values of an unsigned word type `T` (8, 16, 32 or 64 bits) are packed
//! 1024 at a time to `W` bits each (`0 ≤ W ≤ T`), giving `1024·W/T` words of
//! type `T` = `128·W` bytes. The block is viewed as `LANES = 1024/T`
//! independent lanes; lane `l` is a little-endian bit stream made of the words
//! `k·LANES + l` (`k = 0..W`), and row `r` of that lane (`r = 0..T`) sits at
//! bit `r·W` of the stream, possibly straddling two words. Row `r` of lane `l`
//! holds logical value number `FL_ORDER[r/8]·16 + (r%8)·128 + l` with
//! `FL_ORDER = [0,4,2,6,1,5,3,7]`. This is exactly the layout of the
//! `fastlanes` crate's `BitPacking` (Lance's own packer is a fork of it), so
//! the kernels come from there; this module only frames and validates.
//!
//! # Inline chunks (`InlineBitpacking`, mini-block values)
//!
//! ```text
//! [W as one T-bit LE word][1024·W/T packed T-bit words]
//! ```
//! One chunk holds at most 1024 values; a short chunk is zero-padded to 1024
//! before packing and its real count comes from elsewhere (mini-block chunk
//! metadata). Each chunk has its own `W`. Lance also uses this form as the
//! *block* compressor for buffers of ≤ 1024 values.
//!
//! # Out-of-line (`OutOfLineBitpacking`, rep/def levels of > 1024 values)
//!
//! One `W` for the whole buffer (recorded in the encoding description as
//! `Flat{bits_per_value: W}`), then full packed blocks back to back. A
//! trailing partial block is stored either zero-padded and packed, or as raw
//! `T`-bit words: the writer packs it only when padding costs fewer bits than
//! packing saves, i.e. when `W·(1024−r) < (T−W)·r` for `r` tail values, which
//! works out to "raw iff `r ≤ 1024·W/T`". The reader has no flag and tells the
//! two apart by the buffer length (raw iff the tail occupies exactly `r`
//! words).
//!
//! # Bit width
//!
//! Lance takes `W = T − leading_zeros(OR of all values)` on the *unsigned*
//! reinterpretation, so any negative signed value forces `W = T`, and an
//! all-zero block gets `W = 0` (no packed words at all).

use fastlanes::BitPacking;

use crate::corrupt;
use crate::error::Result;

/// Values per FastLanes block.
pub const VALUES_PER_BLOCK: usize = 1024;

/// An unsigned word type FastLanes can pack (u8, u16, u32, u64).
pub trait Word: BitPacking + Copy + Default + Eq + std::fmt::Debug + Send + Sync + 'static {
    /// Width in bits.
    const BITS: u32;
    /// Width in bytes.
    const BYTES: usize;
    /// Reads one word from exactly `Self::BYTES` little-endian bytes.
    fn read_le(bytes: &[u8]) -> Self;
    /// Writes the word into exactly `Self::BYTES` bytes, little-endian.
    fn put_le(self, dst: &mut [u8]);
    /// Zero-extends to u64.
    fn widen(self) -> u64;
    /// Truncates a u64 to this width.
    fn narrow(v: u64) -> Self;
}

macro_rules! impl_word {
    ($($t:ty),*) => {$(
        impl Word for $t {
            const BITS: u32 = <$t>::BITS;
            const BYTES: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn read_le(bytes: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(bytes);
                <$t>::from_le_bytes(a)
            }
            #[inline(always)]
            fn put_le(self, dst: &mut [u8]) {
                dst.copy_from_slice(&self.to_le_bytes());
            }
            #[inline(always)]
            fn widen(self) -> u64 {
                self as u64
            }
            #[inline(always)]
            fn narrow(v: u64) -> Self {
                v as $t
            }
        }
    )*};
}
impl_word!(u8, u16, u32, u64);

/// Calls `$body` with `$T` bound to the word type matching `$bits`, or
/// returns a corrupt-data error for any other width.
macro_rules! dispatch_width {
    ($bits:expr, $T:ident => $body:expr) => {
        match $bits {
            8 => {
                type $T = u8;
                $body
            }
            16 => {
                type $T = u16;
                $body
            }
            32 => {
                type $T = u32;
                $body
            }
            64 => {
                type $T = u64;
                $body
            }
            other => return Err(corrupt!("bit packing: unsupported word width {other}")),
        }
    };
}

/// Smallest `W` such that every value fits in `W` bits (Lance's rule: 0 for
/// all zeros, `T` as soon as any value has its top bit set).
pub fn bit_width_of<T: Word>(values: &[T]) -> u32 {
    let or = values.iter().fold(0u64, |acc, v| acc | v.widen());
    64 - or.leading_zeros()
}

/// [`bit_width_of`] for little-endian bytes of `uncompressed_bits`-wide
/// values.
///
/// # Panics
/// If `uncompressed_bits` is not 8/16/32/64 or the byte count is not a
/// multiple of the word size (caller bugs, not data errors).
pub fn bit_width_needed(uncompressed_bits: u32, values_le: &[u8]) -> u32 {
    let bytes = (uncompressed_bits / 8) as usize;
    assert!(matches!(uncompressed_bits, 8 | 16 | 32 | 64), "bad word width {uncompressed_bits}");
    assert_eq!(values_le.len() % bytes, 0, "value bytes not a multiple of the word size");
    let mut or = 0u64;
    for v in values_le.chunks_exact(bytes) {
        let mut a = [0u8; 8];
        a[..bytes].copy_from_slice(v);
        or |= u64::from_le_bytes(a);
    }
    64 - or.leading_zeros()
}

/// Bytes of one packed 1024-value block at width `w` (independent of `T`).
#[inline]
pub const fn packed_block_bytes(w: u32) -> usize {
    128 * w as usize
}

/// Bytes of an inline chunk of word width `uncompressed_bits` packed at `w`.
pub const fn inline_chunk_bytes(uncompressed_bits: u32, w: u32) -> usize {
    (uncompressed_bits / 8) as usize + packed_block_bytes(w)
}

/// Unpacks one block. `packed` must be exactly `packed_block_bytes(w)` bytes,
/// `w ≤ T`, and `out` exactly 1024 long — all checked by callers.
#[inline]
fn unpack_block<T: Word>(w: u32, packed: &[u8], out: &mut [T]) {
    assert!(w <= T::BITS && out.len() == VALUES_PER_BLOCK && packed.len() == packed_block_bytes(w));
    let words = packed_words::<T>(packed);
    // SAFETY: `words.len() == 1024·w/T`, `out.len() == 1024` and `w ≤ T`
    // (asserted above), which are the kernel's preconditions.
    unsafe { T::unchecked_unpack(w as usize, &words, out) };
}

/// The packed words of a block as `T`s, as the kernels want them: the bytes
/// themselves when they are aligned for `T` (on little-endian hosts, where
/// the file's byte order is the native one), else an aligned copy.
fn packed_words<T: Word>(packed: &[u8]) -> std::borrow::Cow<'_, [T]> {
    #[cfg(target_endian = "little")]
    {
        // SAFETY: `T` is an unsigned integer type (see `Word`), for which
        // every bit pattern is a valid value; `align_to` hands out only
        // the properly aligned middle part.
        let (head, mid, tail) = unsafe { packed.align_to::<T>() };
        if head.is_empty() && tail.is_empty() {
            return std::borrow::Cow::Borrowed(mid);
        }
    }
    std::borrow::Cow::Owned(packed.chunks_exact(T::BYTES).map(T::read_le).collect())
}

/// At most this many values of an inline chunk are taken one by one
/// ([`unpack_inline_rows`]); more unpack the whole block.
const SINGLE_VALUES_MAX: usize = 96;

/// Appends the values of one inline chunk of `num_values` values at the
/// positions `rows` (sorted `(start, end)` ranges below `num_values`) to
/// `out` as little-endian bytes. A few values are taken one by one straight
/// from the packed words (a take reads one value of a chunk); more unpack
/// the block.
pub fn unpack_inline_rows(uncompressed_bits: u32, chunk: &[u8], num_values: usize, rows: &[(usize, usize)], out: &mut Vec<u8>) -> Result<()> {
    fn go<T: Word>(chunk: &[u8], num_values: usize, rows: &[(usize, usize)], out: &mut Vec<u8>) -> Result<()> {
        let (w, packed) = inline_parts::<T>(chunk, num_values)?;
        if rows.iter().any(|&(s, e)| s > e || e > num_values) {
            return Err(corrupt!("inline bit packing: rows {rows:?} outside a chunk of {num_values} values"));
        }
        let wanted: usize = rows.iter().map(|(s, e)| e - s).sum();
        if wanted > SINGLE_VALUES_MAX {
            let mut block = [T::default(); VALUES_PER_BLOCK];
            unpack_block::<T>(w, packed, &mut block);
            rows.iter().for_each(|&(s, e)| extend_le(out, &block[s..e]));
            return Ok(());
        }
        let words = packed_words::<T>(packed);
        out.reserve(wanted * T::BYTES);
        for &(s, e) in rows {
            for i in s..e {
                // SAFETY: `words.len() == 1024·w/T` (inline_parts returns
                // exactly the packed block), `w ≤ T` (check_width) and
                // `i < num_values ≤ 1024` (checked above).
                let v = unsafe { T::unchecked_unpack_single(w as usize, &words, i) };
                out.extend_from_slice(&v.widen().to_le_bytes()[..T::BYTES]);
            }
        }
        Ok(())
    }
    dispatch_width!(uncompressed_bits, T => go::<T>(chunk, num_values, rows, out))
}

/// Packs exactly 1024 values at width `w` (values must fit) and appends the
/// `128·w` bytes to `out`.
#[inline]
fn pack_block<T: Word>(w: u32, values: &[T], out: &mut Vec<u8>) {
    assert!(w <= T::BITS && values.len() == VALUES_PER_BLOCK);
    let n = VALUES_PER_BLOCK * w as usize / T::BITS as usize;
    let mut words = [T::default(); VALUES_PER_BLOCK];
    // SAFETY: input is 1024 long, output `1024·w/T` long, `w ≤ T`.
    unsafe { T::unchecked_pack(w as usize, values, &mut words[..n]) };
    let start = out.len();
    out.resize(start + n * T::BYTES, 0);
    for (dst, v) in out[start..].chunks_exact_mut(T::BYTES).zip(&words[..n]) {
        v.put_le(dst);
    }
}

fn check_width<T: Word>(w: u64) -> Result<u32> {
    if w > T::BITS as u64 {
        return Err(corrupt!("bit packing: width {w} exceeds word width {}", T::BITS));
    }
    Ok(w as u32)
}

fn grow<T: Word>(out: &mut Vec<T>, extra: usize) -> Result<usize> {
    let start = out.len();
    out.try_reserve(extra).map_err(|_| corrupt!("bit packing: cannot allocate {extra} values"))?;
    out.resize(start + extra, T::default());
    Ok(start)
}

/// Validates an inline chunk; returns its width and packed block.
fn inline_parts<T: Word>(chunk: &[u8], num_values: usize) -> Result<(u32, &[u8])> {
    if num_values > VALUES_PER_BLOCK {
        return Err(corrupt!("inline bit packing: {num_values} values in one chunk (max 1024)"));
    }
    let header = chunk.get(..T::BYTES).ok_or_else(|| corrupt!("inline bit packing: chunk of {} bytes has no width word", chunk.len()))?;
    let w = check_width::<T>(T::read_le(header).widen())?;
    let need = packed_block_bytes(w);
    let packed = chunk
        .get(T::BYTES..T::BYTES + need)
        .ok_or_else(|| corrupt!("inline bit packing: width {w} needs {need} packed bytes, chunk has {}", chunk.len() - T::BYTES))?;
    Ok((w, packed))
}

/// Decodes one inline chunk straight into `out`, appending `num_values`
/// values. Bytes after the packed block are ignored.
pub fn unpack_inline_chunk_typed<T: Word>(chunk: &[u8], num_values: usize, out: &mut Vec<T>) -> Result<()> {
    let (w, packed) = inline_parts::<T>(chunk, num_values)?;
    // Unpack the full block in place, then drop the zero padding.
    let start = grow(out, VALUES_PER_BLOCK)?;
    unpack_block::<T>(w, packed, &mut out[start..]);
    out.truncate(start + num_values);
    Ok(())
}

/// Decodes one inline (mini-block) chunk: a width word of `uncompressed_bits`
/// bits, then a packed block. Appends `num_values` (≤ 1024) little-endian
/// values to `out`.
pub fn unpack_inline_chunk(uncompressed_bits: u32, chunk: &[u8], num_values: usize, out: &mut Vec<u8>) -> Result<()> {
    fn go<T: Word>(chunk: &[u8], num_values: usize, out: &mut Vec<u8>) -> Result<()> {
        let (w, packed) = inline_parts::<T>(chunk, num_values)?;
        // Unpack on the stack and copy only the real values out.
        let mut block = [T::default(); VALUES_PER_BLOCK];
        unpack_block::<T>(w, packed, &mut block);
        extend_le(out, &block[..num_values]);
        Ok(())
    }
    dispatch_width!(uncompressed_bits, T => go::<T>(chunk, num_values, out))
}

/// Encodes ≤ 1024 values as one inline chunk with the smallest width,
/// appending it to `out`.
///
/// # Panics
/// If more than 1024 values are given.
pub fn pack_inline_chunk_typed<T: Word>(values: &[T], out: &mut Vec<u8>) {
    assert!(values.len() <= VALUES_PER_BLOCK, "an inline chunk holds at most 1024 values");
    let w = bit_width_of(values);
    let start = out.len();
    out.resize(start + T::BYTES, 0);
    T::narrow(w as u64).put_le(&mut out[start..]);
    let mut block = [T::default(); VALUES_PER_BLOCK];
    block[..values.len()].copy_from_slice(values);
    pack_block(w, &block, out);
}

/// Byte-level [`pack_inline_chunk_typed`]: `values_le` holds ≤ 1024
/// little-endian values of `uncompressed_bits` bits.
///
/// # Panics
/// On a word width other than 8/16/32/64, a byte count that is not a whole
/// number of values, or more than 1024 values (caller bugs).
pub fn pack_inline_chunk(uncompressed_bits: u32, values_le: &[u8], out: &mut Vec<u8>) {
    fn go<T: Word>(values_le: &[u8], out: &mut Vec<u8>) {
        pack_inline_chunk_typed::<T>(&words_from_le::<T>(values_le), out);
    }
    match uncompressed_bits {
        8 => go::<u8>(values_le, out),
        16 => go::<u16>(values_le, out),
        32 => go::<u32>(values_le, out),
        64 => go::<u64>(values_le, out),
        other => panic!("bit packing: unsupported word width {other}"),
    }
}

/// Where the parts of an out-of-line buffer lie: bytes of a packed block,
/// bytes of the full blocks, bytes needed in all, and whether the tail is
/// raw words (checked against the buffer's length).
struct OutOfLine {
    w: u32,
    block_bytes: usize,
    full_blocks: usize,
    full_bytes: usize,
    tail: usize,
    tail_is_raw: bool,
    needed: usize,
}

fn out_of_line_geometry<T: Word>(w: u32, data: &[u8], num_values: usize) -> Result<OutOfLine> {
    let w = check_width::<T>(w as u64)?;
    if data.len() % T::BYTES != 0 {
        return Err(corrupt!("out-of-line bit packing: {} bytes is not a whole number of {}-bit words", data.len(), T::BITS));
    }
    let block_bytes = packed_block_bytes(w);
    let full_blocks = num_values / VALUES_PER_BLOCK;
    let tail = num_values % VALUES_PER_BLOCK;
    let full_bytes = full_blocks.checked_mul(block_bytes).ok_or_else(|| corrupt!("out-of-line bit packing: {num_values} values overflow"))?;
    let raw_tail_bytes = tail * T::BYTES;
    let tail_is_raw = tail > 0 && data.len() == full_bytes.saturating_add(raw_tail_bytes);
    let needed = full_bytes.saturating_add(match (tail, tail_is_raw) {
        (0, _) => 0,
        (_, true) => raw_tail_bytes,
        (_, false) => block_bytes,
    });
    if data.len() < needed {
        return Err(corrupt!("out-of-line bit packing: {num_values} values at width {w} need {needed} bytes, buffer has {}", data.len()));
    }
    Ok(OutOfLine { w, block_bytes, full_blocks, full_bytes, tail, tail_is_raw, needed })
}

/// Appends the values at positions `rows` (sorted `(start, end)` ranges
/// below `num_values`) of an out-of-line bit-packed buffer to `out`. A few
/// values are taken one by one from the packed words (a take wants one
/// definition level of a chunk); more decode the whole buffer.
pub fn unpack_out_of_line_rows_typed<T: Word>(w: u32, data: &[u8], num_values: usize, rows: &[(usize, usize)], out: &mut Vec<T>) -> Result<()> {
    if rows.iter().any(|&(s, e)| s > e || e > num_values) {
        return Err(corrupt!("out-of-line bit packing: rows {rows:?} outside a buffer of {num_values} values"));
    }
    let wanted: usize = rows.iter().map(|(s, e)| e - s).sum();
    if wanted > SINGLE_VALUES_MAX {
        let mut all = Vec::new();
        unpack_out_of_line_typed::<T>(w, data, num_values, &mut all)?;
        rows.iter().for_each(|&(s, e)| out.extend_from_slice(&all[s..e]));
        return Ok(());
    }
    let g = out_of_line_geometry::<T>(w, data, num_values)?;
    out.reserve(wanted);
    let mut block_at = usize::MAX;
    let mut words = std::borrow::Cow::Borrowed(&[][..]);
    for &(s, e) in rows {
        for i in s..e {
            let block = i / VALUES_PER_BLOCK;
            if block == g.full_blocks && g.tail_is_raw {
                let at = g.full_bytes + (i % VALUES_PER_BLOCK) * T::BYTES;
                out.push(T::read_le(&data[at..at + T::BYTES]));
                continue;
            }
            if g.w == 0 {
                out.push(T::default());
                continue;
            }
            if block != block_at {
                let start = block * g.block_bytes;
                words = packed_words::<T>(&data[start..start + g.block_bytes]);
                block_at = block;
            }
            // SAFETY: `words` is one whole packed block of width `w ≤ T`
            // (the geometry checked the buffer holds every block up to
            // `num_values`, and `check_width` the width) and
            // `i % 1024 < 1024`.
            out.push(unsafe { T::unchecked_unpack_single(g.w as usize, &words, i % VALUES_PER_BLOCK) });
        }
    }
    Ok(())
}

/// Decodes an out-of-line bit-packed buffer of `num_values` values packed at
/// width `w` into `out`. Accepts both tail forms (see the module docs).
pub fn unpack_out_of_line_typed<T: Word>(w: u32, data: &[u8], num_values: usize, out: &mut Vec<T>) -> Result<()> {
    let OutOfLine { w, block_bytes, full_blocks, full_bytes, tail, tail_is_raw, needed } = out_of_line_geometry::<T>(w, data, num_values)?;

    let start = grow(out, full_blocks * VALUES_PER_BLOCK)?;
    let dst_blocks = out[start..].chunks_exact_mut(VALUES_PER_BLOCK);
    // `chunks` on an empty slice yields nothing, which is what W = 0 needs
    // for the source side; the destination count drives the loop.
    for (i, dst) in dst_blocks.enumerate() {
        let src = &data[i * block_bytes..(i + 1) * block_bytes];
        unpack_block::<T>(w, src, dst);
    }
    if tail > 0 {
        let tail_data = &data[full_bytes..needed];
        if tail_is_raw {
            out.extend(tail_data.chunks_exact(T::BYTES).map(T::read_le));
        } else {
            let at = grow(out, VALUES_PER_BLOCK)?;
            unpack_block::<T>(w, tail_data, &mut out[at..]);
            out.truncate(at + tail);
        }
    }
    Ok(())
}

/// Decodes an out-of-line bit-packed buffer (`OutOfLineBitpacking`): word
/// width `uncompressed_bits`, packed width `compressed_bits`. Appends
/// `num_values` little-endian values to `out`.
///
/// The caller must bound `num_values` (it comes from page metadata): with
/// `compressed_bits == 0` the buffer is empty whatever the count.
pub fn unpack_out_of_line(uncompressed_bits: u32, compressed_bits: u32, data: &[u8], num_values: usize, out: &mut Vec<u8>) -> Result<()> {
    dispatch_width!(uncompressed_bits, T => {
        let mut vals: Vec<T> = Vec::new();
        unpack_out_of_line_typed::<T>(compressed_bits, data, num_values, &mut vals)?;
        extend_le(out, &vals);
        Ok(())
    })
}

/// Encodes values out-of-line at width `w` (every value must fit in `w`
/// bits), choosing the tail form the way Lance does.
///
/// # Panics
/// If `w` exceeds the word width.
pub fn pack_out_of_line_with_width<T: Word>(w: u32, values: &[T]) -> Vec<u8> {
    assert!(w <= T::BITS, "bit width {w} exceeds word width");
    let full = values.len() / VALUES_PER_BLOCK;
    let tail = values.len() % VALUES_PER_BLOCK;
    let mut out = Vec::with_capacity((full + 1) * packed_block_bytes(w));
    for block in values.chunks_exact(VALUES_PER_BLOCK) {
        pack_block(w, block, &mut out);
    }
    if tail > 0 {
        let rest = &values[full * VALUES_PER_BLOCK..];
        let padding_cost = w as usize * (VALUES_PER_BLOCK - tail);
        let packing_saves = (T::BITS - w) as usize * tail;
        if padding_cost < packing_saves {
            let mut block = [T::default(); VALUES_PER_BLOCK];
            block[..tail].copy_from_slice(rest);
            pack_block(w, &block, &mut out);
        } else {
            extend_le(&mut out, rest);
        }
    }
    out
}

/// Encodes values out-of-line at their minimal width; returns `(W, bytes)`.
pub fn pack_out_of_line_typed<T: Word>(values: &[T]) -> (u32, Vec<u8>) {
    let w = bit_width_of(values);
    (w, pack_out_of_line_with_width(w, values))
}

/// Byte-level [`pack_out_of_line_typed`]: returns the chosen width `W` (to be
/// recorded as the `Flat` bits of the description) and the buffer.
///
/// # Panics
/// On a word width other than 8/16/32/64 or a partial value (caller bugs).
pub fn pack_out_of_line(uncompressed_bits: u32, values_le: &[u8]) -> (u32, Vec<u8>) {
    match uncompressed_bits {
        8 => pack_out_of_line_typed::<u8>(&words_from_le(values_le)),
        16 => pack_out_of_line_typed::<u16>(&words_from_le(values_le)),
        32 => pack_out_of_line_typed::<u32>(&words_from_le(values_le)),
        64 => pack_out_of_line_typed::<u64>(&words_from_le(values_le)),
        other => panic!("bit packing: unsupported word width {other}"),
    }
}

fn words_from_le<T: Word>(bytes: &[u8]) -> Vec<T> {
    assert_eq!(bytes.len() % T::BYTES, 0, "value bytes not a multiple of the word size");
    bytes.chunks_exact(T::BYTES).map(T::read_le).collect()
}

fn extend_le<T: Word>(out: &mut Vec<u8>, vals: &[T]) {
    if cfg!(target_endian = "little") {
        // One copy: `T` is an unsigned integer type (see `Word`), whose
        // values are `T::BYTES` plain bytes each, here already
        // little-endian (a per-value store cost a take a tenth of its CPU).
        // SAFETY: the slice covers exactly the bytes of `vals`.
        out.extend_from_slice(unsafe { std::slice::from_raw_parts(vals.as_ptr() as *const u8, std::mem::size_of_val(vals)) });
        return;
    }
    let start = out.len();
    out.resize(start + vals.len() * T::BYTES, 0);
    for (dst, v) in out[start..].chunks_exact_mut(T::BYTES).zip(vals) {
        v.put_le(dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference packer written straight from the layout description, to
    /// check that the fastlanes kernels really produce Lance's order.
    fn reference_pack_u16(w: u32, values: &[u16; 1024]) -> Vec<u8> {
        const FL_ORDER: [usize; 8] = [0, 4, 2, 6, 1, 5, 3, 7];
        let t = 16usize;
        let lanes = 1024 / t;
        let mut words = vec![0u16; 1024 * w as usize / t];
        for l in 0..lanes {
            for r in 0..t {
                let idx = FL_ORDER[r / 8] * 16 + (r % 8) * 128 + l;
                let v = values[idx] as u64;
                for b in 0..w as usize {
                    let bit = (v >> b) & 1;
                    let pos = r * w as usize + b;
                    let k = pos / t;
                    words[k * lanes + l] |= (bit as u16) << (pos % t);
                }
            }
        }
        words.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn fastlanes_layout_matches_lance_order() {
        let mut vals = [0u16; 1024];
        for (i, v) in vals.iter_mut().enumerate() {
            *v = ((i * 7919) % 1000) as u16;
        }
        let w = bit_width_of(&vals);
        assert_eq!(w, 10);
        let mut ours = Vec::new();
        pack_block(w, &vals, &mut ours);
        assert_eq!(ours, reference_pack_u16(w, &vals));
    }

    #[test]
    fn width_rule() {
        assert_eq!(bit_width_of::<u32>(&[]), 0);
        assert_eq!(bit_width_of::<u32>(&[0, 0]), 0);
        assert_eq!(bit_width_of::<u32>(&[1, 2]), 2);
        assert_eq!(bit_width_of::<u32>(&[(-1i32) as u32]), 32);
        assert_eq!(bit_width_needed(16, &[0xff, 0x01, 3, 0]), 9);
    }

    #[test]
    fn inline_chunk_sizes() {
        let vals: Vec<u32> = (0..1500).collect();
        let mut out = Vec::new();
        pack_inline_chunk_typed(&vals[..1024], &mut out);
        assert_eq!(out.len(), inline_chunk_bytes(32, 10));
        assert_eq!(&out[..4], &10u32.to_le_bytes());
        let mut dec = Vec::new();
        unpack_inline_chunk_typed::<u32>(&out, 1024, &mut dec).unwrap();
        assert_eq!(dec, &vals[..1024]);
    }

    #[test]
    fn out_of_line_tail_forms() {
        // W=8, T=16: 512 packed words per block, so a 512-value tail is raw
        // (same size either way, Lance picks raw) and 513 is packed.
        for (n, expect_len) in [(1024 + 512, 1024 + 1024), (1024 + 513, 1024 + 1024), (1024 + 3, 1024 + 6)] {
            let vals: Vec<u16> = (0..n).map(|i| (i % 200) as u16).collect();
            let bytes = pack_out_of_line_with_width(8, &vals);
            assert_eq!(bytes.len(), expect_len, "n={n}");
            let mut dec = Vec::new();
            unpack_out_of_line_typed::<u16>(8, &bytes, n, &mut dec).unwrap();
            assert_eq!(dec, vals);
        }
        // Lance's own regression case: u32, W=8, 1025 values → raw tail.
        let vals: Vec<u32> = (0..1025).map(|i| (i % 200) as u32).collect();
        let bytes = pack_out_of_line_with_width(8, &vals);
        assert_eq!(bytes.len() / 4, 256 + 1);
    }

    #[test]
    fn rows_of_an_out_of_line_buffer_one_by_one_or_unpacked() {
        // Widths 0..=16 (0: no packed words at all), raw and packed tails,
        // no tail; few rows go one by one, many through the whole buffer.
        for w in 0..=16u32 {
            for n in [1024usize, 1024 + 3, 2048 + 700, 4096, 100] {
                let mask = if w == 0 { 0 } else { ((1u32 << w) - 1) as u16 };
                let vals: Vec<u16> = (0..n).map(|i| ((i * 40503 + 7) as u16) & mask).collect();
                let bytes = pack_out_of_line_with_width(w, &vals);
                for rows in [vec![(0, 1)], vec![(5, 6), (1023.min(n - 1), 1025.min(n))], vec![(n - 1, n)], vec![(0, 97)], vec![(0, n)], vec![]] {
                    let want: Vec<u16> = rows.iter().flat_map(|&(s, e)| vals[s..e].to_vec()).collect();
                    let mut got = Vec::new();
                    unpack_out_of_line_rows_typed::<u16>(w, &bytes, n, &rows, &mut got).unwrap();
                    assert_eq!(got, want, "w={w} n={n} rows={rows:?}");
                }
                assert!(unpack_out_of_line_rows_typed::<u16>(w, &bytes, n, &[(n - 1, n + 1)], &mut Vec::new()).is_err());
            }
        }
        // A truncated buffer is corrupt, not a panic.
        let vals: Vec<u16> = (0..3000).map(|i| (i % 500) as u16).collect();
        let bytes = pack_out_of_line_with_width(9, &vals);
        assert!(unpack_out_of_line_rows_typed::<u16>(9, &bytes[..bytes.len() - 2], 3000, &[(2999, 3000)], &mut Vec::new()).is_err());
    }

    #[test]
    fn rows_of_an_inline_chunk_one_by_one_or_unpacked() {
        // Every word type and a spread of widths; few rows go one by one,
        // many through the unpacked block; misaligned bytes are copied.
        fn check<T: Word>(vals: &[T]) {
            let bits = T::BITS;
            let mut chunk = vec![0u8]; // shift by one byte: unaligned words
            pack_inline_chunk_typed(vals, &mut chunk);
            let n = vals.len();
            let mut all = Vec::new();
            unpack_inline_chunk(bits, &chunk[1..], n, &mut all).unwrap();
            let aligned = chunk[1..].to_vec();
            for rows in [vec![(0, 1)], vec![(3, 5), (n - 1, n)], vec![(0, 90), (100, 107)], vec![(0, n)], vec![]] {
                let want: Vec<u8> = rows.iter().flat_map(|&(s, e)| all[s * T::BYTES..e * T::BYTES].to_vec()).collect();
                for src in [&chunk[1..], &aligned[..]] {
                    let mut got = Vec::new();
                    unpack_inline_rows(bits, src, n, &rows, &mut got).unwrap();
                    assert_eq!(got, want, "T={bits} rows={rows:?}");
                }
            }
            assert!(unpack_inline_rows(bits, &aligned, n, &[(n - 1, n + 1)], &mut Vec::new()).is_err());
        }
        check::<u8>(&(0..1000).map(|i| (i * 7 % 251) as u8).collect::<Vec<_>>());
        check::<u16>(&(0..1024).map(|i| (i * 31 % 3000) as u16).collect::<Vec<_>>());
        check::<u32>(&(0..700).map(|i| (i as u32).wrapping_mul(2654435761) >> 5).collect::<Vec<_>>());
        check::<u64>(&(0..1024).map(|i| (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect::<Vec<_>>());
        check::<u64>(&[0u64; 200]);
    }
}
