//! Fetching the page buffers a 2.1/2.2 read needs.
//!
//! Scans fetch whole pages (one coalesced request for all of them). Sparse
//! reads — takes, where a page contributes few rows — fetch only what holds
//! those rows, which is what lets a take touch about one storage range per
//! value instead of whole pages:
//!
//! * mini-block pages without repetition: first the chunk metadata (and
//!   the dictionary, if any) of every such page in one request, then only
//!   the chunks that hold wanted rows in a second request (adjacent chunks
//!   merged into one range);
//! * full-zip pages of fixed-width values without repetition: every entry
//!   has the same size (control word + value), so the wanted rows are read
//!   directly by position, in the first request;
//! * anything else (repetition, variable-width full-zip, constant and blob
//!   pages): the whole page.

use std::ops::Range;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::io::Storage;
use crate::proto::encodings21::full_zip_layout::Details;
use crate::proto::encodings21::page_layout::Layout;
use crate::proto::encodings21::{FullZipLayout, MiniBlockLayout, PageLayout};
use crate::proto::file::v2::column_metadata::Page;

/// A page is read in part when its wanted rows are fewer than this
/// fraction of its rows.
const SPARSE_FRACTION: u64 = 4;

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

fn mode_of(req: &PageRequest<'_>) -> Mode {
    let sparse = wanted_rows(&req.wanted) * SPARSE_FRACTION < req.page.length;
    if !sparse {
        return Mode::Whole;
    }
    match &req.layout.layout {
        Some(Layout::MiniBlockLayout(m)) if m.rep_compression.is_none() && req.page.buffer_offsets.len() >= 2 => {
            let mut first = vec![0];
            if m.dictionary.is_some() {
                if req.page.buffer_offsets.len() < 3 {
                    return Mode::Whole;
                }
                first.push(2);
            }
            Mode::MiniBlock { first }
        }
        Some(Layout::FullZipLayout(f)) if f.bits_rep == 0 && f.bits_def <= 16 && !req.page.buffer_offsets.is_empty() => match f.details {
            Some(Details::BitsPerValue(bits)) if bits % 8 == 0 && bits > 0 => {
                let cw = match f.bits_def {
                    0 => 0,
                    1..=8 => 1,
                    _ => 2,
                };
                Mode::ZipRows { stride: cw + bits as u64 / 8 }
            }
            _ => Mode::Whole,
        },
        _ => Mode::Whole,
    }
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
    let modes: Vec<Mode> = reqs.iter().map(mode_of).collect();
    let range_of = |p: &Page, i: usize| p.buffer_offsets[i]..p.buffer_offsets[i] + p.buffer_sizes[i];
    // Phase 1: whole pages, mini-block metadata (+ dictionaries), full-zip rows.
    let mut ranges: Vec<Range<u64>> = Vec::new();
    for (r, m) in reqs.iter().zip(&modes) {
        match m {
            Mode::Whole => ranges.extend((0..r.page.buffer_offsets.len()).map(|i| range_of(r.page, i))),
            Mode::MiniBlock { first } => ranges.extend(first.iter().map(|&i| range_of(r.page, i))),
            Mode::ZipRows { stride } => {
                let base = r.page.buffer_offsets[0];
                for &(s, e) in &r.wanted {
                    let range = base + s as u64 * stride..base + e as u64 * stride;
                    if range.end > base + r.page.buffer_sizes[0] {
                        return Err(Error::corrupt("full-zip rows lie outside the page buffer"));
                    }
                    ranges.push(range);
                }
            }
        }
    }
    let mut got = storage.read_ranges(&ranges)?.into_iter();
    let mut out: Vec<FetchedPage> = Vec::with_capacity(reqs.len());
    // Phase 2 requests: (page index, chunk groups: (first chunk position, [(position, bytes)])).
    let mut phase2: Vec<(usize, Vec<Vec<(usize, usize)>>)> = Vec::new();
    let mut ranges2: Vec<Range<u64>> = Vec::new();
    for (pi, (r, m)) in reqs.iter().zip(&modes).enumerate() {
        let mut next = || got.next().ok_or_else(|| Error::Internal { what: "fewer fetched ranges than asked for".into() });
        match m {
            Mode::Whole => {
                let bufs = (0..r.page.buffer_offsets.len()).map(|_| next()).collect::<Result<Vec<_>>>()?;
                out.push(FetchedPage { bufs, chunks: None, zip: None });
            }
            Mode::MiniBlock { first } => {
                let mut bufs = vec![Bytes::new(); r.page.buffer_offsets.len()];
                for &i in first {
                    bufs[i] = next()?;
                }
                let Some(Layout::MiniBlockLayout(mb)) = &r.layout.layout else { unreachable!("mode follows layout") };
                let spans = chunk_spans(mb, &bufs[0])?;
                let mut groups: Vec<Vec<(usize, usize)>> = Vec::new();
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
                        Some(g) if g.last().is_some_and(|&(p, b)| p + b == pos) => g.push((pos, bytes)),
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
                let parts = r.wanted.iter().map(|_| next()).collect::<Result<Vec<_>>>()?;
                let rows = wanted_rows(&r.wanted);
                let joined = if parts.len() == 1 {
                    parts.into_iter().next().expect("one part")
                } else {
                    let mut v = Vec::with_capacity((rows * stride) as usize);
                    parts.iter().for_each(|p| v.extend_from_slice(p));
                    Bytes::from(v)
                };
                let Some(Layout::FullZipLayout(f)) = &r.layout.layout else { unreachable!("mode follows layout") };
                let zip = FullZipLayout { num_items: rows as u32, num_visible_items: rows as u32, ..f.clone() };
                out.push(FetchedPage { bufs: vec![joined], chunks: None, zip: Some(zip) });
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
