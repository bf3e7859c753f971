//! Streaming reads (`to_batches`): the subarray is cut into slabs along
//! the read's major dimension (the first for "C" and for "U" on row-major
//! tile order, the last for "F" and "U" on col-major tile order), each slab
//! is resolved over every fragment on its own, and its cells are handed out
//! in batches of `batch_size` rows. At most one slab's cells (and the tiles
//! it meets) are in memory at a time.
//!
//! Slabs hold about `batch_size` cells: dense slabs count exactly (a run
//! of selected coordinates of the major dimension times the selected cells
//! across it); sparse slabs are cut where R-tree data tiles end on the
//! major dimension, each tile counted once at its upper bound, so a tile is
//! mostly decoded by one slab. Cutting along the major dimension only keeps
//! "C" and "F" results in exactly the order of one whole read; in "U" order
//! the cells of each slab follow TileDB's global order. Hilbert-ordered
//! "U" reads are one slab (no dimension orders them).

use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::array::TileDbArray;
use super::cells::{dense_domain_and_extents, dense_int_ranges, normalize_subarray, output_schema, Bound, DimRanges, Order, ReadOptions};
use super::regions::{clip, cmp_b, successor, to_bound};
use super::schema::Layout;
use crate::error::{Error, Result};

/// Batches of a read, slab by slab.
pub struct BatchStream {
    array: Arc<TileDbArray>,
    opts: ReadOptions,
    slabs: VecDeque<Vec<Option<DimRanges>>>,
    current: Option<(RecordBatch, usize)>,
    batch_size: usize,
    schema: SchemaRef,
}

impl TileDbArray {
    /// The dimension a read in `order` is cut along (None: not cut).
    fn major_dim(&self, order: Order) -> Option<usize> {
        let nd = self.schema.dims.len();
        match order {
            Order::RowMajor => Some(0),
            Order::ColMajor => Some(nd - 1),
            Order::Unordered if !self.schema.sparse => Some(0),
            Order::Unordered if self.schema.cell_order == Layout::Hilbert => None,
            Order::Unordered if self.schema.tile_order == Layout::ColMajor => Some(nd - 1),
            Order::Unordered => Some(0),
        }
    }

    /// Cut the read of `sub` into slabs of about `target` cells.
    pub fn plan_slabs(&self, sub: &[Option<DimRanges>], order: Order, target: usize) -> Result<Vec<Vec<Option<DimRanges>>>> {
        let sub = normalize_subarray(&self.schema, sub)?;
        let Some(m) = self.major_dim(order) else {
            return Ok(vec![sub]);
        };
        let target = target.max(1) as u128;
        if self.schema.sparse {
            return self.sparse_slabs(&sub, m, target);
        }
        // Dense: runs of selected coordinates along m.
        let (dom, _) = dense_domain_and_extents(&self.schema)?;
        let mut ranges = dense_int_ranges(&dom, &sub)?;
        let lens: Vec<u128> = ranges.iter().map(|r| r.iter().map(|(a, b)| (b - a + 1) as u128).sum()).collect();
        let ranges_m = std::mem::take(&mut ranges[m]);
        let across: u128 = lens.iter().enumerate().filter(|(d, _)| *d != m).map(|(_, l)| *l).product::<u128>().max(1);
        let per = (target / across).max(1) as i128;
        let mut slabs = Vec::new();
        let mut cur: DimRanges = Vec::new();
        let mut room = per;
        for (a, b) in ranges_m {
            let mut x = a;
            while x <= b {
                let end = (x + room - 1).min(b);
                cur.push((Bound::Int(x), Bound::Int(end)));
                room -= end - x + 1;
                x = end + 1;
                if room == 0 {
                    let mut s = sub.clone();
                    s[m] = Some(std::mem::take(&mut cur));
                    slabs.push(s);
                    room = per;
                }
            }
        }
        if !cur.is_empty() {
            let mut s = sub.clone();
            s[m] = Some(cur);
            slabs.push(s);
        }
        Ok(slabs)
    }

    fn sparse_slabs(&self, sub: &[Option<DimRanges>], m: usize, target: u128) -> Result<Vec<Vec<Option<DimRanges>>>> {
        let dim = &self.schema.dims[m];
        let leaves = self.all_leaves()?;
        let selected = self.select_tiles(&leaves, sub);
        let mut ends: Vec<(Bound, u64)> = Vec::new();
        let mut lo: Option<Bound> = None;
        for (f, which) in selected.iter().enumerate() {
            for &t in which {
                let mbr = &leaves[f][t];
                let (a, b) = (to_bound(dim.datatype, &mbr[m].0), to_bound(dim.datatype, &mbr[m].1));
                if lo.as_ref().is_none_or(|l| cmp_b(&a, l).is_lt()) {
                    lo = Some(a);
                }
                ends.push((b, self.fragments[f].sparse_tile_cells(&self.schema, t)));
            }
        }
        let Some(lo) = lo else { return Ok(Vec::new()) };
        ends.sort_by(|a, b| cmp_b(&a.0, &b.0));
        let hi = ends.last().map(|e| e.0.clone()).unwrap_or_else(|| lo.clone());
        let mut cuts: Vec<(Bound, Bound)> = Vec::new();
        let (mut start, mut acc) = (lo, 0u128);
        let mut i = 0;
        while i < ends.len() {
            let v = ends[i].0.clone();
            while i < ends.len() && cmp_b(&ends[i].0, &v).is_eq() {
                acc += ends[i].1 as u128;
                i += 1;
            }
            if acc >= target && i < ends.len() && cmp_b(&v, &start).is_ge() {
                if let Some(next) = successor(&v) {
                    cuts.push((start, v));
                    start = next;
                    acc = 0;
                }
            }
        }
        cuts.push((start, hi));
        let user: DimRanges = match &sub[m] {
            Some(r) => r.clone(),
            None => vec![(cuts[0].0.clone(), cuts[cuts.len() - 1].1.clone())],
        };
        let mut out = Vec::new();
        for (a, b) in cuts {
            let Some(r) = clip(&user, &a, &b) else {
                continue; // the cut falls between the caller's ranges
            };
            let mut s = sub.to_vec();
            s[m] = Some(r);
            out.push(s);
        }
        Ok(out)
    }
}

impl BatchStream {
    /// Stream the read `opts` in batches of at most `batch_size` rows.
    pub fn new(array: Arc<TileDbArray>, opts: ReadOptions, batch_size: usize) -> Result<Self> {
        if batch_size == 0 {
            return Err(Error::invalid_input("batch_size must be positive"));
        }
        let schema = output_schema(&array.schema, &opts)?;
        if let Some(sql) = &opts.filter {
            super::query::Pruner::new(&array, sql)?;
        }
        let slabs = array.plan_slabs(&opts.subarray, opts.order, batch_size)?.into();
        Ok(BatchStream { array, opts, slabs, current: None, batch_size, schema })
    }

    /// The schema of every batch.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Iterator for BatchStream {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((batch, at)) = &mut self.current {
                if *at < batch.num_rows() {
                    let n = self.batch_size.min(batch.num_rows() - *at);
                    let out = batch.slice(*at, n);
                    *at += n;
                    return Some(Ok(out));
                }
                self.current = None;
            }
            let slab = self.slabs.pop_front()?;
            let mut opts = self.opts.clone();
            opts.subarray = slab;
            match self.array.read(&opts) {
                Ok(b) => self.current = Some((b, 0)),
                Err(e) => {
                    self.slabs.clear();
                    return Some(Err(e));
                }
            }
        }
    }
}
