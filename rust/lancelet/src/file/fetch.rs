//! Fetching the page buffers a 2.1/2.2 read needs.
//!
//! Every page a read touches is fetched one of two ways, whichever costs
//! less by [`choose`]'s estimate:
//!
//! * **whole**: all its buffers, in one coalesced request with the other
//!   whole pages;
//! * **sparse**: only what holds the wanted rows —
//!   - mini-block pages without repetition: first the chunk metadata (and
//!     the dictionary, if any) in that same first request, then only the
//!     chunks holding wanted rows in a second one;
//!   - full-zip pages of fixed-width values without repetition: every
//!     entry has the same size (control word + value), so the wanted rows
//!     are read directly by position, in the first request.
//!
//! Pages of other layouts (repetition, variable-width full-zip, constant
//! and blob pages) are always read whole.
//!
//! The estimate weighs bytes against requests: a request costs as much as
//! transferring [`Storage::request_cost`] bytes (a few KiB on a local disk,
//! about a MiB on an object store), and ranges closer than that are read
//! as one (the bytes between them are cheaper than another request). A
//! mini-block page's chunk boundaries are known only after its metadata is
//! read, so the estimate assumes chunks of equal size (the metadata's size
//! gives their number). This is how a take touches about one storage range
//! per value, a filtered scan fetches only the chunks of its passing rows,
//! and a read unit that shares a page with its neighbour reads only its own
//! part of it.
//!
//! A reader keeps what it learns of a page between reads ([`PageCache`]):
//! its parsed layout and, once a mini-block page has been read (whole or
//! in part), its chunk metadata and dictionary. A later sparse read of that
//! page knows where every chunk lies, so it costs exact bytes and a single
//! round trip, fetched together with everything else the read needs.
//!
//! All ranges of one round trip go to storage together and ranges closer
//! than a request's worth are read as one
//! ([`Storage::read_ranges_coalesced`]), across pages and columns.
//!
//! Decoding follows the fetch: a full-zip page read whole for a few rows
//! hands only those rows' entries to the decoder.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::io::Storage;
use crate::proto::encodings21::full_zip_layout::Details;
use crate::proto::encodings21::page_layout::Layout;
use crate::proto::encodings21::{FullZipLayout, MiniBlockLayout, PageLayout};
use crate::proto::file::v2::column_metadata::Page;

/// One page to read: its metadata, parsed layout, wanted rows (sorted,
/// relative to the page) and what the reader keeps of it.
pub(crate) struct PageRequest<'a> {
    pub page: &'a Page,
    pub layout: &'a PageLayout,
    pub wanted: Vec<(usize, usize)>,
    pub cache: &'a PageCache,
}

/// What a file reader keeps of one page between reads.
#[derive(Default)]
pub(crate) struct PageCache {
    layout: OnceLock<PageLayout>,
    mini: OnceLock<Arc<MiniMeta>>,
}

impl PageCache {
    /// The page's layout, parsed by `parse` on first use.
    pub fn layout(&self, parse: impl FnOnce() -> Result<PageLayout>) -> Result<&PageLayout> {
        if let Some(l) = self.layout.get() {
            return Ok(l);
        }
        let l = parse()?;
        Ok(self.layout.get_or_init(|| l))
    }
}

/// A mini-block page's chunk metadata and dictionary (copies, so that the
/// cache holds no larger buffer they were cut from) and its chunks.
pub(crate) struct MiniMeta {
    /// (buffer index, bytes): the chunk metadata (0) and the dictionary (2).
    bufs: Vec<(usize, Bytes)>,
    /// (position, bytes, first item, items) of every chunk.
    spans: Vec<(usize, usize, usize, usize)>,
}

impl MiniMeta {
    fn new(m: &MiniBlockLayout, bufs: Vec<(usize, Bytes)>) -> Result<Self> {
        let meta = bufs.iter().find(|(i, _)| *i == 0).map(|(_, b)| b.as_ref()).unwrap_or(&[]);
        let spans = chunk_spans(m, meta)?;
        Ok(MiniMeta { bufs: bufs.into_iter().map(|(i, b)| (i, Bytes::copy_from_slice(&b))).collect(), spans })
    }
}

