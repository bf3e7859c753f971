//! Filter pipelines: how they are serialized in schemas and generic tile
//! headers, and how a filtered tile is turned back into its bytes.
//!
//! Serialized pipeline: `u32 max_chunk_size, u32 n, n × (u8 filter type,
//! u32 options length, options)`. Options: compressors (gzip 1, zstd 2,
//! lz4 3, rle 4, bzip2 5, dictionary 14) store `u8 compressor enum, i32
//! level` (the compressor enum differs from the filter id: dictionary is 7,
//! delta 8), delta (19) and double delta (6) add `u8 reinterpret
//! datatype`; bit-width reduction (7) and positive delta (10) a `u32 max
//! window`; float scale (15) `f64 scale, f64 offset, u64 byte width`.
//!
//! A filtered tile is `u64 chunk count`, then per chunk `u32 original
//! length, u32 filtered length, u32 metadata length, metadata, filtered
//! data`. Reading runs the filters last to first over (metadata, data);
//! each filter takes its own header from the front of the metadata and
//! passes the rest on (compressors decompress the earlier filters'
//! metadata back out of the data). Headers:
//! - compressors: `u32 metadata parts, u32 data parts`, then per part
//!   `u32 original, u32 compressed` lengths; the data holds the compressed
//!   metadata parts, then the compressed data parts;
//! - byte shuffle, XOR, float scale: `u32 parts, u32 length per part`;
//! - checksums: `u32 metadata sums, u32 data sums`, per sum `u64 bytes
//!   covered, digest (16 MD5, 32 SHA-256)`;
//! - bit-width reduction: `u32 original length, u32 windows`, per window
//!   `value offset (tile type), u8 bits, u32 original window bytes`;
//! - positive delta: `u32 windows`, per window `offset, u32 bytes`.

use std::io::Read;

use md5::Digest;

use super::cursor::Cursor;
use super::datatype::Datatype;
use super::{bitshuffle, codecs, string_codecs};
use crate::encoding::bss;
use crate::error::{Error, Result};

/// One filter with the options it was created with.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    Gzip {
        level: i32,
    },
    Zstd {
        level: i32,
    },
    Lz4 {
        level: i32,
    },
    Rle {
        level: i32,
    },
    Bzip2 {
        level: i32,
    },
    Dictionary {
        level: i32,
    },
    Delta {
        level: i32,
        reinterpret: Option<Datatype>,
    },
    DoubleDelta {
        level: i32,
        reinterpret: Option<Datatype>,
    },
    BitWidthReduction {
        window: u32,
    },
    PositiveDelta {
        window: u32,
    },
    BitShuffle,
    ByteShuffle,
    ChecksumMd5,
    ChecksumSha256,
    FloatScale {
        factor: f64,
        offset: f64,
        bytewidth: u64,
    },
    Xor,
    /// A filter lancelet cannot reverse (WebP, deprecated ids): reading a
    /// tile it filtered is `Unsupported` naming it.
    Unknown {
        id: u8,
        name: &'static str,
    },
}

