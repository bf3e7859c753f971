//! Mini-block pages (digest §10.3).
//!
//! Page buffers: `[0]` one metadata word per chunk (u16 in 2.1, u32 with
//! `has_large_chunk` in 2.2), `[1]` the chunks back to back, `[2]` the
//! dictionary (if any), then the repetition index (if the column has lists).
//!
//! A metadata word is `((chunk_bytes / 8 − 1) << 4) | log2(values)`, with
//! the low four bits 0 for the last chunk (its count is what remains of
//! `num_items`). Each chunk starts 8-byte aligned:
//!
//! ```text
//! u16 num_levels | u16 rep_bytes? | u16 def_bytes? | uN size × num_buffers
//! 0xFE pad to 8 | rep | pad | def | pad | value buffer 0 | pad | …
//! ```
//!
//! Levels are split so a chunk holds every level entry up to and including
//! the entry of its last value; entries after the page's last value go to
//! the last chunk. Each chunk's levels are bit-packed out of line with one
//! width for the whole page.
//!
//! The repetition index holds two u64 per chunk: rows that finish in the
//! chunk and the level entries left over after the chunk's last row start
//! (folded into a finished row when the next chunk starts a row; the last
//! chunk counts the final row and has no leftovers).

use crate::encoding::bitpack;
use crate::error::{Error, Result};
use crate::file::write::choose::{self, flat, Allowed, Chunked, FieldOptions};
use crate::file::write::shred::{PageLevels, Values};
use crate::proto::encodings21 as pb;
use crate::proto::encodings21::compressive_encoding::Compression as Enc;

const PAD: u8 = 0xFE;
const MAX_LEVELS_PER_CHUNK: usize = u16::MAX as usize;

fn pad8(buf: &mut Vec<u8>) {
    while buf.len() % 8 != 0 {
        buf.push(PAD);
    }
}

fn bit_width(x: u16) -> u32 {
    16 - x.leading_zeros()
}

/// `OutOfLineBitpacking{16 → w}`.
pub fn level_encoding(w: u32) -> pb::CompressiveEncoding {
    choose::enc(Enc::OutOfLineBitpacking(Box::new(pb::OutOfLineBitpacking {
        uncompressed_bits_per_value: 16,
        values: Some(Box::new(flat(w as u64))),
    })))
}

/// Pack levels at width `w`.
pub fn pack_levels(w: u32, levels: &[u16]) -> Vec<u8> {
    bitpack::pack_out_of_line_with_width::<u16>(w, levels)
}

/// Level-entry ranges of each chunk.
fn level_ranges(levels: &PageLevels, chunks: &Chunked, total_entries: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(chunks.chunks.len());
    let mut pos = 0usize;
    let def = levels.def.as_deref();
    for (ci, c) in chunks.chunks.iter().enumerate() {
        let start = pos;
        if ci + 1 == chunks.chunks.len() {
            pos = total_entries;
        } else if let (Some(d), true) = (def, levels.max_rep > 0) {
            let mut taken = 0;
            while taken < c.n {
                if d[pos] < levels.first_invisible {
                    taken += 1;
                }
                pos += 1;
            }
        } else {
            pos += c.n;
        }
        out.push((start, pos));
    }
    out
}

