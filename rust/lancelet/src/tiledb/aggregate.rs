//! Aggregates over a subarray: `sum`, `min`, `max`, `mean`, `count`,
//! `null_count` of one-value attributes, with tiledb-py's `.agg()` values.
//!
//! As TileDB does, a sparse data tile that lies wholly inside the subarray
//! and whose cells all belong to the result is summarised from the
//! fragment metadata (per-tile sum, min, max, null count; cells from the
//! tile's position) without being read. A tile qualifies when its MBR is
//! inside one range per dimension, its fragment is wholly inside the open
//! time range, no delete applies to the fragment (no delete metadata, no
//! visible unprocessed delete commit at or after its `t1`), duplicates are
//! allowed or no tile of another fragment overlaps its MBR, and the
//! statistics the requested operations need are stored. Every other cell
//! is read and resolved as a read would. Dense arrays are read (fills of
//! unwritten cells included, as TileDB counts them).
//!
//! Values (tiledb-py's): `count` counts cells, nulls included; `sum`,
//! `min`, `max`, `mean` skip nulls (and `min`/`max` skip NaN); integer sums
//! are exact integers, float sums floats; with no value, `min`/`max` are
//! None for integers and NaN for floats, `sum` is 0 (non-nullable), None
//! (nullable integers) or NaN (nullable floats), `mean` NaN (None for
//! nullable integers). `null_count` of a non-nullable attribute is an
//! `InvalidInputError`, as in tiledb-py.

use std::cmp::Ordering;

use arrow_array::{Array, ArrayRef, BooleanArray, LargeBinaryArray, LargeStringArray};

use super::array::TileDbArray;
use super::cells::{cmp_bound, cmp_values, normalize_subarray, DimRanges, ReadOptions};
use super::datatype::Datatype;
use super::fragment::{FragmentMeta, Mbr, TileStats};
use super::query::TilePruner;
use super::schema::{float_value, int_value, Attribute};
use crate::error::{Error, Result};

/// An aggregate operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggOp {
    Sum,
    Min,
    Max,
    Mean,
    Count,
    NullCount,
}

impl AggOp {
    /// Parse tiledb-py's name.
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "sum" => AggOp::Sum,
            "min" => AggOp::Min,
            "max" => AggOp::Max,
            "mean" => AggOp::Mean,
            "count" => AggOp::Count,
            "null_count" => AggOp::NullCount,
            _ => return Err(Error::invalid_input(format!("unknown aggregate {name:?} (sum, min, max, mean, count, null_count)"))),
        })
    }
}

/// An aggregate's value.
#[derive(Debug, Clone, PartialEq)]
pub enum AggValue {
    Int(i128),
    Float(f64),
    /// A min/max of a string or bytes attribute, or of a datetime / bool
    /// (as stored, with the attribute's type).
    Stored(Datatype, Vec<u8>),
    Null,
}

#[derive(Debug, Clone)]
struct Acc {
    t: Datatype,
    cells: u64,
    nulls: u64,
    sum_i: i128,
    sum_f: f64,
    min: Option<Vec<u8>>,
    max: Option<Vec<u8>>,
}

impl Acc {
    fn new(t: Datatype) -> Self {
        Acc { t, cells: 0, nulls: 0, sum_i: 0, sum_f: 0.0, min: None, max: None }
    }

    fn is_float(&self) -> bool {
        matches!(self.t, Datatype::Float32 | Datatype::Float64)
    }

    fn bound(&mut self, v: &[u8], is_min: bool) {
        if float_value(self.t, v).is_some_and(f64::is_nan) {
            return;
        }
        let cur = if is_min { &mut self.min } else { &mut self.max };
        let replace = match cur {
            None => true,
            Some(c) => {
                let o = cmp_values(self.t, v, c);
                if is_min {
                    o == Ordering::Less
                } else {
                    o == Ordering::Greater
                }
            }
        };
        if replace {
            *cur = Some(v.to_vec());
        }
    }

    fn value(&mut self, v: &[u8]) {
        self.cells += 1;
        if let Some(i) = int_value(self.t, v) {
            self.sum_i += i;
        } else if let Some(f) = float_value(self.t, v) {
            self.sum_f += f;
        }
        self.bound(v, true);
        self.bound(v, false);
    }

