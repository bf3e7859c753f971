//! Page layouts of 2.1/2.2 files decoded into [`LevelStream`]s.
//!
//! Mini-block page buffers: `[0]` chunk metadata words (u16, or u32 with
//! `has_large_chunk`), `[1]` chunks, `[2]` dictionary (if any), then the
//! repetition index (if `repetition_index_depth > 0`). A word is
//! `((chunk_bytes / 8 - 1) << 4) | log2(values in chunk)`; the last chunk's
//! count is whatever remains of `num_items`. Each chunk:
//!
//! ```text
//! u16 num_levels | u16 rep_bytes? | u16 def_bytes? | uN value_bytes × num_buffers
//! pad to 8 | rep | pad 8 | def | pad 8 | value buffer 0 | pad 8 | …
//! ```
//!
//! Full-zip page buffers: `[0]` zipped entries, `[1]` repetition index.
//! Each entry is an optional control word `(rep << bits_def) | def` (1, 2 or
//! 4 bytes) followed, for visible values, by the value: fixed width bytes,
//! or a length prefix and bytes for variable width (nothing for nulls).
//!
//! Constant pages (all null, or one repeated value in 2.2): an optional
//! inline value or a value buffer, then rep and def level buffers.

use crate::error::{Error, Result};
use crate::file::structural::compressive::{self, decode_levels, variant};
use crate::file::structural::datablock::{DataBlock, Offsets};
use crate::file::structural::levels::{Layers, LevelStream};
use crate::file::structural::sink::ValueSink;
use crate::proto::encodings21::compressive_encoding::Compression as Enc;
use crate::proto::encodings21::page_layout::Layout;
use crate::proto::encodings21::{ConstantLayout, FullZipLayout, MiniBlockLayout, PageLayout};

/// Everything needed to decode one page.
#[derive(Clone, Copy)]
pub struct PageInput<'a> {
    /// The page's buffers, in order.
    pub buffers: &'a [&'a [u8]],
    /// Rows in the page.
    pub num_rows: usize,
    /// Whether variable-width output uses 64-bit offsets.
    pub wide_offsets: bool,
    /// Width of a fixed-width leaf in bits (for constant pages), if known.
    pub fixed_bits: Option<u64>,
    /// Dimension when the leaf is a fixed-size list.
    pub fsl_dim: Option<usize>,
    /// Sorted row ranges (relative to the page) the caller wants; `None`
    /// for all. Decoders may use this to skip work.
    pub wanted: Option<&'a [(usize, usize)]>,
    /// A mini-block page read in part: (position in the chunk buffer,
    /// bytes) of the chunks fetched, by position; they cover every chunk
    /// holding a wanted row (see `crate::file::fetch`).
    pub chunks: Option<&'a [(usize, &'a [u8])]>,
}

/// Decode a page into levels and values. The flag says whether the stream
/// already holds only the `wanted` rows (else it holds the whole page).
pub fn decode_page(layout: &PageLayout, input: &PageInput<'_>) -> Result<(Layers, LevelStream, bool)> {
    match layout.layout.as_ref().ok_or_else(|| Error::corrupt("page layout with no variant"))? {
        Layout::MiniBlockLayout(m) => decode_miniblock(m, input),
        Layout::FullZipLayout(f) => decode_fullzip(f, input),
        Layout::ConstantLayout(c) => decode_constant(c, input).map(|(l, s)| (l, s, false)),
        Layout::BlobLayout(_) => Err(Error::unsupported("blob page layout")),
    }
}

fn buffer<'a>(input: &PageInput<'a>, i: usize, what: &str) -> Result<&'a [u8]> {
    input.buffers.get(i).copied().ok_or_else(|| Error::corrupt(format!("page lacks buffer {i} ({what})")))
}

fn u16_at(b: &[u8], at: usize) -> Result<u16> {
    b.get(at..at + 2).map(|s| u16::from_le_bytes([s[0], s[1]])).ok_or_else(|| Error::corrupt("mini-block chunk header truncated"))
}
fn u32_at(b: &[u8], at: usize) -> Result<u32> {
    b.get(at..at + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]])).ok_or_else(|| Error::corrupt("mini-block chunk header truncated"))
}
fn pad8(x: usize) -> usize {
    x.div_ceil(8) * 8
}

