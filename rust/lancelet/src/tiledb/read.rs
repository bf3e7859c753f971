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

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::{make_array, ArrayRef, RecordBatch};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::array::TileDbArray;
use super::datatype::Datatype;
use super::schema::{float_value, int_value, ArraySchema, Layout, VAR_NUM};
use super::tiles::{load_tiles, ColumnSpec, TileData};
use crate::error::{Error, Result};

/// A subarray bound given by the caller.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    Int(i128),
    Float(f64),
    Bytes(Vec<u8>),
}

/// Inclusive ranges on one dimension.
pub type DimRanges = Vec<(Bound, Bound)>;

/// Result order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    RowMajor,
    ColMajor,
    Unordered,
}

/// What to read.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Per dimension: `None` for all of it (may be empty: all dimensions).
    pub subarray: Vec<Option<DimRanges>>,
    /// Attributes to return (all, in schema order, if `None`).
    pub attrs: Option<Vec<String>>,
    /// Whether to return the dimensions first.
    pub dims: bool,
    pub order: Order,
    /// A lancelet SQL filter on dimensions and attributes (returned or not):
    /// only the cells where it holds are returned; tiles whose statistics
    /// prove it false are not read.
    pub filter: Option<String>,
}

/// What a read touched: visible fragments, data tiles in them, and tiles
/// left to read after R-tree / space-tile / statistics pruning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TileCounts {
    pub fragments: usize,
    pub tiles_total: usize,
    pub tiles_read: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions { subarray: Vec::new(), attrs: None, dims: true, order: Order::Unordered, filter: None }
    }
}

pub(crate) const FILL: u64 = u64::MAX;
/// Source of a dense cell whose newest tile a filter's statistics pruned:
/// read as the fill and removed from the result.
pub(crate) const PRUNED: u64 = u64::MAX - 1;

pub(crate) fn pack(tile: usize, cell: usize) -> u64 {
    ((tile as u64) << 32) | cell as u64
}

pub(crate) fn unpack(s: u64) -> (usize, usize) {
    ((s >> 32) as usize, (s & 0xffff_ffff) as usize)
}

/// Compare two stored values of type `t`.
pub fn cmp_values(t: Datatype, a: &[u8], b: &[u8]) -> Ordering {
    if let (Some(x), Some(y)) = (int_value(t, a), int_value(t, b)) {
        return x.cmp(&y);
    }
    if let (Some(x), Some(y)) = (float_value(t, a), float_value(t, b)) {
        return x.total_cmp(&y);
    }
    a.cmp(b)
}

pub(crate) fn cmp_bound(t: Datatype, v: &[u8], b: &Bound) -> Ordering {
    match b {
        Bound::Int(i) => match int_value(t, v) {
            Some(x) => x.cmp(i),
            None => float_value(t, v).unwrap_or(f64::NAN).total_cmp(&(*i as f64)),
        },
        Bound::Float(f) => float_value(t, v).unwrap_or(f64::NAN).total_cmp(f),
        Bound::Bytes(s) => v.cmp(s.as_slice()),
    }
}

pub(crate) fn in_ranges(t: Datatype, v: &[u8], ranges: &DimRanges) -> bool {
    ranges.iter().any(|(lo, hi)| cmp_bound(t, v, lo) != Ordering::Less && cmp_bound(t, v, hi) != Ordering::Greater)
}

