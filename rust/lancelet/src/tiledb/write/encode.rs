//! The write side of filter pipelines, generic tiles and the schema file.
//!
//! A tile is cut into chunks (at most the pipeline's `max_chunk_size`
//! bytes, whole cells; var-sized data is cut at cell boundaries), each
//! chunk runs the filters first to last over (metadata, data), and the
//! filtered tile is `u64 chunks` then per chunk `u32 original length, u32
//! filtered length, u32 metadata length, metadata, data` — the layouts
//! `filters.rs` documents and reverses. Every filter puts its own header in
//! front of the metadata the earlier filters produced; compressors
//! compress that metadata into their data as one part and the data as
//! another.
//!
//! Generic tiles (schema, fragment metadata pieces, delete conditions) are
//! a header (`u32 version 22, u64 persisted size, u64 tile size, u8 CHAR,
//! u64 cell size 1, u8 no encryption, u32 pipeline size, pipeline`) and
//! the tile filtered with gzip level 1, as TileDB 2.30 writes them.

use std::io::Write;

use md5::Digest;

use super::super::codecs::write_int;
use super::super::datatype::Datatype;
use super::super::filters::{Filter, FilterPipeline};
use super::super::schema::{ArraySchema, Layout};
use crate::encoding::bss;
use crate::error::{Error, Result};

/// The format version lancelet writes.
pub const WRITE_VERSION: u32 = 22;
/// Largest chunk TileDB's pipelines make.
pub const MAX_CHUNK_SIZE: u32 = 65536;

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// TileDB's filter type id.
fn filter_id(f: &Filter) -> u8 {
    match f {
        Filter::Gzip { .. } => 1,
        Filter::Zstd { .. } => 2,
        Filter::Lz4 { .. } => 3,
        Filter::Rle { .. } => 4,
        Filter::Bzip2 { .. } => 5,
        Filter::DoubleDelta { .. } => 6,
        Filter::BitWidthReduction { .. } => 7,
        Filter::BitShuffle => 8,
        Filter::ByteShuffle => 9,
        Filter::PositiveDelta { .. } => 10,
        Filter::ChecksumMd5 => 12,
        Filter::ChecksumSha256 => 13,
        Filter::Dictionary { .. } => 14,
        Filter::FloatScale { .. } => 15,
        Filter::Xor => 16,
        Filter::Delta { .. } => 19,
        Filter::Unknown { id, .. } => *id,
    }
}

/// The Compressor enum compressors store in their options (not the filter id).
fn compressor_code(f: &Filter) -> u8 {
    match f {
        Filter::Gzip { .. } => 1,
        Filter::Zstd { .. } => 2,
        Filter::Lz4 { .. } => 3,
        Filter::Rle { .. } => 4,
        Filter::Bzip2 { .. } => 5,
        Filter::DoubleDelta { .. } => 6,
        Filter::Dictionary { .. } => 7,
        Filter::Delta { .. } => 8,
        _ => 0,
    }
}

/// Serialize a filter pipeline (`u32 max chunk, u32 n, per filter u8 id,
/// u32 options length, options`).
pub fn serialize_pipeline(p: &FilterPipeline, out: &mut Vec<u8>) {
    put_u32(out, p.max_chunk_size);
    put_u32(out, p.filters.len() as u32);
    for f in &p.filters {
        out.push(filter_id(f));
        let mut o = Vec::new();
        match f {
            Filter::Gzip { level }
            | Filter::Zstd { level }
            | Filter::Lz4 { level }
            | Filter::Rle { level }
            | Filter::Bzip2 { level }
            | Filter::Dictionary { level } => {
                o.push(compressor_code(f));
                o.extend_from_slice(&level.to_le_bytes());
            }
            Filter::Delta { level, reinterpret } | Filter::DoubleDelta { level, reinterpret } => {
                o.push(compressor_code(f));
                o.extend_from_slice(&level.to_le_bytes());
                // 17 is ANY: no reinterpretation.
                o.push(reinterpret.map_or(17, |t| t.code()));
            }
            Filter::BitWidthReduction { window } | Filter::PositiveDelta { window } => put_u32(&mut o, *window),
            Filter::FloatScale { factor, offset, bytewidth } => {
                o.extend_from_slice(&factor.to_le_bytes());
                o.extend_from_slice(&offset.to_le_bytes());
                put_u64(&mut o, *bytewidth);
            }
            _ => {}
        }
        put_u32(out, o.len() as u32);
        out.extend_from_slice(&o);
    }
}