fn decode_miniblock(m: &MiniBlockLayout, input: &PageInput<'_>) -> Result<(Layers, LevelStream, bool)> {
    let layers = Layers::from_proto(&m.layers)?;
    let meta = buffer(input, 0, "chunk metadata")?;
    let data = buffer(input, 1, "chunks")?;
    let word_bytes = if m.has_large_chunk { 4 } else { 2 };
    if meta.len() % word_bytes != 0 {
        return Err(Error::corrupt("chunk metadata length is not a whole number of words"));
    }
    let num_items = usize::try_from(m.num_items).map_err(|_| Error::corrupt("num_items too large"))?;
    let value_enc = m.value_compression.as_ref().ok_or_else(|| Error::corrupt("mini-block page without value encoding"))?;
    let num_buffers = m.num_buffers as usize;
    if num_buffers > 16 {
        return Err(Error::corrupt(format!("{num_buffers} value buffers per chunk")));
    }
    let words: Vec<u32> = meta
        .chunks_exact(word_bytes)
        .map(|c| if word_bytes == 2 { u16::from_le_bytes([c[0], c[1]]) as u32 } else { u32::from_le_bytes([c[0], c[1], c[2], c[3]]) })
        .collect();
    let wide = input.wide_offsets;
    // Without repetition every level entry is a row and a value, so chunk
    // value counts are row counts: only chunks holding wanted rows decode,
    // and of those only the wanted values where the encoding allows.
    let selective = m.rep_compression.is_none() && input.wanted.is_some();
    let wanted = input.wanted.unwrap_or(&[]);
    let mut wi = 0usize;
    let mut pos = 0usize;
    let mut items_seen = 0usize;
    let mut rep = m.rep_compression.as_ref().map(|_| Vec::new());
    let mut def = m.def_compression.as_ref().map(|_| Vec::new());
    // Capacity hints: the wanted values, and the chunk bytes in proportion
    // (a sink that grew by doubling copied the whole page again).
    let wanted_items = if selective { wanted.iter().map(|(s, e)| e.saturating_sub(*s)).sum::<usize>().min(num_items) } else { num_items };
    let data_hint = if num_items == 0 { 0 } else { (data.len() as u128 * wanted_items as u128 / num_items as u128) as usize };
    // `num_items` is only a claim: no more values than bits in the chunks
    // are reserved up front (a corrupt count must not allocate).
    let mut sink = ValueSink::new(value_enc, wide, wanted_items.min(data.len().saturating_mul(8)), data_hint)?;
    let mut rows: Vec<(usize, usize)> = Vec::new();
    let mut selected_rows = 0usize;
    for (ci, &w) in words.iter().enumerate() {
        let chunk_bytes = ((w >> 4) as usize + 1) * 8;
        let log = w & 0xF;
        let n = if ci + 1 == words.len() {
            num_items.checked_sub(items_seen).ok_or_else(|| Error::corrupt("chunks hold more values than the page"))?
        } else {
            1usize << log
        };
        let chunk_start = items_seen;
        items_seen += n;
        if selective {
            // The wanted ranges inside this chunk, relative to it.
            while wi < wanted.len() && wanted[wi].1 <= chunk_start {
                wi += 1;
            }
            rows.clear();
            let mut j = wi;
            while j < wanted.len() && wanted[j].0 < items_seen {
                let (s, e) = wanted[j];
                if e > s {
                    rows.push((s.max(chunk_start) - chunk_start, e.min(items_seen) - chunk_start));
                }
                j += 1;
            }
            if rows.is_empty() {
                pos += chunk_bytes;
                continue;
            }
            selected_rows += rows.iter().map(|(s, e)| e - s).sum::<usize>();
        }
        let chunk = match input.chunks {
            None => data.get(pos..pos + chunk_bytes),
            Some(cs) => cs.binary_search_by_key(&pos, |c| c.0).ok().map(|i| cs[i].1).filter(|c| c.len() == chunk_bytes),
        }
        .ok_or_else(|| Error::corrupt(format!("chunk {ci} ({chunk_bytes} bytes at {pos}) runs past the data buffer")))?;
        pos += chunk_bytes;
        let only = if selective && rows.as_slice() != [(0, n)] { Some(rows.as_slice()) } else { None };
        let r = decode_chunk_levels_and_values(m, value_enc, chunk, n, num_buffers, word_bytes, wide, &mut sink, only)
            .map_err(|e| e.context(format!("chunk {ci}")))?;
        if let (Some(all), Some(part)) = (rep.as_mut(), r.0) {
            all.extend(part);
        }
        if let (Some(all), Some(part)) = (def.as_mut(), r.1) {
            // (Already cut to the selected rows.)
            all.extend(part);
        }
    }
    if items_seen != num_items {
        return Err(Error::corrupt(format!("chunks hold {items_seen} values, page says {num_items}")));
    }
    let mut values = sink.finish(empty_block(input))?;
    if let Some(dict_enc) = &m.dictionary {
        let dict_buf = buffer(input, 2, "dictionary")?;
        let n = usize::try_from(m.num_dictionary_items).map_err(|_| Error::corrupt("dictionary size"))?;
        let dict = compressive::decode_block(dict_enc, dict_buf, n, wide).map_err(|e| e.context("dictionary"))?;
        let indices = indices_of(&values)?;
        values = dict.take(&indices)?;
    }
    let num_rows = if selective { selected_rows } else { input.num_rows };
    Ok((layers, LevelStream { rep, def, values, num_rows }, selective))
}

