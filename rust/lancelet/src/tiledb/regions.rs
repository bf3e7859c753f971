//! Cutting a read into disjoint regions of about `target` cells each, and
//! reads filtered by a lancelet SQL predicate.
//!
//! A region is a box (one inclusive range per dimension); the regions of a
//! plan are disjoint and together cover the subarray, so reading each of
//! them with every fragment resolved over it (newest wins, fills where
//! nothing was written) gives exactly the cells of one whole read. This is
//! what bounds the memory of `to_lance` and what Spark partitions are.
//!
//! Dense arrays: boxes are cut at space-tile boundaries, first along the
//! first dimension (so whole-row slabs come out in row-major order), and a
//! slab still larger than `target` along the next dimension, and so on.
//! Cell counts are exact (the subarray's cells inside the box).
//!
//! Sparse arrays: the cell counts come from the R-tree: every data tile
//! whose leaf MBR meets the subarray counts its cells once, at the upper
//! bound of its MBR on the dimension being cut. Cuts fall on MBR upper
//! bounds, so a data tile is mostly decoded by one region only; the next
//! region starts just after the cut (the next integer, the next float, the
//! string followed by a zero byte). A piece still too large (many tiles
//! ending at one coordinate) is cut along the next dimension.

use std::cmp::Ordering;

use arrow_array::RecordBatch;

use super::array::TileDbArray;
use super::cells::{dense_domain_and_extents, dense_int_ranges, output_schema, Bound, DimRanges, ReadOptions};
use super::datatype::Datatype;
use super::schema::{float_value, int_value, ArraySchema};
use crate::error::{Error, Result};

/// One subarray of a plan: per dimension the caller's ranges clipped to
/// the region.
pub type Subarray = Vec<Option<DimRanges>>;

/// Upper limit on the regions of one plan (a finer cut than this is a
/// mistake in the target, not a plan anyone can run).
const MAX_REGIONS: usize = 1 << 22;

/// Order two bounds of one dimension (numbers by value, bytes by bytes).
pub(crate) fn cmp_b(a: &Bound, b: &Bound) -> Ordering {
    match (a, b) {
        (Bound::Int(x), Bound::Int(y)) => x.cmp(y),
        (Bound::Float(x), Bound::Float(y)) => x.total_cmp(y),
        (Bound::Bytes(x), Bound::Bytes(y)) => x.cmp(y),
        (Bound::Int(x), Bound::Float(y)) => (*x as f64).total_cmp(y),
        (Bound::Float(x), Bound::Int(y)) => x.total_cmp(&(*y as f64)),
        // bytes never meet numbers after the subarray is checked
        (Bound::Bytes(_), _) => Ordering::Greater,
        (_, Bound::Bytes(_)) => Ordering::Less,
    }
}

fn max_b(a: &Bound, b: &Bound) -> Bound {
    if cmp_b(a, b) == Ordering::Less {
        b.clone()
    } else {
        a.clone()
    }
}

fn min_b(a: &Bound, b: &Bound) -> Bound {
    if cmp_b(a, b) == Ordering::Greater {
        b.clone()
    } else {
        a.clone()
    }
}

/// The smallest bound greater than `b` (None if `b` is the largest).
pub(crate) fn successor(b: &Bound) -> Option<Bound> {
    match b {
        Bound::Int(i) => i.checked_add(1).map(Bound::Int),
        Bound::Float(f) if *f == f64::INFINITY => None,
        Bound::Float(f) => Some(Bound::Float(f.next_up())),
        Bound::Bytes(s) => {
            let mut n = s.clone();
            n.push(0);
            Some(Bound::Bytes(n))
        }
    }
}

/// A stored coordinate as a bound of the dimension's kind.
pub(crate) fn to_bound(t: Datatype, v: &[u8]) -> Bound {
    if let Some(i) = int_value(t, v) {
        Bound::Int(i)
    } else if let Some(f) = float_value(t, v) {
        Bound::Float(f)
    } else {
        Bound::Bytes(v.to_vec())
    }
}