    /// Fold tile `t`'s metadata statistics (`cells` cells; its sum only
    /// if `sums`) into the accumulator, all but the cell count; returns
    /// the tile's null count.
    fn tile(&mut self, st: &TileStats, t: usize, cells: u64, sums: bool) -> u64 {
        let nulls = st.null_counts.as_ref().map(|n| n[t]).unwrap_or(0);
        self.nulls += nulls;
        if let (true, Some(s)) = (sums, &st.sums) {
            if self.is_float() {
                self.sum_f += f64::from_le_bytes(s[t]);
            } else if self.t.is_signed() {
                self.sum_i += i64::from_le_bytes(s[t]) as i128;
            } else {
                self.sum_i += u64::from_le_bytes(s[t]) as i128;
            }
        }
        if let (true, Some(mins), Some(maxes)) = (nulls < cells, &st.mins, &st.maxes) {
            self.bound(&mins[t], true);
            self.bound(&maxes[t], false);
        }
        nulls
    }

    fn null(&mut self) {
        self.cells += 1;
        self.nulls += 1;
    }

    fn finish(&self, op: AggOp, nullable: bool, name: &str) -> Result<AggValue> {
        let valid = self.cells - self.nulls;
        let stored = |b: &Option<Vec<u8>>| -> AggValue {
            match b {
                None if self.is_float() => AggValue::Float(f64::NAN),
                None => AggValue::Null,
                Some(v) => match (int_value(self.t, v), float_value(self.t, v)) {
                    (Some(i), _) if !matches!(self.t, Datatype::Datetime(_) | Datatype::Bool) => AggValue::Int(i),
                    (_, Some(f)) => AggValue::Float(f),
                    _ => AggValue::Stored(self.t, v.clone()),
                },
            }
        };
        let numeric = self.t.is_integer() && !matches!(self.t, Datatype::Datetime(_) | Datatype::Bool) || self.is_float();
        Ok(match op {
            AggOp::Count => AggValue::Int(self.cells as i128),
            AggOp::NullCount => {
                if !nullable {
                    return Err(Error::invalid_input(format!("null_count of attribute {name}, which is not nullable")));
                }
                AggValue::Int(self.nulls as i128)
            }
            AggOp::Min => stored(&self.min),
            AggOp::Max => stored(&self.max),
            AggOp::Sum | AggOp::Mean if !numeric => {
                return Err(Error::invalid_input(format!("{op:?} of attribute {name} of type {}", self.t.name()).to_lowercase()))
            }
            // No value (tiledb-py's results): nullable integers give None,
            // nullable floats NaN; non-nullable sums 0, means NaN.
            AggOp::Sum if valid == 0 && nullable => {
                if self.is_float() {
                    AggValue::Float(f64::NAN)
                } else {
                    AggValue::Null
                }
            }
            AggOp::Sum if self.is_float() => AggValue::Float(self.sum_f),
            AggOp::Sum => AggValue::Int(self.sum_i),
            AggOp::Mean if valid == 0 && nullable && !self.is_float() => AggValue::Null,
            AggOp::Mean if valid == 0 => AggValue::Float(f64::NAN),
            AggOp::Mean if self.is_float() => AggValue::Float(self.sum_f / valid as f64),
            AggOp::Mean => AggValue::Float(self.sum_i as f64 / valid as f64),
        })
    }
}

/// Tiles summarised from metadata, per fragment.
struct MetaTiles {
    skip: Vec<Vec<bool>>,
}

impl TilePruner for MetaTiles {
    fn sparse_may_match(&self, _: &TileDbArray, f: usize, which: &[usize], _: &[Mbr]) -> Result<Vec<bool>> {
        Ok(which.iter().map(|&t| !self.skip[f].get(t).copied().unwrap_or(false)).collect())
    }
    fn dense_may_match(&self, _: &TileDbArray, _: usize, ntiles: usize, _: usize) -> Result<Vec<bool>> {
        Ok(vec![true; ntiles])
    }
    fn pruned_tiles_are_isolated(&self) -> bool {
        true
    }
}

