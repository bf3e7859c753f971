//! Reads: resolving fragments over a subarray into one Arrow batch.
//!
//! Every output cell is described by a source — a (tile, cell) pair in some
//! fragment, or the fill value — and each selected column is then gathered
//! from just the tiles its sources name.
//!
//! Dense arrays: the output covers the subarray (the whole domain by
//! default) in row-major ("C") or column-major ("F") order; fragments are
//! applied oldest first, each overwriting the cells of its non-empty domain
//! (the rest of its space tiles holds fills and is ignored). A dense
//! fragment's tiles are the space tiles covering its non-empty domain, in
//! tile order; cells inside a tile follow the cell order.
//!
//! Sparse arrays: data tiles whose R-tree leaf MBR meets the subarray are
//! decoded, their cells filtered by the subarray, sorted by coordinates
//! (cell order, or the requested order), and unless duplicates are allowed
//! only the newest cell per coordinate is kept.
//!
//! What the other read paths share with these reads (read options, cell
//! sources, value comparisons, cells gathered into Arrow arrays) is in
//! `cells.rs`.

use arrow_array::{ArrayRef, RecordBatch};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::{DataType, SchemaRef};

use super::array::TileDbArray;
use super::cells::{
    build_array, build_array_nulls, dense_domain_and_extents, dense_int_ranges, gather, load_used, next_index, normalize_subarray, output_columns,
    output_schema, pack, strides, unpack, CellBytes, DimRanges, Order, ReadOptions, TileCounts, TileIds, FILL, PRUNED,
};
use super::schema::{int_value, Layout};
use super::tiles::ColumnSpec;
use crate::error::{Error, Result};

impl TileDbArray {
    /// Read cells into one record batch.
    pub fn read(&self, opts: &ReadOptions) -> Result<RecordBatch> {
        Ok(self.read_counted(opts)?.0)
    }

    /// Read cells and report which tiles the read needed.
    pub fn read_counted(&self, opts: &ReadOptions) -> Result<(RecordBatch, TileCounts)> {
        match &opts.filter {
            Some(sql) => self.read_filtered(opts, sql),
            None => {
                let (batch, counts, _) = self.read_plain(opts, None)?;
                Ok((batch, counts))
            }
        }
    }

    /// The columns `dims` then `attrs` of the sparse cells `sp` selected.
    fn sparse_batch(&self, sp: &super::sparse::SparseSources, dims: &[usize], attrs: &[usize], out_schema: SchemaRef) -> Result<RecordBatch> {
        let schema = &self.schema;
        let mut columns: Vec<ArrayRef> = Vec::new();
        let cells_of = |f: usize, t: usize| self.fragments[f].sparse_tile_cells(schema, t) as usize;
        for &d in dims {
            let col = ColumnSpec::dim(schema, d);
            let (cells, _) = gather(&col, &sp.dim_tiles[d], &sp.sources, &[], true)?;
            columns.push(build_array(out_schema.field(columns.len()).data_type(), col.datatype, col.cell_val_num, cells, None)?);
        }
        for &a in attrs {
            let col = ColumnSpec::attr(schema, a);
            let tiles = load_used(self, &sp.ids, &col, &sp.sources, &cells_of)?;
            let at = &schema.attrs[a];
            let (cells, validity) = gather(&col, &tiles, &sp.sources, &at.fill, at.fill_valid)?;
            columns.push(build_array(out_schema.field(columns.len()).data_type(), col.datatype, col.cell_val_num, cells, validity)?);
        }
        let n = sp.sources.len();
        RecordBatch::try_new_with_options(out_schema, columns, &arrow_array::RecordBatchOptions::new().with_row_count(Some(n)))
            .map_err(Error::internal_arrow)
    }

