//! Sparse resolution: which cells of which fragments a read returns.
//!
//! 1. Data tiles whose R-tree leaf MBR meets the subarray are selected;
//!    a filter may mark some of them pruned (their statistics prove no cell
//!    matches): their attributes are never read.
//! 2. Coordinates (plus per-cell timestamps `t.tdb` and delete timestamps
//!    `dt.tdb` where the fragment has them) are decoded; cells outside the
//!    subarray, and cells whose timestamp lies outside the open range, are
//!    dropped.
//! 3. Cells are sorted (requested order; "U" is TileDB's global order) and,
//!    unless duplicates are allowed, only the newest cell per coordinate is
//!    kept (newest = largest per-cell timestamp, else the fragment's `t1`,
//!    ties by fragment order).
//! 4. Cells of pruned tiles are dropped, then cells deleted by consolidated
//!    delete metadata (`dt <= open end`; with an unbounded end only cells
//!    never deleted survive), then cells the visible delete commits remove
//!    (see `conditions.rs`; commits a fragment lists as processed are
//!    skipped for it).
//!
//! For a consolidation (`all_versions`), step 3 keeps every version and
//! step 4 keeps deleted cells too, reporting per cell its timestamp and
//! TileDB's delete metadata (when and by which condition it was deleted).
//!
//! Pruned tiles still have their coordinates decoded when another fragment
//! could hold the same coordinates (duplicates not allowed, several
//! fragments): a newer pruned cell hides an older one.

use std::cmp::Ordering;

use super::array::TileDbArray;
use super::cells::{cmp_bound, cmp_values, coord, in_ranges, load_used, pack, space_tile_index, unpack, DimRanges, Order, TileIds};
use super::conditions::CellValue;
use super::datatype::Datatype;
use super::fragment::{FragmentMeta, Mbr};
use super::schema::{Layout, VAR_NUM};
use super::tiles::{load_tiles, ColumnSpec, TileData};
use crate::error::{Error, Result};

/// Decides, for fragment `f` and its selected tiles (with their leaf MBRs),
/// which tiles may hold cells matching a filter.
pub type MayMatch<'a> = &'a dyn Fn(usize, &[usize], &[Mbr]) -> Result<Vec<bool>>;

/// The cells a sparse read returns, and what was read to find them.
pub struct SparseSources {
    pub(crate) ids: TileIds,
    /// Packed (tile, cell) per output row, in output order.
    pub(crate) sources: Vec<u64>,
    /// Decoded coordinate tiles per dimension, by global tile id.
    pub(crate) dim_tiles: Vec<Vec<Option<TileData>>>,
    /// Data tiles in the visible fragments.
    pub tiles_total: usize,
    /// Tiles left after R-tree and statistics pruning.
    pub tiles_read: usize,
    /// Per output row its timestamp (per-cell, else the fragment's `t1`);
    /// filled only when every version was asked for.
    pub(crate) timestamps: Vec<u64>,
    /// With every version: TileDB's delete metadata for the rows, when a
    /// delete commit is visible or a fragment had some.
    pub(crate) delete_meta: Option<DeleteMeta>,
}

/// Per row the time it was deleted (`u64::MAX`: never) and the index of the
/// condition that deleted it in `processed` (`u64::MAX`: none), and the
/// delete commits (`__commits/<name>`) the rows have been resolved against.
#[derive(Debug, Clone, Default)]
pub struct DeleteMeta {
    pub dt: Vec<u64>,
    pub dci: Vec<u64>,
    pub processed: Vec<String>,
}

fn special_column(schema: &super::schema::ArraySchema, slot: usize, stem: &str) -> ColumnSpec {
    ColumnSpec {
        slot,
        stem: stem.to_string(),
        name: stem.to_string(),
        datatype: Datatype::UInt64,
        cell_val_num: 1,
        nullable: false,
        filters: schema.coords_filters.clone(),
    }
}

fn strip_marker(m: &str) -> &str {
    let base = m.rsplit('/').next().unwrap_or(m);
    base.split('.').next().unwrap_or(base)
}

impl TileDbArray {
    /// Leaf MBRs of every fragment (one per data tile).
    pub(crate) fn all_leaves(&self) -> Result<Vec<Vec<Mbr>>> {
        let schema = &self.schema;
        let mut out = Vec::new();
        for frag in &self.fragments {
            let mbrs = frag.leaf_mbrs(schema).map_err(|e| e.in_file(&format!("{}/__fragments/{}/__fragment_metadata.tdb", self.uri(), frag.name)))?;
            if mbrs.len() as u64 != frag.sparse_tile_num {
                return Err(Error::corrupt(format!("fragment {}: {} R-tree leaves for {} tiles", frag.name, mbrs.len(), frag.sparse_tile_num)));
            }
            out.push(mbrs);
        }
        Ok(out)
    }