/// Check the caller's subarray against the schema; one entry per dimension.
pub(crate) fn normalize_subarray(schema: &ArraySchema, sub: &[Option<DimRanges>]) -> Result<Vec<Option<DimRanges>>> {
    if !sub.is_empty() && sub.len() != schema.dims.len() {
        return Err(Error::invalid_input(format!(
            "subarray has {} entries for {} dimensions",
            sub.len(),
            schema.dims.len()
        )));
    }
    let mut out = Vec::new();
    for (d, dim) in schema.dims.iter().enumerate() {
        let Some(Some(ranges)) = sub.get(d) else {
            out.push(None);
            continue;
        };
        let mut fixed = Vec::new();
        for (lo, hi) in ranges {
            let conv = |b: &Bound| -> Result<Bound> {
                match (b, dim.datatype) {
                    (Bound::Bytes(_), t) if dim.is_var() || t.is_bytes() => Ok(b.clone()),
                    (Bound::Int(_), t) if t.is_integer() && !dim.is_var() => Ok(b.clone()),
                    (Bound::Int(i), Datatype::Float32 | Datatype::Float64) => Ok(Bound::Float(*i as f64)),
                    (Bound::Float(_), Datatype::Float32 | Datatype::Float64) => Ok(b.clone()),
                    _ => Err(Error::invalid_input(format!(
                        "subarray bound {b:?} does not suit dimension {} of type {}",
                        dim.name,
                        dim.datatype.name()
                    ))),
                }
            };
            let (lo, hi) = (conv(lo)?, conv(hi)?);
            let order = match (&lo, &hi) {
                (Bound::Int(a), Bound::Int(b)) => a.cmp(b),
                (Bound::Float(a), Bound::Float(b)) => a.partial_cmp(b).unwrap_or(Ordering::Greater),
                (Bound::Bytes(a), Bound::Bytes(b)) => a.cmp(b),
                _ => Ordering::Less,
            };
            if order == Ordering::Greater {
                return Err(Error::invalid_input(format!("subarray range {lo:?}..{hi:?} on {} is empty (low > high)", dim.name)));
            }
            if let Some((dlo, dhi)) = &dim.domain {
                if cmp_bound(dim.datatype, dlo, &lo) == Ordering::Greater || cmp_bound(dim.datatype, dhi, &hi) == Ordering::Less {
                    return Err(Error::invalid_input(format!(
                        "subarray range {lo:?}..{hi:?} on {} is outside the domain",
                        dim.name
                    )));
                }
            }
            fixed.push((lo, hi));
        }
        if fixed.is_empty() {
            return Err(Error::invalid_input(format!("no ranges given for dimension {}", dim.name)));
        }
        out.push(Some(fixed));
    }
    Ok(out)
}

/// The columns to output: dimensions (if asked) then attributes.
fn output_columns(schema: &ArraySchema, opts: &ReadOptions) -> Result<(Vec<usize>, Vec<usize>)> {
    let dims: Vec<usize> = if opts.dims { (0..schema.dims.len()).collect() } else { Vec::new() };
    let attrs = match &opts.attrs {
        None => (0..schema.attrs.len()).collect(),
        Some(names) => names
            .iter()
            .map(|n| {
                schema.attr_index(n).ok_or_else(|| {
                    let known: Vec<&str> = schema.attrs.iter().map(|a| a.name.as_str()).collect();
                    Error::invalid_input(format!("no attribute {n:?} (attributes: {known:?})"))
                })
            })
            .collect::<Result<_>>()?,
    };
    Ok((dims, attrs))
}

/// The Arrow type of a column.
pub fn arrow_type(t: Datatype, cell_val_num: u32) -> Result<DataType> {
    let v = t.arrow_value_type()?;
    Ok(if cell_val_num == VAR_NUM {
        if t.is_bytes() {
            v
        } else {
            DataType::LargeList(Arc::new(Field::new("item", v, false)))
        }
    } else if cell_val_num == 1 {
        if t.is_bytes() && t != Datatype::Char && t != Datatype::StringAscii && t != Datatype::StringUtf8 {
            DataType::FixedSizeBinary(1)
        } else if t.is_bytes() {
            match t {
                Datatype::StringAscii | Datatype::StringUtf8 => DataType::LargeUtf8,
                _ => DataType::LargeBinary,
            }
        } else {
            v
        }
    } else if t.is_bytes() {
        DataType::FixedSizeBinary(cell_val_num as i32)
    } else {
        DataType::FixedSizeList(Arc::new(Field::new("item", v, false)), cell_val_num as i32)
    })
}

/// The Arrow schema of a read.
pub fn output_schema(schema: &ArraySchema, opts: &ReadOptions) -> Result<SchemaRef> {
    let (dims, attrs) = output_columns(schema, opts)?;
    let mut fields = Vec::new();
    for d in dims {
        let dim = &schema.dims[d];
        fields.push(Field::new(&dim.name, arrow_type(dim.datatype, dim.cell_val_num)?, false));
    }
    for a in attrs {
        let at = &schema.attrs[a];
        fields.push(Field::new(&at.name, arrow_type(at.datatype, at.cell_val_num)?, at.nullable));
    }
    Ok(Arc::new(Schema::new(fields)))
}