fn empty_block(input: &PageInput<'_>) -> DataBlock {
    match (input.fixed_bits, input.fsl_dim) {
        (_, Some(_)) | (Some(_), _) => DataBlock::Nulls { len: 0 },
        _ => DataBlock::variable(Offsets::new(input.wide_offsets), vec![]),
    }
}

fn indices_of(block: &DataBlock) -> Result<Vec<u32>> {
    match block {
        DataBlock::Fixed { bits, data, len } => Ok(match bits {
            8 => data.iter().map(|&x| x as u32).collect(),
            16 => data.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]) as u32).collect(),
            32 => data.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
            64 => data.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap()).min(u32::MAX as u64) as u32).collect(),
            _ => return Err(Error::corrupt(format!("dictionary indices of {bits} bits"))),
        })
        .map(|v: Vec<u32>| v.into_iter().take(*len).collect()),
        _ => Err(Error::corrupt("dictionary indices are not fixed-width")),
    }
}

type ChunkLevels = (Option<Vec<u16>>, Option<Vec<u16>>);

/// Decode one chunk's levels and push its values onto `sink`.
#[allow(clippy::too_many_arguments)]
fn decode_chunk_levels_and_values(
    m: &MiniBlockLayout,
    value_enc: &crate::proto::encodings21::CompressiveEncoding,
    chunk: &[u8],
    n: usize,
    num_buffers: usize,
    word_bytes: usize,
    wide: bool,
    sink: &mut ValueSink,
    rows: Option<&[(usize, usize)]>,
) -> Result<ChunkLevels> {
    let mut at = 0;
    let num_levels = u16_at(chunk, at)? as usize;
    at += 2;
    let rep_bytes = if m.rep_compression.is_some() {
        at += 2;
        u16_at(chunk, at - 2)? as usize
    } else {
        0
    };
    let def_bytes = if m.def_compression.is_some() {
        at += 2;
        u16_at(chunk, at - 2)? as usize
    } else {
        0
    };
    let mut sizes = Vec::with_capacity(num_buffers);
    for _ in 0..num_buffers {
        let s = if word_bytes == 2 { u16_at(chunk, at)? as usize } else { u32_at(chunk, at)? as usize };
        at += word_bytes;
        sizes.push(s);
    }
    at = pad8(at);
    // (`what` is a closure: naming a buffer costs a `format!`, paid only
    // on error, not per chunk.)
    let mut slice = |len: usize, what: &dyn Fn() -> String| -> Result<&[u8]> {
        let s = chunk.get(at..at + len).ok_or_else(|| Error::corrupt(format!("{} ({len} bytes) runs past the chunk", what())))?;
        at = pad8(at + len);
        Ok(s)
    };
    let rep = match &m.rep_compression {
        Some(enc) => Some(decode_levels(enc, slice(rep_bytes, &|| "repetition levels".into())?, num_levels)?),
        None => None,
    };
    // With rows selected (no repetition: one level per value, so rows cut
    // the levels by position), only their levels are decoded.
    let def = match (&m.def_compression, rows) {
        (Some(enc), Some(rs)) if rep.is_none() => {
            if num_levels != n {
                return Err(Error::corrupt(format!("{num_levels} definition levels for {n} values")));
            }
            Some(compressive::decode_levels_rows(enc, slice(def_bytes, &|| "definition levels".into())?, num_levels, rs)?)
        }
        (Some(enc), _) => Some(decode_levels(enc, slice(def_bytes, &|| "definition levels".into())?, num_levels)?),
        (None, _) => None,
    };
    let mut bufs = Vec::with_capacity(num_buffers);
    for (i, s) in sizes.iter().enumerate() {
        bufs.push(slice(*s, &|| format!("value buffer {i}"))?);
    }
    sink.push_rows(value_enc, &bufs, n, wide, rows)?;
    Ok((rep, def))
}