impl Filter {
    /// tiledb-py's class name for the filter.
    pub fn name(&self) -> &'static str {
        match self {
            Filter::Gzip { .. } => "GzipFilter",
            Filter::Zstd { .. } => "ZstdFilter",
            Filter::Lz4 { .. } => "LZ4Filter",
            Filter::Rle { .. } => "RleFilter",
            Filter::Bzip2 { .. } => "Bzip2Filter",
            Filter::Dictionary { .. } => "DictionaryFilter",
            Filter::Delta { .. } => "DeltaFilter",
            Filter::DoubleDelta { .. } => "DoubleDeltaFilter",
            Filter::BitWidthReduction { .. } => "BitWidthReductionFilter",
            Filter::PositiveDelta { .. } => "PositiveDeltaFilter",
            Filter::BitShuffle => "BitShuffleFilter",
            Filter::ByteShuffle => "ByteShuffleFilter",
            Filter::ChecksumMd5 => "ChecksumMD5Filter",
            Filter::ChecksumSha256 => "ChecksumSHA256Filter",
            Filter::FloatScale { .. } => "FloatScaleFilter",
            Filter::Xor => "XORFilter",
            Filter::Unknown { name, .. } => name,
        }
    }

    fn parse(id: u8, opts: &[u8]) -> Result<Self> {
        let mut c = Cursor::new(opts);
        let level = |c: &mut Cursor| -> Result<i32> {
            c.u8("compressor type")?;
            c.i32("compression level")
        };
        let reinterpret = |c: &mut Cursor| -> Result<Option<Datatype>> {
            if c.remaining() == 0 {
                return Ok(None);
            }
            let code = c.u8("reinterpret datatype")?;
            Ok(if code == 17 { None } else { Some(Datatype::from_code(code)?) })
        };
        Ok(match id {
            0 => return Err(Error::corrupt("filter type 0 (none) in a stored pipeline")),
            1 => Filter::Gzip { level: level(&mut c)? },
            2 => Filter::Zstd { level: level(&mut c)? },
            3 => Filter::Lz4 { level: level(&mut c)? },
            4 => Filter::Rle { level: level(&mut c)? },
            5 => Filter::Bzip2 { level: level(&mut c)? },
            6 => Filter::DoubleDelta { level: level(&mut c)?, reinterpret: reinterpret(&mut c)? },
            7 => Filter::BitWidthReduction { window: c.u32("bit width reduction window")? },
            8 => Filter::BitShuffle,
            9 => Filter::ByteShuffle,
            10 => Filter::PositiveDelta { window: c.u32("positive delta window")? },
            12 => Filter::ChecksumMd5,
            13 => Filter::ChecksumSha256,
            14 => Filter::Dictionary { level: level(&mut c)? },
            15 => Filter::FloatScale {
                factor: c.f64("float scale factor")?,
                offset: c.f64("float scale offset")?,
                bytewidth: c.u64("float scale byte width")?,
            },
            16 => Filter::Xor,
            18 => Filter::Unknown { id, name: "WebpFilter" },
            19 => Filter::Delta { level: level(&mut c)?, reinterpret: reinterpret(&mut c)? },
            other => return Err(Error::unsupported(format!("unknown TileDB filter type {other}"))),
        })
    }

    /// The datatype this filter hands to the next one, given its input's.
    fn output_type(&self, input: Datatype) -> Datatype {
        match self {
            Filter::FloatScale { bytewidth, .. } if matches!(input, Datatype::Float32 | Datatype::Float64) => match bytewidth {
                1 => Datatype::Int8,
                2 => Datatype::Int16,
                4 => Datatype::Int32,
                _ => Datatype::Int64,
            },
            // TileDB hands the reinterpreted type on to the next filter.
            Filter::Delta { reinterpret: Some(t), .. } | Filter::DoubleDelta { reinterpret: Some(t), .. } => *t,
            _ => input,
        }
    }
}

/// A filter pipeline as stored.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FilterPipeline {
    /// Largest chunk a writer makes.
    pub max_chunk_size: u32,
    /// Filters in the order they are applied on write.
    pub filters: Vec<Filter>,
}

/// What the pipeline needs to know about the tile it reverses.
#[derive(Debug, Clone, Copy)]
pub struct TileKind {
    /// Datatype of the tile's values (offsets are UINT64, validity UINT8).
    pub datatype: Datatype,
    /// Bytes per cell (RLE runs are whole cells).
    pub cell_size: usize,
    /// Format version of the fragment (some filters changed behaviour).
    pub version: u32,
    /// Var-sized string data whose filters keep no offsets.
    pub var_strings: bool,
    /// The most bytes the tile may decode to, known before decoding from
    /// the schema (cells per tile × cell size) or the fragment metadata
    /// (var tile sizes). Chunk headers claiming more are corrupt, so a
    /// header's length never sizes an allocation on its own.
    pub max_len: usize,
}

/// Filtered bytes a decoder may reserve room for per filtered byte before
/// it has decoded anything: claims beyond this grow the buffer as bytes
/// actually come out instead of being trusted up front.
const RESERVE_PER_INPUT_BYTE: usize = 64;

/// Decoded tile length above which [`FilterPipeline::unfilter_wanted`]
/// does not size its output from the headers alone.
const UNVOUCHED_TILE_LEN: usize = 1 << 28;

/// Room to reserve for a stage's output claimed to be `claimed` bytes,
/// produced from `input` filtered bytes.
fn reserve_len(claimed: usize, input: usize) -> usize {
    claimed.min(input.saturating_mul(RESERVE_PER_INPUT_BYTE).max(1 << 16))
}