/// Build an Arrow array of `n` cells from cell bytes.
pub(crate) fn build_array(dt: &DataType, t: Datatype, cell_val_num: u32, cells: CellBytes, validity: Option<Vec<bool>>) -> Result<ArrayRef> {
    let nulls = validity.map(|v| NullBuffer::from(BooleanBuffer::from(v)));
    build_array_nulls(dt, t, cell_val_num, cells, nulls)
}

/// [`build_array`] with the validity already a null buffer.
pub(crate) fn build_array_nulls(dt: &DataType, t: Datatype, cell_val_num: u32, cells: CellBytes, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
    let n = cells.len;
    let data = match (dt, cells.offsets) {
        (DataType::LargeUtf8 | DataType::LargeBinary, Some(offsets)) => ArrayData::builder(dt.clone())
            .len(n)
            .add_buffer(Buffer::from_vec(offsets))
            .add_buffer(Buffer::from_vec(cells.values))
            .nulls(nulls)
            .build()?,
        (DataType::LargeUtf8 | DataType::LargeBinary, None) => {
            // One fixed byte per cell shown as a one-character string.
            let offsets: Vec<i64> = (0..=n as i64).collect();
            ArrayData::builder(dt.clone())
                .len(n)
                .add_buffer(Buffer::from_vec(offsets))
                .add_buffer(Buffer::from_vec(cells.values))
                .nulls(nulls)
                .build()?
        }
        (DataType::LargeList(f), Some(offsets)) => {
            let w = t.size() as i64;
            let elem_offsets: Vec<i64> = offsets.iter().map(|o| o / w).collect();
            let nvals = (cells.values.len() / t.size()) as u32;
            let child = build_array(f.data_type(), t, 1, CellBytes { values: cells.values, offsets: None, len: nvals as usize }, None)?;
            ArrayData::builder(dt.clone())
                .len(n)
                .add_buffer(Buffer::from_vec(elem_offsets))
                .child_data(vec![child.to_data()])
                .nulls(nulls)
                .build()?
        }
        (DataType::FixedSizeList(f, k), None) => {
            let child = build_array(f.data_type(), t, 1, CellBytes { values: cells.values, offsets: None, len: n * *k as usize }, None)?;
            ArrayData::builder(dt.clone()).len(n).child_data(vec![child.to_data()]).nulls(nulls).build()?
        }
        (DataType::Boolean, None) => {
            let bits = BooleanBuffer::collect_bool(n, |i| cells.values[i] != 0);
            ArrayData::builder(DataType::Boolean).len(n).add_buffer(bits.into_inner()).nulls(nulls).build()?
        }
        (_, None) => ArrayData::builder(dt.clone()).len(n).add_buffer(Buffer::from_vec(cells.values)).nulls(nulls).align_buffers(true).build()?,
        (other, Some(_)) => {
            return Err(Error::Internal { what: format!("var cells for Arrow type {other} (cell values {cell_val_num})") })
        }
    };
    Ok(make_array(data))
}

/// Gathered cell bytes of one column.
pub(crate) struct CellBytes {
    pub(crate) values: Vec<u8>,
    pub(crate) offsets: Option<Vec<i64>>,
    pub(crate) len: usize,
}

fn tile_at<'a>(tiles: &'a [Option<TileData>], t: usize, name: &str) -> Result<&'a TileData> {
    tiles.get(t).and_then(|x| x.as_ref()).ok_or_else(|| Error::Internal { what: format!("tile {t} of {name} not loaded") })
}

/// The stored bytes of dimension `d` of candidate cell `s`.
pub(crate) fn coord<'a>(dim_tiles: &'a [Vec<Option<TileData>>], schema: &ArraySchema, s: u64, d: usize) -> &'a [u8] {
    let (g, c) = unpack(s);
    match dim_tiles[d][g].as_ref() {
        Some(td) => td.value(c, schema.dims[d].datatype.size()),
        None => &[],
    }
}