/// The fetched buffers of one page.
pub(crate) struct FetchedPage {
    /// The page's buffers (for a partly read mini-block page the chunk
    /// buffer is empty; for a partly read full-zip page buffer 0 holds the
    /// wanted entries back to back).
    pub bufs: Vec<Bytes>,
    /// Partly read mini-block page: (position in the chunk buffer, bytes)
    /// of the chunks read, by position.
    pub chunks: Option<Vec<(usize, Bytes)>>,
    /// Partly read full-zip page: the layout of just the wanted entries.
    pub zip: Option<FullZipLayout>,
}

enum Mode {
    Whole,
    /// Chunk metadata not known yet: these buffers (indices into the
    /// page's) are fetched first, the chunks in a second round trip.
    MiniBlock {
        first: Vec<usize>,
    },
    /// Chunk metadata known: these groups of chunks ((position, bytes),
    /// each group one range) are all that is fetched.
    MiniBlockKnown {
        meta: Arc<MiniMeta>,
        groups: Vec<Vec<(usize, usize)>>,
    },
    /// Bytes per entry.
    ZipRows {
        stride: u64,
    },
}

/// The buffers a sparse read of a mini-block page fetches before its
/// chunks (chunk metadata, dictionary), if the page can be read sparsely.
fn mini_first<'a>(req: &PageRequest<'a>) -> Option<(&'a MiniBlockLayout, Vec<usize>)> {
    match &req.layout.layout {
        Some(Layout::MiniBlockLayout(m)) if m.rep_compression.is_none() && req.page.buffer_offsets.len() >= 2 => {
            if m.dictionary.is_some() {
                (req.page.buffer_offsets.len() >= 3).then(|| (m, vec![0, 2]))
            } else {
                Some((m, vec![0]))
            }
        }
        _ => None,
    }
}

fn wanted_rows(w: &[(usize, usize)]) -> u64 {
    w.iter().map(|(s, e)| (e - s) as u64).sum()
}

/// Bytes of a page's buffers.
fn page_bytes(p: &Page) -> u64 {
    p.buffer_sizes.iter().sum()
}

/// How many groups `runs` (sorted, disjoint `(start, end)` in units of
/// `unit_bytes` bytes) form when gaps of at most `gap` bytes are bridged,
/// and the bytes those groups span.
fn grouped<I: IntoIterator<Item = (u64, u64)>>(runs: I, unit_bytes: u64, gap: u64) -> (u64, u64) {
    let (mut groups, mut bytes) = (0u64, 0u64);
    let mut cur: Option<(u64, u64)> = None;
    for (s, e) in runs {
        match &mut cur {
            Some((_, ce)) if (s - *ce) * unit_bytes <= gap => *ce = e,
            _ => {
                if let Some((cs, ce)) = cur {
                    groups += 1;
                    bytes += (ce - cs) * unit_bytes;
                }
                cur = Some((s, e));
            }
        }
    }
    if let Some((cs, ce)) = cur {
        groups += 1;
        bytes += (ce - cs) * unit_bytes;
    }
    (groups, bytes)
}