fn control_word_bytes(bits: u32) -> usize {
    match bits {
        0 => 0,
        1..=8 => 1,
        9..=16 => 2,
        _ => 4,
    }
}

fn decode_fullzip(f: &FullZipLayout, input: &PageInput<'_>) -> Result<(Layers, LevelStream, bool)> {
    use crate::proto::encodings21::full_zip_layout::Details;
    let layers = Layers::from_proto(&f.layers)?;
    let data = buffer(input, 0, "zipped values")?;
    let cw_bytes = control_word_bytes(f.bits_rep + f.bits_def);
    if f.bits_rep > 16 || f.bits_def > 16 {
        return Err(Error::corrupt("full-zip control word wider than 32 bits"));
    }
    let num_levels = f.num_items as usize;
    let value_enc = f.value_compression.as_ref().ok_or_else(|| Error::corrupt("full-zip page without value encoding"))?;
    let has_levels = cw_bytes > 0;
    if !has_levels {
        if let Some(out) = fixed_entries(f, value_enc, data, input)? {
            return Ok((layers, out, input.wanted.is_some()));
        }
    }
    let mut rep = (f.bits_rep > 0).then(|| Vec::with_capacity(num_levels));
    let mut def = (f.bits_def > 0).then(|| Vec::with_capacity(num_levels));
    let def_mask = (1u32 << f.bits_def) - 1;
    let mut at = 0usize;
    let details = f.details.as_ref().ok_or_else(|| Error::corrupt("full-zip page without value width"))?;
    let mut raw_values: Vec<&[u8]> = Vec::with_capacity(f.num_visible_items as usize);
    let mut valid: Vec<bool> = Vec::with_capacity(f.num_visible_items as usize);
    for i in 0..num_levels {
        let (r, d) = if has_levels {
            let cw = chunk_word(data, at, cw_bytes).ok_or_else(|| Error::corrupt(format!("full-zip entry {i} truncated")))?;
            at += cw_bytes;
            ((cw >> f.bits_def) as u16, (cw & def_mask) as u16)
        } else {
            (0, 0)
        };
        if let Some(v) = rep.as_mut() {
            v.push(r);
        }
        if let Some(v) = def.as_mut() {
            v.push(d);
        }
        if !layers.is_visible(d) {
            continue;
        }
        match details {
            Details::BitsPerValue(bits) => {
                let w = (*bits as usize).div_ceil(8);
                let v = data.get(at..at + w).ok_or_else(|| Error::corrupt(format!("full-zip value {i} truncated")))?;
                at += w;
                raw_values.push(v);
                valid.push(d == 0);
            }
            Details::BitsPerOffset(bits) => {
                if d != 0 {
                    raw_values.push(&[]);
                    valid.push(false);
                    continue;
                }
                let w = (*bits as usize) / 8;
                let len = match w {
                    4 => u32_at(data, at).map(|x| x as usize),
                    8 => data
                        .get(at..at + 8)
                        .map(|s| u64::from_le_bytes(s.try_into().unwrap()) as usize)
                        .ok_or_else(|| Error::corrupt("length truncated")),
                    _ => Err(Error::corrupt(format!("full-zip length prefix of {bits} bits"))),
                }
                .map_err(|e| e.context(format!("full-zip value {i}")))?;
                at += w;
                let v = data.get(at..at.saturating_add(len)).ok_or_else(|| Error::corrupt(format!("full-zip value {i} truncated")))?;
                at += len;
                raw_values.push(v);
                valid.push(true);
            }
        }
    }
    // Without repetition every entry is a row and a value: only the wanted
    // rows' values are copied out.
    let (mut def, mut num_rows, mut selected) = (def, input.num_rows, false);
    if let Some(wanted) = input.wanted.filter(|_| f.bits_rep == 0 && raw_values.len() == num_levels) {
        if wanted.iter().any(|&(s, e)| s > e || e > num_levels) {
            return Err(Error::invalid_input(format!("rows {wanted:?} outside a page of {num_levels}")));
        }
        raw_values = pick_rows(&raw_values, wanted);
        valid = pick_rows(&valid, wanted);
        def = def.map(|d| pick_rows(&d, wanted));
        num_rows = raw_values.len();
        selected = true;
    }
    let values = fullzip_values(value_enc, details, &raw_values, &valid, input)?;
    let rep = if has_levels { rep } else { None };
    let def = if has_levels { def } else { None };
    Ok((layers, LevelStream { rep, def, values, num_rows }, selected))
}