impl FilterPipeline {
    /// Parse a serialized pipeline from `c`.
    pub fn parse(c: &mut Cursor) -> Result<Self> {
        let max_chunk_size = c.u32("pipeline max chunk size")?;
        let n = c.u32("pipeline filter count")?;
        let mut filters = Vec::new();
        for i in 0..n {
            let id = c.u8("filter type")?;
            let opts = c.take_len_u32("filter options").map_err(|e| e.context(format!("filter {i}")))?;
            filters.push(Filter::parse(id, opts).map_err(|e| e.context(format!("filter {i}")))?);
        }
        Ok(FilterPipeline { max_chunk_size, filters })
    }

    /// Whether a var-sized string column (`STRING_ASCII`/`STRING_UTF8`)
    /// with this pipeline keeps its offsets inside the data: the pipeline
    /// holds an RLE or dictionary filter (anywhere). Then the offsets tiles
    /// in `aN.tdb` are empty and tiles are not chunked.
    pub fn encodes_string_offsets(&self) -> bool {
        self.filters.iter().any(|f| matches!(f, Filter::Rle { .. } | Filter::Dictionary { .. }))
    }

    /// Reverse the pipeline over one filtered tile (`u64 chunks` + chunks)
    /// and return the tile's bytes.
    pub fn unfilter(&self, tile: &[u8], kind: TileKind) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.unfilter_into(tile, kind, &mut out)?;
        Ok(out)
    }

    /// [`Self::unfilter`] into `out` (cleared first): a caller decoding
    /// many tiles reuses one buffer, whose pages are then already mapped.
    pub fn unfilter_into(&self, tile: &[u8], kind: TileKind, out: &mut Vec<u8>) -> Result<()> {
        let kind = TileKind { var_strings: false, ..kind };
        self.unfilter_impl(tile, kind, out)?;
        Ok(())
    }

    /// [`Self::unfilter_into`] for a caller that needs only some bytes of
    /// the tile: chunks for which `wanted(byte range)` is false are not
    /// decoded (their bytes in `out` are left as they were; `out` is only
    /// grown, never cleared, so a reused buffer costs nothing to size).
    /// Fixed-size data only.
    pub fn unfilter_wanted(&self, tile: &[u8], kind: TileKind, wanted: &dyn Fn(std::ops::Range<usize>) -> bool, out: &mut Vec<u8>) -> Result<()> {
        let kind = TileKind { var_strings: false, ..kind };
        let (chunks, total) = chunk_headers(tile, kind.max_len)?;
        if total > UNVOUCHED_TILE_LEN && total > reserve_len(total, tile.len()) {
            // Sizing a very large `out` up front would trust the headers
            // (and a schema that agrees with them) beyond what the filtered
            // bytes vouch for: decode it all, growing as bytes come out.
            self.decode_chunks(chunks, total, tile.len(), kind, out)?;
            return Ok(());
        }
        if out.len() != total {
            out.resize(total, 0);
        }
        let types = self.stage_types(kind);
        CHUNK.with(|cell| -> Result<()> {
            let mut tmp = cell.borrow_mut();
            for (i, (start, orig, md, data)) in chunks.into_iter().enumerate() {
                if !wanted(start..start + orig) {
                    continue;
                }
                tmp.clear();
                let mut offsets = None;
                self.unfilter_chunk(md, data, orig, kind, &types, &mut offsets, &mut tmp).map_err(|e| e.context(format!("chunk {i}")))?;
                if tmp.len() != orig {
                    return Err(Error::corrupt(format!("chunk {i} decodes to {} bytes, header says {orig}", tmp.len())));
                }
                out[start..start + orig].copy_from_slice(&tmp);
            }
            Ok(())
        })
    }

    /// Types each filter saw on write: `types[i]` is filter `i`'s input.
    fn stage_types(&self, kind: TileKind) -> Vec<Datatype> {
        let mut types = vec![kind.datatype];
        for f in &self.filters {
            let last = *types.last().unwrap_or(&kind.datatype);
            types.push(f.output_type(last));
        }
        types
    }

    /// Reverse the pipeline over the var tile of a string column whose
    /// offsets travel with the data ([`Self::encodes_string_offsets`]):
    /// returns the string bytes and one start offset per cell.
    pub fn unfilter_strings(&self, tile: &[u8], kind: TileKind) -> Result<(Vec<u8>, Vec<u64>)> {
        let mut data = Vec::new();
        let offsets = self.unfilter_impl(tile, TileKind { var_strings: true, ..kind }, &mut data)?;
        let offsets = offsets.ok_or_else(|| Error::corrupt("string tile without an RLE or dictionary stage"))?;
        Ok((data, offsets))
    }

    /// Decode every chunk straight after the previous one in `out`.
    fn unfilter_impl(&self, tile: &[u8], kind: TileKind, out: &mut Vec<u8>) -> Result<Option<Vec<u64>>> {
        let (chunks, total) = chunk_headers(tile, kind.max_len)?;
        self.decode_chunks(chunks, total, tile.len(), kind, out)
    }

    /// Decode `chunks` (of a tile of `tile_len` filtered bytes that decodes
    /// to `total`) one after the other into `out`, cleared first and sized
    /// up front as far as the filtered bytes vouch for.
    fn decode_chunks(
        &self,
        chunks: Vec<ChunkHeader<'_>>,
        total: usize,
        tile_len: usize,
        kind: TileKind,
        out: &mut Vec<u8>,
    ) -> Result<Option<Vec<u64>>> {
        out.clear();
        let mut offsets: Option<Vec<u64>> = None;
        out.reserve(reserve_len(total, tile_len));
        let types = self.stage_types(kind);
        for (i, (_, orig, md, data)) in chunks.into_iter().enumerate() {
            let start = out.len();
            let mut chunk_offsets = None;
            self.unfilter_chunk(md, data, orig, kind, &types, &mut chunk_offsets, out).map_err(|e| e.context(format!("chunk {i}")))?;
            if let Some(co) = chunk_offsets {
                let base = start as u64;
                offsets.get_or_insert_with(Vec::new).extend(co.into_iter().map(|o| o + base));
            }
            if out.len() - start != orig {
                return Err(Error::corrupt(format!("chunk {i} decodes to {} bytes, header says {orig}", out.len() - start)));
            }
        }
        Ok(offsets)
    }

    /// Reverse the filters over one chunk, last to first; the first
    /// filter's output is appended to `out`, earlier stages borrow the
    /// tile's bytes instead of copying them.
    #[allow(clippy::too_many_arguments)]
    fn unfilter_chunk(
        &self,
        md: &[u8],
        data: &[u8],
        orig: usize,
        kind: TileKind,
        types: &[Datatype],
        offsets: &mut Option<Vec<u64>>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        use std::borrow::Cow;
        if self.filters.is_empty() {
            out.extend_from_slice(data);
            return Ok(());
        }
        let mut md: Cow<[u8]> = Cow::Borrowed(md);
        let mut data: Cow<[u8]> = Cow::Borrowed(data);
        for (i, f) in self.filters.iter().enumerate().rev() {
            let ctx = |e: Error| e.context(format!("filter {} ({})", i, f.name()));
            if i == 0 {
                reverse(f, &md, &data, types[i], orig, kind, offsets, out).map_err(ctx)?;
            } else {
                let mut next = Vec::new();
                let m = reverse(f, &md, &data, types[i], orig, kind, offsets, &mut next).map_err(ctx)?;
                md = Cow::Owned(m);
                data = Cow::Owned(next);
            }
        }
        Ok(())
    }
}

