//! Choosing and applying the mini-block value compression of a page.
//!
//! Candidates are the encodings pylance uses (digest §11): `flat`,
//! `inline_bitpacking` (FastLanes, 1024-value chunks), `rle` (≤ 4096 values
//! per chunk, u8 run lengths), structural dictionaries (indices bitpacked,
//! items in block form, LZ4-wrapped where the version allows), `variable`
//! and `fsst` for strings, `fixed_size_list`, `packed_struct` and
//! `byte_stream_split`. Where pylance applies a fixed rule we estimate the
//! encoded size of every allowed candidate and keep the smallest, so files
//! are never larger than pylance's for the same page. Field metadata
//! (`lance-encoding:compression`, `-compression-level`, `bss`,
//! `dict-size-ratio`) is honoured.
//!
//! The result is a list of chunks, each holding a power-of-two number of
//! values (but the last) and one or more value buffers, ready for
//! [`super::miniblock`] to frame.

use std::collections::HashMap;

use crate::encoding::{bitpack, bss, fsst, general, rle};
use crate::error::{Error, Result};
use crate::file::write::cardinality::{estimate_distinct_fixed_capped, surely_more_than, FastBuild};
use crate::file::write::shred::Values;
use crate::proto::encodings21 as pb;
use crate::proto::encodings21::compressive_encoding::Compression as Enc;

/// Field-metadata knobs that steer encoding.
#[derive(Debug, Clone, Default)]
pub struct FieldOptions {
    /// `lance-encoding:compression` (lowercased): zstd, lz4, fsst, none.
    pub compression: Option<String>,
    /// `lance-encoding:compression-level`.
    pub level: Option<i32>,
    /// `lance-encoding:structural-encoding`: miniblock or fullzip.
    pub structural: Option<String>,
    /// `lance-encoding:bss`: on / off / auto.
    pub bss: Option<String>,
    /// `lance-encoding:dict-size-ratio` (default 0.8).
    pub dict_ratio: Option<f64>,
    /// Not metadata: an FSST table trained on an earlier page of the same
    /// column, used instead of training one per page (training was a tenth
    /// of a string column's write time; the pages of a column are alike).
    pub fsst_table: Option<std::sync::Arc<fsst::SymbolTable>>,
}

impl FieldOptions {
    /// Read the options from Arrow field metadata.
    pub fn from_metadata(md: &arrow_schema::Metadata) -> Self {
        let get = |k: &str| md.get(k).map(|v| v.trim().to_ascii_lowercase());
        FieldOptions {
            compression: get("lance-encoding:compression"),
            level: get("lance-encoding:compression-level").and_then(|v| v.parse().ok()),
            structural: get("lance-encoding:structural-encoding"),
            bss: get("lance-encoding:bss"),
            dict_ratio: get("lance-encoding:dict-size-ratio").and_then(|v| v.parse().ok()),
            fsst_table: None,
        }
    }
    /// The general compression scheme asked for, if any.
    pub fn general(&self) -> Option<general::CompressionScheme> {
        match self.compression.as_deref() {
            Some("zstd") => Some(general::CompressionScheme::Zstd),
            Some("lz4") => Some(general::CompressionScheme::Lz4),
            _ => None,
        }
    }
}

/// One mini-block chunk of values before framing.
#[derive(Debug, Clone)]
pub struct ChunkData {
    /// Values in the chunk.
    pub n: usize,
    /// The chunk's value buffers.
    pub bufs: Vec<Vec<u8>>,
}

/// A page's values, compressed and cut into chunks.
#[derive(Debug, Clone)]
pub struct Chunked {
    /// The value encoding description.
    pub encoding: pb::CompressiveEncoding,
    /// Value buffers per chunk.
    pub num_buffers: usize,
    /// The chunks.
    pub chunks: Vec<ChunkData>,
    /// Dictionary: (block encoding, buffer, number of items).
    pub dictionary: Option<(pb::CompressiveEncoding, Vec<u8>, u64)>,
}

impl Chunked {
    fn size(&self) -> usize {
        let chunks: usize = self.chunks.iter().map(|c| 8 + c.bufs.iter().map(|b| b.len().div_ceil(8) * 8 + 4).sum::<usize>()).sum();
        chunks + self.dictionary.as_ref().map_or(0, |d| d.1.len())
    }
}