    /// The tiles of each fragment whose MBR meets the subarray.
    pub(crate) fn select_tiles(&self, leaves: &[Vec<Mbr>], sub: &[Option<DimRanges>]) -> Vec<Vec<usize>> {
        let schema = &self.schema;
        leaves
            .iter()
            .map(|mbrs| {
                mbrs.iter()
                    .enumerate()
                    .filter(|(_, mbr)| {
                        schema.dims.iter().enumerate().all(|(d, dim)| match &sub[d] {
                            None => true,
                            Some(r) => r.iter().any(|(lo, hi)| {
                                cmp_bound(dim.datatype, &mbr[d].1, lo) != Ordering::Less
                                    && cmp_bound(dim.datatype, &mbr[d].0, hi) != Ordering::Greater
                            }),
                        })
                    })
                    .map(|(i, _)| i)
                    .collect()
            })
            .collect()
    }

    /// Resolve the sparse fragments over `sub` (see the module docs).
    /// `isolated`: the caller knows pruned tiles share no coordinates with
    /// other fragments (their coordinates need not be decoded).
    /// `all_versions`: keep every cell version in the open range (no
    /// deduplication; equal coordinates oldest first) and report each
    /// row's timestamp: what a consolidation keeping per-cell timestamps
    /// writes.
    pub(crate) fn sparse_sources(
        &self,
        sub: &[Option<DimRanges>],
        order: Order,
        may_match: Option<MayMatch>,
        isolated: bool,
        all_versions: bool,
    ) -> Result<SparseSources> {
        let schema = &self.schema;
        let nd = schema.dims.len();
        let leaves = self.all_leaves()?;
        let mut bases = vec![0usize];
        for l in &leaves {
            bases.push(bases.last().unwrap_or(&0) + l.len());
        }
        let ids = TileIds { bases };
        let total = *ids.bases.last().unwrap_or(&0);
        let selected = self.select_tiles(&leaves, sub);
        let mut pruned = vec![false; total];
        let mut tiles_read = 0;
        for (f, which) in selected.iter().enumerate() {
            let keep = match may_match {
                Some(m) if !which.is_empty() => m(f, which, &leaves[f])?,
                _ => vec![true; which.len()],
            };
            for (&t, k) in which.iter().zip(keep) {
                pruned[ids.bases[f] + t] = !k;
                tiles_read += k as usize;
            }
        }
        let busy = selected.iter().filter(|w| !w.is_empty()).count();
        let keep_all = schema.allows_duplicates || all_versions;
        let pruned_can_shadow = !isolated && !keep_all && busy > 1;

        let mut dim_tiles: Vec<Vec<Option<TileData>>> = (0..nd).map(|_| vec![None; total]).collect();
        let mut ts_tiles: Vec<Option<TileData>> = vec![None; total];
        let mut dt_tiles: Vec<Option<TileData>> = vec![None; total];
        let mut candidates: Vec<u64> = Vec::new();
        for (f, frag) in self.fragments.iter().enumerate() {
            let which: Vec<usize> = selected[f].iter().copied().filter(|&t| pruned_can_shadow || !pruned[ids.bases[f] + t]).collect();
            if which.is_empty() {
                continue;
            }
            let cells: Vec<usize> = which.iter().map(|&t| frag.sparse_tile_cells(schema, t) as usize).collect();
            for (d, tiles) in dim_tiles.iter_mut().enumerate() {
                let col = ColumnSpec::dim(schema, d);
                for (t, data) in which.iter().zip(load_tiles(self, frag, &col, &which, &cells)?) {
                    tiles[ids.bases[f] + t] = Some(data);
                }
            }
            let mut slot = FragmentMeta::timestamp_slot(schema);
            if frag.has_timestamps {
                let col = special_column(schema, slot, "t");
                for (t, data) in which.iter().zip(load_tiles(self, frag, &col, &which, &cells)?) {
                    ts_tiles[ids.bases[f] + t] = Some(data);
                }
                slot += 1;
            }
            if frag.has_delete_meta {
                let col = special_column(schema, slot, "dt");
                for (t, data) in which.iter().zip(load_tiles(self, frag, &col, &which, &cells)?) {
                    dt_tiles[ids.bases[f] + t] = Some(data);
                }
            }
            for (k, &t) in which.iter().enumerate() {
                let g = ids.bases[f] + t;
                for c in 0..cells[k] {
                    let in_sub = (0..nd).all(|d| match &sub[d] {
                        None => true,
                        Some(r) => in_ranges(schema.dims[d].datatype, coord(&dim_tiles, schema, pack(g, c), d), r),
                    });
                    let in_time = ts_tiles[g].as_ref().is_none_or(|td| {
                        let ts = u64_of(td, c);
                        ts >= self.range.0 && ts <= self.range.1
                    });
                    if in_sub && in_time {
                        candidates.push(pack(g, c));
                    }
                }
            }
        }

        let frag_of = |g: usize| ids.bases.partition_point(|&b| b <= g) - 1;
        let dim_ref = &dim_tiles;
        let cell_ts = |s: u64| -> u64 {
            let (g, c) = unpack(s);
            match &ts_tiles[g] {
                Some(td) => u64_of(td, c),
                None => self.fragments[frag_of(g)].t1,
            }
        };
        let col_major = order == Order::ColMajor || (order == Order::Unordered && schema.cell_order == Layout::ColMajor);
        let dim_order: Vec<usize> = if col_major { (0..nd).rev().collect() } else { (0..nd).collect() };
        let cmp_coords = |a: &u64, b: &u64| -> Ordering {
            for &d in &dim_order {
                let o = cmp_values(schema.dims[d].datatype, coord(dim_ref, schema, *a, d), coord(dim_ref, schema, *b, d));
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        };
        // Sort keys: (global-order prefix, coordinates, timestamp, source):
        // among equal coordinates the newest comes last.
        let prefix_kind = if order == Order::Unordered && schema.cell_order == Layout::Hilbert {
            Prefix::Hilbert
        } else if order == Order::Unordered && nd > 1 && schema.dims.iter().any(|d| d.tile_extent.is_some()) {
            // (With one dimension the space tile grows with the coordinate:
            // the coordinate alone gives the same order.)
            Prefix::Tiles(if schema.tile_order == Layout::ColMajor { (0..nd).rev().collect() } else { (0..nd).collect() })
        } else {
            Prefix::None
        };
        let prefix = |s: u64| -> Vec<i64> {
            match &prefix_kind {
                Prefix::Hilbert => {
                    let cs: Vec<&[u8]> = (0..nd).map(|d| coord(dim_ref, schema, s, d)).collect();
                    vec![super::hilbert::cell_hilbert(schema, &cs) as i64 ^ i64::MIN]
                }
                Prefix::Tiles(tile_dims) => tile_dims.iter().map(|&d| space_tile_index(schema, d, coord(dim_ref, schema, s, d))).collect(),
                Prefix::None => Vec::new(),
            }
        };
        let word_keys = prefix_kind.len() + nd + 2 <= 20
            && schema
                .dims
                .iter()
                .all(|d| d.cell_val_num == 1 && (d.datatype.is_integer() || matches!(d.datatype, Datatype::Float32 | Datatype::Float64)));
        let mut sources: Vec<u64> = if word_keys {
            let with_ts = self.fragments.iter().any(|f| f.has_timestamps);
            let words = KeyWords { prefix: &prefix_kind, dim_order: &dim_order, dims: dim_ref, schema, cell_ts: &cell_ts, with_ts };
            words.sort_dedup(&candidates, keep_all)
        } else {
            let mut keyed: Vec<(Vec<i64>, u64, u64)> = candidates.iter().map(|&s| (prefix(s), cell_ts(s), s)).collect();
            keyed.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| cmp_coords(&a.2, &b.2)).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
            let mut sources: Vec<u64> = Vec::with_capacity(keyed.len());
            for (_, _, s) in keyed {
                let same = !keep_all && sources.last().is_some_and(|l| cmp_coords(l, &s) == Ordering::Equal);
                match sources.last_mut() {
                    Some(last) if same => *last = s,
                    _ => sources.push(s),
                }
            }
            sources
        };
        drop(candidates);

        sources.retain(|&s| !pruned[unpack(s).0]);
        if all_versions {
            // Keep deleted versions, with when and by which condition they
            // were deleted (TileDB's delete metadata): from the fragments'
            // own `dt.tdb`/`dci.tdb`, else from the delete commits.
            let by_commit = if self.deletes.is_empty() || sources.is_empty() {
                vec![None; sources.len()]
            } else {
                self.deleted_by(&ids, &sources, &dim_tiles, &cell_ts)?
            };
            let markers: Vec<String> =
                self.deletes.iter().map(|d| format!("__commits/{}", d.marker.rsplit('/').next().unwrap_or(&d.marker))).collect();
            let mut dci_tiles: Vec<Option<TileData>> = vec![None; total];
            let mut old_markers: Vec<Vec<String>> = Vec::new();
            for (f, frag) in self.fragments.iter().enumerate() {
                old_markers.push(if frag.has_delete_meta { frag.processed_conditions()? } else { Vec::new() });
                if frag.has_delete_meta {
                    let slot = FragmentMeta::timestamp_slot(schema) + frag.has_timestamps as usize + 1;
                    let which: Vec<usize> = selected[f].clone();
                    let cells: Vec<usize> = which.iter().map(|&t| frag.sparse_tile_cells(schema, t) as usize).collect();
                    let col = special_column(schema, slot, "dci");
                    for (t, data) in which.iter().zip(load_tiles(self, frag, &col, &which, &cells)?) {
                        dci_tiles[ids.bases[f] + t] = Some(data);
                    }
                }
            }
            let frag_of = |g: usize| ids.bases.partition_point(|&b| b <= g) - 1;
            let mut dt = Vec::with_capacity(sources.len());
            let mut dci = Vec::with_capacity(sources.len());
            for (i, &s) in sources.iter().enumerate() {
                let (g, c) = unpack(s);
                let old = dt_tiles[g].as_ref().map(|td| u64_of(td, c)).filter(|&t| t != u64::MAX).map(|t| {
                    let k = dci_tiles[g].as_ref().map(|td| u64_of(td, c)).unwrap_or(u64::MAX);
                    let marker = old_markers[frag_of(g)].get(k as usize);
                    (t, marker.and_then(|m| markers.iter().position(|n| n == m)).map_or(u64::MAX, |p| p as u64))
                });
                let new = by_commit[i].map(|k| (self.deletes[k].timestamp, k as u64));
                let (t, k) = match (old, new) {
                    (Some(a), Some(b)) => {
                        if a.0 <= b.0 {
                            a
                        } else {
                            b
                        }
                    }
                    (Some(a), None) => a,
                    (None, Some(b)) => b,
                    (None, None) => (u64::MAX, u64::MAX),
                };
                dt.push(t);
                dci.push(k);
            }
            let timestamps = sources.iter().map(|&s| cell_ts(s)).collect();
            let delete_meta =
                (!markers.is_empty() || self.fragments.iter().any(|f| f.has_delete_meta)).then_some(DeleteMeta { dt, dci, processed: markers });
            return Ok(SparseSources { ids, sources, dim_tiles, tiles_total: total, tiles_read, timestamps, delete_meta });
        }
        let open_end = self.range.1;
        sources.retain(|&s| {
            let (g, c) = unpack(s);
            dt_tiles[g].as_ref().is_none_or(|td| {
                let dt = u64_of(td, c);
                if open_end == u64::MAX {
                    dt == u64::MAX
                } else {
                    dt > open_end
                }
            })
        });
        if !self.deletes.is_empty() && !sources.is_empty() {
            let by = self.deleted_by(&ids, &sources, &dim_tiles, &cell_ts)?;
            sources = sources.into_iter().zip(by).filter(|(_, b)| b.is_none()).map(|(s, _)| s).collect();
        }
        Ok(SparseSources { ids, sources, dim_tiles, tiles_total: total, tiles_read, timestamps: Vec::new(), delete_meta: None })
    }

