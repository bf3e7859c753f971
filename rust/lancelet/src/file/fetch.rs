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
//! Decoding follows the fetch: a full-zip page read whole for a few rows
//! hands only those rows' entries to the decoder.

use std::ops::Range;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::io::Storage;
use crate::proto::encodings21::full_zip_layout::Details;
use crate::proto::encodings21::page_layout::Layout;
use crate::proto::encodings21::{FullZipLayout, MiniBlockLayout, PageLayout};
use crate::proto::file::v2::column_metadata::Page;

/// One page to read: its metadata, parsed layout and wanted rows (sorted,
/// relative to the page).
pub(crate) struct PageRequest<'a> {
    pub page: &'a Page,
    pub layout: PageLayout,
    pub wanted: Vec<(usize, usize)>,
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
    /// Buffers fetched first: indices into the page's buffers.
    MiniBlock { first: Vec<usize> },
    /// Bytes per entry.
    ZipRows { stride: u64 },
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
    let whole = page_bytes(req.page) + request;
    match &req.layout.layout {
        Some(Layout::MiniBlockLayout(m)) if m.rep_compression.is_none() && req.page.buffer_offsets.len() >= 2 => {
            let mut first = vec![0];
            if m.dictionary.is_some() {
                if req.page.buffer_offsets.len() < 3 {
                    return Mode::Whole;
                }
                first.push(2);
            }
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
        Some(Layout::FullZipLayout(f)) if f.bits_rep == 0 && f.bits_def <= 16 && !req.page.buffer_offsets.is_empty() => {
            match zip_stride(f) {
                Some(stride) => {
                    let (groups, bytes) = grouped(req.wanted.iter().map(|&(s, e)| (s as u64, e as u64)), stride, request);
                    if bytes + groups * request < whole {
                        Mode::ZipRows { stride }
                    } else {
                        Mode::Whole
                    }
                }
                None => Mode::Whole,
            }
        }
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

/// Fetch what `reqs` need with at most two storage calls.
pub(crate) fn fetch(storage: &Storage, reqs: &[PageRequest<'_>]) -> Result<Vec<FetchedPage>> {
    let request = storage.request_cost();
    let modes: Vec<Mode> = reqs.iter().map(|r| choose(r, request)).collect();
    let range_of = |p: &Page, i: usize| p.buffer_offsets[i]..p.buffer_offsets[i] + p.buffer_sizes[i];
    // Phase 1: whole pages, mini-block metadata (+ dictionaries), full-zip rows.
    let mut ranges: Vec<Range<u64>> = Vec::new();
    let mut zip_parts: Vec<Vec<(u64, u64)>> = Vec::new();
    for (r, m) in reqs.iter().zip(&modes) {
        match m {
            Mode::Whole => ranges.extend((0..r.page.buffer_offsets.len()).map(|i| range_of(r.page, i))),
            Mode::MiniBlock { first } => ranges.extend(first.iter().map(|&i| range_of(r.page, i))),
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
    let mut got = storage.read_ranges(&ranges)?.into_iter();
    let mut zip_parts = zip_parts.into_iter();
    let mut out: Vec<FetchedPage> = Vec::with_capacity(reqs.len());
    // Phase 2 requests: (page index, chunk groups: (first chunk position, [(position, bytes)])).
    let mut phase2: Vec<(usize, Vec<Vec<(usize, usize)>>)> = Vec::new();
    let mut ranges2: Vec<Range<u64>> = Vec::new();
    for (pi, (r, m)) in reqs.iter().zip(&modes).enumerate() {
        let mut next = || got.next().ok_or_else(|| Error::Internal { what: "fewer fetched ranges than asked for".into() });
        match m {
            Mode::Whole => {
                let bufs = (0..r.page.buffer_offsets.len()).map(|_| next()).collect::<Result<Vec<_>>>()?;
                out.push(whole_page(r, bufs)?);
            }
            Mode::MiniBlock { first } => {
                let mut bufs = vec![Bytes::new(); r.page.buffer_offsets.len()];
                for &i in first {
                    bufs[i] = next()?;
                }
                let Some(Layout::MiniBlockLayout(mb)) = &r.layout.layout else { unreachable!("mode follows layout") };
                let spans = chunk_spans(mb, &bufs[0])?;
                let mut groups: Vec<Vec<(usize, usize)>> = Vec::new();
                // (end of the last group's chunks; a chunk within `request`
                // bytes of it is read in the same range)
                let mut w = r.wanted.iter().peekable();
                for &(pos, bytes, start, n) in &spans {
                    let end = start + n;
                    while w.peek().is_some_and(|&&(_, we)| we <= start) {
                        w.next();
                    }
                    if !w.peek().is_some_and(|&&(ws, _)| ws < end) {
                        continue;
                    }
                    match groups.last_mut() {
                        Some(g) if g.last().is_some_and(|&(p, b)| pos >= p + b && (pos - (p + b)) as u64 <= request) => g.push((pos, bytes)),
                        _ => groups.push(vec![(pos, bytes)]),
                    }
                }
                let base = r.page.buffer_offsets[1];
                let size = r.page.buffer_sizes[1];
                for g in &groups {
                    let (s, _) = g[0];
                    let (lp, lb) = *g.last().expect("non-empty group");
                    if (lp + lb) as u64 > size {
                        return Err(Error::corrupt("mini-block chunks run past the chunk buffer"));
                    }
                    ranges2.push(base + s as u64..base + (lp + lb) as u64);
                }
                phase2.push((pi, groups));
                out.push(FetchedPage { bufs, chunks: Some(Vec::new()), zip: None });
            }
            Mode::ZipRows { stride } => {
                let groups = zip_parts.next().ok_or_else(|| Error::Internal { what: "full-zip groups out of step".into() })?;
                let parts = groups.iter().map(|&(s, _)| Ok((s, next()?))).collect::<Result<Vec<_>>>()?;
                out.push(zip_subset(r, &parts, *stride)?);
            }
        }
    }
    if !ranges2.is_empty() {
        let mut got2 = storage.read_ranges(&ranges2)?.into_iter();
        for (pi, groups) in phase2 {
            let chunks = out[pi].chunks.as_mut().expect("mini-block page");
            for g in groups {
                let bytes = got2.next().ok_or_else(|| Error::Internal { what: "fewer fetched chunk ranges than asked for".into() })?;
                let start = g[0].0;
                for (pos, len) in g {
                    chunks.push((pos, bytes.slice(pos - start..pos - start + len)));
                }
            }
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
        match choose(&PageRequest { page, layout, wanted }, request) {
            Mode::Whole => "whole",
            Mode::MiniBlock { .. } => "chunks",
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
        let var = PageLayout {
            layout: Some(Layout::FullZipLayout(FullZipLayout { details: Some(Details::BitsPerOffset(32)), ..Default::default() })),
        };
        assert_eq!(mode(&fz, var, vec![(5, 6)], LOCAL), "whole");
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