/// What the version allows.
#[derive(Debug, Clone, Copy)]
pub struct Allowed {
    /// Dictionaries for fixed-width values.
    pub fixed_dict: bool,
    /// LZ4-wrap dictionary buffers.
    pub compress_dict: bool,
}

/// Shorthand constructors for encoding descriptions.
pub fn enc(c: Enc) -> pb::CompressiveEncoding {
    pb::CompressiveEncoding { compression: Some(c) }
}
/// `Flat{bits}`.
pub fn flat(bits: u64) -> pb::CompressiveEncoding {
    enc(Enc::Flat(pb::Flat { bits_per_value: bits, data: None }))
}
/// `Variable{offsets: Flat{bits}}`.
pub fn variable(bits: u64) -> pb::CompressiveEncoding {
    enc(Enc::Variable(Box::new(pb::Variable { offsets: Some(Box::new(flat(bits))), values: None })))
}
/// `BufferCompression` for a scheme.
pub fn buffer_compression(s: general::CompressionScheme, level: Option<i32>) -> pb::BufferCompression {
    let scheme = match s {
        general::CompressionScheme::Lz4 => pb::CompressionScheme::CompressionAlgorithmLz4,
        general::CompressionScheme::Zstd => pb::CompressionScheme::CompressionAlgorithmZstd,
    };
    pb::BufferCompression { scheme: scheme as i32, level }
}
/// `General{scheme, values: inner}`.
pub fn general_enc(s: general::CompressionScheme, level: Option<i32>, inner: pb::CompressiveEncoding) -> pb::CompressiveEncoding {
    enc(Enc::General(Box::new(pb::General { compression: Some(buffer_compression(s, level)), values: Some(Box::new(inner)) })))
}

/// Power-of-two values per flat chunk (pylance's rule: keep doubling while
/// twice the chunk stays under 8 KiB − 6, so chunks hold ~4 KiB).
fn flat_chunk_values(bytes_per_value: usize, max_values: usize) -> usize {
    let mut n = 1usize;
    while 2 * n * bytes_per_value < 8 * 1024 - 6 && 2 * n <= max_values {
        n *= 2;
    }
    n
}

fn cut_fixed(data: &[u8], bytes: usize, per_chunk: usize) -> Vec<ChunkData> {
    data.chunks(per_chunk * bytes).map(|c| ChunkData { n: c.len() / bytes, bufs: vec![c.to_vec()] }).collect()
}

/// Pack bools LSB-first.
pub fn pack_bools(b: &[bool]) -> Vec<u8> {
    let mut out = vec![0u8; b.len().div_ceil(8)];
    for (i, v) in b.iter().enumerate() {
        if *v {
            out[i / 8] |= 1 << (i % 8);
        }
    }
    out
}

/// Estimated inline-bitpacked size of `data` (values of `bytes` bytes,
/// one of 1, 2, 4, 8).
fn bitpack_size(data: &[u8], bytes: usize) -> usize {
    fn sized<const N: usize>(data: &[u8]) -> usize {
        data.chunks(1024 * N)
            .map(|c| {
                let or = c.chunks_exact(N).fold(0u64, |a, v| a | word::<N>(v));
                let w = 64 - or.leading_zeros() as usize;
                N + 128 * w.min(N * 8)
            })
            .sum()
    }
    match bytes {
        1 => sized::<1>(data),
        2 => sized::<2>(data),
        4 => sized::<4>(data),
        _ => sized::<8>(data),
    }
}

/// [`bitpack_size`] and [`run_count`] of word-sized values (`bytes` one of
/// 1, 2, 4, 8) in one pass over the page: the two scans apart cost about a
/// tenth of a write of integer and float columns.
fn bitpack_size_and_runs(data: &[u8], bytes: usize) -> (usize, usize) {
    fn scan<const N: usize>(data: &[u8]) -> (usize, usize) {
        let mut size = 0;
        let mut runs = 0usize;
        // The run so far: its value and length (a first value starts one).
        let (mut prev, mut len) = match data.get(..N) {
            Some(v) => (word::<N>(v), 0usize),
            None => return (0, 0),
        };
        runs += 1;
        for block in data.chunks(1024 * N) {
            let mut or = 0u64;
            for v in block.chunks_exact(N) {
                let x = word::<N>(v);
                or |= x;
                // Branch-free for the common cases (all runs short, or all
                // long); a run longer than 255 (RLE's cap) counts again.
                let same = x == prev;
                len = if same { len + 1 } else { 1 };
                runs += usize::from(!same);
                if len > 255 {
                    runs += 1;
                    len = 1;
                }
                prev = x;
            }
            let w = 64 - or.leading_zeros() as usize;
            size += N + 128 * w.min(N * 8);
        }
        (size, runs)
    }
    match bytes {
        1 => scan::<1>(data),
        2 => scan::<2>(data),
        4 => scan::<4>(data),
        _ => scan::<8>(data),
    }
}