    /// Every version of every cell of a sparse array in the open range
    /// (dimensions and attributes, global order, equal coordinates oldest
    /// first; deletes applied) and each row's timestamp: what a
    /// consolidation keeping per-cell timestamps writes.
    pub(crate) fn read_all_versions(&self) -> Result<(RecordBatch, Vec<u64>, Option<super::sparse::DeleteMeta>)> {
        let schema = &self.schema;
        if !schema.sparse {
            return Err(Error::Internal { what: "per-cell versions of a dense array".into() });
        }
        let opts = ReadOptions::default();
        let sub = normalize_subarray(schema, &opts.subarray)?;
        let out_schema = output_schema(schema, &opts)?;
        let (dims, attrs) = output_columns(schema, &opts)?;
        let sp = self.sparse_sources(&sub, Order::Unordered, None, false, true)?;
        let batch = self.sparse_batch(&sp, &dims, &attrs, out_schema)?;
        Ok((batch, sp.timestamps, sp.delete_meta))
    }

    /// Read without a filter; `pruner` marks tiles no filtered cell can come
    /// from. Dense reads also return which rows are not pruned cells.
    pub(crate) fn read_plain(
        &self,
        opts: &ReadOptions,
        pruner: Option<&dyn super::query::TilePruner>,
    ) -> Result<(RecordBatch, TileCounts, Option<Vec<bool>>)> {
        let schema = &self.schema;
        let sub = normalize_subarray(schema, &opts.subarray)?;
        let out_schema = output_schema(schema, opts)?;
        let (dims, attrs) = output_columns(schema, opts)?;
        let mut columns: Vec<ArrayRef> = Vec::new();
        if schema.sparse {
            let may = |f: usize, which: &[usize], mbrs: &[super::fragment::Mbr]| -> Result<Vec<bool>> {
                match pruner {
                    Some(p) => p.sparse_may_match(self, f, which, mbrs),
                    None => Ok(vec![true; which.len()]),
                }
            };
            let isolated = pruner.is_some_and(|p| p.pruned_tiles_are_isolated());
            let sp = self.sparse_sources(&sub, opts.order, if pruner.is_some() { Some(&may) } else { None }, isolated, false)?;
            let counts = TileCounts { fragments: self.fragments.len(), tiles_total: sp.tiles_total, tiles_read: sp.tiles_read };
            return Ok((self.sparse_batch(&sp, &dims, &attrs, out_schema)?, counts, None));
        }
        if pruner.is_none() {
            return self.read_dense(&sub, opts, out_schema, &dims, &attrs);
        }
        let may = |f: usize, ntiles: usize, per_tile: usize| -> Result<Vec<bool>> {
            match pruner {
                Some(p) => p.dense_may_match(self, f, ntiles, per_tile),
                None => Ok(vec![true; ntiles]),
            }
        };
        let dense = self.dense_sources(&sub, opts.order, Some(&may))?;
        let total = *dense.ids.bases.last().unwrap_or(&0);
        let mut touched = vec![false; total];
        for &s in &dense.sources {
            if s != FILL && s != PRUNED {
                touched[unpack(s).0] = true;
            }
        }
        let counts = TileCounts { fragments: self.fragments.len(), tiles_total: total, tiles_read: touched.iter().filter(|t| **t).count() };
        let keep = Some(dense.sources.iter().map(|&s| s != PRUNED).collect());
        for &d in &dims {
            let dim = &schema.dims[d];
            let w = dim.datatype.size();
            let mut values = Vec::with_capacity(dense.sources.len() * w);
            for_each_cell(&dense.coords, dense.order, |idx| {
                let v = dense.coords[d][idx[d]];
                values.extend_from_slice(&(v as i64).to_le_bytes()[..w]);
            });
            let cells = CellBytes { values, offsets: None, len: dense.sources.len() };
            columns.push(build_array(out_schema.field(columns.len()).data_type(), dim.datatype, 1, cells, None)?);
        }
        for &a in &attrs {
            columns.push(self.dense_gathered(&dense, a, out_schema.field(columns.len()).data_type())?);
        }
        let n = dense.sources.len();
        let batch = RecordBatch::try_new_with_options(out_schema, columns, &arrow_array::RecordBatchOptions::new().with_row_count(Some(n)))
            .map_err(Error::internal_arrow)?;
        Ok((batch, counts, keep))
    }