/// A full-zip page of fixed-width values without control words (no nulls,
/// no lists: e.g. float vectors) is its rows' values back to back, so the
/// wanted rows are copied with one `memcpy` per range. (The general walk
/// made a slice per row, then copied each row's bytes on their own: most
/// of a vector scan's decoding time.) `None` for value encodings this
/// does not cover.
fn fixed_entries(
    f: &FullZipLayout,
    enc: &crate::proto::encodings21::CompressiveEncoding,
    data: &[u8],
    input: &PageInput<'_>,
) -> Result<Option<LevelStream>> {
    use crate::proto::encodings21::full_zip_layout::Details;
    let Some(Details::BitsPerValue(bits)) = f.details else { return Ok(None) };
    if bits == 0 || bits % 8 != 0 {
        return Ok(None);
    }
    // Items per value and the bits of one item.
    let (dim, item_bits) = match variant(enc)? {
        Enc::Flat(flat) if flat.data.is_none() => (None, flat.bits_per_value),
        Enc::FixedSizeList(fsl) if !fsl.has_validity => match fsl.values.as_deref().map(variant).transpose()? {
            Some(Enc::Flat(flat)) if flat.data.is_none() => (Some(fsl.items_per_value as usize), flat.bits_per_value),
            _ => return Ok(None),
        },
        _ => return Ok(None),
    };
    if dim.unwrap_or(1) as u64 * item_bits != bits as u64 {
        return Ok(None);
    }
    let w = bits as usize / 8;
    let n = f.num_items as usize;
    if data.len() / w < n {
        return Err(Error::corrupt(format!("full-zip page of {n} values of {w} bytes has only {} bytes", data.len())));
    }
    let all = [(0, n)];
    let wanted = input.wanted.unwrap_or(&all);
    if wanted.iter().any(|&(s, e)| s > e || e > n) {
        return Err(Error::invalid_input(format!("rows {wanted:?} outside a page of {n}")));
    }
    let rows: usize = wanted.iter().map(|(s, e)| e - s).sum();
    let mut out = Vec::with_capacity(rows * w);
    for &(s, e) in wanted {
        out.extend_from_slice(&data[s * w..e * w]);
    }
    let values = match dim {
        None => DataBlock::Fixed { bits: item_bits, data: out, len: rows },
        Some(dim) => {
            DataBlock::FixedSizeList { dim, items: Box::new(DataBlock::Fixed { bits: item_bits, data: out, len: rows * dim }), item_validity: None }
        }
    };
    Ok(Some(LevelStream { rep: None, def: None, values, num_rows: rows }))
}

/// The items of `v` in the (checked) ranges `rows`.
fn pick_rows<T: Copy>(v: &[T], rows: &[(usize, usize)]) -> Vec<T> {
    let mut out = Vec::with_capacity(rows.iter().map(|(s, e)| e - s).sum());
    rows.iter().for_each(|&(s, e)| out.extend_from_slice(&v[s..e]));
    out
}

fn chunk_word(data: &[u8], at: usize, bytes: usize) -> Option<u32> {
    let s = data.get(at..at + bytes)?;
    Some(match bytes {
        1 => s[0] as u32,
        2 => u16::from_le_bytes([s[0], s[1]]) as u32,
        _ => u32::from_le_bytes([s[0], s[1], s[2], s[3]]),
    })
}

