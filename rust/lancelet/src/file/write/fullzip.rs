//! Full-zip pages (digest §10.4), used for wide values (≥ 256 bytes).
//!
//! Buffer 0 interleaves, per level entry, an optional control word
//! `(rep << bits_def) | def` (1, 2 or 4 bytes, by `bits_rep + bits_def`)
//! and, for visible valid values, the value itself: a u32 length prefix and
//! the bytes for variable width, or exactly `bits_per_value / 8` bytes for
//! fixed width (null fixed-width items still write zeros; null variable
//! values and invisible entries write nothing).
//!
//! Buffer 1, the repetition index, is written when there are lists or the
//! values are variable width: `num_rows + 1` byte offsets into buffer 0 (the
//! start of each row, then the end), each in the smallest of 1/2/4/8 bytes
//! that holds the total.
//!
//! Value compression is per value: `variable{flat32}`, `fsst` (one symbol
//! table, each value compressed alone), `general` (each value
//! `[u64 raw length][zstd frame]`), or `fixed_size_list` whose values are
//! `[item validity bitmap][items]`.

use crate::encoding::{fsst, general};
use crate::error::{Error, Result};
use crate::file::write::choose::{self, flat, pack_bools, FieldOptions};
use crate::file::write::shred::{PackedField, PageLevels, Values};
use crate::proto::encodings21 as pb;
use crate::proto::encodings21::compressive_encoding::Compression as Enc;
use crate::proto::encodings21::full_zip_layout::Details;

fn bit_width(x: u16) -> u32 {
    16 - x.leading_zeros()
}

fn push_uint(out: &mut Vec<u8>, v: u64, bytes: usize) {
    out.extend_from_slice(&v.to_le_bytes()[..bytes]);
}