/// Encode a mini-block page. `levels` come from [`PageLevels::finish`];
/// `force_dict` (key bytes) makes Arrow dictionary columns use a dictionary layout.
#[allow(clippy::too_many_arguments)]
pub fn encode(
    levels: &PageLevels,
    values: &Values,
    wide: bool,
    packed: Option<&[u64]>,
    opts: &FieldOptions,
    allowed: Allowed,
    large_chunks: bool,
    force_dict: Option<(usize, u64)>,
) -> Result<(Vec<Vec<u8>>, pb::PageLayout)> {
    let valid = levels.visible_validity();
    let total_entries = levels.num_entries().unwrap_or(values.len());
    let mut cap = 4096usize;
    let (chunked, ranges) = loop {
        let chunked = choose::choose(values, valid.as_deref(), wide, packed, opts, allowed, cap, force_dict)?;
        let ranges = level_ranges(levels, &chunked, total_entries);
        let has_levels = levels.rep.is_some() || levels.def.is_some();
        if !has_levels || ranges.iter().all(|(s, e)| e - s <= MAX_LEVELS_PER_CHUNK) {
            break (chunked, ranges);
        }
        if cap == 1 {
            return Err(Error::unsupported("more than 65535 rep/def levels around a single value in one mini-block chunk"));
        }
        cap /= 2;
    };
    let rep_w = levels.rep.as_ref().map(|_| bit_width(levels.max_rep));
    let def_w = levels.def.as_ref().map(|_| bit_width(levels.max_def));
    let mut meta = Vec::with_capacity(chunked.chunks.len() * 4);
    // Reserved up front: grown by doubling, the chunks were copied twice more.
    let level_bytes = 2 * (levels.rep.is_some() as usize + levels.def.is_some() as usize) * total_entries;
    let mut data =
        Vec::with_capacity(chunked.chunks.iter().map(|c| 16 + c.bufs.iter().map(|b| b.len() + 12).sum::<usize>()).sum::<usize>() + level_bytes);
    let mut rep_index: Vec<u64> = Vec::new();
    let last = chunked.chunks.len().saturating_sub(1);
    for (ci, (chunk, &(ls, le))) in chunked.chunks.iter().zip(&ranges).enumerate() {
        let start = data.len();
        let rep_bytes = match (&levels.rep, rep_w) {
            (Some(r), Some(w)) => Some(pack_levels(w, &r[ls..le])),
            _ => None,
        };
        let def_bytes = match (&levels.def, def_w) {
            (Some(d), Some(w)) => Some(pack_levels(w, &d[ls..le])),
            _ => None,
        };
        let num_levels = if rep_bytes.is_some() || def_bytes.is_some() { le - ls } else { 0 };
        data.extend_from_slice(&(num_levels as u16).to_le_bytes());
        for b in [&rep_bytes, &def_bytes].into_iter().flatten() {
            let len = u16::try_from(b.len()).map_err(|_| Error::unsupported("rep/def levels of a chunk exceed 64 KiB"))?;
            data.extend_from_slice(&len.to_le_bytes());
        }
        for b in &chunk.bufs {
            if large_chunks {
                data.extend_from_slice(&(b.len() as u32).to_le_bytes());
            } else {
                let len =
                    u16::try_from(b.len()).map_err(|_| Error::invalid_input("a 2.1 mini-block value buffer exceeds 64 KiB; use full-zip or 2.2"))?;
                data.extend_from_slice(&len.to_le_bytes());
            }
        }
        pad8(&mut data);
        for b in [&rep_bytes, &def_bytes].into_iter().flatten() {
            data.extend_from_slice(b);
            pad8(&mut data);
        }
        for b in &chunk.bufs {
            data.extend_from_slice(b);
            pad8(&mut data);
        }
        let bytes = data.len() - start;
        let log = if ci == last { 0 } else { chunk.n.trailing_zeros() };
        debug_assert!(ci == last || chunk.n.is_power_of_two());
        let word = (((bytes / 8 - 1) as u64) << 4) | log as u64;
        if large_chunks {
            let w = u32::try_from(word).map_err(|_| Error::unsupported("mini-block chunk too large"))?;
            meta.extend_from_slice(&w.to_le_bytes());
        } else {
            let w = u16::try_from(word).map_err(|_| Error::invalid_input("a 2.1 mini-block chunk exceeds 32 KiB; use full-zip or 2.2"))?;
            meta.extend_from_slice(&w.to_le_bytes());
        }
        if let Some(r) = &levels.rep {
            let reps = &r[ls..le];
            let max_rep = levels.max_rep;
            let mut rows = reps.iter().skip(1).filter(|&&v| v == max_rep).count() as u64;
            let leftovers = if ci < last { reps.iter().rev().position(|&v| v == max_rep).map(|p| p + 1).unwrap_or(reps.len()) as u64 } else { 0 };
            if ci != 0 && reps.first() == Some(&max_rep) {
                let n = rep_index.len();
                if rep_index[n - 1] != 0 {
                    rep_index[n - 2] += 1;
                    rep_index[n - 1] = 0;
                }
            }
            if ci == last {
                rows += 1;
            }
            rep_index.push(rows);
            rep_index.push(leftovers);
        }
    }
    let mut buffers = vec![meta, data];
    let (dictionary, num_dictionary_items) = match chunked.dictionary {
        Some((e, buf, n)) => {
            buffers.push(buf);
            (Some(e), n)
        }
        None => (None, 0),
    };
    if levels.rep.is_some() {
        buffers.push(rep_index.iter().flat_map(|v| v.to_le_bytes()).collect());
    }
    let layout = pb::MiniBlockLayout {
        rep_compression: rep_w.map(level_encoding),
        def_compression: def_w.map(level_encoding),
        value_compression: Some(chunked.encoding),
        dictionary,
        num_dictionary_items,
        layers: levels.layers.iter().map(|l| *l as i32).collect(),
        num_buffers: chunked.num_buffers as u64,
        repetition_index_depth: u32::from(levels.rep.is_some()),
        num_items: values.len() as u64,
        has_large_chunk: large_chunks,
    };
    Ok((buffers, pb::PageLayout { layout: Some(pb::page_layout::Layout::MiniBlockLayout(layout)) }))
}