fn mbr_inside(array: &TileDbArray, mbr: &Mbr, sub: &[Option<DimRanges>]) -> bool {
    array.schema.dims.iter().enumerate().all(|(d, dim)| match &sub[d] {
        None => true,
        Some(r) => r
            .iter()
            .any(|(lo, hi)| cmp_bound(dim.datatype, &mbr[d].0, lo) != Ordering::Less && cmp_bound(dim.datatype, &mbr[d].1, hi) != Ordering::Greater),
    })
}

fn mbrs_meet(array: &TileDbArray, a: &Mbr, b: &Mbr) -> bool {
    array.schema.dims.iter().enumerate().all(|(d, dim)| {
        cmp_values(dim.datatype, &a[d].0, &b[d].1) != Ordering::Greater && cmp_values(dim.datatype, &b[d].0, &a[d].1) != Ordering::Greater
    })
}

/// Add one Arrow column's cells.
fn add_column(acc: &mut Acc, col: &ArrayRef, t: Datatype) {
    let n = col.len();
    if let Some(s) = col.as_any().downcast_ref::<LargeStringArray>() {
        (0..n).for_each(|i| if s.is_valid(i) { acc.value(s.value(i).as_bytes()) } else { acc.null() });
    } else if let Some(b) = col.as_any().downcast_ref::<LargeBinaryArray>() {
        (0..n).for_each(|i| if b.is_valid(i) { acc.value(b.value(i)) } else { acc.null() });
    } else if let Some(b) = col.as_any().downcast_ref::<BooleanArray>() {
        (0..n).for_each(|i| if b.is_valid(i) { acc.value(&[b.value(i) as u8]) } else { acc.null() });
    } else {
        let data = col.to_data();
        let w = t.size();
        let buf = data.buffers().first().map(|b| b.as_slice()).unwrap_or(&[]);
        let base = data.offset() * w;
        for i in 0..n {
            if col.is_valid(i) {
                acc.value(&buf[base + i * w..base + (i + 1) * w]);
            } else {
                acc.null();
            }
        }
    }
}