/// Fetch the page whole or in part, whichever the estimate finds cheaper
/// (see the module docs); `request` is the cost of one request in bytes.
fn choose(req: &PageRequest<'_>, request: u64) -> Mode {
    let wanted = wanted_rows(&req.wanted);
    if wanted >= req.page.length || req.page.length == 0 {
        return Mode::Whole;
    }
    // A page read whole is one range that usually joins the ranges of the
    // pages around it (other columns' pages of the same rows), so its
    // request is nearly free: a sparse read must save more than a request's
    // worth of bytes to be chosen (a sparse read that touches every chunk
    // would save only the chunk metadata, and cost a request of its own).
    let whole = page_bytes(req.page);
    if let Some(meta) = req.cache.mini.get() {
        let groups = chunk_groups(&meta.spans, &req.wanted, request);
        let bytes: u64 = groups.iter().map(|g| group_span(g) as u64).sum();
        return if bytes + groups.len() as u64 * request < whole { Mode::MiniBlockKnown { meta: meta.clone(), groups } } else { Mode::Whole };
    }
    match &req.layout.layout {
        Some(Layout::MiniBlockLayout(_)) => {
            let Some((m, first)) = mini_first(req) else { return Mode::Whole };
            let word = if m.has_large_chunk { 4 } else { 2 };
            let chunks = (req.page.buffer_sizes[0] / word).max(1);
            let chunk_bytes = req.page.buffer_sizes[1].div_ceil(chunks).max(1);
            let rows_per_chunk = req.page.length.div_ceil(chunks).max(1);
            // Chunks holding wanted rows, assuming equal chunks.
            let mut touched: Vec<(u64, u64)> = Vec::new();
            for &(s, e) in &req.wanted {
                if e <= s {
                    continue;
                }
                let (a, b) = (s as u64 / rows_per_chunk, (e as u64 - 1) / rows_per_chunk + 1);
                match touched.last_mut() {
                    Some(last) if last.1 >= a => last.1 = last.1.max(b),
                    _ => touched.push((a, b)),
                }
            }
            let (groups, bytes) = grouped(touched, chunk_bytes, request);
            let first_bytes: u64 = first.iter().map(|&i| req.page.buffer_sizes[i]).sum();
            // The chunk requests wait for the metadata: one more round trip.
            let sparse = first_bytes + bytes + (groups + 1) * request;
            if sparse < whole {
                Mode::MiniBlock { first }
            } else {
                Mode::Whole
            }
        }
        Some(Layout::FullZipLayout(f)) if f.bits_rep == 0 && f.bits_def <= 16 && !req.page.buffer_offsets.is_empty() => match zip_stride(f) {
            Some(stride) => {
                let (groups, bytes) = grouped(req.wanted.iter().map(|&(s, e)| (s as u64, e as u64)), stride, request);
                if bytes + groups * request < whole {
                    Mode::ZipRows { stride }
                } else {
                    Mode::Whole
                }
            }
            None => Mode::Whole,
        },
        _ => Mode::Whole,
    }
}

/// Bytes per entry of a full-zip page of fixed-width values without
/// repetition (control word + value), if it is one.
fn zip_stride(f: &FullZipLayout) -> Option<u64> {
    match f.details {
        Some(Details::BitsPerValue(bits)) if bits % 8 == 0 && bits > 0 && f.bits_rep == 0 && f.bits_def <= 16 => {
            let cw = match f.bits_def {
                0 => 0,
                1..=8 => 1,
                _ => 2,
            };
            Some(cw + bits as u64 / 8)
        }
        _ => None,
    }
}

/// The wanted entries of a fixed-stride full-zip page, back to back, from
/// `parts`: the fetched byte ranges, each starting at entry `start`.
fn join_entries(parts: &[(u64, Bytes)], wanted: &[(usize, usize)], stride: u64) -> Result<Bytes> {
    if parts.len() == 1 && wanted.len() == 1 {
        let (start, b) = &parts[0];
        let (s, e) = wanted[0];
        let (a, z) = ((s as u64 - start) * stride, (e as u64 - start) * stride);
        if z as usize > b.len() {
            return Err(Error::corrupt("full-zip rows lie outside the page buffer"));
        }
        return Ok(b.slice(a as usize..z as usize));
    }
    let mut v = Vec::with_capacity((wanted_rows(wanted) * stride) as usize);
    let mut pi = 0;
    for &(s, e) in wanted {
        while pi + 1 < parts.len() && parts[pi + 1].0 <= s as u64 {
            pi += 1;
        }
        let (start, b) = &parts[pi];
        let (a, z) = ((s as u64 - start) * stride, (e as u64 - start) * stride);
        let got = b.get(a as usize..z as usize).ok_or_else(|| Error::corrupt("full-zip rows lie outside the page buffer"))?;
        v.extend_from_slice(got);
    }
    Ok(Bytes::from(v))
}

/// Row ranges covering `wanted`, joined where the gap between them is at
/// most `gap` bytes of entries.
fn zip_groups(wanted: &[(usize, usize)], stride: u64, gap: u64) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &(s, e) in wanted {
        let (s, e) = (s as u64, e as u64);
        match out.last_mut() {
            Some(last) if (s - last.1) * stride <= gap => last.1 = e,
            _ => out.push((s, e)),
        }
    }
    out
}