/// Encode a full-zip page.
/// `wide` (large_string / large_binary): 64-bit offsets and length
/// prefixes, as pylance writes them.
///
/// `packed`: the values are rows of a packed struct with variable-width
/// children (see [`crate::file::write::shred::variable_packed_fields`]),
/// stored uncompressed as `VariablePackedStruct` with 32-bit prefixes.
pub fn encode(
    levels: &PageLevels,
    values: Values,
    num_rows: usize,
    opts: &FieldOptions,
    wide: bool,
    packed: Option<&[PackedField]>,
) -> Result<(Vec<Vec<u8>>, pb::PageLayout)> {
    let ow: u32 = if wide && packed.is_none() { 64 } else { 32 };
    let bits_rep = if levels.rep.is_some() { bit_width(levels.max_rep) } else { 0 };
    let bits_def = if levels.def.is_some() { bit_width(levels.max_def) } else { 0 };
    let cw_bytes = match bits_rep + bits_def {
        0 => 0,
        1..=8 => 1,
        9..=16 => 2,
        _ => 4,
    };
    // Per-value bytes and the description.
    let n = values.len();
    // Fixed-width rows without levels or item validity: buffer 0 is just
    // the values back to back, so the shredded buffer is used as it is.
    let contiguous = cw_bytes == 0
        && levels.rep.is_none()
        && levels.def.is_none()
        && match &values {
            Values::Fixed { .. } => true,
            Values::Fsl { valid, .. } => valid.iter().all(Option::is_none),
            _ => false,
        };
    let (encoded, encoding, details, variable): (Vec<Vec<u8>>, pb::CompressiveEncoding, Details, bool) = match &values {
        Values::Variable { offsets, data } if packed.is_some() => {
            use pb::variable_packed_struct::{field_encoding::Layout, FieldEncoding};
            let fields = packed
                .unwrap_or_default()
                .iter()
                .map(|k| match k {
                    PackedField::Fixed(w) => FieldEncoding { value: Some(flat(8 * *w as u64)), layout: Some(Layout::BitsPerValue(8 * *w as u64)) },
                    PackedField::Variable(w) => {
                        FieldEncoding { value: Some(choose::variable(8 * *w as u64)), layout: Some(Layout::BitsPerLength(8 * *w as u64)) }
                    }
                })
                .collect();
            let enc: Vec<Vec<u8>> = offsets.windows(2).map(|w| data[w[0] as usize..w[1] as usize].to_vec()).collect();
            (enc, choose::enc(Enc::VariablePackedStruct(pb::VariablePackedStruct { fields })), Details::BitsPerOffset(ow), true)
        }
        Values::Variable { offsets, data } => {
            let item = |i: usize| &data[offsets[i] as usize..offsets[i + 1] as usize];
            let max_len = (0..n).map(|i| item(i).len()).max().unwrap_or(0);
            let per_value_general = opts.general().is_some() || max_len > 32 * 1024;
            let none = opts.compression.as_deref() == Some("none");
            if !none && per_value_general && data.len() >= fsst::MIN_INPUT_BYTES {
                let scheme = opts.general().unwrap_or(general::CompressionScheme::Zstd);
                let level = if opts.general().is_some() { opts.level.or(Some(0)) } else { Some(0) };
                let enc: Vec<Vec<u8>> = (0..n).map(|i| general::compress(scheme, level, item(i))).collect();
                (enc, choose::general_enc(scheme, level, choose::variable(ow as u64)), Details::BitsPerOffset(ow), true)
            } else if !none
                && (opts.compression.as_deref() == Some("fsst") || (max_len >= fsst::MIN_MAX_LENGTH && data.len() >= fsst::MIN_INPUT_BYTES))
            {
                let table = fsst::train(offsets, data)?;
                let (co, cd) = fsst::compress_split(&table, offsets, data)?;
                if cd.len() + fsst::SYMBOL_TABLE_SIZE < data.len() || opts.compression.as_deref() == Some("fsst") {
                    let enc: Vec<Vec<u8>> = (0..n).map(|i| cd[co[i] as usize..co[i + 1] as usize].to_vec()).collect();
                    let e = choose::enc(Enc::Fsst(Box::new(pb::Fsst {
                        symbol_table: table.to_bytes(),
                        values: Some(Box::new(choose::variable(ow as u64))),
                    })));
                    (enc, e, Details::BitsPerOffset(ow), true)
                } else {
                    ((0..n).map(|i| item(i).to_vec()).collect(), choose::variable(ow as u64), Details::BitsPerOffset(ow), true)
                }
            } else {
                ((0..n).map(|i| item(i).to_vec()).collect(), choose::variable(ow as u64), Details::BitsPerOffset(ow), true)
            }
        }
        Values::Fixed { bytes, data } => {
            let enc = if contiguous { Vec::new() } else { data.chunks_exact(*bytes).map(|c| c.to_vec()).collect() };
            (enc, flat(8 * *bytes as u64), Details::BitsPerValue(8 * *bytes as u32), false)
        }
        Values::Fsl { dims, item_bytes, items, valid } => {
            // Per row: each layer's validity bits (outermost first, whole
            // bytes), then the items.
            let dim: usize = dims.iter().product();
            let row = dim * item_bytes;
            let cums: Vec<usize> = dims
                .iter()
                .scan(1, |c, d| {
                    *c *= d;
                    Some(*c)
                })
                .collect();
            let vbytes: usize = valid.iter().zip(&cums).filter(|(v, _)| v.is_some()).map(|(_, c)| c.div_ceil(8)).sum();
            let enc = (0..if contiguous { 0 } else { n })
                .map(|i| {
                    let mut v = Vec::with_capacity(row + vbytes);
                    for (iv, cum) in valid.iter().zip(&cums) {
                        if let Some(iv) = iv {
                            v.extend(pack_bools(&iv[i * cum..(i + 1) * cum]));
                        }
                    }
                    v.extend_from_slice(&items[i * row..(i + 1) * row]);
                    v
                })
                .collect();
            let mut e = flat(8 * *item_bytes as u64);
            for (d, v) in dims.iter().zip(valid).rev() {
                e = choose::enc(Enc::FixedSizeList(Box::new(pb::FixedSizeList {
                    items_per_value: *d as u64,
                    has_validity: v.is_some(),
                    values: Some(Box::new(e)),
                })));
            }
            (enc, e, Details::BitsPerValue(8 * (row + vbytes) as u32), false)
        }
        Values::Bool(_) | Values::Null(_) => return Err(Error::invalid_input("booleans and nulls are never full-zip encoded")),
    };
    let entries = levels.num_entries().unwrap_or(n);
    if contiguous && entries == n {
        let zipped = match values {
            Values::Fixed { data, .. } => data,
            Values::Fsl { items, .. } => items,
            _ => unreachable!("contiguous values are fixed-width"),
        };
        return Ok((vec![zipped], layout(levels, (bits_rep, bits_def), details, entries, n, encoding)));
    }
    let mut zipped = Vec::with_capacity(encoded.iter().map(|v| v.len() + 8).sum::<usize>() + entries * cw_bytes);
    let mut row_starts: Vec<u64> = Vec::with_capacity(num_rows + 1);
    let mut vi = 0usize;
    for e in 0..entries {
        let r = levels.rep.as_ref().map_or(0, |r| r[e]);
        let d = levels.def.as_ref().map_or(0, |d| d[e]);
        let starts_row = levels.rep.is_none() || r == levels.max_rep;
        if starts_row {
            row_starts.push(zipped.len() as u64);
        }
        if cw_bytes > 0 {
            push_uint(&mut zipped, ((r as u64) << bits_def) | d as u64, cw_bytes);
        }
        if d >= levels.first_invisible {
            continue;
        }
        let v = &encoded[vi];
        vi += 1;
        if variable {
            if d == 0 {
                push_uint(&mut zipped, v.len() as u64, ow as usize / 8);
                zipped.extend_from_slice(v);
            }
        } else {
            // Null fixed-width items are already zero-filled.
            zipped.extend_from_slice(v);
        }
    }
    row_starts.push(zipped.len() as u64);
    let mut buffers = vec![zipped];
    if levels.rep.is_some() || variable {
        let total = *row_starts.last().unwrap();
        let w = if total <= u8::MAX as u64 {
            1
        } else if total <= u16::MAX as u64 {
            2
        } else if total <= u32::MAX as u64 {
            4
        } else {
            8
        };
        let mut idx = Vec::with_capacity(row_starts.len() * w);
        for s in &row_starts {
            push_uint(&mut idx, *s, w);
        }
        buffers.push(idx);
    }
    Ok((buffers, layout(levels, (bits_rep, bits_def), details, entries, n, encoding)))
}

/// The `FullZipLayout` of a page of `entries` level entries, `visible` of
/// them values.
pub fn layout(
    levels: &PageLevels,
    (bits_rep, bits_def): (u32, u32),
    details: Details,
    entries: usize,
    visible: usize,
    encoding: pb::CompressiveEncoding,
) -> pb::PageLayout {
    let layout = pb::FullZipLayout {
        bits_rep,
        bits_def,
        details: Some(details),
        num_items: entries as u32,
        num_visible_items: visible as u32,
        value_compression: Some(encoding),
        layers: levels.layers.iter().map(|l| *l as i32).collect(),
    };
    pb::PageLayout { layout: Some(pb::page_layout::Layout::FullZipLayout(layout)) }
}
