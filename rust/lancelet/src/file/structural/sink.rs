//! Decoding the mini-block chunks of one page straight into one buffer.
//!
//! Decoding each chunk into a block of its own and concatenating the
//! blocks afterwards copied every value twice and allocated per chunk
//! (profiles of string scans showed allocation, zero-filling and memmove
//! next to FSST itself). [`ValueSink`] appends each chunk's values to the
//! page's buffers instead, for the common encodings: flat fixed-width,
//! inline bit-packing, variable-width and FSST over variable-width (its
//! symbol table parsed once per page). Anything else falls back to the
//! generic per-chunk decoder and a concatenation.

use crate::encoding::{bitpack, fsst};
use crate::error::{Error, Result};
use crate::file::structural::compressive::{decode_chunk, variant};
use crate::file::structural::datablock::{AsciiHint, DataBlock, Offsets};
use crate::proto::encodings21::compressive_encoding::Compression as Enc;
use crate::proto::encodings21::CompressiveEncoding;

/// Where the chunks of one page land.
pub enum ValueSink {
    /// Byte-aligned fixed-width values, stored flat or inline bit-packed.
    Fixed { bits: u64, packed: bool, data: Vec<u8>, len: usize },
    /// Variable-width values with `width`-byte chunk offsets, optionally
    /// FSST-compressed value by value; `ascii`: every chunk so far was
    /// known to decode to ASCII (see `datablock::AsciiHint`).
    Variable { width: usize, fsst: Option<Box<fsst::SymbolTable>>, offsets: Offsets, data: Vec<u8>, ascii: bool },
    /// Any other encoding: one block per chunk.
    Blocks(Vec<DataBlock>),
}

fn offsets_width(v: &crate::proto::encodings21::Variable) -> Option<usize> {
    if v.values.is_some() {
        return None;
    }
    match variant(v.offsets.as_deref()?).ok()? {
        Enc::Flat(f) if f.data.is_none() && (f.bits_per_value == 32 || f.bits_per_value == 64) => Some(f.bits_per_value as usize / 8),
        _ => None,
    }
}

impl ValueSink {
    /// A sink for chunks encoded with `enc`. Capacity hints: `items`, the
    /// values that will be pushed, and `chunk_bytes`, the encoded bytes of
    /// the chunks they come from. FSST output is reserved at five times its
    /// input (typical ratios are 2-4; untouched capacity costs address
    /// space, not memory), so the buffer rarely grows, and growing copies
    /// the page.
    pub fn new(enc: &CompressiveEncoding, wide: bool, items: usize, chunk_bytes: usize) -> Result<Self> {
        // `items` comes from the page's metadata: reserve no more values
        // than `chunk_bytes` can encode (raw values take their width,
        // bit-packed ones at least a bit, variable ones a 4-byte offset).
        let fixed = |bits: u64, packed: bool| {
            let width = (bits as usize / 8).max(1);
            let cap = if packed { items.min(chunk_bytes.saturating_mul(8)) } else { items.min(chunk_bytes / width) };
            ValueSink::Fixed { bits, packed, data: Vec::with_capacity(cap * width), len: 0 }
        };
        let var_items = items.min(chunk_bytes / 4 + 1);
        let variable = |width: usize, fsst: Option<Box<fsst::SymbolTable>>| {
            let data_bytes = if fsst.is_some() { chunk_bytes.saturating_mul(5) } else { chunk_bytes };
            ValueSink::Variable {
                width,
                // Known ASCII while every chunk's escaped bytes are.
                ascii: fsst.as_ref().is_some_and(|t| t.is_enabled() && t.symbols_ascii()),
                fsst,
                offsets: if wide { Offsets::I64(Vec::with_capacity(var_items + 1)) } else { Offsets::I32(Vec::with_capacity(var_items + 1)) },
                data: Vec::with_capacity(data_bytes),
            }
        };
        let mut sink = ValueSink::Blocks(Vec::new());
        match variant(enc)? {
            Enc::Flat(f) if f.data.is_none() && f.bits_per_value % 8 == 0 && f.bits_per_value > 0 && f.bits_per_value <= 8 * 4096 => {
                sink = fixed(f.bits_per_value, false)
            }
            Enc::InlineBitpacking(b) if b.values.is_none() && matches!(b.uncompressed_bits_per_value, 8 | 16 | 32 | 64) => {
                sink = fixed(b.uncompressed_bits_per_value, true)
            }
            Enc::Variable(v) => {
                if let Some(w) = offsets_width(v) {
                    sink = variable(w, None)
                }
            }
            Enc::Fsst(f) => {
                if let Some(Enc::Variable(v)) = f.values.as_deref().map(variant).transpose()? {
                    if let Some(w) = offsets_width(v) {
                        sink = variable(w, Some(Box::new(fsst::SymbolTable::parse(&f.symbol_table)?)))
                    }
                }
            }
            _ => {}
        }
        if let ValueSink::Variable { offsets, .. } = &mut sink {
            match offsets {
                Offsets::I32(o) => o.push(0),
                Offsets::I64(o) => o.push(0),
            }
        }
        Ok(sink)
    }