/// A little-endian value of `N` bytes, widened (the width known at compile
/// time lets the scans over a page vectorize).
#[inline(always)]
fn word<const N: usize>(v: &[u8]) -> u64 {
    // One load per width (a byte copy into a zeroed array compiled to a
    // memcpy call per value: a tenth of a write's CPU went to it).
    match N {
        1 => u64::from(v[0]),
        2 => u64::from(u16::from_le_bytes([v[0], v[1]])),
        4 => u64::from(u32::from_le_bytes([v[0], v[1], v[2], v[3]])),
        _ => u64::from_le_bytes([v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]]),
    }
}

fn bitpack_chunks(data: &[u8], bytes: usize, max_values: usize) -> Vec<ChunkData> {
    data.chunks(1024.min(max_values) * bytes)
        .map(|c| {
            let mut out = Vec::new();
            bitpack::pack_inline_chunk(8 * bytes as u32, c, &mut out);
            ChunkData { n: c.len() / bytes, bufs: vec![out] }
        })
        .collect()
}

/// Runs of equal values (at most 255 long, as RLE stores them) in `data`
/// (values of `bytes` bytes); 1, 2, 4 and 8 compare as integers.
fn run_count(data: &[u8], bytes: usize) -> usize {
    fn runs<T: PartialEq>(values: impl Iterator<Item = T>) -> usize {
        let mut runs = 0;
        let mut prev = None;
        let mut len = 0;
        for v in values {
            if prev.as_ref() == Some(&v) && len < 255 {
                len += 1;
            } else {
                runs += 1;
                len = 1;
            }
            prev = Some(v);
        }
        runs
    }
    match bytes {
        1 => runs(data.chunks_exact(1).map(word::<1>)),
        2 => runs(data.chunks_exact(2).map(word::<2>)),
        4 => runs(data.chunks_exact(4).map(word::<4>)),
        8 => runs(data.chunks_exact(8).map(word::<8>)),
        _ => runs(data.chunks_exact(bytes)),
    }
}

fn rle_chunks(data: &[u8], bytes: usize, max_values: usize) -> Vec<ChunkData> {
    fn plan<T: bitpack::Word>(data: &[u8]) -> Vec<usize> {
        let v: Vec<T> = data.chunks_exact(T::BYTES).map(T::read_le).collect();
        rle::plan_chunks(&v)
    }
    let plan = match bytes {
        1 => plan::<u8>(data),
        2 => plan::<u16>(data),
        4 => plan::<u32>(data),
        _ => plan::<u64>(data),
    };
    let mut out = Vec::with_capacity(plan.len());
    let mut at = 0;
    for n in plan {
        // Respect a smaller cap by splitting further (halves stay powers of two).
        let mut left = n;
        while left > 0 {
            let take = if left > max_values { max_values } else { left };
            let (v, l) = rle::encode(8 * bytes as u32, &data[at * bytes..(at + take) * bytes]);
            out.push(ChunkData { n: take, bufs: vec![v, l] });
            at += take;
            left -= take;
        }
    }
    out
}

/// Distinct values in first-appearance order and the index of each value,
/// or None once there are more than `limit` distinct values.
fn dictionary_of<'a>(items: impl Iterator<Item = Option<&'a [u8]>>, limit: usize) -> Option<(Vec<&'a [u8]>, Vec<u32>)> {
    let mut map: HashMap<&[u8], u32, FastBuild> = HashMap::default();
    let mut dict = Vec::new();
    let mut idx = Vec::new();
    for it in items {
        match it {
            None => idx.push(0),
            Some(v) => {
                let next = dict.len() as u32;
                let i = *map.entry(v).or_insert_with(|| {
                    dict.push(v);
                    next
                });
                if dict.len() > limit {
                    return None;
                }
                idx.push(i);
            }
        }
    }
    if dict.is_empty() {
        return None;
    }
    Some((dict, idx))
}

