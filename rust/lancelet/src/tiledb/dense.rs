//! Dense reads tile by tile: the plan of which space tiles a read needs and
//! which part of each it copies where, and the copy itself.
//!
//! A dense fragment stores the space tiles covering its non-empty domain in
//! tile order, each a whole `extent × ... × extent` block of cells in cell
//! order (cells outside the non-empty domain hold fills). The output of a
//! read is the subarray (per dimension a list of inclusive ranges) in row-
//! or column-major order. For every fragment, oldest first, and every tile
//! of it meeting both the subarray and the fragment's non-empty domain, the
//! plan keeps, per dimension, the runs where the tile's cells and the
//! output's coordinates advance together ([`Seg`]). A column is then read by
//! decoding a fragment's tiles in parallel (rayon, a few tiles in flight per
//! thread, each decoded into a buffer the thread reuses) and copying each
//! run into place: one `memcpy` per run along the output's fastest
//! dimension when the cell order agrees with the output order, cell by cell
//! otherwise. A tile the read needs only part of has only the filter
//! chunks (64 KiB as TileDB writes them) holding that part decoded.
//! Newer fragments overwrite older ones because fragments are
//! copied one after another; tiles a newer fragment's non-empty domain
//! wholly hides are not read at all. Cells no fragment wrote keep the fill
//! value.
//!
//! Var-sized attributes and reads with a filter go through the per-cell
//! source lists of `read.rs` instead.

use rayon::prelude::*;

use super::array::TileDbArray;
use super::cells::{dense_int_ranges, next_index, strides, DimRanges, Order};
use super::datatype::Datatype;
use super::filters::TileKind;
use super::schema::{int_value, Layout};
use super::tiles::{read_tiles, ColumnSpec};
use crate::error::{Error, Result};

/// Most cells in one dense tile (the product of the tile extents): a tile
/// is decoded whole into memory, and larger extents come only from a
/// corrupt schema in practice (TileDB's own tiles are far smaller).
const MAX_TILE_CELLS: u128 = 1 << 34;

/// Output cells of one dimension that a tile supplies: `len` coordinates
/// from output position `out` (along that dimension) and tile cell `cell`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seg {
    pub(crate) out: usize,
    pub(crate) cell: usize,
    pub(crate) len: usize,
}

/// One tile a read copies from.
#[derive(Debug, Clone)]
pub(crate) struct TileJob {
    /// Index of the tile in its fragment (tile order).
    pub(crate) tile: usize,
    /// Per dimension, the runs it supplies.
    pub(crate) segs: Vec<Vec<Seg>>,
}

/// A dense read's geometry.
#[derive(Debug, Clone)]
pub(crate) struct DensePlan {
    pub(crate) order: Order,
    /// Per dimension, the subarray's ranges in output order.
    pub(crate) ranges: Vec<Vec<(i128, i128)>>,
    /// Per dimension, the number of output coordinates.
    pub(crate) lens: Vec<usize>,
    /// Output position step per dimension.
    pub(crate) ostride: Vec<usize>,
    /// Cell step inside a tile per dimension.
    pub(crate) cstride: Vec<usize>,
    /// Tile extent per dimension.
    pub(crate) ext: Vec<usize>,
    pub(crate) cells_per_tile: usize,
    /// Output cells.
    pub(crate) total: usize,
    /// Per fragment (array order), the tiles to copy.
    pub(crate) jobs: Vec<Vec<TileJob>>,
    /// Per fragment, its number of tiles.
    pub(crate) frag_tiles: Vec<usize>,
    /// Whether every output cell lies in some fragment's non-empty domain
    /// (no fill needed).
    pub(crate) covered: bool,
}

impl DensePlan {
    /// The output's fastest-moving dimension.
    fn fast_dim(&self) -> usize {
        if self.order == Order::ColMajor {
            0
        } else {
            self.lens.len() - 1
        }
    }