    /// Append the `n` values of one chunk (its value buffers `bufs`).
    pub fn push(&mut self, enc: &CompressiveEncoding, bufs: &[&[u8]], n: usize, wide: bool) -> Result<()> {
        self.push_rows(enc, bufs, n, wide, None)
    }

    /// Append the values of one chunk of `n` values that lie in `rows`
    /// (sorted ranges relative to the chunk; all when `None`). Only those
    /// values are decoded where the encoding allows (flat, variable-width,
    /// FSST: each value stands alone).
    pub fn push_rows(&mut self, enc: &CompressiveEncoding, bufs: &[&[u8]], n: usize, wide: bool, rows: Option<&[(usize, usize)]>) -> Result<()> {
        let all = [(0, n)];
        let rows = rows.unwrap_or(&all);
        if rows.iter().any(|&(s, e)| s > e || e > n) {
            return Err(Error::Internal { what: format!("rows outside a chunk of {n} values") });
        }
        match self {
            ValueSink::Blocks(blocks) => {
                let block = decode_chunk(enc, bufs, n, wide)?;
                if block.len() != n {
                    return Err(Error::corrupt(format!("chunk decoded {} values, expected {n}", block.len())));
                }
                blocks.push(if rows == all { block } else { block.gather_ranges(rows)? });
            }
            ValueSink::Fixed { bits, packed, data, len } => {
                let buf = bufs.first().copied().ok_or_else(|| Error::corrupt("mini-block chunk has no value buffer"))?;
                let w = *bits as usize / 8;
                if *packed {
                    if rows == all {
                        bitpack::unpack_inline_chunk(*bits as u32, buf, n, data)?;
                    } else {
                        bitpack::unpack_inline_rows(*bits as u32, buf, n, rows, data)?;
                    }
                } else {
                    let src = buf
                        .get(..n * w)
                        .ok_or_else(|| Error::corrupt(format!("flat buffer of {} bytes holds fewer than {n} values of {bits} bits", buf.len())))?;
                    rows.iter().for_each(|&(s, e)| data.extend_from_slice(&src[s * w..e * w]));
                }
                *len += rows.iter().map(|(s, e)| e - s).sum::<usize>();
            }
            ValueSink::Variable { width, fsst, offsets, data, ascii } => {
                let buf = bufs.first().copied().ok_or_else(|| Error::corrupt("mini-block chunk has no value buffer"))?;
                *ascii &= push_variable(buf, *width, n, fsst.as_deref(), offsets, data, rows)?;
            }
        }
        Ok(())
    }

    /// The page's values (`empty` when no chunk was pushed).
    pub fn finish(self, empty: DataBlock) -> Result<DataBlock> {
        Ok(match self {
            ValueSink::Blocks(blocks) if blocks.is_empty() => empty,
            ValueSink::Blocks(blocks) => DataBlock::concat(blocks)?,
            ValueSink::Fixed { bits, data, len, .. } => DataBlock::Fixed { bits, data, len },
            ValueSink::Variable { offsets, mut data, ascii, .. } => {
                // Give back a generous FSST reservation that went mostly
                // unused: a top-level column's page buffer becomes its
                // output array (see `file/pieces.rs`) and stays allocated.
                if data.capacity() > 4 * data.len() + (1 << 20) {
                    data.shrink_to_fit();
                }
                DataBlock::Variable { offsets, data, ascii: AsciiHint(ascii) }
            }
        })
    }
}