/// Dictionary indices as u32 chunks: inline bit-packed, or flat when that
/// is smaller (tiny pages, where a 1024-value block would be mostly padding).
fn indices_chunked(idx: &[u32], max_values: usize) -> (pb::CompressiveEncoding, Vec<ChunkData>) {
    let bytes: Vec<u8> = idx.iter().flat_map(|i| i.to_le_bytes()).collect();
    if bitpack_size(&bytes, 4) < bytes.len() {
        (inline_bitpacking(32), bitpack_chunks(&bytes, 4, max_values))
    } else {
        (flat(32), cut_fixed(&bytes, 4, flat_chunk_values(4, max_values.min(4096))))
    }
}

/// Dictionary indices of an Arrow dictionary column at the key width, flat
/// or run-length encoded (what pylance writes; it rejects other widths).
fn key_indices_chunked(idx: &[u32], key_bytes: usize, max_values: usize) -> (pb::CompressiveEncoding, usize, Vec<ChunkData>) {
    let bytes: Vec<u8> = idx.iter().flat_map(|i| u64::from(*i).to_le_bytes().into_iter().take(key_bytes)).collect();
    let n = idx.len();
    let plain_chunks = cut_fixed(&bytes, key_bytes, flat_chunk_values(key_bytes, max_values.min(4096)));
    let plain = bytes.len() + 8 * plain_chunks.len();
    let rl = run_count(&bytes, key_bytes) * (key_bytes + 1) + 16 * (n.div_ceil(4096) + 1);
    if rl < plain && matches!(key_bytes, 1 | 2 | 4 | 8) {
        let e = enc(Enc::Rle(Box::new(pb::Rle { values: Some(Box::new(flat(8 * key_bytes as u64))), run_lengths: Some(Box::new(flat(8))) })));
        return (e, 2, rle_chunks(&bytes, key_bytes, max_values.min(4096)));
    }
    (flat(8 * key_bytes as u64), 1, plain_chunks)
}

fn inline_bitpacking(bits: u64) -> pb::CompressiveEncoding {
    enc(Enc::InlineBitpacking(pb::InlineBitpacking { uncompressed_bits_per_value: bits, values: None }))
}

/// Variable-width values as a dictionary block: `u32 32 | u32 data start |
/// offsets (n+1, from 0) | bytes`; with `wide` every header field and
/// offset is a u64 and the width word says 64 (what pylance expects for
/// large_string / large_binary).
pub fn variable_block(items: &[&[u8]], wide: bool) -> Vec<u8> {
    let w = if wide { 8 } else { 4 };
    let start = 2 * w + w * (items.len() + 1);
    let mut out = Vec::with_capacity(start + items.iter().map(|i| i.len()).sum::<usize>());
    let put = |out: &mut Vec<u8>, v: u64| out.extend_from_slice(&v.to_le_bytes()[..w]);
    put(&mut out, 8 * w as u64);
    put(&mut out, start as u64);
    let mut o = 0u64;
    put(&mut out, o);
    for i in items {
        o += i.len() as u64;
        put(&mut out, o);
    }
    for i in items {
        out.extend_from_slice(i);
    }
    out
}

fn maybe_wrap_dict(block: Vec<u8>, inner: pb::CompressiveEncoding, allowed: Allowed) -> (pb::CompressiveEncoding, Vec<u8>) {
    if allowed.compress_dict {
        let c = general::compress(general::CompressionScheme::Lz4, None, &block);
        (general_enc(general::CompressionScheme::Lz4, None, inner), c)
    } else {
        (inner, block)
    }
}

/// Cut variable-width values into chunks of ≤ 4 KiB (power-of-two counts):
/// `(n+1)` offsets relative to the chunk start, bytes, 0x48 padding to the
/// offset width.
fn variable_chunks(offsets: &[u64], data: &[u8], wide: bool, max_values: usize) -> Vec<ChunkData> {
    let w = if wide { 8 } else { 4 };
    let mut out = Vec::new();
    for (s, k) in variable_cuts(offsets, wide, max_values) {
        let hdr = (k + 1) * w;
        let mut buf = Vec::with_capacity(hdr + (offsets[s + k] - offsets[s]) as usize + 8);
        for j in 0..=k {
            let o = hdr as u64 + offsets[s + j] - offsets[s];
            if wide {
                buf.extend_from_slice(&o.to_le_bytes());
            } else {
                buf.extend_from_slice(&(o as u32).to_le_bytes());
            }
        }
        buf.extend_from_slice(&data[offsets[s] as usize..offsets[s + k] as usize]);
        while buf.len() % w != 0 {
            buf.push(0x48);
        }
        out.push(ChunkData { n: k, bufs: vec![buf] });
    }
    out
}