/// (position, bytes, first item, items) of every chunk of a mini-block page.
fn chunk_spans(m: &MiniBlockLayout, meta: &[u8]) -> Result<Vec<(usize, usize, usize, usize)>> {
    let word_bytes = if m.has_large_chunk { 4 } else { 2 };
    if meta.len() % word_bytes != 0 {
        return Err(Error::corrupt("chunk metadata length is not a whole number of words"));
    }
    let num_items = m.num_items as usize;
    let words: Vec<u32> = meta
        .chunks_exact(word_bytes)
        .map(|c| if word_bytes == 2 { u16::from_le_bytes([c[0], c[1]]) as u32 } else { u32::from_le_bytes([c[0], c[1], c[2], c[3]]) })
        .collect();
    let mut out = Vec::with_capacity(words.len());
    let (mut pos, mut seen) = (0usize, 0usize);
    for (ci, &w) in words.iter().enumerate() {
        let bytes = ((w >> 4) as usize + 1) * 8;
        let n = if ci + 1 == words.len() {
            num_items.checked_sub(seen).ok_or_else(|| Error::corrupt("chunks hold more values than the page"))?
        } else {
            1usize << (w & 0xF)
        };
        out.push((pos, bytes, seen, n));
        pos += bytes;
        seen += n;
    }
    Ok(out)
}

/// The chunks holding `wanted` rows, as (position, bytes), in groups read
/// as one range each: a chunk joins the group before it when at most `gap`
/// bytes lie between them.
fn chunk_groups(spans: &[(usize, usize, usize, usize)], wanted: &[(usize, usize)], gap: u64) -> Vec<Vec<(usize, usize)>> {
    let mut groups: Vec<Vec<(usize, usize)>> = Vec::new();
    let mut w = wanted.iter().peekable();
    for &(pos, bytes, start, n) in spans {
        let end = start + n;
        while w.peek().is_some_and(|&&(_, we)| we <= start) {
            w.next();
        }
        if w.peek().is_none_or(|&&(ws, _)| ws >= end) {
            continue;
        }
        match groups.last_mut() {
            Some(g) if g.last().is_some_and(|&(p, b)| pos >= p + b && (pos - (p + b)) as u64 <= gap) => g.push((pos, bytes)),
            _ => groups.push(vec![(pos, bytes)]),
        }
    }
    groups
}

/// Bytes from a group's first chunk to the end of its last.
fn group_span(g: &[(usize, usize)]) -> usize {
    match (g.first(), g.last()) {
        (Some(&(s, _)), Some(&(p, b))) => p + b - s,
        _ => 0,
    }
}

/// The storage ranges of chunk `groups` of a page (chunk buffer at `base`,
/// `size` bytes).
fn group_ranges(groups: &[Vec<(usize, usize)>], base: u64, size: u64, out: &mut Vec<Range<u64>>) -> Result<()> {
    for g in groups {
        let (s, _) = g[0];
        let end = (s + group_span(g)) as u64;
        if end > size {
            return Err(Error::corrupt("mini-block chunks run past the chunk buffer"));
        }
        out.push(base + s as u64..base + end);
    }
    Ok(())
}

/// The chunks of `groups`, cut from the fetched bytes of each group.
fn cut_chunks(groups: &[Vec<(usize, usize)>], got: &mut impl Iterator<Item = Bytes>) -> Result<Vec<(usize, Bytes)>> {
    let mut chunks = Vec::new();
    for g in groups {
        let bytes = got.next().ok_or_else(|| Error::Internal { what: "fewer fetched chunk ranges than asked for".into() })?;
        let start = g[0].0;
        for &(pos, len) in g {
            chunks.push((pos, bytes.slice(pos - start..pos - start + len)));
        }
    }
    Ok(chunks)
}

/// A page's buffers with the known ones of `meta` filled in (the chunk
/// buffer left empty).
fn known_bufs(r: &PageRequest<'_>, meta: &MiniMeta) -> Vec<Bytes> {
    let mut bufs = vec![Bytes::new(); r.page.buffer_offsets.len()];
    for (i, b) in &meta.bufs {
        bufs[*i] = b.clone();
    }
    bufs
}