    /// Per source, the first visible delete commit (index into
    /// `self.deletes`, oldest first) that removes it, if any.
    fn deleted_by(
        &self,
        ids: &TileIds,
        sources: &[u64],
        dim_tiles: &[Vec<Option<TileData>>],
        cell_ts: &dyn Fn(u64) -> u64,
    ) -> Result<Vec<Option<usize>>> {
        let schema = &self.schema;
        let mut processed: Vec<Vec<String>> = Vec::new();
        for frag in &self.fragments {
            processed.push(if frag.has_delete_meta {
                frag.processed_conditions()
                    .map_err(|e| e.in_file(&format!("{}/__fragments/{}/__fragment_metadata.tdb", self.uri(), frag.name)))?
                    .iter()
                    .map(|m| strip_marker(m).to_string())
                    .collect()
            } else {
                Vec::new()
            });
        }
        let mut fields = Vec::new();
        for d in &self.deletes {
            d.keep.fields(&mut fields);
        }
        let cells_of = |f: usize, t: usize| self.fragments[f].sparse_tile_cells(schema, t) as usize;
        let mut attr_tiles: Vec<(String, usize, Vec<Option<TileData>>)> = Vec::new();
        for name in &fields {
            if let Some(a) = schema.attr_index(name) {
                let col = ColumnSpec::attr(schema, a);
                attr_tiles.push((name.clone(), a, load_used(self, ids, &col, sources, &cells_of)?));
            } else if schema.dim_index(name).is_none() {
                return Err(Error::corrupt(format!("a delete condition names {name:?}, which is no attribute or dimension")));
            }
        }
        let frag_of = |g: usize| ids.bases.partition_point(|&b| b <= g) - 1;
        let mut out = Vec::with_capacity(sources.len());
        for &s in sources {
            let (g, c) = unpack(s);
            let f = frag_of(g);
            let frag = &self.fragments[f];
            let get = |name: &str| -> Result<CellValue<'_>> {
                if let Some((_, a, tiles)) = attr_tiles.iter().find(|x| x.0 == name) {
                    let at = &schema.attrs[*a];
                    let td = tiles[g].as_ref().ok_or_else(|| Error::Internal { what: format!("tile {g} of {name} not loaded") })?;
                    let bytes = if td.valid(c) { Some(td.value(c, at.cell_size())) } else { None };
                    return Ok(CellValue { datatype: at.datatype, bytes, as_bytes: at.cell_val_num != 1 });
                }
                let d = schema.dim_index(name).ok_or_else(|| Error::corrupt(format!("unknown condition field {name:?}")))?;
                let dim = &schema.dims[d];
                Ok(CellValue { datatype: dim.datatype, bytes: Some(coord(dim_tiles, schema, s, d)), as_bytes: dim.cell_val_num == VAR_NUM })
            };
            let mut by = None;
            for (k, del) in self.deletes.iter().enumerate() {
                if del.timestamp < frag.t1 || processed[f].iter().any(|m| m == strip_marker(&del.marker)) {
                    continue;
                }
                if frag.has_timestamps && del.timestamp <= frag.t2 && cell_ts(s) > del.timestamp {
                    continue;
                }
                if !del.keep.holds(&get).map_err(|e| e.context(format!("delete condition {}", del.marker)))? {
                    by = Some(k);
                    break;
                }
            }
            out.push(by);
        }
        Ok(out)
    }
}