/// Where [`variable_chunks`] cuts: `(first value, values)` per chunk, each
/// chunk ≤ 4 KiB where possible, a power-of-two count but the last.
fn variable_cuts(offsets: &[u64], wide: bool, max_values: usize) -> Vec<(usize, usize)> {
    const AIM: usize = 4 * 1024;
    let w = if wide { 8 } else { 4 };
    let n = offsets.len() - 1;
    let mut out = Vec::new();
    let mut s = 0;
    while s < n {
        let size = |k: usize| (offsets[s + k] - offsets[s]) as usize + (k + 1) * w;
        let mut k = 1;
        while 2 * k <= max_values && s + 2 * k <= n && size(2 * k) <= AIM {
            k *= 2;
        }
        if s + 2 * k > n && n - s <= max_values && size(n - s) <= AIM {
            k = n - s;
        }
        out.push((s, k));
        s += k;
    }
    out
}

/// [`Chunked::size`] of [`variable_chunks`], without building the chunks.
fn variable_chunks_size(offsets: &[u64], wide: bool, max_values: usize) -> usize {
    let w = if wide { 8 } else { 4 };
    variable_cuts(offsets, wide, max_values)
        .into_iter()
        .map(|(s, k)| {
            let buf = ((k + 1) * w + (offsets[s + k] - offsets[s]) as usize).div_ceil(w) * w;
            8 + buf.div_ceil(8) * 8 + 4
        })
        .sum()
}

/// Lance's rule for trying FSST on a page of strings: enough bytes, and a
/// value of at least [`fsst::MIN_MAX_LENGTH`] bytes.
pub fn fsst_wanted(offsets: &[u64], data: &[u8]) -> bool {
    data.len() >= fsst::MIN_INPUT_BYTES && offsets.windows(2).any(|w| w[1] - w[0] >= fsst::MIN_MAX_LENGTH as u64)
}

fn wrap_general(c: Chunked, opts: &FieldOptions) -> Chunked {
    let Some(scheme) = opts.general() else { return c };
    if c.num_buffers != 1 || c.dictionary.is_some() {
        return c;
    }
    let total: usize = c.chunks.iter().map(|ch| ch.bufs[0].len()).sum();
    if total < 4 * 1024 {
        return c;
    }
    let chunks: Vec<ChunkData> =
        c.chunks.iter().map(|ch| ChunkData { n: ch.n, bufs: vec![general::compress(scheme, opts.level, &ch.bufs[0])] }).collect();
    let after: usize = chunks.iter().map(|ch| ch.bufs[0].len()).sum();
    if after >= total {
        return c;
    }
    Chunked { encoding: general_enc(scheme, opts.level, c.encoding), num_buffers: 1, chunks, dictionary: None }
}