    /// One attribute of a dense read gathered cell by cell from `dense`'s
    /// sources (var-sized attributes, filtered reads).
    fn dense_gathered(&self, dense: &DenseSources, a: usize, dt: &DataType) -> Result<ArrayRef> {
        let per_tile = dense.cells_per_tile;
        let cells_of = |_f: usize, _t: usize| per_tile;
        let col = ColumnSpec::attr(&self.schema, a);
        let tiles = load_used(self, &dense.ids, &col, &dense.sources, &cells_of)?;
        let at = &self.schema.attrs[a];
        let (cells, validity) = gather(&col, &tiles, &dense.sources, &at.fill, at.fill_valid)?;
        build_array(dt, col.datatype, col.cell_val_num, cells, validity)
    }

    /// A dense read without a filter: fixed-size columns are copied tile
    /// by tile (see `dense.rs`), var-sized attributes gathered per cell.
    fn read_dense(
        &self,
        sub: &[Option<DimRanges>],
        opts: &ReadOptions,
        out_schema: SchemaRef,
        dims: &[usize],
        attrs: &[usize],
    ) -> Result<(RecordBatch, TileCounts, Option<Vec<bool>>)> {
        let schema = &self.schema;
        let plan = self.dense_plan(sub, opts.order)?;
        let (tiles_total, tiles_read) = plan.tile_counts();
        let counts = TileCounts { fragments: self.fragments.len(), tiles_total, tiles_read };
        let mut columns: Vec<ArrayRef> = Vec::new();
        for &d in dims {
            let dim = &schema.dims[d];
            let cells = CellBytes { values: self.dense_dim_column(&plan, d), offsets: None, len: plan.total };
            columns.push(build_array(out_schema.field(columns.len()).data_type(), dim.datatype, 1, cells, None)?);
        }
        let mut sources: Option<DenseSources> = None;
        for &a in attrs {
            let at = &schema.attrs[a];
            let dt = out_schema.field(columns.len()).data_type().clone();
            if at.is_var() {
                if sources.is_none() {
                    sources = Some(self.dense_sources(sub, opts.order, None)?);
                }
                columns.push(self.dense_gathered(sources.as_ref().expect("set above"), a, &dt)?);
                continue;
            }
            let col = ColumnSpec::attr(schema, a);
            let (values, validity) = self.dense_fixed_column(&plan, &col, &at.fill, at.fill_valid)?;
            let nulls = validity.map(|v| NullBuffer::from(BooleanBuffer::collect_bool(v.len(), |i| v[i] != 0)));
            let cells = CellBytes { values, offsets: None, len: plan.total };
            columns.push(build_array_nulls(&dt, col.datatype, col.cell_val_num, cells, nulls)?);
        }
        let batch = RecordBatch::try_new_with_options(out_schema, columns, &arrow_array::RecordBatchOptions::new().with_row_count(Some(plan.total)))
            .map_err(Error::internal_arrow)?;
        Ok((batch, counts, None))
    }
}

/// Visit every output cell's per-dimension indices in output order.
fn for_each_cell(coords: &[Vec<i128>], order: Order, mut f: impl FnMut(&[usize])) {
    let nd = coords.len();
    if coords.iter().any(|c| c.is_empty()) {
        return;
    }
    let mut idx = vec![0usize; nd];
    let dims_fast_first: Vec<usize> = if order == Order::ColMajor { (0..nd).collect() } else { (0..nd).rev().collect() };
    loop {
        f(&idx);
        let mut carried = true;
        for &d in &dims_fast_first {
            idx[d] += 1;
            if idx[d] < coords[d].len() {
                carried = false;
                break;
            }
            idx[d] = 0;
        }
        if carried {
            return;
        }
    }
}

pub(crate) struct DenseSources {
    pub(crate) ids: TileIds,
    pub(crate) sources: Vec<u64>,
    pub(crate) coords: Vec<Vec<i128>>,
    order: Order,
    pub(crate) cells_per_tile: usize,
}

impl TileDbArray {
    /// Each dimension's integer domain `(lo, hi)` and tile extent of a dense
    /// array (a missing extent covers the whole domain).
    pub(crate) fn dense_domain_and_extents(&self) -> Result<(Vec<(i128, i128)>, Vec<i128>)> {
        dense_domain_and_extents(&self.schema)
    }