    /// The tile cells `job` copies, as sorted disjoint intervals in cell
    /// order; `None` when it copies every cell of the tile.
    fn wanted_cells(&self, job: &TileJob) -> Option<Vec<(usize, usize)>> {
        let nd = self.ext.len();
        let whole = (0..nd).all(|d| {
            let mut covered = vec![false; self.ext[d]];
            job.segs[d].iter().for_each(|s| covered[s.cell..s.cell + s.len].iter_mut().for_each(|c| *c = true));
            covered.iter().all(|c| *c)
        });
        if whole {
            return None;
        }
        let fc = (0..nd).find(|&d| self.cstride[d] == 1 && self.ext[d] > 1).unwrap_or(nd - 1);
        let others: Vec<Vec<usize>> = (0..nd)
            .filter(|&d| d != fc)
            .map(|d| job.segs[d].iter().flat_map(|s| (s.cell..s.cell + s.len).map(move |c| c * self.cstride[d])).collect())
            .collect();
        let mut iv = Vec::new();
        let mut idx = vec![0usize; others.len()];
        loop {
            let base: usize = others.iter().zip(&idx).map(|(o, &i)| o[i]).sum();
            for s in &job.segs[fc] {
                iv.push((base + s.cell * self.cstride[fc], base + (s.cell + s.len) * self.cstride[fc]));
            }
            if !next_index(&mut idx, |k| others[k].len()) {
                break;
            }
        }
        iv.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(iv.len());
        for (a, b) in iv {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        Some(merged)
    }

    /// Data tiles of all fragments, and those the read copies from.
    pub(crate) fn tile_counts(&self) -> (usize, usize) {
        (self.frag_tiles.iter().sum(), self.jobs.iter().map(|j| j.len()).sum())
    }
}

/// Integer box of one fragment's non-empty domain.
fn ned_box(array: &TileDbArray, f: usize) -> Result<Option<Vec<(i128, i128)>>> {
    let schema = &array.schema;
    let Some(ned) = &array.fragments[f].nonempty else { return Ok(None) };
    let mut out = Vec::new();
    for (d, dim) in schema.dims.iter().enumerate() {
        let lo = int_value(dim.datatype, &ned[d].0).ok_or_else(|| Error::corrupt("non-integer dense non-empty domain"))?;
        let hi = int_value(dim.datatype, &ned[d].1).ok_or_else(|| Error::corrupt("non-integer dense non-empty domain"))?;
        out.push((lo, hi));
    }
    Ok(Some(out))
}

/// Whether every cell of the region (per dimension, the coordinates the
/// segments cover) lies in one of `boxes`. Decided on the grid the region's
/// and boxes' bounds cut the space into; regions needing more than a
/// million grid cells are reported as not covered (the tile is read).
fn region_covered(region: &[Vec<(i128, i128)>], boxes: &[&Vec<(i128, i128)>]) -> bool {
    if boxes.is_empty() {
        return false;
    }
    let nd = region.len();
    // Per dimension, elementary intervals of the region's coordinates.
    let mut cuts: Vec<Vec<(i128, i128)>> = Vec::with_capacity(nd);
    let mut cells = 1usize;
    for d in 0..nd {
        let mut pts: Vec<i128> = Vec::new();
        for &(lo, hi) in &region[d] {
            pts.push(lo);
            pts.push(hi + 1);
        }
        for b in boxes {
            pts.push(b[d].0);
            pts.push(b[d].1 + 1);
        }
        pts.sort_unstable();
        pts.dedup();
        let mut iv = Vec::new();
        for w in pts.windows(2) {
            let (lo, hi) = (w[0], w[1] - 1);
            if region[d].iter().any(|&(a, b)| a <= lo && hi <= b) {
                iv.push((lo, hi));
            }
        }
        cells = cells.saturating_mul(iv.len());
        cuts.push(iv);
    }
    if cells == 0 {
        return true;
    }
    if cells > 1_000_000 {
        return false;
    }
    let mut idx = vec![0usize; nd];
    loop {
        let inside = boxes.iter().any(|b| (0..nd).all(|d| b[d].0 <= cuts[d][idx[d]].0 && cuts[d][idx[d]].1 <= b[d].1));
        if !inside {
            return false;
        }
        let mut d = nd;
        loop {
            if d == 0 {
                return true;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < cuts[d].len() {
                break;
            }
            idx[d] = 0;
        }
    }
}

impl TileDbArray {
    /// Plan a dense read of `sub` (normalized) in `order`.
    pub(crate) fn dense_plan(&self, sub: &[Option<DimRanges>], order: Order) -> Result<DensePlan> {
        let schema = &self.schema;
        let nd = schema.dims.len();
        let order = if order == Order::Unordered { Order::RowMajor } else { order };
        let (dom, ext) = self.dense_domain_and_extents()?;
        let ranges = dense_int_ranges(&dom, sub)?;
        let mut lens = Vec::new();
        for (d, r) in ranges.iter().enumerate() {
            let len: i128 = r.iter().map(|(a, b)| b - a + 1).sum();
            if len > (1 << 32) {
                return Err(Error::invalid_input(format!("subarray on {} has {len} cells; read a smaller subarray", schema.dims[d].name)));
            }
            lens.push(len as usize);
        }
        let total: u128 = lens.iter().map(|&l| l as u128).product();
        if total > (1u128 << 34) {
            return Err(Error::invalid_input(format!("the read would return {total} cells; read a smaller subarray")));
        }
        let ostride = strides(lens.iter().copied(), order == Order::ColMajor);
        let cells_per_tile = ext
            .iter()
            .try_fold(1u128, |acc, &e| acc.checked_mul(e as u128))
            .filter(|&n| n <= MAX_TILE_CELLS)
            .ok_or_else(|| Error::unsupported(format!("tile extents {ext:?} make tiles of more than {MAX_TILE_CELLS} cells")))?
            as usize;
        let cstride = strides(ext.iter().map(|&e| e as usize), schema.cell_order == Layout::ColMajor);
        let boxes: Vec<Option<Vec<(i128, i128)>>> = (0..self.fragments.len()).map(|f| ned_box(self, f)).collect::<Result<_>>()?;
        let covered = boxes.iter().flatten().any(|b| (0..nd).all(|d| ranges[d].iter().all(|&(lo, hi)| b[d].0 <= lo && hi <= b[d].1)));
        let mut jobs = Vec::new();
        let mut frag_tiles = Vec::new();
        for (f, frag) in self.fragments.iter().enumerate() {
            let Some(nb) = &boxes[f] else {
                jobs.push(Vec::new());
                frag_tiles.push(0);
                continue;
            };
            let mut tlo = Vec::new();
            let mut ntiles = Vec::new();
            for d in 0..nd {
                let (lo, hi) = nb[d];
                if lo > hi || lo < dom[d].0 || hi > dom[d].1 {
                    return Err(Error::corrupt(format!("fragment {} non-empty domain {lo}..{hi} outside the domain", frag.name)));
                }
                let a = (lo - dom[d].0) / ext[d];
                tlo.push(a);
                ntiles.push(((hi - dom[d].0) / ext[d] - a + 1) as usize);
            }
            let tstride = strides(ntiles.iter().copied(), schema.tile_order == Layout::ColMajor);
            frag_tiles.push(ntiles.iter().product());
            let newer: Vec<&Vec<(i128, i128)>> = boxes[f + 1..].iter().flatten().collect();
            // Per dimension: the tiles (relative index) meeting the read,
            // with their runs and their coordinate ranges.
            let mut per_dim: Vec<Vec<(usize, Vec<Seg>, Vec<(i128, i128)>)>> = Vec::new();
            for d in 0..nd {
                let mut v = Vec::new();
                for rel in 0..ntiles[d] {
                    let t_lo = dom[d].0 + (tlo[d] + rel as i128) * ext[d];
                    let (lo, hi) = (t_lo.max(nb[d].0), (t_lo + ext[d] - 1).min(nb[d].1));
                    let mut segs = Vec::new();
                    let mut coords = Vec::new();
                    let mut pos = 0usize;
                    for &(a, b) in &ranges[d] {
                        let (s, e) = (a.max(lo), b.min(hi));
                        if s <= e {
                            segs.push(Seg { out: pos + (s - a) as usize, cell: (s - t_lo) as usize, len: (e - s + 1) as usize });
                            coords.push((s, e));
                        }
                        pos += (b - a + 1) as usize;
                    }
                    if !segs.is_empty() {
                        v.push((rel, segs, coords));
                    }
                }
                per_dim.push(v);
            }
            let mut fj = Vec::new();
            if per_dim.iter().all(|v| !v.is_empty()) {
                let mut idx = vec![0usize; nd];
                loop {
                    let region: Vec<Vec<(i128, i128)>> = (0..nd).map(|d| per_dim[d][idx[d]].2.clone()).collect();
                    if !region_covered(&region, &newer) {
                        let tile = (0..nd).map(|d| per_dim[d][idx[d]].0 * tstride[d]).sum();
                        fj.push(TileJob { tile, segs: (0..nd).map(|d| per_dim[d][idx[d]].1.clone()).collect() });
                    }
                    if !next_index(&mut idx, |d| per_dim[d].len()) {
                        break;
                    }
                }
            }
            jobs.push(fj);
        }
        let ext = ext.iter().map(|&e| e as usize).collect();
        Ok(DensePlan { order, ranges, lens, ostride, cstride, ext, cells_per_tile, total: total as usize, jobs, frag_tiles, covered })
    }

    /// Read a fixed-size attribute column over `plan`: the cell bytes in
    /// output order and, for nullable attributes, one validity byte per
    /// cell.
    pub(crate) fn dense_fixed_column(&self, plan: &DensePlan, col: &ColumnSpec, fill: &[u8], fill_valid: bool) -> Result<(Vec<u8>, Option<Vec<u8>>)> {
        let cs = col.cell_size();
        if fill.len() != cs {
            return Err(Error::corrupt(format!("fill value of {} is {} bytes, cells are {cs}", col.name, fill.len())));
        }
        let n = plan.total;
        let mut values = filled(n, fill, plan.covered);
        let mut validity = if col.nullable { Some(filled(n, &[fill_valid as u8], plan.covered)) } else { None };
        let out = OutPtr { ptr: values.as_mut_ptr(), len: values.len() };
        let vout = validity.as_mut().map(|v| OutPtr { ptr: v.as_mut_ptr(), len: v.len() });
        let threads = crate::process::pool().current_num_threads().max(1);
        for (f, frag) in self.fragments.iter().enumerate() {
            let jobs = &plan.jobs[f];
            if jobs.is_empty() {
                continue;
            }
            let ctx = |e: Error, file: &str| e.in_file(&format!("{}/__fragments/{}/{file}", self.uri(), frag.name));
            let locs = frag.tiles(col.slot).map_err(|e| ctx(e, "__fragment_metadata.tdb"))?;
            let vlocs = if col.nullable { Some(frag.validity_tiles(col.slot).map_err(|e| ctx(e, "__fragment_metadata.tdb"))?) } else { None };
            let loc = |locs: &[super::fragment::TileLoc], t: usize, what: &str| {
                locs.get(t).copied().ok_or_else(|| Error::corrupt(format!("{what} of column {} has {} tiles, tile {t} wanted", col.name, locs.len())))
            };
            // Groups of tiles read with one request each: about four per
            // thread, at most 16 MiB of stored bytes.
            let total_bytes: u64 = jobs.iter().map(|j| loc(&locs, j.tile, "tile offsets").map(|l| l.size)).sum::<Result<u64>>()?;
            let target = (total_bytes / (4 * threads as u64)).clamp(256 << 10, 16 << 20);
            let mut groups: Vec<&[TileJob]> = Vec::new();
            let (mut start, mut acc) = (0usize, 0u64);
            for (i, j) in jobs.iter().enumerate() {
                acc += loc(&locs, j.tile, "tile offsets")?.size;
                if acc >= target || i + 1 == jobs.len() {
                    groups.push(&jobs[start..=i]);
                    start = i + 1;
                    acc = 0;
                }
            }
            let file = format!("{}.tdb", col.stem);
            let vfile = format!("{}_validity.tdb", col.stem);
            let max_len = plan.cells_per_tile.saturating_mul(cs);
            let kind = TileKind { datatype: col.datatype, cell_size: cs, version: frag.version, var_strings: false, max_len };
            let vkind = TileKind { datatype: Datatype::UInt8, cell_size: 1, version: frag.version, var_strings: false, max_len: plan.cells_per_tile };
            crate::process::install(|| {
                groups.par_iter().try_for_each(|group| -> Result<()> {
                    let want: Vec<_> = group.iter().map(|j| loc(&locs, j.tile, "tile offsets")).collect::<Result<_>>()?;
                    let raw = read_tiles(self, frag, &file, &want)?;
                    let vraw = match &vlocs {
                        Some(vl) => {
                            let want: Vec<_> = group.iter().map(|j| loc(vl, j.tile, "validity tile offsets")).collect::<Result<_>>()?;
                            Some(read_tiles(self, frag, &vfile, &want)?)
                        }
                        None => None,
                    };
                    SCRATCH.with(|cell| -> Result<()> {
                        let mut buf = cell.borrow_mut();
                        for (i, job) in group.iter().enumerate() {
                            let t = job.tile;
                            // A tile the read needs only part of has only the
                            // chunks holding that part decoded.
                            let wanted = plan.wanted_cells(job);
                            let decode =
                                |pipeline: &super::filters::FilterPipeline, raw: &[u8], kind: TileKind, w: usize, buf: &mut Vec<u8>| match &wanted {
                                    None => pipeline.unfilter_into(raw, kind, buf),
                                    Some(iv) => {
                                        let hit = |r: std::ops::Range<usize>| {
                                            let (c0, c1) = (r.start / w, r.end.div_ceil(w));
                                            let k = iv.partition_point(|&(_, e)| e <= c0);
                                            k < iv.len() && iv[k].0 < c1
                                        };
                                        pipeline.unfilter_wanted(raw, kind, &hit, buf)
                                    }
                                };
                            decode(&col.filters, &raw[i], kind, cs, &mut buf).map_err(|e| ctx(e.context(format!("tile {t}")), &file))?;
                            if buf.len() != plan.cells_per_tile * cs {
                                return Err(ctx(
                                    Error::corrupt(format!("tile {t} holds {} bytes for {} cells of {cs} bytes", buf.len(), plan.cells_per_tile)),
                                    &file,
                                ));
                            }
                            copy_tile(plan, &job.segs, &buf, cs, &out)?;
                            if let (Some(vraw), Some(vout)) = (&vraw, &vout) {
                                decode(&self.schema.validity_filters, &vraw[i], vkind, 1, &mut buf)
                                    .map_err(|e| ctx(e.context(format!("tile {t}")), &vfile))?;
                                if buf.len() != plan.cells_per_tile {
                                    return Err(ctx(
                                        Error::corrupt(format!("validity tile {t} holds {} bytes for {} cells", buf.len(), plan.cells_per_tile)),
                                        &vfile,
                                    ));
                                }
                                copy_tile(plan, &job.segs, &buf, 1, vout)?;
                            }
                        }
                        Ok(())
                    })
                })
            })?;
        }
        Ok((values, validity))
    }

    /// The values of dimension `d` for every output cell of `plan`.
    pub(crate) fn dense_dim_column(&self, plan: &DensePlan, d: usize) -> Vec<u8> {
        let w = self.schema.dims[d].datatype.size();
        let mut block = Vec::with_capacity(plan.ostride[d] * plan.lens[d] * w);
        for &(a, b) in &plan.ranges[d] {
            for x in a..=b {
                let bytes = &(x as i64).to_le_bytes()[..w];
                for _ in 0..plan.ostride[d] {
                    block.extend_from_slice(bytes);
                }
            }
        }
        repeat_to(block, plan.total * w)
    }
}

/// `block` repeated until `len` bytes (a multiple of its length).
fn repeat_to(mut v: Vec<u8>, len: usize) -> Vec<u8> {
    if v.is_empty() || v.len() >= len {
        v.truncate(len);
        return v;
    }
    v.reserve(len - v.len());
    while v.len() < len {
        let take = v.len().min(len - v.len());
        v.extend_from_within(..take);
    }
    v
}

/// `n` cells of `fill`, or zeroed memory when every cell will be written.
fn filled(n: usize, fill: &[u8], covered: bool) -> Vec<u8> {
    if covered || fill.iter().all(|&b| b == 0) {
        vec![0u8; n * fill.len()]
    } else {
        repeat_to(fill.to_vec(), n * fill.len())
    }
}

thread_local! {
    /// Each thread's buffer for decoded tiles.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The output buffer, written by several threads at once.
struct OutPtr {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer outlives the parallel copy (it is owned by the caller
// of `dense_fixed_column`, which waits for every task), and tasks write
// disjoint bytes: the tiles of one fragment are disjoint space tiles and
// every output cell has one coordinate, so lies in exactly one of them;
// fragments are copied one after another.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

impl OutPtr {
    /// Copy `src` to byte `at` (checked against the buffer's length).
    fn put(&self, at: usize, src: &[u8]) -> Result<()> {
        if at.checked_add(src.len()).is_none_or(|e| e > self.len) {
            return Err(Error::Internal { what: format!("dense copy of {} bytes at {at} past {}", src.len(), self.len) });
        }
        // SAFETY: in bounds (checked above); see the Send/Sync note for why
        // no other thread writes these bytes.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(at), src.len()) };
        Ok(())
    }
}

/// Copy one decoded tile's cells (`cs` bytes each) into the output.
fn copy_tile(plan: &DensePlan, segs: &[Vec<Seg>], tile: &[u8], cs: usize, out: &OutPtr) -> Result<()> {
    let nd = segs.len();
    let fast = plan.fast_dim();
    // Output and tile offsets of every coordinate of the other dimensions.
    let others: Vec<Vec<(usize, usize)>> = (0..nd)
        .filter(|&d| d != fast)
        .map(|d| segs[d].iter().flat_map(|s| (0..s.len).map(move |k| ((s.out + k) * plan.ostride[d], (s.cell + k) * plan.cstride[d]))).collect())
        .collect();
    let (os, cst) = (plan.ostride[fast], plan.cstride[fast]);
    let src = |c: usize, n: usize| -> Result<&[u8]> {
        tile.get(c * cs..(c + n) * cs)
            .ok_or_else(|| Error::Internal { what: format!("dense copy reads tile cells {c}..{} of {}", c + n, tile.len() / cs.max(1)) })
    };
    let mut idx = vec![0usize; others.len()];
    loop {
        let (mut ob, mut cb) = (0usize, 0usize);
        for (k, o) in others.iter().enumerate() {
            ob += o[idx[k]].0;
            cb += o[idx[k]].1;
        }
        for s in &segs[fast] {
            let (o, c) = (ob + s.out * os, cb + s.cell * cst);
            if os == 1 && cst == 1 {
                out.put(o * cs, src(c, s.len)?)?;
            } else {
                for k in 0..s.len {
                    out.put((o + k * os) * cs, src(c + k * cst, 1)?)?;
                }
            }
        }
        let mut k = others.len();
        loop {
            if k == 0 {
                return Ok(());
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < others[k].len() {
                break;
            }
            idx[k] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeat_fills_whole_blocks() {
        assert_eq!(repeat_to(vec![1, 2], 7), vec![1, 2, 1, 2, 1, 2, 1]);
        assert_eq!(repeat_to(vec![1, 2, 3], 3), vec![1, 2, 3]);
        assert_eq!(filled(3, &[0, 1], false), vec![0, 1, 0, 1, 0, 1]);
        assert_eq!(filled(2, &[7], true), vec![0, 0]);
    }

    #[test]
    fn coverage_by_boxes() {
        let a = vec![(0, 4), (0, 4)];
        let b = vec![(5, 9), (0, 9)];
        let region = vec![vec![(2, 7)], vec![(1, 3)]];
        assert!(region_covered(&region, &[&a, &b]));
        assert!(!region_covered(&region, &[&a]));
        assert!(!region_covered(&region, &[]));
        // Two separate ranges on one dimension, the gap between uncovered.
        let region = vec![vec![(0, 1), (8, 9)], vec![(0, 0)]];
        let c = vec![(0, 2), (0, 0)];
        let e = vec![(7, 9), (0, 0)];
        assert!(region_covered(&region, &[&c, &e]));
        assert!(!region_covered(&region, &[&c]));
    }
}