fn layout_code(l: Layout) -> u8 {
    match l {
        Layout::RowMajor => 0,
        Layout::ColMajor => 1,
        Layout::Global => 2,
        Layout::Unordered => 3,
        Layout::Hilbert => 4,
    }
}

/// Serialize an array schema (the generic tile's content; see `schema.rs`
/// for the layout). Attributes get order 0 and no enumeration; the schema
/// has no dimension labels or enumerations and an empty current domain.
pub fn serialize_schema(s: &ArraySchema) -> Vec<u8> {
    let mut out = Vec::new();
    put_u32(&mut out, s.version);
    out.push(s.allows_duplicates as u8);
    out.push(s.sparse as u8);
    out.push(layout_code(s.tile_order));
    out.push(layout_code(s.cell_order));
    put_u64(&mut out, s.capacity);
    serialize_pipeline(&s.coords_filters, &mut out);
    serialize_pipeline(&s.offsets_filters, &mut out);
    serialize_pipeline(&s.validity_filters, &mut out);
    put_u32(&mut out, s.dims.len() as u32);
    for d in &s.dims {
        put_u32(&mut out, d.name.len() as u32);
        out.extend_from_slice(d.name.as_bytes());
        out.push(d.datatype.code());
        put_u32(&mut out, d.cell_val_num);
        serialize_pipeline(&d.filters, &mut out);
        match &d.domain {
            Some((lo, hi)) => {
                put_u64(&mut out, (lo.len() + hi.len()) as u64);
                out.extend_from_slice(lo);
                out.extend_from_slice(hi);
            }
            None => put_u64(&mut out, 0),
        }
        match &d.tile_extent {
            Some(t) => {
                out.push(0);
                out.extend_from_slice(t);
            }
            None => out.push(1),
        }
    }
    put_u32(&mut out, s.attrs.len() as u32);
    for a in &s.attrs {
        put_u32(&mut out, a.name.len() as u32);
        out.extend_from_slice(a.name.as_bytes());
        out.push(a.datatype.code());
        put_u32(&mut out, a.cell_val_num);
        serialize_pipeline(&a.filters, &mut out);
        put_u64(&mut out, a.fill.len() as u64);
        out.extend_from_slice(&a.fill);
        out.push(a.nullable as u8);
        out.push(a.fill_valid as u8);
        out.push(0); // attribute order: unordered
        put_u32(&mut out, 0); // no enumeration
    }
    put_u32(&mut out, 0); // dimension labels
    put_u32(&mut out, 0); // enumerations
    put_u32(&mut out, 0); // current domain version
    out.push(1); // current domain empty
    out
}

/// What the pipeline needs to know about the tile it filters.
#[derive(Debug, Clone, Copy)]
pub struct EncodeKind {
    pub datatype: Datatype,
    /// Bytes per cell (chunks hold whole cells; RLE runs are whole cells).
    pub cell_size: usize,
}

/// Whether a var-sized column of type `t` with pipeline `p` has its
/// offsets encoded with the strings (RLE or dictionary on UTF-8/ASCII):
/// then the tile is one chunk and the offsets file holds empty tiles.
pub fn strings_carry_offsets(p: &FilterPipeline, t: Datatype) -> bool {
    matches!(t, Datatype::StringAscii | Datatype::StringUtf8) && p.encodes_string_offsets()
}

/// Filter one tile. `cell_starts` (var-sized data) are the byte offsets of
/// its cells, so chunks end on cell boundaries; `field` names the column
/// in errors.
pub fn filter_tile(p: &FilterPipeline, data: &[u8], kind: EncodeKind, cell_starts: Option<&[u64]>, field: &str) -> Result<Vec<u8>> {
    let max = p.max_chunk_size.max(1) as usize;
    let mut bounds = Vec::new();
    let whole = cell_starts.is_some() && strings_carry_offsets(p, kind.datatype);
    match cell_starts {
        Some(_) if whole => bounds.push(data.len()),
        Some(starts) => {
            // Greedy: a chunk takes whole cells while it stays within `max`
            // bytes (a single larger cell makes a chunk of its own).
            let mut chunk_start = 0usize;
            let mut prev_end = 0usize;
            for end in starts.iter().skip(1).map(|&s| s as usize).chain(std::iter::once(data.len())) {
                if end - chunk_start > max && prev_end > chunk_start {
                    bounds.push(prev_end);
                    chunk_start = prev_end;
                }
                prev_end = end;
            }
            bounds.push(data.len());
        }
        None => {
            let cs = kind.cell_size.max(1);
            let step = if cs >= max { cs } else { max / cs * cs };
            let mut e = 0usize;
            while e < data.len() {
                e = (e + step).min(data.len());
                bounds.push(e);
            }
        }
    }
    if data.is_empty() {
        // An empty tile (var cells all empty) still has one empty chunk.
        bounds = vec![0];
    }
    let mut out = Vec::with_capacity(data.len() + 64);
    put_u64(&mut out, bounds.len() as u64);
    let mut start = 0usize;
    for end in bounds {
        let chunk = &data[start..end];
        let offsets = if whole { cell_starts } else { None };
        let (md, filtered) = filter_chunk(p, chunk, kind, offsets).map_err(|e| e.context(format!("column {field}")))?;
        put_u32(&mut out, chunk.len() as u32);
        put_u32(&mut out, filtered.len() as u32);
        put_u32(&mut out, md.len() as u32);
        out.extend_from_slice(&md);
        out.extend_from_slice(&filtered);
        start = end;
    }
    Ok(out)
}