/// Gather one column: each source is a (tile, cell) in `tiles` or FILL.
pub(crate) fn gather(col: &ColumnSpec, tiles: &[Option<TileData>], sources: &[u64], fill: &[u8], fill_valid: bool) -> Result<(CellBytes, Option<Vec<bool>>)> {
    let n = sources.len();
    let cs = col.cell_size();
    let mut validity = if col.nullable { Some(Vec::with_capacity(n)) } else { None };
    if col.is_var() {
        let mut offsets = Vec::with_capacity(n + 1);
        let mut values = Vec::new();
        offsets.push(0i64);
        for &s in sources {
            let (bytes, valid) = if s == FILL || s == PRUNED {
                (fill, fill_valid)
            } else {
                let (t, c) = unpack(s);
                let td = tile_at(tiles, t, &col.name)?;
                (td.value(c, cs), td.valid(c))
            };
            values.extend_from_slice(bytes);
            offsets.push(values.len() as i64);
            if let Some(v) = validity.as_mut() {
                v.push(valid);
            }
        }
        Ok((CellBytes { values, offsets: Some(offsets), len: n }, validity))
    } else {
        let mut values = Vec::with_capacity(n * cs);
        for &s in sources {
            if s == FILL || s == PRUNED {
                if fill.len() != cs {
                    return Err(Error::corrupt(format!("fill value of {} is {} bytes, cells are {cs}", col.name, fill.len())));
                }
                values.extend_from_slice(fill);
                if let Some(v) = validity.as_mut() {
                    v.push(fill_valid);
                }
            } else {
                let (t, c) = unpack(s);
                let td = tile_at(tiles, t, &col.name)?;
                values.extend_from_slice(td.value(c, cs));
                if let Some(v) = validity.as_mut() {
                    v.push(td.valid(c));
                }
            }
        }
        Ok((CellBytes { values, offsets: None, len: n }, validity))
    }
}

/// Tile ids are global across fragments: fragment `f` owns
/// `bases[f]..bases[f+1]`.
pub(crate) struct TileIds {
    pub(crate) bases: Vec<usize>,
}

/// Load the tiles of `col` that `sources` name.
pub(crate) fn load_used(array: &TileDbArray, ids: &TileIds, col: &ColumnSpec, sources: &[u64], cells_of: &dyn Fn(usize, usize) -> usize) -> Result<Vec<Option<TileData>>> {
    let total = *ids.bases.last().unwrap_or(&0);
    let mut used = vec![false; total];
    for &s in sources {
        if s != FILL && s != PRUNED {
            used[unpack(s).0] = true;
        }
    }
    let mut tiles: Vec<Option<TileData>> = vec![None; total];
    for (f, frag) in array.fragments.iter().enumerate() {
        let which: Vec<usize> = (ids.bases[f]..ids.bases[f + 1]).filter(|&g| used[g]).map(|g| g - ids.bases[f]).collect();
        if which.is_empty() {
            continue;
        }
        let cells: Vec<usize> = which.iter().map(|&t| cells_of(f, t)).collect();
        for (t, data) in which.iter().zip(load_tiles(array, frag, col, &which, &cells)?) {
            tiles[ids.bases[f] + t] = Some(data);
        }
    }
    Ok(tiles)
}

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
        Ok(RecordBatch::try_new_with_options(out_schema, columns, &arrow_array::RecordBatchOptions::new().with_row_count(Some(n)))?)
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
    pub(crate) fn read_plain(&self, opts: &ReadOptions, pruner: Option<&dyn super::query::TilePruner>) -> Result<(RecordBatch, TileCounts, Option<Vec<bool>>)> {
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
        let batch = RecordBatch::try_new_with_options(out_schema, columns, &arrow_array::RecordBatchOptions::new().with_row_count(Some(n)))?;
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
    fn read_dense(&self, sub: &[Option<DimRanges>], opts: &ReadOptions, out_schema: SchemaRef, dims: &[usize], attrs: &[usize]) -> Result<(RecordBatch, TileCounts, Option<Vec<bool>>)> {
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
        let batch = RecordBatch::try_new_with_options(out_schema, columns, &arrow_array::RecordBatchOptions::new().with_row_count(Some(plan.total)))?;
        Ok((batch, counts, None))
    }
}