/// Decode the per-value byte slices of a full-zip page.
fn fullzip_values(
    enc: &crate::proto::encodings21::CompressiveEncoding,
    details: &crate::proto::encodings21::full_zip_layout::Details,
    raw: &[&[u8]],
    valid: &[bool],
    input: &PageInput<'_>,
) -> Result<DataBlock> {
    use crate::proto::encodings21::full_zip_layout::Details;
    match (variant(enc)?, details) {
        (Enc::Flat(f), Details::BitsPerValue(_)) => {
            let data: Vec<u8> = raw.concat();
            Ok(DataBlock::Fixed { bits: f.bits_per_value, data, len: raw.len() })
        }
        (Enc::FixedSizeList(fsl), Details::BitsPerValue(_)) => {
            let dim = fsl.items_per_value as usize;
            let inner = fsl.values.as_deref().ok_or_else(|| Error::corrupt("fixed_size_list without items"))?;
            let item_bits = match variant(inner)? {
                Enc::Flat(f) => f.bits_per_value,
                _ => return Err(Error::unsupported("full-zip fixed-size-list items not flat")),
            };
            let vbytes = if fsl.has_validity { dim.div_ceil(8) } else { 0 };
            let mut items = Vec::with_capacity(raw.iter().map(|v| v.len().saturating_sub(vbytes)).sum());
            let mut validity = arrow_buffer::BooleanBufferBuilder::new(if fsl.has_validity { raw.len() * dim } else { 0 });
            for v in raw {
                if v.len() < vbytes {
                    return Err(Error::corrupt("full-zip fixed-size-list value truncated"));
                }
                if fsl.has_validity {
                    validity.append_packed_range(0..dim, &v[..vbytes]);
                }
                items.extend_from_slice(&v[vbytes..]);
            }
            let n_items = raw.len() * dim;
            let items = DataBlock::Fixed { bits: item_bits, data: items, len: n_items };
            Ok(DataBlock::FixedSizeList {
                dim,
                items: Box::new(items),
                item_validity: fsl.has_validity.then(|| validity.finish().into_inner().to_vec()),
            })
        }
        (Enc::VariablePackedStruct(v), Details::BitsPerOffset(_)) => variable_packed_rows(v, raw, valid),
        (_, Details::BitsPerOffset(_)) => {
            let mut offsets = Offsets::new(input.wide_offsets);
            let mut data = Vec::with_capacity(raw.iter().map(|v| v.len()).sum());
            let per_value = value_decoder(enc)?;
            for (v, ok) in raw.iter().zip(valid) {
                if *ok {
                    per_value.decode_into(v, &mut data)?;
                }
                offsets.push_end(data.len())?;
            }
            Ok(DataBlock::variable(offsets, data))
        }
        (other, _) => Err(Error::unsupported(format!("full-zip value encoding {}", compressive::name_of(other)))),
    }
}

/// Rows of a struct whose children are packed together per row (fixed
/// children as raw bytes, variable ones behind a 32- or 64-bit length).
/// They are rewritten into one canonical form — fixed children as is,
/// variable children behind a u64 length — that `to_arrow` splits into
/// child arrays by the schema.
fn variable_packed_rows(v: &crate::proto::encodings21::VariablePackedStruct, raw: &[&[u8]], valid: &[bool]) -> Result<DataBlock> {
    use crate::proto::encodings21::variable_packed_struct::field_encoding::Layout;
    // Variable children may be compressed value by value (FSST, zstd…);
    // fixed children must be stored raw.
    let mut decoders = Vec::with_capacity(v.fields.len());
    for f in &v.fields {
        let dec = match (&f.value, &f.layout) {
            (Some(enc), Some(Layout::BitsPerLength(_))) => value_decoder(enc)?,
            (Some(enc), _) => match variant(enc)? {
                Enc::Flat(fl) if fl.data.is_none() => ValueDecoder::Raw,
                _ => return Err(Error::unsupported("compressed fixed-width child in a variable packed struct")),
            },
            (None, _) => ValueDecoder::Raw,
        };
        decoders.push(dec);
    }
    let mut offsets = Offsets::new(true);
    let mut data = Vec::with_capacity(raw.iter().map(|r| r.len() + 8 * v.fields.len()).sum());
    for (row, ok) in raw.iter().zip(valid) {
        if *ok {
            let mut at = 0usize;
            for (f, dec) in v.fields.iter().zip(&decoders) {
                match f.layout.as_ref().ok_or_else(|| Error::corrupt("packed struct field without layout"))? {
                    Layout::BitsPerValue(bits) => {
                        let w = (*bits as usize).div_ceil(8);
                        let b = row.get(at..at + w).ok_or_else(|| Error::corrupt("packed struct row truncated"))?;
                        data.extend_from_slice(b);
                        at += w;
                    }
                    Layout::BitsPerLength(bits) => {
                        let len = match bits {
                            32 => row.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap()) as usize),
                            64 => row.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap()) as usize),
                            _ => return Err(Error::corrupt(format!("packed struct length of {bits} bits"))),
                        }
                        .ok_or_else(|| Error::corrupt("packed struct row truncated"))?;
                        at += (*bits / 8) as usize;
                        let b = row.get(at..at.saturating_add(len)).ok_or_else(|| Error::corrupt("packed struct row truncated"))?;
                        let len_at = data.len();
                        data.extend_from_slice(&0u64.to_le_bytes());
                        dec.decode_into(b, &mut data)?;
                        let out_len = (data.len() - len_at - 8) as u64;
                        data[len_at..len_at + 8].copy_from_slice(&out_len.to_le_bytes());
                        at += len;
                    }
                }
            }
        }
        offsets.push_end(data.len())?;
    }
    Ok(DataBlock::variable(offsets, data))
}