fn filter_chunk(p: &FilterPipeline, chunk: &[u8], kind: EncodeKind, offsets: Option<&[u64]>) -> Result<(Vec<u8>, Vec<u8>)> {
    let mut md = Vec::new();
    let mut data = chunk.to_vec();
    let mut ty = kind.datatype;
    let mut offsets = offsets;
    for f in &p.filters {
        let string_stage = matches!(ty, Datatype::StringAscii | Datatype::StringUtf8) && matches!(f, Filter::Rle { .. } | Filter::Dictionary { .. });
        if let (true, Some(o)) = (string_stage, offsets) {
            // The strings and their offsets are encoded together, once.
            let (m, d) = if matches!(f, Filter::Rle { .. }) {
                super::super::string_codecs::rle_forward(&data, o, &md)?
            } else {
                super::super::string_codecs::dict_forward(&data, o, &md)?
            };
            md = m;
            data = d;
            offsets = None;
            continue;
        }
        let (m, d, t) = forward(f, md, data, ty, kind).map_err(|e| e.context(f.name()))?;
        md = m;
        data = d;
        ty = t;
    }
    Ok((md, data))
}

/// Run one filter forward; returns (metadata, data, output datatype).
fn forward(f: &Filter, md: Vec<u8>, data: Vec<u8>, ty: Datatype, kind: EncodeKind) -> Result<(Vec<u8>, Vec<u8>, Datatype)> {
    match f {
        Filter::Gzip { .. }
        | Filter::Zstd { .. }
        | Filter::Lz4 { .. }
        | Filter::Bzip2 { .. }
        | Filter::Rle { .. }
        | Filter::Delta { .. }
        | Filter::DoubleDelta { .. } => {
            let mut header = Vec::new();
            let mut body = Vec::new();
            put_u32(&mut header, (!md.is_empty()) as u32);
            put_u32(&mut header, 1);
            let parts: Vec<&Vec<u8>> = if md.is_empty() { vec![&data] } else { vec![&md, &data] };
            for part in parts {
                let c = compress(f, part, ty, kind.cell_size)?;
                put_u32(&mut header, part.len() as u32);
                put_u32(&mut header, c.len() as u32);
                body.extend_from_slice(&c);
            }
            // Delta and double delta hand their reinterpreted type on.
            let out_ty = match f {
                Filter::Delta { reinterpret: Some(t), .. } | Filter::DoubleDelta { reinterpret: Some(t), .. } => *t,
                _ => ty,
            };
            Ok((header, body, out_ty))
        }
        Filter::ByteShuffle | Filter::Xor => {
            let out = if matches!(f, Filter::ByteShuffle) {
                bss::encode_keep_tail(ty.size(), &data)
            } else {
                super::codecs_enc::xor_encode(&data, ty.size())?
            };
            Ok((part_header(&out, md), out, ty))
        }
        Filter::FloatScale { factor, offset, bytewidth } => {
            if !matches!(ty, Datatype::Float32 | Datatype::Float64) {
                return Ok((part_header(&data, md), data, ty));
            }
            let out = super::codecs_enc::float_scale(&data, ty.size(), *bytewidth as usize, *factor, *offset)?;
            let out_ty = match bytewidth {
                1 => Datatype::Int8,
                2 => Datatype::Int16,
                4 => Datatype::Int32,
                _ => Datatype::Int64,
            };
            Ok((part_header(&out, md), out, out_ty))
        }
        Filter::ChecksumMd5 | Filter::ChecksumSha256 => {
            let mut header = Vec::new();
            put_u32(&mut header, (!md.is_empty()) as u32);
            put_u32(&mut header, 1);
            let parts: Vec<&Vec<u8>> = if md.is_empty() { vec![&data] } else { vec![&md, &data] };
            for part in parts {
                put_u64(&mut header, part.len() as u64);
                if matches!(f, Filter::ChecksumMd5) {
                    header.extend_from_slice(&md5::Md5::digest(part));
                } else {
                    header.extend_from_slice(&sha2::Sha256::digest(part));
                }
            }
            header.extend_from_slice(&md);
            Ok((header, data, ty))
        }
        Filter::BitWidthReduction { window } => {
            if !ty.is_integer() || ty.size() == 1 {
                return Ok((md, data, ty));
            }
            let (mut header, out) = super::codecs_enc::bit_width_reduce(&data, ty.size(), ty.is_signed(), *window as usize);
            header.extend_from_slice(&md);
            Ok((header, out, ty))
        }
        Filter::PositiveDelta { window } => {
            if !ty.is_integer() {
                return Ok((md, data, ty));
            }
            let (mut header, out) = super::codecs_enc::positive_delta(&data, ty.size(), ty.is_signed(), *window as usize)?;
            header.extend_from_slice(&md);
            Ok((header, out, ty))
        }
        Filter::BitShuffle => {
            let (m, d) = super::super::bitshuffle::forward(&data, ty.size(), &md);
            Ok((m, d, ty))
        }
        Filter::Dictionary { .. } => Err(Error::invalid_input("DictionaryFilter only applies to var-sized strings (as in TileDB)")),
        Filter::Unknown { .. } => Err(Error::unsupported(format!("writing with {}", f.name()))),
    }
}