/// The space tile of a coordinate along dimension `d` (0 without an
/// extent, e.g. string dimensions).
pub(crate) fn space_tile_index(schema: &ArraySchema, d: usize, v: &[u8]) -> i64 {
    let dim = &schema.dims[d];
    let (Some(ext), Some((lo, _))) = (&dim.tile_extent, &dim.domain) else { return 0 };
    let t = dim.datatype;
    if let (Some(x), Some(lo), Some(e)) = (int_value(t, v), int_value(t, lo), int_value(t, ext)) {
        return if e > 0 { ((x - lo) / e) as i64 } else { 0 };
    }
    match (float_value(t, v), float_value(t, lo), float_value(t, ext)) {
        (Some(x), Some(lo), Some(e)) if e > 0.0 => ((x - lo) / e).floor() as i64,
        _ => 0,
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

/// Each dimension's integer domain `(lo, hi)` and tile extent of a dense
/// schema (a missing extent covers the whole domain).
pub(crate) fn dense_domain_and_extents(schema: &ArraySchema) -> Result<(Vec<(i128, i128)>, Vec<i128>)> {
    let mut dom = Vec::new();
    let mut ext = Vec::new();
    for dim in &schema.dims {
        let (lo, hi) = dim.int_domain().ok_or_else(|| Error::corrupt(format!("dense dimension {} has no integer domain", dim.name)))?;
        let e = dim.int_extent().unwrap_or(hi - lo + 1);
        if e <= 0 {
            return Err(Error::corrupt(format!("tile extent {e} of {}", dim.name)));
        }
        dom.push((lo, hi));
        ext.push(e);
    }
    Ok((dom, ext))
}

/// Each dimension's selected integer ranges of a dense read: the caller's
/// (integer bounds only) or, for None, the whole domain `dom[d]`.
pub(crate) fn dense_int_ranges(dom: &[(i128, i128)], sub: &[Option<DimRanges>]) -> Result<Vec<Vec<(i128, i128)>>> {
    dom.iter()
        .enumerate()
        .map(|(d, &whole)| match sub.get(d).and_then(|s| s.as_ref()) {
            None => Ok(vec![whole]),
            Some(rs) => rs
                .iter()
                .map(|(a, b)| match (a, b) {
                    (Bound::Int(a), Bound::Int(b)) => Ok((*a, *b)),
                    _ => Err(Error::invalid_input("dense subarrays take integer bounds")),
                })
                .collect(),
        })
        .collect()
}

/// Strides of an index space with `lens` positions per dimension laid out
/// column-major (first dimension fastest) or row-major (last fastest).
pub(crate) fn strides(lens: impl IntoIterator<Item = usize>, col_major: bool) -> Vec<usize> {
    let lens: Vec<usize> = lens.into_iter().collect();
    let nd = lens.len();
    let mut out = vec![1usize; nd];
    for k in 1..nd {
        if col_major {
            out[k] = out[k - 1] * lens[k - 1];
        } else {
            let d = nd - 1 - k;
            out[d] = out[d + 1] * lens[d + 1];
        }
    }
    out
}

/// Step the mixed-radix index `idx` (last position fastest) whose position
/// `k` runs below `len(k)`; false once every combination was visited.
pub(crate) fn next_index(idx: &mut [usize], len: impl Fn(usize) -> usize) -> bool {
    let mut k = idx.len();
    while k > 0 {
        k -= 1;
        idx[k] += 1;
        if idx[k] < len(k) {
            return true;
        }
        idx[k] = 0;
    }
    false
}

impl TileDbArray {
    /// Each dimension's integer domain `(lo, hi)` and tile extent of a dense
    /// array (a missing extent covers the whole domain).
    pub(crate) fn dense_domain_and_extents(&self) -> Result<(Vec<(i128, i128)>, Vec<i128>)> {
        dense_domain_and_extents(&self.schema)
    }

    #[allow(clippy::type_complexity)]
    pub(crate) fn dense_sources(&self, sub: &[Option<DimRanges>], order: Order, may_match: Option<&dyn Fn(usize, usize, usize) -> Result<Vec<bool>>>) -> Result<DenseSources> {
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