/// Read `u32 count, count × u32 length` part headers.
fn part_lengths(c: &mut Cursor) -> Result<Vec<usize>> {
    let n = c.u32("part count")? as usize;
    if n > c.remaining() / 4 {
        return Err(Error::corrupt(format!("part count {n} does not fit the metadata")));
    }
    (0..n).map(|_| Ok(c.u32("part length")? as usize)).collect()
}

/// Reverse filter `f` over (`md`, `data`): append the data it was given on
/// write to `out` and return the metadata left for the filters before it.
#[allow(clippy::too_many_arguments)]
fn reverse(
    f: &Filter,
    md: &[u8],
    data: &[u8],
    ty: Datatype,
    orig: usize,
    kind: TileKind,
    offsets: &mut Option<Vec<u64>>,
    out: &mut Vec<u8>,
) -> Result<Vec<u8>> {
    let mut c = Cursor::new(md);
    let string_type = matches!(ty, Datatype::StringAscii | Datatype::StringUtf8);
    if kind.var_strings && string_type && matches!(f, Filter::Rle { .. } | Filter::Dictionary { .. }) {
        if offsets.is_some() {
            return Err(Error::corrupt("two string codecs in one pipeline"));
        }
        let (rest, s) = if matches!(f, Filter::Rle { .. }) { string_codecs::rle_reverse(md, data)? } else { string_codecs::dict_reverse(md, data)? };
        *offsets = Some(s.offsets);
        out.extend_from_slice(&s.data);
        return Ok(rest);
    }
    match f {
        Filter::Gzip { .. }
        | Filter::Zstd { .. }
        | Filter::Lz4 { .. }
        | Filter::Bzip2 { .. }
        | Filter::Rle { .. }
        | Filter::Delta { .. }
        | Filter::DoubleDelta { .. }
        | Filter::Dictionary { .. } => {
            if matches!(f, Filter::Dictionary { .. }) {
                return Err(Error::corrupt("DictionaryFilter on data that is not var-sized strings"));
            }
            let n_md = c.u32("compressed metadata part count")? as usize;
            let n_data = c.u32("compressed data part count")? as usize;
            if n_md + n_data > c.remaining() / 8 {
                return Err(Error::corrupt("compressed part counts do not fit the metadata"));
            }
            let mut d = Cursor::new(data);
            let mut out_md = Vec::new();
            out.reserve(reserve_len(orig, data.len()));
            for p in 0..n_md + n_data {
                let raw_len = c.u32("part original length")? as usize;
                let comp_len = c.u32("part compressed length")? as usize;
                let comp = d.take(comp_len, "compressed part")?;
                let target = if p < n_md { &mut out_md } else { &mut *out };
                decompress(f, comp, raw_len, ty, kind.cell_size, target)?;
            }
            Ok(out_md)
        }
        Filter::ByteShuffle | Filter::Xor | Filter::FloatScale { .. } => {
            let parts = part_lengths(&mut c)?;
            let mut d = Cursor::new(data);
            out.reserve(reserve_len(orig, data.len()));
            for len in parts {
                let part = d.take(len, "part")?;
                match f {
                    Filter::ByteShuffle => out.extend_from_slice(&bss::decode_keep_tail(ty.size(), part)),
                    Filter::Xor => out.extend_from_slice(&codecs::xor_decode(part, ty.size())?),
                    Filter::FloatScale { factor, offset, bytewidth } => {
                        if matches!(ty, Datatype::Float32 | Datatype::Float64) {
                            out.extend(codecs::float_unscale(part, *bytewidth as usize, ty.size(), *factor, *offset)?)
                        } else {
                            out.extend_from_slice(part)
                        }
                    }
                    _ => unreachable!("matched above"),
                }
            }
            Ok(c.rest().to_vec())
        }
        Filter::ChecksumMd5 | Filter::ChecksumSha256 => {
            let n_md = c.u32("metadata checksum count")? as usize;
            let n_data = c.u32("data checksum count")? as usize;
            let width = if matches!(f, Filter::ChecksumMd5) { 16 } else { 32 };
            let mut sums = Vec::new();
            for _ in 0..n_md + n_data {
                let n = c.u64("checksummed byte count")? as usize;
                sums.push((n, c.take(width, "checksum")?.to_vec()));
            }
            let rest = c.rest().to_vec();
            let mut md_pos = 0usize;
            let mut data_pos = 0usize;
            for (i, (n, want)) in sums.iter().enumerate() {
                let (src, pos): (&[u8], &mut usize) = if i < n_md { (&rest, &mut md_pos) } else { (data, &mut data_pos) };
                let end = pos
                    .checked_add(*n)
                    .filter(|e| *e <= src.len())
                    .ok_or_else(|| Error::corrupt(format!("checksum {i} covers {n} bytes past the end")))?;
                let got = if width == 16 { md5::Md5::digest(&src[*pos..end]).to_vec() } else { sha2::Sha256::digest(&src[*pos..end]).to_vec() };
                if &got != want {
                    return Err(Error::corrupt(format!("{} mismatch on {} bytes", f.name(), n)));
                }
                *pos = end;
            }
            out.extend_from_slice(data);
            Ok(rest)
        }
        Filter::BitWidthReduction { .. } => {
            if !ty.is_integer() || ty.size() == 1 || (kind.version < 20 && matches!(ty, Datatype::Datetime(_))) {
                out.extend_from_slice(data);
                return Ok(md.to_vec());
            }
            let width = ty.size();
            let orig_len = c.u32("bit width original length")? as usize;
            let windows = c.u32("bit width window count")?;
            let mut d = Cursor::new(data);
            let start = out.len();
            out.reserve(reserve_len(orig_len, data.len()));
            for _ in 0..windows {
                let base = codecs::read_int(c.take(width, "window value offset")?, width, ty.is_signed());
                let bits = c.u8("window bit width")? as usize;
                let nbytes = c.u32("window length")? as usize;
                if bits >= width * 8 || nbytes % width != 0 {
                    out.extend_from_slice(d.take(nbytes, "raw window")?);
                    continue;
                }
                if !matches!(bits, 8 | 16 | 32) {
                    return Err(Error::corrupt(format!("window bit width {bits}")));
                }
                let w = bits / 8;
                for _ in 0..nbytes / width {
                    let v = codecs::read_int(d.take(w, "window value")?, w, ty.is_signed());
                    codecs::write_int(out, v.wrapping_add(base), width);
                }
            }
            if out.len() - start != orig_len {
                return Err(Error::corrupt(format!("bit width windows give {} bytes, not {orig_len}", out.len() - start)));
            }
            Ok(c.rest().to_vec())
        }
        Filter::PositiveDelta { .. } => {
            if !ty.is_integer() || (kind.version < 20 && matches!(ty, Datatype::Datetime(_))) {
                out.extend_from_slice(data);
                return Ok(md.to_vec());
            }
            let width = ty.size();
            let windows = c.u32("positive delta window count")?;
            let mut d = Cursor::new(data);
            out.reserve(data.len());
            for _ in 0..windows {
                let mut prev = codecs::read_int(c.take(width, "window value offset")?, width, false);
                let nbytes = c.u32("window length")? as usize;
                if nbytes % width != 0 {
                    out.extend_from_slice(d.take(nbytes, "raw window")?);
                    continue;
                }
                for _ in 0..nbytes / width {
                    let delta = codecs::read_int(d.take(width, "delta")?, width, false);
                    prev = prev.wrapping_add(delta);
                    codecs::write_int(out, prev, width);
                }
            }
            Ok(c.rest().to_vec())
        }
        Filter::BitShuffle => {
            let (rest, d) = bitshuffle::reverse(md, data, ty.size())?;
            out.extend_from_slice(&d);
            Ok(rest)
        }
        Filter::Unknown { .. } => Err(Error::unsupported(format!("{} is not supported", f.name()))),
    }
}