fn part_header(data: &[u8], md: Vec<u8>) -> Vec<u8> {
    let mut h = Vec::with_capacity(8 + md.len());
    put_u32(&mut h, 1);
    put_u32(&mut h, data.len() as u32);
    h.extend_from_slice(&md);
    h
}

fn compress(f: &Filter, part: &[u8], ty: Datatype, cell_size: usize) -> Result<Vec<u8>> {
    let io = |e: std::io::Error| Error::Internal { what: format!("{}: {e}", f.name()) };
    Ok(match f {
        Filter::Gzip { level } => {
            let lvl = if (0..=9).contains(level) { *level as u32 } else { 6 };
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(lvl));
            e.write_all(part).map_err(io)?;
            e.finish().map_err(io)?
        }
        Filter::Zstd { level } => zstd::bulk::compress(part, *level).map_err(io)?,
        Filter::Lz4 { .. } => lz4_flex::block::compress(part),
        Filter::Bzip2 { level } => {
            let lvl = if (1..=9).contains(level) { *level as u32 } else { 9 };
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(lvl));
            e.write_all(part).map_err(io)?;
            e.finish().map_err(io)?
        }
        Filter::Rle { .. } => super::codecs_enc::rle_encode(part, cell_size.max(1))?,
        Filter::Delta { reinterpret, .. } => {
            let t = reinterpret.unwrap_or(ty);
            super::codecs_enc::delta_encode(part, t.size())?
        }
        Filter::DoubleDelta { reinterpret, .. } => {
            let t = reinterpret.unwrap_or(ty);
            if matches!(t, Datatype::Float32 | Datatype::Float64) {
                return Err(Error::unsupported("DoubleDeltaFilter on float data (give reinterp_dtype)"));
            }
            super::codecs_enc::double_delta_encode(part, t.size(), t.is_signed())?
        }
        _ => unreachable!("only compressors reach compress"),
    })
}

/// A generic tile: header plus `bytes` filtered with gzip level 1.
pub fn generic_tile(bytes: &[u8]) -> Vec<u8> {
    let pipeline = FilterPipeline { max_chunk_size: MAX_CHUNK_SIZE, filters: vec![Filter::Gzip { level: 1 }] };
    let kind = EncodeKind { datatype: Datatype::Char, cell_size: 1 };
    let filtered = filter_tile(&pipeline, bytes, kind, None, "generic tile").expect("gzip of bytes in memory cannot fail");
    let mut p = Vec::new();
    serialize_pipeline(&pipeline, &mut p);
    let mut out = Vec::with_capacity(filtered.len() + 64);
    put_u32(&mut out, WRITE_VERSION);
    put_u64(&mut out, filtered.len() as u64);
    put_u64(&mut out, bytes.len() as u64);
    out.push(Datatype::Char.code());
    put_u64(&mut out, 1);
    out.push(0);
    put_u32(&mut out, p.len() as u32);
    out.extend_from_slice(&p);
    out.extend_from_slice(&filtered);
    out
}

/// Append a little-endian integer of `width` bytes (re-exported for the
/// other writer modules).
pub fn put_int(out: &mut Vec<u8>, v: i64, width: usize) {
    write_int(out, v, width)
}