/// The caller's ranges on one dimension clipped to `[lo, hi]` (None when
/// nothing is left).
pub(crate) fn clip(ranges: &DimRanges, lo: &Bound, hi: &Bound) -> Option<DimRanges> {
    let out: DimRanges = ranges
        .iter()
        .filter_map(|(a, b)| {
            let (a, b) = (max_b(a, lo), min_b(b, hi));
            (cmp_b(&a, &b) != Ordering::Greater).then_some((a, b))
        })
        .collect();
    (!out.is_empty()).then_some(out)
}

/// A box with the caller's ranges inside it, or None if they miss it.
fn subarray_of(boxed: &[(Bound, Bound)], sub: &[Option<DimRanges>]) -> Option<Subarray> {
    boxed
        .iter()
        .zip(sub)
        .map(|((lo, hi), s)| match s {
            None => Some(Some(vec![(lo.clone(), hi.clone())])),
            Some(r) => clip(r, lo, hi).map(Some),
        })
        .collect()
}

impl TileDbArray {
    /// Cut the read of `subarray` (as [`ReadOptions::subarray`]) into
    /// disjoint subarrays of about `target` cells that together select the
    /// same cells; in read order for row-major dense reads.
    pub fn plan_regions(&self, subarray: &[Option<DimRanges>], target: u64) -> Result<Vec<Subarray>> {
        if target == 0 {
            return Err(Error::invalid_input("cells per region must be positive"));
        }
        let sub = super::cells::normalize_subarray(&self.schema, subarray)?;
        let mut out = Vec::new();
        if self.schema.sparse {
            SparsePlan::new(self, &sub)?.plan(target, &mut out)?;
        } else {
            DensePlan::new(&self.schema, &sub)?.plan(target, &mut out)?;
        }
        Ok(out)
    }
}

// ---------------------------------------------------------------- dense

struct DensePlan {
    /// Per dimension: domain low, tile extent, selected ranges (integers).
    lo: Vec<i128>,
    ext: Vec<i128>,
    ranges: Vec<Vec<(i128, i128)>>,
}

impl DensePlan {
    fn new(schema: &ArraySchema, sub: &[Option<DimRanges>]) -> Result<Self> {
        let (dom, ext) = dense_domain_and_extents(schema)?;
        let ranges = dense_int_ranges(&dom, sub)?;
        Ok(DensePlan { lo: dom.iter().map(|d| d.0).collect(), ext, ranges })
    }

    /// Selected coordinates of dimension `d` inside `[a, b]`.
    fn sel(&self, d: usize, a: i128, b: i128) -> u128 {
        self.ranges[d].iter().map(|&(x, y)| (y.min(b) - x.max(a) + 1).max(0) as u128).sum()
    }

    fn cells(&self, boxed: &[(i128, i128)]) -> u128 {
        boxed.iter().enumerate().map(|(d, &(a, b))| self.sel(d, a, b)).product()
    }

    fn plan(&self, target: u64, out: &mut Vec<Subarray>) -> Result<()> {
        let nd = self.lo.len();
        let hull: Vec<(i128, i128)> =
            self.ranges.iter().map(|r| (r.iter().map(|x| x.0).min().unwrap_or(0), r.iter().map(|x| x.1).max().unwrap_or(-1))).collect();
        if nd == 0 || hull.iter().any(|(a, b)| a > b) {
            return Ok(());
        }
        self.split(hull, 0, target as u128, out)
    }

    fn emit(&self, boxed: &[(i128, i128)], out: &mut Vec<Subarray>) -> Result<()> {
        if self.cells(boxed) == 0 {
            return Ok(());
        }
        if out.len() >= MAX_REGIONS {
            return Err(Error::invalid_input(format!("more than {MAX_REGIONS} regions: ask for more cells per region")));
        }
        let bounds: Vec<(Bound, Bound)> = boxed.iter().map(|&(a, b)| (Bound::Int(a), Bound::Int(b))).collect();
        let sub: Vec<Option<DimRanges>> =
            self.ranges.iter().map(|r| Some(r.iter().map(|&(a, b)| (Bound::Int(a), Bound::Int(b))).collect())).collect();
        if let Some(s) = subarray_of(&bounds, &sub) {
            out.push(s);
        }
        Ok(())
    }