/// Compress and chunk a page's visible values. `valid` marks null slots
/// (None = all valid); `max_values` caps values per chunk.
#[allow(clippy::too_many_arguments)]
/// `force_dict` = Some((key bytes, how many values the key type can
/// index)) for Arrow dictionary columns.
pub fn choose(
    values: &Values,
    valid: Option<&[bool]>,
    wide: bool,
    packed: Option<&[u64]>,
    opts: &FieldOptions,
    allowed: Allowed,
    max_values: usize,
    force_dict: Option<(usize, u64)>,
) -> Result<Chunked> {
    let none = opts.compression.as_deref() == Some("none");
    let n = values.len();
    let ok = |i: usize| valid.is_none_or(|v| v[i]);
    if let Some((key_bytes, key_capacity)) = force_dict {
        // Arrow dictionary columns: pylance expects a dictionary layout with
        // indices at the declared key width.
        let (items, width): (Vec<Option<&[u8]>>, Option<usize>) = match values {
            Values::Variable { offsets, data } => {
                ((0..n).map(|i| ok(i).then(|| &data[offsets[i] as usize..offsets[i + 1] as usize])).collect(), None)
            }
            Values::Fixed { bytes, data } => ((0..n).map(|i| ok(i).then(|| &data[i * bytes..(i + 1) * bytes])).collect(), Some(*bytes)),
            _ => (vec![], None),
        };
        if let Some((d, idx)) = dictionary_of(items.into_iter(), usize::MAX) {
            let (block, inner) = match width {
                None => (variable_block(&d, wide), variable(if wide { 64 } else { 32 })),
                Some(b) => (d.concat(), flat(8 * b as u64)),
            };
            if d.len() as u64 > key_capacity {
                return Err(Error::invalid_input(format!("{} distinct dictionary values do not fit {}-byte keys", d.len(), key_bytes)));
            }
            let (denc, dbuf) = maybe_wrap_dict(block, inner, allowed);
            let (ienc, num_buffers, chunks) = key_indices_chunked(&idx, key_bytes, max_values);
            return Ok(Chunked { encoding: ienc, num_buffers, chunks, dictionary: Some((denc, dbuf, d.len() as u64)) });
        }
    }
    let c = match values {
        Values::Bool(b) => {
            let per = max_values.min(4096);
            let chunks = b.chunks(per).map(|c| ChunkData { n: c.len(), bufs: vec![pack_bools(c)] }).collect();
            Chunked { encoding: flat(1), num_buffers: 1, chunks, dictionary: None }
        }
        Values::Fixed { bytes, data } => {
            let bytes = *bytes;
            if let Some(bits) = packed {
                let per = flat_chunk_values(bytes, max_values.min(4096));
                let e = enc(Enc::PackedStruct(Box::new(pb::PackedStruct {
                    bits_per_value: bits.to_vec(),
                    values: Some(Box::new(flat(8 * bytes as u64))),
                })));
                return Ok(Chunked { encoding: e, num_buffers: 1, chunks: cut_fixed(data, bytes, per), dictionary: None });
            }
            let per = flat_chunk_values(bytes, max_values.min(4096));
            // Built only if chosen (its size is known without building it).
            let plain = || Chunked { encoding: flat(8 * bytes as u64), num_buffers: 1, chunks: cut_fixed(data, bytes, per), dictionary: None };
            if none {
                return Ok(plain());
            }
            let word = matches!(bytes, 1 | 2 | 4 | 8);
            let bss_on = matches!(opts.bss.as_deref(), Some("on") | Some("true")) && opts.general().is_some() && matches!(bytes, 4 | 8);
            if bss_on {
                let per = bss::chunk_values(bytes).min(max_values);
                let chunks = data.chunks(per * bytes).map(|c| ChunkData { n: c.len() / bytes, bufs: vec![bss::encode(bytes, c)] }).collect();
                let e = enc(Enc::ByteStreamSplit(Box::new(pb::ByteStreamSplit { values: Some(Box::new(flat(8 * bytes as u64))) })));
                return Ok(wrap_general(Chunked { encoding: e, num_buffers: 1, chunks, dictionary: None }, opts));
            }
            let mut best = (data.len() + 8 * n.div_ceil(per), 0u8);
            if word {
                let (bp, runs) = bitpack_size_and_runs(data, bytes);
                let bp = bp + 8 * n.div_ceil(1024);
                if bp < best.0 {
                    best = (bp, 1);
                }
                let rl = runs * (bytes + 1) + 16 * (n.div_ceil(4096) + 1);
                if rl < best.0 {
                    best = (rl, 2);
                }
            }
            let mut dict = None;
            // An exact dictionary is only built when the sketch's optimistic
            // count (10 % below its estimate) could fit the limit and beat
            // the best size so far.
            let worth_trying = |limit: usize, best: usize| {
                // (Stopping the sketch once `d` surely exceeds `limit`
                // decides exactly as the whole page would.)
                let cap = (limit as f64 + 1.0) / 0.9;
                let d = (0.9 * estimate_distinct_fixed_capped(data, bytes, valid, cap)).max(1.0) as usize;
                let w = 32 - (d as u32).saturating_sub(1).leading_zeros() as usize;
                let est = d * bytes + n.div_ceil(1024) * (12 + 128 * w);
                d <= limit && est < best && (est as f64) < opts.dict_ratio.unwrap_or(0.8) * data.len() as f64
            };
            if allowed.fixed_dict && n >= 100 && worth_trying(n / 4, best.0) {
                let limit = n / 4;
                if let Some((d, idx)) = dictionary_of((0..n).map(|i| ok(i).then(|| &data[i * bytes..(i + 1) * bytes])), limit) {
                    let w = 32 - (d.len() as u32 - 1).leading_zeros() as usize;
                    let est = d.len() * bytes + n.div_ceil(1024) * (12 + 128 * w);
                    let ratio = opts.dict_ratio.unwrap_or(0.8);
                    if est < best.0 && (est as f64) < ratio * data.len() as f64 {
                        best = (est, 3);
                        dict = Some((d, idx));
                    }
                }
            }
            let c = match best.1 {
                0 => plain(),
                1 => Chunked {
                    encoding: inline_bitpacking(8 * bytes as u64),
                    num_buffers: 1,
                    chunks: bitpack_chunks(data, bytes, max_values),
                    dictionary: None,
                },
                2 => {
                    let e = enc(Enc::Rle(Box::new(pb::Rle { values: Some(Box::new(flat(8 * bytes as u64))), run_lengths: Some(Box::new(flat(8))) })));
                    return Ok(Chunked { encoding: e, num_buffers: 2, chunks: rle_chunks(data, bytes, max_values.min(4096)), dictionary: None });
                }
                _ => {
                    let (d, idx) = dict.expect("chosen");
                    let block: Vec<u8> = d.concat();
                    let (denc, dbuf) = maybe_wrap_dict(block, flat(8 * bytes as u64), allowed);
                    let (ienc, chunks) = indices_chunked(&idx, max_values);
                    return Ok(Chunked { encoding: ienc, num_buffers: 1, chunks, dictionary: Some((denc, dbuf, d.len() as u64)) });
                }
            };
            wrap_general(c, opts)
        }
        Values::Variable { offsets, data } => {
            let item = |i: usize| &data[offsets[i] as usize..offsets[i + 1] as usize];
            let ow: usize = if wide { 8 } else { 4 };
            let plain = || Chunked {
                encoding: variable(8 * ow as u64),
                num_buffers: 1,
                chunks: variable_chunks(offsets, data, wide, max_values.min(4096)),
                dictionary: None,
            };
            if none {
                return Ok(plain());
            }
            // Candidates, compared by their real encoded size. Plain values
            // are built only if they win (or general compression needs
            // them): their size follows from the offsets.
            let mut best = opts.general().map(|_| wrap_general(plain(), opts));
            let mut best_size = best.as_ref().map_or_else(|| variable_chunks_size(offsets, wide, max_values.min(4096)), Chunked::size);
            let forced = opts.compression.as_deref() == Some("fsst");
            let ratio = opts.dict_ratio.unwrap_or(1.0);
            // The dictionary candidate comes first: when it beats even the
            // smallest FSST page could be (its offsets alone, `ow` bytes a
            // value), FSST would lose anyway and is not run.
            let mut dict = None;
            if n >= 100 && !forced && !surely_more_than((0..n).map(|i| ok(i).then(|| item(i))), n / 2) {
                if let Some((d, idx)) = dictionary_of((0..n).map(|i| ok(i).then(|| item(i))), n / 2) {
                    let block = variable_block(&d, wide);
                    let (denc, dbuf) = maybe_wrap_dict(block, variable(8 * ow as u64), allowed);
                    let (ienc, chunks) = indices_chunked(&idx, max_values);
                    dict = Some(Chunked { encoding: ienc, num_buffers: 1, chunks, dictionary: Some((denc, dbuf, d.len() as u64)) });
                }
            }
            let fsst_floor = if opts.general().is_some() { 0 } else { ow * n };
            let dict_surely_wins = dict.as_ref().is_some_and(|c| (c.size() as f64) < ratio * best_size.min(fsst_floor) as f64);
            let auto = fsst_wanted(offsets, data);
            if (forced || auto) && !dict_surely_wins {
                let table = match &opts.fsst_table {
                    Some(t) if auto => t.as_ref().clone(),
                    _ => fsst::train(offsets, data)?,
                };
                let (co, cd) = fsst::compress_split(&table, offsets, data)?;
                let chunks = variable_chunks(&co, &cd, wide, max_values.min(4096));
                let e = enc(Enc::Fsst(Box::new(pb::Fsst { symbol_table: table.to_bytes(), values: Some(Box::new(variable(8 * ow as u64))) })));
                let f = wrap_general(Chunked { encoding: e, num_buffers: 1, chunks, dictionary: None }, opts);
                if forced || f.size() + fsst::SYMBOL_TABLE_SIZE < best_size {
                    best_size = f.size();
                    best = Some(f);
                }
            }
            if let Some(c) = dict {
                if (c.size() as f64) < ratio * best_size as f64 {
                    best = Some(c);
                }
            }
            best.unwrap_or_else(plain)
        }
        Values::Fsl { dims, item_bytes, items, valid } => {
            // pylance: one validity buffer per layer that has one (outermost
            // first, each a fresh bitmap per chunk), then the items.
            let dim: usize = dims.iter().product();
            let row = dim * item_bytes;
            let per = flat_chunk_values(row.max(1), max_values.min(4096));
            let cums: Vec<usize> = dims
                .iter()
                .scan(1, |c, d| {
                    *c *= d;
                    Some(*c)
                })
                .collect();
            let chunks = items
                .chunks((per * row).max(1))
                .enumerate()
                .map(|(ci, c)| {
                    let rows = c.len() / row.max(1);
                    let first = ci * per;
                    let mut bufs = Vec::with_capacity(1 + valid.len());
                    for (v, cum) in valid.iter().zip(&cums) {
                        if let Some(v) = v {
                            bufs.push(pack_bools(&v[first * cum..(first + rows) * cum]));
                        }
                    }
                    bufs.push(c.to_vec());
                    ChunkData { n: rows, bufs }
                })
                .collect();
            let mut e = flat(8 * *item_bytes as u64);
            for (d, v) in dims.iter().zip(valid).rev() {
                e = enc(Enc::FixedSizeList(Box::new(pb::FixedSizeList {
                    items_per_value: *d as u64,
                    has_validity: v.is_some(),
                    values: Some(Box::new(e)),
                })));
            }
            let num_buffers = 1 + valid.iter().filter(|v| v.is_some()).count();
            Chunked { encoding: e, num_buffers, chunks, dictionary: None }
        }
        Values::Null(_) => return Err(Error::invalid_input("null-typed values cannot be mini-block encoded")),
    };
    Ok(c)
}