/// How one full-zip variable-width value is stored.
// The FSST variant holds its symbol table inline: one decoder per page,
// built once, so its size does not matter and a box would be one more hop.
#[allow(clippy::large_enum_variant)]
enum ValueDecoder {
    Raw,
    Fsst(crate::encoding::fsst::SymbolTable),
    General(crate::encoding::general::CompressionScheme, Box<ValueDecoder>),
}

impl ValueDecoder {
    fn decode_into(&self, v: &[u8], out: &mut Vec<u8>) -> Result<()> {
        match self {
            ValueDecoder::Raw => out.extend_from_slice(v),
            ValueDecoder::Fsst(t) => {
                let (_, d) = crate::encoding::fsst::decompress(t, &[0u32, v.len() as u32], v)?;
                out.extend_from_slice(&d);
            }
            ValueDecoder::General(s, inner) => {
                let raw = crate::encoding::general::decompress(*s, v)?;
                inner.decode_into(&raw, out)?;
            }
        }
        Ok(())
    }
}

fn value_decoder(enc: &crate::proto::encodings21::CompressiveEncoding) -> Result<ValueDecoder> {
    Ok(match variant(enc)? {
        Enc::Variable(_) | Enc::Flat(_) => ValueDecoder::Raw,
        Enc::Fsst(f) => ValueDecoder::Fsst(crate::encoding::fsst::SymbolTable::parse(&f.symbol_table)?),
        Enc::General(g) => {
            let c = g.compression.as_ref().ok_or_else(|| Error::corrupt("general encoding without a scheme"))?;
            let inner = match g.values.as_deref() {
                Some(i) => value_decoder(i)?,
                None => ValueDecoder::Raw,
            };
            ValueDecoder::General(compressive::scheme(c)?, Box::new(inner))
        }
        other => return Err(Error::unsupported(format!("full-zip value encoding {}", compressive::name_of(other)))),
    })
}

fn decode_constant(c: &ConstantLayout, input: &PageInput<'_>) -> Result<(Layers, LevelStream)> {
    let layers = Layers::from_proto(&c.layers)?;
    // Buffer order: [value buffer]? then rep, def when levels are present.
    let has_value_buffer = c.inline_value.is_none() && input.buffers.len() % 2 == 1;
    let level_base = usize::from(has_value_buffer);
    let levels = |i: usize, enc: &Option<crate::proto::encodings21::CompressiveEncoding>, count: u64| -> Result<Option<Vec<u16>>> {
        let Some(buf) = input.buffers.get(level_base + i).copied() else { return Ok(None) };
        if buf.is_empty() {
            return Ok(None);
        }
        match enc {
            Some(e) => Ok(Some(decode_levels(e, buf, count as usize)?)),
            None => {
                if buf.len() % 2 != 0 {
                    return Err(Error::corrupt("raw u16 levels of odd length"));
                }
                Ok(Some(buf.chunks_exact(2).map(|x| u16::from_le_bytes([x[0], x[1]])).collect()))
            }
        }
    };
    let rep = levels(0, &c.rep_compression, c.num_rep_values)?;
    let def = levels(1, &c.def_compression, c.num_def_values)?;
    let entries = rep.as_ref().map(|r| r.len()).or(def.as_ref().map(|d| d.len())).unwrap_or(input.num_rows);
    let visible = match &def {
        Some(d) => d.iter().filter(|&&x| layers.is_visible(x)).count(),
        None => entries,
    };
    let scalar = match (&c.inline_value, has_value_buffer) {
        (Some(v), _) => Some(scalar_from_inline(v, input)?),
        (None, true) => Some(scalar_from_buffer(buffer(input, 0, "constant value")?, input)?),
        (None, false) => None,
    };
    let all_null = scalar.is_none();
    let values = match scalar {
        Some(s) => s.repeat(visible)?,
        None => DataBlock::Nulls { len: visible },
    };
    // An all-null page without def levels: every visible slot is null.
    let def = match (def, all_null, layers.layers[0].null_def) {
        (None, true, Some(nd)) if visible > 0 => Some(vec![nd; entries]),
        (d, _, _) => d,
    };
    Ok((layers, LevelStream { rep, def, values, num_rows: input.num_rows }))
}