fn decompress(f: &Filter, comp: &[u8], raw_len: usize, ty: Datatype, cell_size: usize, out: &mut Vec<u8>) -> Result<()> {
    let start = out.len();
    match f {
        Filter::Gzip { .. } => {
            flate2::read::ZlibDecoder::new(comp)
                .take(raw_len as u64 + 1)
                .read_to_end(out)
                .map_err(|e| Error::corrupt(format!("gzip: {e}")).with_source(e))?;
        }
        Filter::Zstd { .. } => zstd_into(comp, raw_len, out)?,
        Filter::Lz4 { .. } => {
            // An LZ4 block expands at most 255-fold (a length byte of 255).
            if raw_len > comp.len().saturating_mul(255).saturating_add(64) {
                return Err(Error::corrupt(format!("lz4 part of {} bytes cannot decode to the {raw_len} its header says", comp.len())));
            }
            out.resize(start + raw_len, 0);
            let n = lz4_flex::block::decompress_into(comp, &mut out[start..]).map_err(|e| Error::corrupt(format!("lz4: {e}")).with_source(e))?;
            out.truncate(start + n);
        }
        Filter::Bzip2 { .. } => {
            bzip2::read::BzDecoder::new(comp)
                .take(raw_len as u64 + 1)
                .read_to_end(out)
                .map_err(|e| Error::corrupt(format!("bzip2: {e}")).with_source(e))?;
        }
        Filter::Rle { .. } => out.extend(codecs::rle_decode(comp, cell_size.max(1), raw_len)?),
        Filter::Delta { reinterpret, .. } => {
            let t = reinterpret.unwrap_or(ty);
            out.extend(codecs::delta_decode(comp, t.size(), t.is_signed())?)
        }
        Filter::DoubleDelta { reinterpret, .. } => {
            let t = reinterpret.unwrap_or(ty);
            if matches!(t, Datatype::Float32 | Datatype::Float64) {
                return Err(Error::unsupported("DoubleDeltaFilter on float data"));
            }
            out.extend(codecs::double_delta_decode(comp, t.size(), t.is_signed())?)
        }
        _ => unreachable!("only compressors reach decompress"),
    }
    if out.len() - start != raw_len {
        return Err(Error::corrupt(format!("{} part decodes to {} bytes, header says {raw_len}", f.name(), out.len() - start)));
    }
    Ok(())
}

