//! Decoding `CompressiveEncoding` trees (2.1/2.2) into [`DataBlock`]s.
//!
//! The same encoding message is read in three contexts, each with its own
//! byte form: a mini-block chunk (values of one chunk, possibly split over
//! several value buffers), a whole *block* (dictionaries, rep/def levels,
//! constant-page levels), and a single full-zip value.

use crate::encoding::{bitpack, bss, fsst, general, rle};
use crate::error::{Error, Result};
use crate::file::structural::datablock::{DataBlock, Offsets};
use crate::proto::encodings21::compressive_encoding::Compression as Enc;
use crate::proto::encodings21::{BufferCompression, CompressionScheme, CompressiveEncoding};

/// The oneof of an encoding, or a corrupt-data error if it is missing.
pub fn variant(enc: &CompressiveEncoding) -> Result<&Enc> {
    enc.compression.as_ref().ok_or_else(|| Error::corrupt("compressive encoding with no variant"))
}

fn inner<'a>(e: &'a Option<Box<CompressiveEncoding>>, what: &str) -> Result<&'a CompressiveEncoding> {
    e.as_deref().ok_or_else(|| Error::corrupt(format!("{what} encoding without its inner encoding")))
}

/// The general-compression scheme a `BufferCompression` names.
pub fn scheme(c: &BufferCompression) -> Result<general::CompressionScheme> {
    match CompressionScheme::try_from(c.scheme) {
        Ok(CompressionScheme::CompressionAlgorithmLz4) => Ok(general::CompressionScheme::Lz4),
        Ok(CompressionScheme::CompressionAlgorithmZstd) => Ok(general::CompressionScheme::Zstd),
        _ => Err(Error::unsupported(format!("buffer compression scheme {}", c.scheme))),
    }
}

fn fixed(bits: u64, buf: &[u8], n: usize) -> Result<DataBlock> {
    if bits == 0 || (bits != 1 && bits % 8 != 0) || bits > 8 * 4096 * 1024 {
        return Err(Error::corrupt(format!("unsupported flat width of {bits} bits")));
    }
    let need = (n as u64).checked_mul(bits).map(|b| b.div_ceil(8)).unwrap_or(u64::MAX);
    if (buf.len() as u64) < need {
        return Err(Error::corrupt(format!("flat buffer of {} bytes holds fewer than {n} values of {bits} bits", buf.len())));
    }
    Ok(DataBlock::Fixed { bits, data: buf[..need as usize].to_vec(), len: n })
}

fn flat_bits(enc: &CompressiveEncoding) -> Result<u64> {
    match variant(enc)? {
        Enc::Flat(f) => Ok(f.bits_per_value),
        other => Err(Error::unsupported(format!("offsets/values encoded as {other:?}, expected flat"))),
    }
}