    #[allow(clippy::type_complexity)]
    pub(crate) fn dense_sources(
        &self,
        sub: &[Option<DimRanges>],
        order: Order,
        may_match: Option<&dyn Fn(usize, usize, usize) -> Result<Vec<bool>>>,
    ) -> Result<DenseSources> {
        let schema = &self.schema;
        let nd = schema.dims.len();
        let order = if order == Order::Unordered { Order::RowMajor } else { order };
        let (dom, ext) = self.dense_domain_and_extents()?;
        let mut coords: Vec<Vec<i128>> = Vec::new();
        for (d, ranges) in dense_int_ranges(&dom, sub)?.into_iter().enumerate() {
            let len: i128 = ranges.iter().map(|(a, b)| b - a + 1).sum();
            if len > (1 << 32) {
                return Err(Error::invalid_input(format!("subarray on {} has {len} cells; read a smaller subarray", schema.dims[d].name)));
            }
            coords.push(ranges.iter().flat_map(|&(a, b)| a..=b).collect());
        }
        let total: u128 = coords.iter().map(|c| c.len() as u128).product();
        if total > (1u128 << 34) {
            return Err(Error::invalid_input(format!("the read would return {total} cells; read a smaller subarray")));
        }
        let total = total as usize;
        // Output strides, and cell strides inside a tile.
        let ostride = strides(coords.iter().map(|c| c.len()), order == Order::ColMajor);
        let cstride = strides(ext.iter().map(|&e| e as usize), schema.cell_order == Layout::ColMajor);
        let cells_per_tile: usize = ext.iter().map(|&e| e as usize).product();
        let mut sources = vec![FILL; total];
        let mut bases = vec![0usize];
        for (f, frag) in self.fragments.iter().enumerate() {
            let Some(ned) = &frag.nonempty else {
                bases.push(*bases.last().unwrap_or(&0));
                continue;
            };
            let mut fl = Vec::new();
            let mut ntiles = Vec::new();
            for d in 0..nd {
                let t = schema.dims[d].datatype;
                let lo = int_value(t, &ned[d].0).ok_or_else(|| Error::corrupt("non-integer dense non-empty domain"))?;
                let hi = int_value(t, &ned[d].1).ok_or_else(|| Error::corrupt("non-integer dense non-empty domain"))?;
                if lo > hi || lo < dom[d].0 || hi > dom[d].1 {
                    return Err(Error::corrupt(format!("fragment {} non-empty domain {lo}..{hi} outside the domain", frag.name)));
                }
                let tlo = (lo - dom[d].0) / ext[d];
                let thi = (hi - dom[d].0) / ext[d];
                fl.push((lo, hi, tlo));
                ntiles.push((thi - tlo + 1) as usize);
            }
            let tstride = strides(ntiles.iter().copied(), schema.tile_order == Layout::ColMajor);
            let ntotal: usize = ntiles.iter().product();
            let base = *bases.last().unwrap_or(&0);
            bases.push(base + ntotal);
            let keep = match may_match {
                Some(m) => m(f, ntotal, cells_per_tile)?,
                None => Vec::new(),
            };
            // Per dimension: the output indices inside this fragment, with
            // their contributions to output index, tile and cell.
            let mut parts: Vec<Vec<(usize, usize, usize)>> = Vec::new();
            for d in 0..nd {
                let (lo, hi, tlo) = fl[d];
                let mut v = Vec::new();
                for (i, &x) in coords[d].iter().enumerate() {
                    if x < lo || x > hi {
                        continue;
                    }
                    let rel = x - dom[d].0;
                    let tile = (rel / ext[d] - tlo) as usize;
                    let cell = (rel % ext[d]) as usize;
                    v.push((i * ostride[d], tile * tstride[d], cell * cstride[d]));
                }
                parts.push(v);
            }
            if parts.iter().any(|p| p.is_empty()) {
                continue;
            }
            let mut idx = vec![0usize; nd];
            loop {
                let (mut o, mut t, mut c) = (0usize, base, 0usize);
                for d in 0..nd {
                    let p = parts[d][idx[d]];
                    o += p.0;
                    t += p.1;
                    c += p.2;
                }
                sources[o] = if keep.get(t - base).is_some_and(|k| !k) { PRUNED } else { pack(t, c) };
                if !next_index(&mut idx, |d| parts[d].len()) {
                    break;
                }
            }
        }
        Ok(DenseSources { ids: TileIds { bases }, sources, coords, order, cells_per_tile })
    }
}