fn scalar_from_inline(v: &[u8], input: &PageInput<'_>) -> Result<DataBlock> {
    match input.fixed_bits {
        Some(1) => Ok(DataBlock::Fixed { bits: 1, data: vec![v.first().copied().unwrap_or(0) & 1], len: 1 }),
        Some(bits) if bits == 8 * v.len() as u64 => Ok(DataBlock::Fixed { bits, data: v.to_vec(), len: 1 }),
        Some(bits) => Err(Error::corrupt(format!("inline constant of {} bytes for a {bits}-bit type", v.len()))),
        None => Err(Error::unsupported("inline constant for a non-fixed-width type")),
    }
}

/// `u32 num_buffers, u32 len[num_buffers], bytes…`: the Arrow buffers of a
/// length-1 array without validity.
fn scalar_from_buffer(buf: &[u8], input: &PageInput<'_>) -> Result<DataBlock> {
    let n = u32_at(buf, 0)? as usize;
    if n > 8 {
        return Err(Error::corrupt(format!("constant value with {n} buffers")));
    }
    let mut lens = Vec::with_capacity(n);
    for i in 0..n {
        lens.push(u32_at(buf, 4 + 4 * i)? as usize);
    }
    let mut at = 4 + 4 * n;
    let mut parts = Vec::with_capacity(n);
    for l in lens {
        parts.push(buf.get(at..at + l).ok_or_else(|| Error::corrupt("constant value buffer truncated"))?);
        at += l;
    }
    match (parts.as_slice(), input.fixed_bits, input.fsl_dim) {
        ([offsets, data], None, None) => {
            let (s, e) = if offsets.len() >= 16 && input.wide_offsets {
                (u64::from_le_bytes(offsets[0..8].try_into().unwrap()) as usize, u64::from_le_bytes(offsets[8..16].try_into().unwrap()) as usize)
            } else if offsets.len() >= 8 {
                let o0 = u32::from_le_bytes(offsets[0..4].try_into().unwrap()) as usize;
                let o1 = u32::from_le_bytes(offsets[4..8].try_into().unwrap()) as usize;
                if offsets.len() >= 16 {
                    (u64::from_le_bytes(offsets[0..8].try_into().unwrap()) as usize, u64::from_le_bytes(offsets[8..16].try_into().unwrap()) as usize)
                } else {
                    (o0, o1)
                }
            } else {
                return Err(Error::corrupt("constant string value without offsets"));
            };
            let bytes = data.get(s..e).ok_or_else(|| Error::corrupt("constant string offsets out of range"))?;
            let mut offsets = Offsets::new(input.wide_offsets);
            offsets.push_end(bytes.len())?;
            Ok(DataBlock::variable(offsets, bytes.to_vec()))
        }
        ([data], Some(bits), _) => {
            let need = (bits as usize).div_ceil(8);
            let d = data.get(..need).ok_or_else(|| Error::corrupt("constant value truncated"))?;
            Ok(DataBlock::Fixed { bits, data: d.to_vec(), len: 1 })
        }
        ([data], None, Some(dim)) => {
            let w = data.len() / dim.max(1);
            Ok(DataBlock::FixedSizeList {
                dim,
                items: Box::new(DataBlock::Fixed { bits: 8 * w as u64, data: data.to_vec(), len: dim }),
                item_validity: None,
            })
        }
        _ => Err(Error::unsupported(format!("constant value with {n} buffers for this type"))),
    }
}