/// Fetch what `reqs` need with at most two storage calls (one when the
/// chunk metadata of every mini-block page read in part is known).
pub(crate) fn fetch(storage: &Storage, reqs: &[PageRequest<'_>]) -> Result<Vec<FetchedPage>> {
    let request = storage.request_cost();
    let modes: Vec<Mode> = reqs.iter().map(|r| choose(r, request)).collect();
    let range_of = |p: &Page, i: usize| p.buffer_offsets[i]..p.buffer_offsets[i] + p.buffer_sizes[i];
    // Phase 1: whole pages, mini-block metadata (+ dictionaries) or, where
    // known, chunks; full-zip rows.
    let mut ranges: Vec<Range<u64>> = Vec::new();
    let mut zip_parts: Vec<Vec<(u64, u64)>> = Vec::new();
    for (r, m) in reqs.iter().zip(&modes) {
        match m {
            Mode::Whole => ranges.extend((0..r.page.buffer_offsets.len()).map(|i| range_of(r.page, i))),
            Mode::MiniBlock { first } => ranges.extend(first.iter().map(|&i| range_of(r.page, i))),
            Mode::MiniBlockKnown { groups, .. } => group_ranges(groups, r.page.buffer_offsets[1], r.page.buffer_sizes[1], &mut ranges)?,
            Mode::ZipRows { stride } => {
                let base = r.page.buffer_offsets[0];
                let groups = zip_groups(&r.wanted, *stride, request);
                for &(s, e) in &groups {
                    let range = base + s * stride..base + e * stride;
                    if range.end > base + r.page.buffer_sizes[0] {
                        return Err(Error::corrupt("full-zip rows lie outside the page buffer"));
                    }
                    ranges.push(range);
                }
                zip_parts.push(groups);
            }
        }
    }
    let mut got = storage.read_ranges_coalesced(&ranges, request)?.into_iter();
    let mut zip_parts = zip_parts.into_iter();
    let mut out: Vec<FetchedPage> = Vec::with_capacity(reqs.len());
    // Phase 2 requests: (page index, chunk groups).
    let mut phase2: Vec<(usize, Vec<Vec<(usize, usize)>>)> = Vec::new();
    let mut ranges2: Vec<Range<u64>> = Vec::new();
    for (pi, (r, m)) in reqs.iter().zip(&modes).enumerate() {
        let mut next = || got.next().ok_or_else(|| Error::Internal { what: "fewer fetched ranges than asked for".into() });
        match m {
            Mode::Whole => {
                let bufs = (0..r.page.buffer_offsets.len()).map(|_| next()).collect::<Result<Vec<_>>>()?;
                // Keep a mini-block page's metadata for later sparse reads.
                if r.cache.mini.get().is_none() {
                    if let Some((mb, first)) = mini_first(r) {
                        let meta = MiniMeta::new(mb, first.iter().map(|&i| (i, bufs[i].clone())).collect())?;
                        let _ = r.cache.mini.set(Arc::new(meta));
                    }
                }
                out.push(whole_page(r, bufs)?);
            }
            Mode::MiniBlock { first } => {
                let mut firsts = Vec::with_capacity(first.len());
                for &i in first {
                    firsts.push((i, next()?));
                }
                let Some(Layout::MiniBlockLayout(mb)) = &r.layout.layout else { unreachable!("mode follows layout") };
                let meta = Arc::new(MiniMeta::new(mb, firsts)?);
                // (A concurrent read of the page may have kept its copy first: the same bytes.)
                let _ = r.cache.mini.set(meta.clone());
                let groups = chunk_groups(&meta.spans, &r.wanted, request);
                group_ranges(&groups, r.page.buffer_offsets[1], r.page.buffer_sizes[1], &mut ranges2)?;
                phase2.push((pi, groups));
                out.push(FetchedPage { bufs: known_bufs(r, &meta), chunks: Some(Vec::new()), zip: None });
            }
            Mode::MiniBlockKnown { meta, groups } => {
                let mut mine = (0..groups.len()).map(|_| next()).collect::<Result<Vec<_>>>()?.into_iter();
                let chunks = cut_chunks(groups, &mut mine)?;
                out.push(FetchedPage { bufs: known_bufs(r, meta), chunks: Some(chunks), zip: None });
            }
            Mode::ZipRows { stride } => {
                let groups = zip_parts.next().ok_or_else(|| Error::Internal { what: "full-zip groups out of step".into() })?;
                let parts = groups.iter().map(|&(s, _)| Ok((s, next()?))).collect::<Result<Vec<_>>>()?;
                out.push(zip_subset(r, &parts, *stride)?);
            }
        }
    }
    if !ranges2.is_empty() {
        let mut got2 = storage.read_ranges_coalesced(&ranges2, request)?.into_iter();
        for (pi, groups) in phase2 {
            let chunks = cut_chunks(&groups, &mut got2)?;
            out[pi].chunks = Some(chunks);
        }
    }
    Ok(out)
}

/// A fixed-stride full-zip page as just its wanted entries, from fetched
/// `parts` (first entry, bytes).
fn zip_subset(r: &PageRequest<'_>, parts: &[(u64, Bytes)], stride: u64) -> Result<FetchedPage> {
    let joined = join_entries(parts, &r.wanted, stride)?;
    let rows = wanted_rows(&r.wanted);
    let Some(Layout::FullZipLayout(f)) = &r.layout.layout else { unreachable!("only full-zip pages have a stride") };
    let zip = FullZipLayout { num_items: rows as u32, num_visible_items: rows as u32, ..f.clone() };
    Ok(FetchedPage { bufs: vec![joined], chunks: None, zip: Some(zip) })
}

/// A page fetched whole. A fixed-stride full-zip page of which only some
/// rows are wanted is handed on as those rows' entries, so that only they
/// are decoded.
fn whole_page(r: &PageRequest<'_>, bufs: Vec<Bytes>) -> Result<FetchedPage> {
    if let Some(Layout::FullZipLayout(f)) = &r.layout.layout {
        if let Some(stride) = zip_stride(f) {
            let partial = wanted_rows(&r.wanted) < r.page.length;
            if partial && !bufs.is_empty() {
                return zip_subset(r, &[(0, bufs[0].clone())], stride);
            }
        }
    }
    Ok(FetchedPage { bufs, chunks: None, zip: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::encodings21::full_zip_layout::Details;
    use crate::proto::encodings21::CompressiveEncoding;

    fn page(rows: u64, sizes: &[u64]) -> Page {
        let mut at = 0;
        let offsets = sizes
            .iter()
            .map(|s| {
                let o = at;
                at += s;
                o
            })
            .collect();
        Page { length: rows, buffer_offsets: offsets, buffer_sizes: sizes.to_vec(), ..Default::default() }
    }

    fn miniblock() -> PageLayout {
        let m = MiniBlockLayout { value_compression: Some(CompressiveEncoding::default()), ..Default::default() };
        PageLayout { layout: Some(Layout::MiniBlockLayout(m)) }
    }

    fn fullzip(bits: u32) -> PageLayout {
        let f = FullZipLayout { details: Some(Details::BitsPerValue(bits)), ..Default::default() };
        PageLayout { layout: Some(Layout::FullZipLayout(f)) }
    }

    fn mode(page: &Page, layout: PageLayout, wanted: Vec<(usize, usize)>, request: u64) -> &'static str {
        match choose(&PageRequest { page, layout: &layout, wanted, cache: &PageCache::default() }, request) {
            Mode::Whole => "whole",
            Mode::MiniBlock { .. } | Mode::MiniBlockKnown { .. } => "chunks",
            Mode::ZipRows { .. } => "rows",
        }
    }

    #[test]
    fn cost_model_picks_the_cheaper_fetch() {
        const LOCAL: u64 = 32 << 10;
        const REMOTE: u64 = 1 << 20;
        // 1M rows of 8 bytes in 2,000 chunks of 500 rows (4 KB each).
        let mb = page(1_000_000, &[4_000, 8_000_000]);
        assert_eq!(mode(&mb, miniblock(), vec![(0, 1_000_000)], LOCAL), "whole");
        assert_eq!(mode(&mb, miniblock(), vec![(10, 11), (600_000, 600_001)], LOCAL), "chunks");
        assert_eq!(mode(&mb, miniblock(), vec![(10, 11), (600_000, 600_001)], REMOTE), "chunks");
        // a row in every chunk: every chunk is read either way
        let every: Vec<_> = (0..2000).map(|c| (c * 500 + 7, c * 500 + 8)).collect();
        assert_eq!(mode(&mb, miniblock(), every, LOCAL), "whole");
        // the second half (a read unit sharing the page with its neighbour)
        assert_eq!(mode(&mb, miniblock(), vec![(500_000, 1_000_000)], LOCAL), "chunks");
        // a tenth of the rows, one in ten chunks: locally chunks, remotely whole
        let tenth: Vec<_> = (0..200).map(|c| (c * 5000, c * 5000 + 500)).collect();
        assert_eq!(mode(&mb, miniblock(), tenth.clone(), LOCAL), "chunks");
        assert_eq!(mode(&mb, miniblock(), tenth, REMOTE), "whole");
        // 20,000 rows of 256-byte vectors
        let fz = page(20_000, &[20_000 * 256]);
        assert_eq!(mode(&fz, fullzip(2048), vec![(5, 6), (19_000, 19_001)], LOCAL), "rows");
        assert_eq!(mode(&fz, fullzip(2048), vec![(0, 20_000)], LOCAL), "whole");
        assert_eq!(mode(&fz, fullzip(2048), vec![(10_000, 20_000)], LOCAL), "rows");
        // one row in 50 spread over the page: close rows are read through
        // in one range, which then spans the page
        let spread: Vec<_> = (0..400).map(|i| (50 * i, 50 * i + 1)).collect();
        assert_eq!(zip_groups(&spread, 256, LOCAL).len(), 1);
        // variable-width full-zip pages are read whole
        let var =
            PageLayout { layout: Some(Layout::FullZipLayout(FullZipLayout { details: Some(Details::BitsPerOffset(32)), ..Default::default() })) };
        assert_eq!(mode(&fz, var, vec![(5, 6)], LOCAL), "whole");
    }

    #[test]
    fn known_chunks_are_costed_exactly() {
        // 100 chunks of 512 rows, 1,000 bytes each
        let mb = page(51_200, &[200, 100_000]);
        let layout = miniblock();
        let spans: Vec<_> = (0..100).map(|c| (c * 1000, 1000, c * 512, 512)).collect();
        let cache = PageCache::default();
        let _ = cache.mini.set(Arc::new(MiniMeta { bufs: Vec::new(), spans: spans.clone() }));
        let choice = |wanted: Vec<(usize, usize)>| match choose(&PageRequest { page: &mb, layout: &layout, wanted, cache: &cache }, 4096) {
            Mode::MiniBlockKnown { groups, .. } => Some(groups),
            Mode::Whole => None,
            _ => panic!("metadata is known"),
        };
        // rows in chunks 0, 2 and 90: chunks 0-2 are one range (a 1,000-byte gap)
        assert_eq!(choice(vec![(5, 6), (1100, 1101), (90 * 512, 90 * 512 + 3)]), Some(vec![vec![(0, 1000), (2000, 1000)], vec![(90_000, 1000)]]));
        // a row in every chunk: whole (a sparse read would save only the metadata)
        assert_eq!(choice((0..100).map(|c| (c * 512, c * 512 + 1)).collect()), None);
        assert_eq!(chunk_groups(&spans, &[(0, 51_200)], 0).len(), 1);
        assert_eq!(chunk_groups(&spans, &[], 0).len(), 0);
    }

    #[test]
    fn full_zip_groups_and_entries() {
        // rows 0..2 and 5..6 merge when the gap (3 entries of 4 bytes) is allowed
        assert_eq!(zip_groups(&[(0, 2), (5, 6)], 4, 12), vec![(0, 6)]);
        assert_eq!(zip_groups(&[(0, 2), (5, 6)], 4, 11), vec![(0, 2), (5, 6)]);
        let bytes = Bytes::from((0u8..24).collect::<Vec<_>>());
        let joined = join_entries(&[(0, bytes.clone())], &[(0, 2), (5, 6)], 4).unwrap();
        assert_eq!(joined.as_ref(), &[0, 1, 2, 3, 4, 5, 6, 7, 20, 21, 22, 23]);
        let parts = [(0, bytes.slice(0..8)), (5, bytes.slice(20..24))];
        assert_eq!(join_entries(&parts, &[(0, 2), (5, 6)], 4).unwrap(), joined);
        assert!(join_entries(&[(0, bytes.slice(0..8))], &[(1, 3)], 4).is_err());
        assert_eq!(grouped([(0, 1), (3, 4), (100, 101)], 10, 20), (2, 50));
    }
}