/// What orders cells before their coordinates in TileDB's global order.
enum Prefix {
    Hilbert,
    /// Space tile index along these dimensions, slowest first.
    Tiles(Vec<usize>),
    None,
}

impl Prefix {
    fn len(&self) -> usize {
        match self {
            Prefix::Hilbert => 1,
            Prefix::Tiles(d) => d.len(),
            Prefix::None => 0,
        }
    }
}

/// Sort keys of cells with fixed-size numeric coordinates as arrays of
/// `u64` words (prefix, coordinates in comparison order, timestamp,
/// source), each word mapped so that unsigned order is the value order:
/// sorting and deduplicating them needs no per-cell allocation or typed
/// comparison.
struct KeyWords<'a> {
    prefix: &'a Prefix,
    dim_order: &'a [usize],
    dims: &'a [Vec<Option<TileData>>],
    schema: &'a super::schema::ArraySchema,
    cell_ts: &'a (dyn Fn(u64) -> u64 + Sync),
    /// Whether the timestamp word is needed: without per-cell timestamps
    /// a cell's timestamp is its fragment's `t1`, and fragments (hence
    /// sources) are already in `t1` order.
    with_ts: bool,
}

/// Map a stored coordinate to a word whose unsigned order is its order.
fn order_word(t: Datatype, v: &[u8]) -> u64 {
    use super::schema::{float_value, int_value};
    if let Some(i) = int_value(t, v) {
        return if t.is_signed() { (i as i64 as u64) ^ (1 << 63) } else { i as u64 };
    }
    let bits = match t {
        Datatype::Float32 => float_value(t, v).unwrap_or(f64::NAN).to_bits(),
        _ => v.get(..8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes).unwrap_or(0),
    };
    // total_cmp's order: negative values reversed below the positives.
    if bits >> 63 == 1 {
        !bits
    } else {
        bits ^ (1 << 63)
    }
}