thread_local! {
    /// Each thread's buffer for one decoded chunk (selective decoding).
    static CHUNK: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    /// One zstd decompression context per thread: creating one per chunk
    /// (TileDB chunks are 64 KiB) costs more than decoding the chunk.
    static ZSTD: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { std::cell::RefCell::new(None) };
}

/// Append the zstd frame `comp` (`raw_len` bytes once decoded) to `out`,
/// decoding straight into its spare capacity.
fn zstd_into(comp: &[u8], raw_len: usize, out: &mut Vec<u8>) -> Result<()> {
    let start = out.len();
    // A zstd block holds at most 128 KiB and takes at least 4 bytes (a
    // 3-byte header and one RLE byte), after a frame header of 6 or more.
    if raw_len > (comp.len() / 4 + 1).saturating_mul(128 << 10) {
        return Err(Error::corrupt(format!("zstd part of {} bytes cannot decode to the {raw_len} its header says", comp.len())));
    }
    out.reserve(raw_len);
    ZSTD.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(zstd::bulk::Decompressor::new().map_err(|e| Error::Internal { what: format!("zstd context: {e}") })?);
        }
        let dctx = slot.as_mut().expect("set above");
        // The frame may fill the spare capacity and no more (it never
        // grows the buffer); a length other than `raw_len` is caught by
        // the caller.
        let mut cur = std::io::Cursor::new(&mut *out);
        cur.set_position(start as u64);
        dctx.decompress_to_buffer(comp, &mut cur).map_err(|e| Error::corrupt(format!("zstd: {e}")))?;
        Ok(())
    })
}