impl TileDbArray {
    /// Compute `ops` per attribute over `subarray`; results in the order
    /// asked, and the tiles read (those not summarised from metadata).
    #[allow(clippy::type_complexity)]
    pub fn aggregate(
        &self,
        subarray: &[Option<DimRanges>],
        requests: &[(String, Vec<AggOp>)],
    ) -> Result<(Vec<(String, Vec<(AggOp, AggValue)>)>, super::cells::TileCounts)> {
        let schema = &self.schema;
        let sub = normalize_subarray(schema, subarray)?;
        let mut attrs: Vec<(usize, &Attribute)> = Vec::new();
        for (name, _) in requests {
            let a = schema.attr_index(name).ok_or_else(|| Error::invalid_input(format!("no attribute {name:?} to aggregate")))?;
            let at = &schema.attrs[a];
            if at.cell_val_num != 1 && !(at.is_var() && at.datatype.is_bytes()) {
                return Err(Error::invalid_input(format!("aggregates take one-value attributes; {name} has several values per cell")));
            }
            attrs.push((a, at));
        }
        let mut accs: Vec<Acc> = attrs.iter().map(|(_, at)| Acc::new(at.datatype)).collect();
        if !schema.sparse {
            return self.dense_aggregate(&sub, requests, &attrs, accs);
        }
        let skip = self.meta_tiles(&sub, requests, &attrs, &mut accs)?;
        let opts = ReadOptions {
            subarray: sub.clone(),
            attrs: Some(attrs.iter().map(|(_, at)| at.name.clone()).collect()),
            dims: false,
            ..Default::default()
        };
        let (batch, counts, _) = self.read_plain(&opts, skip.as_ref().map(|s| s as &dyn TilePruner))?;
        for (k, (_, at)) in attrs.iter().enumerate() {
            add_column(&mut accs[k], batch.column(k), at.datatype);
        }
        let out = requests
            .iter()
            .zip(&accs)
            .zip(&attrs)
            .map(|(((name, ops), acc), (_, at))| {
                let vals = ops.iter().map(|&op| Ok((op, acc.finish(op, at.nullable, name)?))).collect::<Result<Vec<_>>>()?;
                Ok((name.clone(), vals))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((out, counts))
    }

    /// Dense aggregates, as TileDB computes them: a fragment's space tile
    /// wholly inside the subarray and meeting no other fragment's non-empty
    /// domain is summarised from its metadata (its `count` for `mean` is
    /// the whole tile, padding included, as in TileDB); every other cell a
    /// fragment wrote and the subarray selects is read. Cells no fragment
    /// wrote take part only in `count`, which counts every cell of the
    /// subarray. With no value, `sum`, `min` and `max` are 0 and `mean` NaN.
    #[allow(clippy::type_complexity)]
    fn dense_aggregate(
        &self,
        sub: &[Option<DimRanges>],
        requests: &[(String, Vec<AggOp>)],
        attrs: &[(usize, &Attribute)],
        mut accs: Vec<Acc>,
    ) -> Result<(Vec<(String, Vec<(AggOp, AggValue)>)>, super::cells::TileCounts)> {
        use super::cells::{build_array, gather, unpack, FILL};
        use super::schema::Layout;
        let schema = &self.schema;
        // The tile plan first: when every tile the read would copy from is
        // summarised from metadata, no per-cell work is needed at all.
        let plan = self.dense_plan(sub, super::cells::Order::RowMajor)?;
        let total_cells = plan.total as u64;
        let mut bases = vec![0usize];
        for &n in &plan.frag_tiles {
            bases.push(bases.last().copied().unwrap_or(0) + n);
        }
        let nd = schema.dims.len();
        let dom: Vec<(i128, i128)> = schema.dims.iter().map(|d| d.int_domain().unwrap_or((0, 0))).collect();
        let ext: Vec<i128> = schema.dims.iter().zip(&dom).map(|(d, (lo, hi))| d.int_extent().unwrap_or(hi - lo + 1).max(1)).collect();
        let ned_box = |f: usize| -> Option<Vec<(i128, i128)>> {
            let ned = self.fragments[f].nonempty.as_ref()?;
            (0..nd)
                .map(|d| {
                    Some((
                        super::schema::int_value(schema.dims[d].datatype, &ned[d].0)?,
                        super::schema::int_value(schema.dims[d].datatype, &ned[d].1)?,
                    ))
                })
                .collect()
        };
        let inside = |b: &[(i128, i128)]| {
            (0..nd).all(|d| match &sub[d] {
                None => true,
                Some(r) => r.iter().any(
                    |(lo, hi)| matches!((lo, hi), (super::cells::Bound::Int(lo), super::cells::Bound::Int(hi)) if *lo <= b[d].0 && b[d].1 <= *hi),
                ),
            })
        };
        let meets = |a: &[(i128, i128)], b: &[(i128, i128)]| (0..nd).all(|d| a[d].0 <= b[d].1 && b[d].0 <= a[d].1);
        let total_tiles = *bases.last().unwrap_or(&0);
        let mut meta = vec![false; total_tiles];
        let mut mean_cells = vec![0u64; attrs.len()];
        for (f, frag) in self.fragments.iter().enumerate() {
            let Some(nb) = ned_box(f) else { continue };
            let tlo: Vec<i128> = (0..nd).map(|d| (nb[d].0 - dom[d].0) / ext[d]).collect();
            let ntiles: Vec<i128> = (0..nd).map(|d| (nb[d].1 - dom[d].0) / ext[d] - tlo[d] + 1).collect();
            let count = bases[f + 1] - bases[f];
            let stats = attrs
                .iter()
                .map(|(a, at)| frag.tile_stats(FragmentMeta::attr_slot(*a), count, if at.is_var() { None } else { Some(at.cell_size()) }))
                .collect::<Result<Vec<_>>>()
                .map_err(|e| e.in_file(&format!("{}/__fragments/{}/__fragment_metadata.tdb", self.uri(), frag.name)))?;
            let usable = requests.iter().zip(&stats).zip(attrs).all(|(((_, ops), st), (_, at))| {
                ops.iter().all(|op| match op {
                    AggOp::Count => true,
                    AggOp::NullCount => !at.nullable || st.null_counts.is_some(),
                    AggOp::Min | AggOp::Max => st.mins.is_some() && st.maxes.is_some(),
                    AggOp::Sum | AggOp::Mean => st.sums.is_some() && (!at.nullable || st.null_counts.is_some()),
                })
            });
            if !usable {
                continue;
            }
            for t in 0..count {
                // tile t's position in the fragment's tile grid (tile order)
                let mut rem = t as i128;
                let mut idx = vec![0i128; nd];
                let dims_fast_first: Vec<usize> = if schema.tile_order == Layout::ColMajor { (0..nd).collect() } else { (0..nd).rev().collect() };
                for &d in &dims_fast_first {
                    idx[d] = rem % ntiles[d];
                    rem /= ntiles[d];
                }
                let tb: Vec<(i128, i128)> = (0..nd)
                    .map(|d| {
                        let lo = dom[d].0 + (tlo[d] + idx[d]) * ext[d];
                        (lo, (lo + ext[d] - 1).min(dom[d].1))
                    })
                    .collect();
                let covered = (0..self.fragments.len()).any(|g| g != f && ned_box(g).is_some_and(|b| meets(&b, &tb)));
                if !inside(&tb) || covered {
                    continue;
                }
                meta[bases[f] + t] = true;
                let cells = plan.cells_per_tile as u64;
                for (k, st) in stats.iter().enumerate() {
                    let nulls = accs[k].tile(st, t, cells, true);
                    mean_cells[k] += cells - nulls;
                }
            }
        }
        let all_meta = plan.jobs.iter().enumerate().all(|(f, jobs)| jobs.iter().all(|j| meta[bases[f] + j.tile]));
        let mut read_tiles = vec![false; total_tiles];
        if !all_meta {
            let dense = self.dense_sources(sub, super::cells::Order::RowMajor, None)?;
            let read_sources: Vec<u64> = dense.sources.iter().copied().filter(|&s| s != FILL && !meta[unpack(s).0]).collect();
            let per_tile = dense.cells_per_tile;
            let cells_of = |_f: usize, _t: usize| per_tile;
            read_sources.iter().for_each(|&s| read_tiles[unpack(s).0] = true);
            for (k, (a, at)) in attrs.iter().enumerate() {
                let col = super::tiles::ColumnSpec::attr(schema, *a);
                let tiles = super::cells::load_used(self, &dense.ids, &col, &read_sources, &cells_of)?;
                let (cells, validity) = gather(&col, &tiles, &read_sources, &at.fill, at.fill_valid)?;
                let dt = super::cells::arrow_type(at.datatype, at.cell_val_num)?;
                let arr = build_array(&dt, at.datatype, at.cell_val_num, cells, validity)?;
                let before = (accs[k].cells, accs[k].nulls);
                add_column(&mut accs[k], &arr, at.datatype);
                mean_cells[k] += (accs[k].cells - before.0) - (accs[k].nulls - before.1);
            }
        }
        let mut out = Vec::new();
        for (((name, ops), acc), (k, (_, at))) in requests.iter().zip(&accs).zip(attrs.iter().enumerate()) {
            let valid = mean_cells[k];
            let zero = || if acc.is_float() { AggValue::Float(0.0) } else { AggValue::Int(0) };
            let mut vals = Vec::new();
            for &op in ops {
                let v = match op {
                    AggOp::Count => AggValue::Int(total_cells as i128),
                    AggOp::Mean if valid == 0 => AggValue::Float(f64::NAN),
                    AggOp::Mean if acc.is_float() => AggValue::Float(acc.sum_f / valid as f64),
                    AggOp::Mean if acc.finish(AggOp::Sum, at.nullable, name).is_ok() => AggValue::Float(acc.sum_i as f64 / valid as f64),
                    AggOp::Sum | AggOp::Min | AggOp::Max if valid == 0 && acc.min.is_none() => {
                        acc.finish(op, at.nullable, name)?;
                        zero()
                    }
                    _ => acc.finish(op, at.nullable, name)?,
                };
                vals.push((op, v));
            }
            out.push((name.clone(), vals));
        }
        let counts = super::cells::TileCounts {
            fragments: self.fragments.len(),
            tiles_total: total_tiles,
            tiles_read: read_tiles.iter().filter(|x| **x).count(),
        };
        Ok((out, counts))
    }

    /// Fold the tiles that metadata can summarise into `accs`; returns the
    /// pruner that keeps the read from reading them.
    fn meta_tiles(
        &self,
        sub: &[Option<DimRanges>],
        requests: &[(String, Vec<AggOp>)],
        attrs: &[(usize, &Attribute)],
        accs: &mut [Acc],
    ) -> Result<Option<MetaTiles>> {
        let schema = &self.schema;
        let leaves = self.all_leaves()?;
        let selected = self.select_tiles(&leaves, sub);
        let mut skip: Vec<Vec<bool>> = leaves.iter().map(|l| vec![false; l.len()]).collect();
        let pairs: usize = selected.iter().map(|w| w.len()).sum::<usize>().pow(2);
        let check_overlap = !schema.allows_duplicates && selected.iter().filter(|w| !w.is_empty()).count() > 1;
        if check_overlap && pairs > 16_000_000 {
            return Ok(None);
        }
        for (f, frag) in self.fragments.iter().enumerate() {
            let whole_time = frag.t1 >= self.range.0 && frag.t2 <= self.range.1;
            let deleted = frag.has_delete_meta || self.deletes.iter().any(|d| d.timestamp >= frag.t1);
            if !whole_time || deleted || selected[f].is_empty() {
                continue;
            }
            let ntiles = frag.sparse_tile_num as usize;
            let ctx = |e: Error| e.in_file(&format!("{}/__fragments/{}/__fragment_metadata.tdb", self.uri(), frag.name));
            let mut stats = Vec::new();
            for (_, at) in attrs {
                let a = schema.attr_index(&at.name).unwrap_or(0);
                let cs = if at.is_var() { None } else { Some(at.cell_size()) };
                stats.push(frag.tile_stats(FragmentMeta::attr_slot(a), ntiles, cs).map_err(ctx)?);
            }
            // Which statistics the requests need, per attribute.
            let usable = requests.iter().zip(&stats).zip(attrs).all(|(((_, ops), st), (_, at))| {
                ops.iter().all(|op| match op {
                    AggOp::Count => true,
                    AggOp::NullCount => !at.nullable || st.null_counts.is_some(),
                    AggOp::Min | AggOp::Max => st.mins.is_some() && st.maxes.is_some(),
                    AggOp::Sum | AggOp::Mean => st.sums.is_some() && (!at.nullable || st.null_counts.is_some()),
                })
            });
            if !usable {
                continue;
            }
            for &t in &selected[f] {
                let mbr = &leaves[f][t];
                if !mbr_inside(self, mbr, sub) {
                    continue;
                }
                let shadowed =
                    check_overlap && selected.iter().enumerate().any(|(g, w)| g != f && w.iter().any(|&u| mbrs_meet(self, mbr, &leaves[g][u])));
                if shadowed {
                    continue;
                }
                skip[f][t] = true;
                let cells = frag.sparse_tile_cells(schema, t);
                for (k, ((_, ops), st)) in requests.iter().zip(&stats).enumerate() {
                    accs[k].cells += cells;
                    accs[k].tile(st, t, cells, ops.iter().any(|o| matches!(o, AggOp::Sum | AggOp::Mean)));
                }
            }
        }
        Ok(Some(MetaTiles { skip }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accumulator_rules() {
        let mut a = Acc::new(Datatype::Int32);
        assert_eq!(a.finish(AggOp::Sum, false, "a").unwrap(), AggValue::Int(0));
        assert_eq!(a.finish(AggOp::Sum, true, "a").unwrap(), AggValue::Null);
        assert_eq!(a.finish(AggOp::Min, false, "a").unwrap(), AggValue::Null);
        assert!(matches!(a.finish(AggOp::Mean, false, "a").unwrap(), AggValue::Float(f) if f.is_nan()));
        assert!(a.finish(AggOp::NullCount, false, "a").is_err());
        a.value(&5i32.to_le_bytes());
        a.value(&(-7i32).to_le_bytes());
        a.null();
        assert_eq!(a.finish(AggOp::Sum, true, "a").unwrap(), AggValue::Int(-2));
        assert_eq!(a.finish(AggOp::Min, true, "a").unwrap(), AggValue::Int(-7));
        assert_eq!(a.finish(AggOp::Count, true, "a").unwrap(), AggValue::Int(3));
        assert_eq!(a.finish(AggOp::Mean, true, "a").unwrap(), AggValue::Float(-1.0));
        let mut f = Acc::new(Datatype::Float64);
        f.value(&f64::NAN.to_le_bytes());
        f.value(&2.5f64.to_le_bytes());
        assert_eq!(f.finish(AggOp::Max, false, "f").unwrap(), AggValue::Float(2.5));
    }
}