impl KeyWords<'_> {
    fn key<const W: usize>(&self, s: u64) -> [u64; W] {
        let mut k = [0u64; W];
        let mut i = 0;
        match self.prefix {
            Prefix::Hilbert => {
                let cs: Vec<&[u8]> = (0..self.schema.dims.len()).map(|d| coord(self.dims, self.schema, s, d)).collect();
                k[0] = super::hilbert::cell_hilbert(self.schema, &cs);
                i = 1;
            }
            Prefix::Tiles(tile_dims) => {
                for &d in tile_dims {
                    k[i] = (space_tile_index(self.schema, d, coord(self.dims, self.schema, s, d)) as u64) ^ (1 << 63);
                    i += 1;
                }
            }
            Prefix::None => {}
        }
        for &d in self.dim_order {
            k[i] = order_word(self.schema.dims[d].datatype, coord(self.dims, self.schema, s, d));
            i += 1;
        }
        if self.with_ts {
            k[i] = (self.cell_ts)(s);
            i += 1;
        }
        k[i] = s;
        k
    }

    fn run<const W: usize>(&self, candidates: &[u64], duplicates: bool) -> Vec<u64> {
        use rayon::prelude::*;
        let mut keys: Vec<[u64; W]> = crate::process::install(|| candidates.par_iter().map(|&s| self.key::<W>(s)).collect());
        // Candidates come fragment by fragment, each mostly in global order
        // already: a stable sort finds those runs and merges them.
        keys.sort();
        let n = self.prefix.len() + self.dim_order.len();
        let src = n + self.with_ts as usize;
        let mut out: Vec<u64> = Vec::with_capacity(keys.len());
        let mut last: Option<&[u64]> = None;
        for k in &keys {
            let same = !duplicates && last.is_some_and(|l| l == &k[..n]);
            match out.last_mut() {
                Some(o) if same => *o = k[src],
                _ => out.push(k[src]),
            }
            last = Some(&k[..n]);
        }
        out
    }

    /// The candidates sorted, and unless `duplicates`, only the last
    /// (newest) of equal coordinates kept.
    fn sort_dedup(&self, candidates: &[u64], duplicates: bool) -> Vec<u64> {
        match self.prefix.len() + self.dim_order.len() + 1 + self.with_ts as usize {
            0..=2 => self.run::<2>(candidates, duplicates),
            3 => self.run::<3>(candidates, duplicates),
            4 => self.run::<4>(candidates, duplicates),
            5..=6 => self.run::<6>(candidates, duplicates),
            7..=8 => self.run::<8>(candidates, duplicates),
            9..=12 => self.run::<12>(candidates, duplicates),
            _ => self.run::<20>(candidates, duplicates),
        }
    }
}