/// One filtered chunk of a tile: where its decoded bytes start in the tile,
/// its decoded length, its filter metadata and its filtered bytes.
type ChunkHeader<'a> = (usize, usize, &'a [u8], &'a [u8]);

/// The chunk headers of a filtered tile (a u64 chunk count, then per chunk
/// u32 original length, u32 filtered length, u32 metadata length, metadata,
/// data) and the tile's decoded length, which must not exceed `max_len`
/// (the tile's size known from the schema or fragment metadata): so a
/// header's claim is refused before anything is allocated for it.
fn chunk_headers(tile: &[u8], max_len: usize) -> Result<(Vec<ChunkHeader<'_>>, usize)> {
    let mut c = Cursor::new(tile);
    let nchunks = c.count(12, "tile chunk count")?;
    let mut chunks = Vec::with_capacity(nchunks);
    let mut total = 0usize;
    for i in 0..nchunks {
        let orig = c.u32("chunk original length")? as usize;
        let filtered = c.u32("chunk filtered length")? as usize;
        let md_len = c.u32("chunk metadata length")? as usize;
        let md = c.take(md_len, "chunk metadata")?;
        let data = c.take(filtered, "chunk data")?;
        chunks.push((total, orig, md, data));
        total = total.checked_add(orig).ok_or_else(|| Error::corrupt(format!("chunk {i}'s length overflows the tile")))?;
    }
    if total > max_len {
        return Err(Error::corrupt(format!("tile chunks claim {total} decoded bytes; the tile holds at most {max_len}")));
    }
    Ok((chunks, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind() -> TileKind {
        TileKind { datatype: Datatype::Int32, cell_size: 4, version: 22, var_strings: false, max_len: 1 << 20 }
    }

    fn one_chunk(md: &[u8], data: &[u8], orig: u32) -> Vec<u8> {
        let mut t = 1u64.to_le_bytes().to_vec();
        t.extend_from_slice(&orig.to_le_bytes());
        t.extend_from_slice(&(data.len() as u32).to_le_bytes());
        t.extend_from_slice(&(md.len() as u32).to_le_bytes());
        t.extend_from_slice(md);
        t.extend_from_slice(data);
        t
    }

    #[test]
    fn empty_pipeline_passes_chunks_through() {
        let p = FilterPipeline::default();
        let t = one_chunk(&[], &[1, 2, 3, 4], 4);
        assert_eq!(p.unfilter(&t, kind()).unwrap(), vec![1, 2, 3, 4]);
        assert!(p.unfilter(&t[..t.len() - 1], kind()).is_err());
    }

    #[test]
    fn zstd_chunk_and_checksum_mismatch() {
        let raw: Vec<u8> = (0..100u8).collect();
        let comp = zstd::bulk::compress(&raw, 3).unwrap();
        let mut md = Vec::new();
        md.extend_from_slice(&0u32.to_le_bytes());
        md.extend_from_slice(&1u32.to_le_bytes());
        md.extend_from_slice(&100u32.to_le_bytes());
        md.extend_from_slice(&(comp.len() as u32).to_le_bytes());
        let p = FilterPipeline { max_chunk_size: 65536, filters: vec![Filter::Zstd { level: 3 }] };
        assert_eq!(p.unfilter(&one_chunk(&md, &comp, 100), kind()).unwrap(), raw);

        let mut md = 0u32.to_le_bytes().to_vec();
        md.extend_from_slice(&1u32.to_le_bytes());
        md.extend_from_slice(&100u64.to_le_bytes());
        md.extend_from_slice(&md5::Md5::digest(&raw));
        let p = FilterPipeline { max_chunk_size: 65536, filters: vec![Filter::ChecksumMd5] };
        assert_eq!(p.unfilter(&one_chunk(&md, &raw, 100), kind()).unwrap(), raw);
        let mut bad = raw.clone();
        bad[5] ^= 1;
        let e = p.unfilter(&one_chunk(&md, &bad, 100), kind()).unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{e}");
    }

    /// A zstd chunk of one part: `raw_len` claimed in both the chunk and
    /// the part header.
    fn zstd_tile(comp: &[u8], raw_len: u32) -> Vec<u8> {
        let mut md = 0u32.to_le_bytes().to_vec();
        md.extend_from_slice(&1u32.to_le_bytes());
        md.extend_from_slice(&raw_len.to_le_bytes());
        md.extend_from_slice(&(comp.len() as u32).to_le_bytes());
        one_chunk(&md, comp, raw_len)
    }

    #[test]
    fn chunk_lengths_beyond_the_tile_are_refused_before_decoding() {
        // The fuzz finding: a 13-byte zstd chunk claiming 0xFCFFFFFC bytes
        // was reserved in full before its frame was read.
        let comp = zstd::bulk::compress(&[7u8; 16], 3).unwrap();
        let p = FilterPipeline { max_chunk_size: 65536, filters: vec![Filter::Zstd { level: 3 }] };
        let tile = zstd_tile(&comp, 0xFCFF_FFFC);
        for wanted in [false, true] {
            let mut out = Vec::new();
            let e = if wanted {
                p.unfilter_wanted(&tile, kind(), &|_| true, &mut out).unwrap_err()
            } else {
                p.unfilter_into(&tile, kind(), &mut out).unwrap_err()
            };
            assert!(matches!(e, Error::Corrupt { .. }), "{e}");
            assert!(e.to_string().contains("claim 4244635644 decoded bytes; the tile holds at most 1048576"), "{e}");
            assert!(out.capacity() < 1 << 20, "{}", out.capacity());
        }
        // Two chunks whose lengths overflow a usize when summed.
        let mut two = 2u64.to_le_bytes().to_vec();
        for _ in 0..2 {
            two.extend_from_slice(&u32::MAX.to_le_bytes());
            two.extend_from_slice(&[0; 8]);
        }
        assert!(matches!(FilterPipeline::default().unfilter(&two, kind()), Err(Error::Corrupt { .. })));
    }

    #[test]
    fn part_lengths_beyond_what_the_codec_can_expand_to_are_refused() {
        let big = TileKind { max_len: usize::MAX, ..kind() };
        let comp = zstd::bulk::compress(&[7u8; 16], 3).unwrap();
        let p = FilterPipeline { max_chunk_size: 65536, filters: vec![Filter::Zstd { level: 3 }] };
        let e = p.unfilter(&zstd_tile(&comp, 0xFCFF_FFFC), big).unwrap_err();
        assert!(e.to_string().contains("cannot decode to the 4244635644"), "{e}");
        let comp = lz4_flex::block::compress(&[7u8; 16]);
        let p = FilterPipeline { max_chunk_size: 65536, filters: vec![Filter::Lz4 { level: 1 }] };
        let e = p.unfilter(&zstd_tile(&comp, 0xFCFF_FFFC), big).unwrap_err();
        assert!(e.to_string().contains("cannot decode to the 4244635644"), "{e}");
        // Within the bounds the same chunks decode.
        let p = FilterPipeline { max_chunk_size: 65536, filters: vec![Filter::Lz4 { level: 1 }] };
        assert_eq!(p.unfilter(&zstd_tile(&comp, 16), big).unwrap(), vec![7u8; 16]);
    }
}