/// Appends the strings of `src` (ending at `ends`) to `data`, and their
/// end positions in `data` to `offsets`.
fn copy_strings<O: fsst::Offset>(src: &[u8], ends: &[usize], data: &mut Vec<u8>, offsets: &mut Vec<O>) -> Result<()> {
    let base = data.len();
    if O::from_usize(base + src.len()).is_none() {
        return Err(Error::invalid_input("more than 2 GiB of string/binary data in one array; use large_string/large_binary"));
    }
    data.extend_from_slice(src);
    offsets.extend(ends.iter().map(|&e| O::wrapping(base + e)));
    Ok(())
}

fn read_offset(buf: &[u8], i: usize, width: usize) -> Option<usize> {
    let b = buf.get(i * width..(i + 1) * width)?;
    Some(if width == 4 { u32::from_le_bytes(b.try_into().ok()?) as usize } else { u64::from_le_bytes(b.try_into().ok()?) as usize })
}

/// One variable-width chunk: `n + 1` offsets (absolute in the chunk), then
/// the bytes; the values in `rows` are copied or FSST-decompressed onto
/// `data`. Returns whether what was appended is known to be ASCII.
fn push_variable(
    buf: &[u8],
    width: usize,
    n: usize,
    table: Option<&fsst::SymbolTable>,
    offsets: &mut Offsets,
    data: &mut Vec<u8>,
    rows: &[(usize, usize)],
) -> Result<bool> {
    let truncated = || Error::corrupt("variable-width offsets truncated");
    let bad = || Error::corrupt("variable-width offsets are not increasing or point past the buffer");
    let first = read_offset(buf, 0, width).ok_or_else(truncated)?;
    let last = read_offset(buf, n, width).ok_or_else(truncated)?;
    if first > last || last > buf.len() {
        return Err(bad());
    }
    let mut ascii = true;
    for &(rs, re) in rows {
        if rs == re {
            continue;
        }
        // The values' end positions relative to the first one, checked.
        let start = read_offset(buf, rs, width).ok_or_else(truncated)?;
        if start < first {
            return Err(bad());
        }
        // One pass over the offsets, checked all together at the end (a
        // loop that may return early per value was a tenth of a string
        // scan's time outside FSST).
        let raw = buf.get((rs + 1) * width..(re + 1) * width).ok_or_else(truncated)?;
        let mut ends = Vec::with_capacity(re - rs);
        let (mut s, mut ok) = (start, true);
        let mut step = |e: usize| {
            ok &= e >= s && e <= last;
            ends.push(e.wrapping_sub(start));
            s = e;
        };
        if width == 4 {
            raw.chunks_exact(4).for_each(|c| step(u32::from_le_bytes(c.try_into().expect("4 bytes")) as usize));
        } else {
            raw.chunks_exact(8).for_each(|c| step(usize::try_from(u64::from_le_bytes(c.try_into().expect("8 bytes"))).unwrap_or(usize::MAX)));
        }
        if !ok {
            return Err(bad());
        }
        let src = &buf[start..s];
        match (table, &mut *offsets) {
            (Some(t), Offsets::I32(o)) => ascii &= fsst::decompress_strings_into(t, src, &ends, data, o)?,
            (Some(t), Offsets::I64(o)) => ascii &= fsst::decompress_strings_into(t, src, &ends, data, o)?,
            (None, Offsets::I32(o)) => {
                copy_strings(src, &ends, data, o)?;
                ascii = false;
            }
            (None, Offsets::I64(o)) => {
                copy_strings(src, &ends, data, o)?;
                ascii = false;
            }
        }
    }
    Ok(ascii)
}