#[cfg(test)]
mod size_tests {
    use super::*;

    /// The one-pass scan gives what the two scans it replaces give, on
    /// random values, runs shorter and longer than RLE's 255 cap, constant
    /// pages, partial blocks and a trailing partial value.
    #[test]
    fn one_pass_scan_matches_both_scans() {
        let mut rng = crate::testdata::Lcg(11);
        let mut next = || rng.next() >> 17;
        for round in 0..60 {
            let bytes = [1usize, 2, 4, 8][round % 4];
            let n = [0usize, 1, 7, 1023, 1024, 1025, 3000, 9001][round % 8];
            let mut data = Vec::with_capacity(n * bytes + 3);
            let mut v = next();
            while data.len() < n * bytes {
                match round % 5 {
                    0 => v = next(),
                    1 if next() % 300 == 0 => v = next(),
                    2 if next() % 3 == 0 => v = next() % 4,
                    3 => {}
                    _ if next() % 40 == 0 => v = next() >> (next() % 64),
                    _ => {}
                }
                data.extend_from_slice(&v.to_le_bytes()[..bytes]);
            }
            data.extend((0..round % 3).map(|_| 0xAB));
            assert_eq!(bitpack_size_and_runs(&data, bytes), (bitpack_size(&data, bytes), run_count(&data, bytes)), "round {round}");
        }
    }

    /// The size computed from the offsets alone is the size of the chunks
    /// built (plain values are only built when they win).
    #[test]
    fn variable_size_without_building() {
        let mut state = 7u64;
        for n in [1usize, 2, 3, 100, 5000] {
            for wide in [false, true] {
                for max in [1usize, 7, 4096] {
                    let mut offsets = vec![0u64];
                    for _ in 0..n {
                        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        let len = (state >> 33) % if state % 13 == 0 { 9000 } else { 70 };
                        offsets.push(offsets.last().unwrap() + len);
                    }
                    let data = vec![b'x'; *offsets.last().unwrap() as usize];
                    let built =
                        Chunked { encoding: variable(32), num_buffers: 1, chunks: variable_chunks(&offsets, &data, wide, max), dictionary: None };
                    assert_eq!(variable_chunks_size(&offsets, wide, max), built.size(), "n {n} wide {wide} max {max}");
                }
            }
        }
    }
}