    fn split(&self, boxed: Vec<(i128, i128)>, d: usize, target: u128, out: &mut Vec<Subarray>) -> Result<()> {
        let nd = self.lo.len();
        if d == nd || self.cells(&boxed) <= target {
            return self.emit(&boxed, out);
        }
        // cells per selected coordinate of dimension d inside the box
        let across: u128 = (0..nd).filter(|&k| k != d).map(|k| self.sel(k, boxed[k].0, boxed[k].1)).product();
        let (a, b) = boxed[d];
        let (lo, e) = (self.lo[d], self.ext[d]);
        let tile_end = |x: i128| lo + ((x - lo) / e + 1) * e - 1;
        let mut x = a;
        while x <= b {
            // the most further whole tiles whose cells still fit the target
            // (the tile holding `x` is always taken)
            let first = tile_end(x).min(b);
            let fits = |m: i128| self.sel(d, x, (first + m * e).min(b)) * across <= target;
            let (mut keep, mut top) = (0i128, (b - first + e - 1) / e);
            while keep < top {
                let mid = keep + (top - keep + 1) / 2;
                if fits(mid) {
                    keep = mid;
                } else {
                    top = mid - 1;
                }
            }
            let end = (first + keep * e).min(b);
            let mut piece = boxed.clone();
            piece[d] = (x, end);
            if self.cells(&piece) > target {
                self.split(piece, d + 1, target, out)?;
            } else {
                self.emit(&piece, out)?;
            }
            x = end + 1;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- sparse

/// A data tile of some fragment that meets the subarray.
struct TileBox {
    mbr: Vec<(Bound, Bound)>,
    cells: u64,
}

struct SparsePlan {
    sub: Vec<Option<DimRanges>>,
    tiles: Vec<TileBox>,
    hull: Option<Vec<(Bound, Bound)>>,
}

impl SparsePlan {
    fn new(array: &TileDbArray, sub: &[Option<DimRanges>]) -> Result<Self> {
        let schema = &array.schema;
        let nd = schema.dims.len();
        let mut tiles = Vec::new();
        let mut hull: Option<Vec<(Bound, Bound)>> = None;
        for frag in &array.fragments {
            let leaves =
                frag.leaf_mbrs(schema).map_err(|e| e.in_file(&format!("{}/__fragments/{}/__fragment_metadata.tdb", array.uri(), frag.name)))?;
            for (t, mbr) in leaves.iter().enumerate() {
                let mbr: Vec<(Bound, Bound)> =
                    (0..nd).map(|d| (to_bound(schema.dims[d].datatype, &mbr[d].0), to_bound(schema.dims[d].datatype, &mbr[d].1))).collect();
                let meets = mbr.iter().zip(sub).all(|((lo, hi), s)| match s {
                    None => true,
                    Some(r) => r.iter().any(|(a, b)| cmp_b(hi, a) != Ordering::Less && cmp_b(lo, b) != Ordering::Greater),
                });
                if !meets {
                    continue;
                }
                hull = Some(match hull {
                    None => mbr.clone(),
                    Some(h) => h.iter().zip(&mbr).map(|((a, b), (x, y))| (min_b(a, x), max_b(b, y))).collect(),
                });
                tiles.push(TileBox { mbr, cells: frag.sparse_tile_cells(schema, t) });
            }
        }
        // the caller's bounds narrow the hull
        let hull = hull.map(|h| {
            h.into_iter()
                .zip(sub)
                .map(|((lo, hi), s)| match s {
                    None => (lo, hi),
                    Some(r) => {
                        let rlo = r.iter().map(|x| &x.0).min_by(|a, b| cmp_b(a, b)).cloned().unwrap_or(lo.clone());
                        let rhi = r.iter().map(|x| &x.1).max_by(|a, b| cmp_b(a, b)).cloned().unwrap_or(hi.clone());
                        (max_b(&lo, &rlo), min_b(&hi, &rhi))
                    }
                })
                .collect()
        });
        Ok(SparsePlan { sub: sub.to_vec(), tiles, hull })
    }

    fn plan(&self, target: u64, out: &mut Vec<Subarray>) -> Result<()> {
        let Some(hull) = &self.hull else { return Ok(()) };
        if hull.iter().any(|(a, b)| cmp_b(a, b) == Ordering::Greater) {
            return Ok(());
        }
        let all: Vec<usize> = (0..self.tiles.len()).collect();
        self.split(hull.clone(), &all, 0, target, out)
    }

    fn emit(&self, boxed: &[(Bound, Bound)], out: &mut Vec<Subarray>) -> Result<()> {
        if out.len() >= MAX_REGIONS {
            return Err(Error::invalid_input(format!("more than {MAX_REGIONS} regions: ask for more cells per region")));
        }
        if let Some(s) = subarray_of(boxed, &self.sub) {
            out.push(s);
        }
        Ok(())
    }

    /// `tiles`: the tiles counted in this box (each counted in one box).
    fn split(&self, boxed: Vec<(Bound, Bound)>, tiles: &[usize], d: usize, target: u64, out: &mut Vec<Subarray>) -> Result<()> {
        let total: u64 = tiles.iter().map(|&t| self.tiles[t].cells).sum();
        if total <= target || d == boxed.len() || tiles.len() <= 1 {
            return self.emit(&boxed, out);
        }
        let (lo, hi) = boxed[d].clone();
        // each tile counts at its upper bound on d, clamped into the box
        let mut ends: Vec<(Bound, usize)> = tiles.iter().map(|&t| (min_b(&self.tiles[t].mbr[d].1, &hi), t)).collect();
        ends.sort_by(|a, b| cmp_b(&a.0, &b.0));
        let mut start = lo;
        let mut piece_tiles: Vec<usize> = Vec::new();
        let mut acc = 0u64;
        let mut pieces: Vec<((Bound, Bound), Vec<usize>)> = Vec::new();
        let mut i = 0;
        while i < ends.len() {
            // take every tile ending at this value together
            let v = ends[i].0.clone();
            while i < ends.len() && cmp_b(&ends[i].0, &v) == Ordering::Equal {
                acc += self.tiles[ends[i].1].cells;
                piece_tiles.push(ends[i].1);
                i += 1;
            }
            let last = i == ends.len();
            if acc >= target && !last && cmp_b(&v, &hi) == Ordering::Less && cmp_b(&v, &start) != Ordering::Less {
                if let Some(next) = successor(&v) {
                    pieces.push(((start, v), std::mem::take(&mut piece_tiles)));
                    start = next;
                    acc = 0;
                }
            }
        }
        pieces.push(((start, hi), piece_tiles));
        if pieces.len() == 1 {
            return self.split(boxed, tiles, d + 1, target, out);
        }
        for (range, ts) in pieces {
            let mut piece = boxed.clone();
            piece[d] = range;
            self.split(piece, &ts, d + 1, target, out)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- filtered reads

impl TileDbArray {
    /// Check that the lancelet SQL `filter` parses against the array's
    /// dimensions and attributes (`Error::InvalidInput` if not).
    pub fn check_filter(&self, filter: &str) -> Result<()> {
        let all = ReadOptions { dims: true, attrs: None, ..Default::default() };
        crate::expr::parse_filter(filter, &*output_schema(&self.schema, &all)?).map(|_| ())
    }

    /// Read `opts`, keeping only the cells where the lancelet SQL `filter`
    /// holds (evaluated on the cells as read: fills included, nulls false).
    /// The filter may name any dimension or attribute, returned or not.
    pub fn read_where(&self, opts: &ReadOptions, filter: Option<&str>) -> Result<RecordBatch> {
        // The filtered read (with tile pruning) lives in `query.rs`.
        let mut o = opts.clone();
        o.filter = filter.map(str::to_string);
        self.read(&o)
    }
}