fn u64_of(td: &TileData, c: usize) -> u64 {
    let b = td.value(c, 8);
    u64::from_le_bytes(b.try_into().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_words_follow_value_order() {
        let ints: Vec<i64> = vec![i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
        let w: Vec<u64> = ints.iter().map(|v| order_word(Datatype::Int64, &v.to_le_bytes())).collect();
        assert!(w.windows(2).all(|p| p[0] < p[1]));
        let small: Vec<i8> = vec![-128, -3, 0, 4, 127];
        let w: Vec<u64> = small.iter().map(|v| order_word(Datatype::Int8, &v.to_le_bytes())).collect();
        assert!(w.windows(2).all(|p| p[0] < p[1]));
        let floats = [f64::NEG_INFINITY, -2.5, -0.0, 0.0, 1e-300, 3.0, f64::INFINITY, f64::NAN];
        let w: Vec<u64> = floats.iter().map(|v| order_word(Datatype::Float64, &v.to_le_bytes())).collect();
        for (i, a) in floats.iter().enumerate() {
            for (j, b) in floats.iter().enumerate() {
                assert_eq!(w[i].cmp(&w[j]), a.total_cmp(b), "{a} vs {b}");
            }
        }
        let f32s = [-1.5f32, 0.25, 2.0];
        let w: Vec<u64> = f32s.iter().map(|v| order_word(Datatype::Float32, &v.to_le_bytes())).collect();
        assert!(w.windows(2).all(|p| p[0] < p[1]));
        assert!(order_word(Datatype::UInt64, &u64::MAX.to_le_bytes()) > order_word(Datatype::UInt64, &1u64.to_le_bytes()));
    }
}