fn read_uint(buf: &[u8], at: usize, width: usize) -> Option<u64> {
    let b = buf.get(at..at + width)?;
    Some(match width {
        4 => u32::from_le_bytes(b.try_into().ok()?) as u64,
        8 => u64::from_le_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

/// Read `n + 1` absolute offsets of `width` bytes at `start`, check them and
/// return values rebased to `base`.
fn variable_from_offsets(buf: &[u8], start: usize, width: usize, n: usize, wide: bool) -> Result<DataBlock> {
    let mut raw = Vec::with_capacity(n + 1);
    for i in 0..=n {
        raw.push(read_uint(buf, start + i * width, width).ok_or_else(|| Error::corrupt("variable-width offsets truncated"))?);
    }
    let (first, last) = (raw[0], raw[n]);
    if raw.windows(2).any(|w| w[0] > w[1]) || last as usize > buf.len() {
        return Err(Error::corrupt("variable-width offsets are not increasing or point past the buffer"));
    }
    let data = buf[first as usize..last as usize].to_vec();
    let offsets = if wide {
        Offsets::I64(raw.iter().map(|&o| (o - first) as i64).collect())
    } else {
        let total = last - first;
        if total > i32::MAX as u64 {
            return Err(Error::corrupt("more than 2 GiB in one variable-width chunk"));
        }
        Offsets::I32(raw.iter().map(|&o| (o - first) as i32).collect())
    };
    Ok(DataBlock::variable(offsets, data))
}

/// Decode the value buffers of one mini-block chunk holding `n` values.
pub fn decode_chunk(enc: &CompressiveEncoding, bufs: &[&[u8]], n: usize, wide: bool) -> Result<DataBlock> {
    let first = || bufs.first().copied().ok_or_else(|| Error::corrupt("mini-block chunk has no value buffer"));
    match variant(enc)? {
        Enc::Flat(f) => match &f.data {
            Some(c) => fixed(f.bits_per_value, &general::decompress(scheme(c)?, first()?)?, n),
            None => fixed(f.bits_per_value, first()?, n),
        },
        Enc::Variable(v) => {
            if v.values.is_some() {
                return Err(Error::unsupported("compressed variable-width mini-block values"));
            }
            let width = (flat_bits(inner(&v.offsets, "variable")?)? / 8) as usize;
            if width != 4 && width != 8 {
                return Err(Error::corrupt(format!("variable-width offsets of {width} bytes")));
            }
            variable_from_offsets(first()?, 0, width, n, wide)
        }
        Enc::InlineBitpacking(b) => {
            if b.values.is_some() {
                return Err(Error::unsupported("compressed inline-bitpacked values"));
            }
            let bits = b.uncompressed_bits_per_value;
            let mut out = Vec::with_capacity(n * (bits as usize / 8).max(1));
            bitpack::unpack_inline_chunk(bits as u32, first()?, n, &mut out)?;
            Ok(DataBlock::Fixed { bits, data: out, len: n })
        }
        Enc::Fsst(f) => {
            let inner_block = decode_chunk(inner(&f.values, "fsst")?, bufs, n, wide)?;
            fsst_decode(&f.symbol_table, inner_block)
        }
        Enc::Rle(r) => {
            let bits = flat_bits(inner(&r.values, "rle")?)?;
            let (values, lengths) = match bufs {
                [v, l, ..] => (*v, *l),
                _ => return Err(Error::corrupt("RLE chunk needs two value buffers")),
            };
            let mut data = Vec::with_capacity(n * (bits as usize / 8));
            rle::decode(bits as u32, values, lengths, n, &mut data)?;
            Ok(DataBlock::Fixed { bits, data, len: n })
        }
        Enc::General(g) => {
            let c = g.compression.as_ref().ok_or_else(|| Error::corrupt("general encoding without a scheme"))?;
            let sch = scheme(c)?;
            let decompressed = bufs.iter().map(|b| general::decompress(sch, b)).collect::<Result<Vec<_>>>()?;
            let refs: Vec<&[u8]> = decompressed.iter().map(|b| b.as_slice()).collect();
            decode_chunk(inner(&g.values, "general")?, &refs, n, wide)
        }
        Enc::FixedSizeList(f) => {
            let dim = usize::try_from(f.items_per_value).map_err(|_| Error::corrupt("huge list size"))?;
            let items_n = n.checked_mul(dim).ok_or_else(|| Error::corrupt("fixed-size-list too large"))?;
            let (validity, rest) = if f.has_validity {
                let v = first()?;
                let need = items_n.div_ceil(8);
                if v.len() < need {
                    return Err(Error::corrupt("fixed-size-list item validity truncated"));
                }
                (Some(v[..need].to_vec()), &bufs[1..])
            } else {
                (None, bufs)
            };
            let items = decode_chunk(inner(&f.values, "fixed_size_list")?, rest, items_n, wide)?;
            Ok(DataBlock::FixedSizeList { dim, items: Box::new(items), item_validity: validity })
        }
        Enc::ByteStreamSplit(b) => {
            let bits = flat_bits(inner(&b.values, "byte_stream_split")?)?;
            let raw = first()?;
            let width = (bits / 8) as usize;
            let need = n.checked_mul(width).ok_or_else(|| Error::corrupt("byte-stream-split too large"))?;
            if raw.len() < need || width == 0 {
                return Err(Error::corrupt("byte-stream-split buffer truncated"));
            }
            let mut data = Vec::with_capacity(need);
            bss::decode(width, &raw[..need], n, &mut data)?;
            Ok(DataBlock::Fixed { bits, data, len: n })
        }
        Enc::PackedStruct(p) => {
            let bits: u64 = p.bits_per_value.iter().sum();
            match variant(inner(&p.values, "packed_struct")?)? {
                Enc::Flat(f) if f.bits_per_value == bits => fixed(bits, first()?, n),
                _ => Err(Error::unsupported("packed struct values not stored flat")),
            }
        }
        other => Err(Error::unsupported(format!("mini-block value encoding {}", name_of(other)))),
    }
}

/// Decompress FSST-compressed variable-width values.
pub fn fsst_decode(table: &[u8], block: DataBlock) -> Result<DataBlock> {
    let DataBlock::Variable { offsets, data, .. } = block else {
        return Err(Error::corrupt("FSST over fixed-width values"));
    };
    let table = fsst::SymbolTable::parse(table)?;
    let (offsets, data) = match offsets {
        Offsets::I32(o) => {
            let (o, d) = fsst::decompress(&table, &o, &data)?;
            (Offsets::I32(o), d)
        }
        Offsets::I64(o) => {
            let (o, d) = fsst::decompress(&table, &o, &data)?;
            (Offsets::I64(o), d)
        }
    };
    Ok(DataBlock::variable(offsets, data))
}

/// Decode a whole block (dictionary, levels) holding `n` values.
pub fn decode_block(enc: &CompressiveEncoding, buf: &[u8], n: usize, wide: bool) -> Result<DataBlock> {
    match variant(enc)? {
        Enc::Flat(f) => match &f.data {
            Some(c) => fixed(f.bits_per_value, &general::decompress(scheme(c)?, buf)?, n),
            None => fixed(f.bits_per_value, buf, n),
        },
        Enc::Variable(v) => {
            // u32/u64 bits_per_offset | u32/u64 data start | offsets | bytes
            let hdr = if buf.len() >= 4 && u32::from_le_bytes(buf[0..4].try_into().unwrap()) == 64 { 8 } else { 4 };
            let bits = read_uint(buf, 0, hdr).ok_or_else(|| Error::corrupt("variable block header truncated"))?;
            let data_start = read_uint(buf, hdr, hdr).ok_or_else(|| Error::corrupt("variable block header truncated"))?;
            let width = (bits / 8) as usize;
            if width != 4 && width != 8 {
                return Err(Error::corrupt(format!("variable block with {bits}-bit offsets")));
            }
            let _ = v;
            let start = 2 * hdr;
            let data_start = usize::try_from(data_start).map_err(|_| Error::corrupt("bad data start"))?;
            if data_start > buf.len() || data_start < start {
                return Err(Error::corrupt("variable block data start outside the buffer"));
            }
            // Offsets are relative to the data start.
            let mut raw = Vec::with_capacity(n + 1);
            for i in 0..=n {
                raw.push(read_uint(buf, start + i * width, width).ok_or_else(|| Error::corrupt("variable block offsets truncated"))?);
            }
            let data = &buf[data_start..];
            if raw.windows(2).any(|w| w[0] > w[1]) || raw[n] as usize > data.len() {
                return Err(Error::corrupt("variable block offsets out of range"));
            }
            let first = raw[0] as usize;
            let bytes = data[first..raw[n] as usize].to_vec();
            let offsets = if wide || width == 8 {
                Offsets::I64(raw.iter().map(|&o| (o as usize - first) as i64).collect())
            } else {
                Offsets::I32(raw.iter().map(|&o| (o as usize - first) as i32).collect())
            };
            let offsets = match (offsets, wide) {
                (Offsets::I64(o), false) => {
                    Offsets::I32(o.into_iter().map(|x| i32::try_from(x).map_err(|_| Error::corrupt("dictionary too large"))).collect::<Result<_>>()?)
                }
                (o, _) => o,
            };
            Ok(DataBlock::variable(offsets, bytes))
        }
        Enc::OutOfLineBitpacking(b) => {
            let bits = b.uncompressed_bits_per_value;
            let w = flat_bits(inner(&b.values, "out_of_line_bitpacking")?)?;
            let mut out = Vec::with_capacity(n * (bits as usize / 8).max(1));
            bitpack::unpack_out_of_line(bits as u32, w as u32, buf, n, &mut out)?;
            Ok(DataBlock::Fixed { bits, data: out, len: n })
        }
        Enc::InlineBitpacking(b) => {
            // Short level buffers: consecutive 1024-value inline chunks.
            let bits = b.uncompressed_bits_per_value as u32;
            if ![8, 16, 32, 64].contains(&bits) {
                return Err(Error::corrupt(format!("inline bitpacking of {bits}-bit values")));
            }
            let word = bits as usize / 8;
            let mut out = Vec::with_capacity(n * word);
            let (mut rest, mut left) = (buf, n);
            while left > 0 {
                let take = left.min(bitpack::VALUES_PER_BLOCK);
                let w = read_width(rest, word).ok_or_else(|| Error::corrupt("inline bitpacking block truncated"))?;
                let len = bitpack::inline_chunk_bytes(bits, w);
                let chunk = rest.get(..len).ok_or_else(|| Error::corrupt("inline bitpacking block truncated"))?;
                bitpack::unpack_inline_chunk(bits, chunk, take, &mut out)?;
                rest = &rest[len..];
                left -= take;
            }
            Ok(DataBlock::Fixed { bits: bits as u64, data: out, len: n })
        }
        Enc::Rle(r) => {
            let bits = flat_bits(inner(&r.values, "rle")?)?;
            let mut data = Vec::with_capacity(n * (bits as usize / 8));
            rle::decode_block(bits as u32, buf, n, &mut data)?;
            Ok(DataBlock::Fixed { bits, data, len: n })
        }
        Enc::General(g) => {
            let c = g.compression.as_ref().ok_or_else(|| Error::corrupt("general encoding without a scheme"))?;
            let raw = general::decompress(scheme(c)?, buf)?;
            decode_block(inner(&g.values, "general")?, &raw, n, wide)
        }
        Enc::Constant(c) => {
            let v = c.value.as_deref().unwrap_or(&[]);
            let one = DataBlock::Fixed { bits: 8 * v.len() as u64, data: v.to_vec(), len: 1 };
            one.repeat(n)
        }
        other => Err(Error::unsupported(format!("block encoding {}", name_of(other)))),
    }
}

fn read_width(buf: &[u8], word: usize) -> Option<u32> {
    let b = buf.get(..word)?;
    let mut v = [0u8; 8];
    v[..word].copy_from_slice(b);
    u32::try_from(u64::from_le_bytes(v)).ok().filter(|&w| w as usize <= word * 8)
}

/// Decode levels (u16) from a block.
pub fn decode_levels(enc: &CompressiveEncoding, buf: &[u8], n: usize) -> Result<Vec<u16>> {
    match decode_block(enc, buf, n, false)? {
        DataBlock::Fixed { bits: 16, data, len } if len == n => Ok(data.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()),
        DataBlock::Fixed { bits: 8, data, len } if len == n => Ok(data.into_iter().map(u16::from).collect()),
        _ => Err(Error::corrupt("rep/def levels did not decode to 16-bit values")),
    }
}

/// The levels (u16) at positions `rows` (sorted `(start, end)` ranges below
/// `n`) of a block of `n` levels: out-of-line bit-packed levels (what
/// Lance writes for a mini-block chunk's) give up single values without
/// decoding the others (a take wants one level of a chunk); other
/// encodings decode the block and keep the rows.
pub fn decode_levels_rows(enc: &CompressiveEncoding, buf: &[u8], n: usize, rows: &[(usize, usize)]) -> Result<Vec<u16>> {
    if let Some(Enc::OutOfLineBitpacking(b)) = &enc.compression {
        if b.uncompressed_bits_per_value == 16 {
            let w = flat_bits(inner(&b.values, "out_of_line_bitpacking")?)?;
            let mut out = Vec::new();
            bitpack::unpack_out_of_line_rows_typed::<u16>(w as u32, buf, n, rows, &mut out)?;
            return Ok(out);
        }
    }
    let all = decode_levels(enc, buf, n)?;
    if rows.iter().any(|&(s, e)| s > e || e > all.len()) {
        return Err(Error::corrupt(format!("rows {rows:?} outside {} levels", all.len())));
    }
    Ok(rows.iter().flat_map(|&(s, e)| all[s..e].iter().copied()).collect())
}

/// A short name for messages.
pub fn name_of(e: &Enc) -> &'static str {
    match e {
        Enc::Flat(_) => "flat",
        Enc::Variable(_) => "variable",
        Enc::Constant(_) => "constant",
        Enc::OutOfLineBitpacking(_) => "out_of_line_bitpacking",
        Enc::InlineBitpacking(_) => "inline_bitpacking",
        Enc::Fsst(_) => "fsst",
        Enc::Dictionary(_) => "dictionary",
        Enc::Rle(_) => "rle",
        Enc::ByteStreamSplit(_) => "byte_stream_split",
        Enc::General(_) => "general",
        Enc::FixedSizeList(_) => "fixed_size_list",
        Enc::PackedStruct(_) => "packed_struct",
        Enc::VariablePackedStruct(_) => "variable_packed_struct",
    }
}
