//! What the read paths share (plain reads in `read.rs`, sparse resolution,
//! dense tiles, filtered queries, aggregates, regions and streams): the
//! options of a read (subarray bounds, order), cell sources (a (tile, cell)
//! pair or the fill), comparisons of stored values with each other and with
//! bounds, the Arrow type of a column and cells gathered from decoded tiles
//! into Arrow arrays, and the index arithmetic of dense space tiles.
//!
//! These lived in `read.rs`, which the modules it calls also imported from;
//! here they sit below all of them.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::{make_array, ArrayRef};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::array::TileDbArray;
use super::datatype::Datatype;
use super::schema::{float_value, int_value, ArraySchema, VAR_NUM};
use super::tiles::{load_tiles, ColumnSpec, TileData};
use crate::error::{Error, Result};

/// A subarray bound given by the caller.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    /// An integer (integer dimensions; converted for float ones).
    Int(i128),
    /// A float (float dimensions).
    Float(f64),
    /// Bytes (string and byte dimensions), compared byte-wise.
    Bytes(Vec<u8>),
}

/// Inclusive ranges on one dimension.
pub type DimRanges = Vec<(Bound, Bound)>;

/// Result order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Row-major ("C"): the last dimension varies fastest.
    RowMajor,
    /// Column-major ("F"): the first dimension varies fastest.
    ColMajor,
    /// No order asked for: dense reads return row-major order, sparse
    /// reads the array's global order (space tiles, then cell order).
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
    /// The order of the returned cells.
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
    /// Fragments visible to the read.
    pub fragments: usize,
    /// Data tiles in them.
    pub tiles_total: usize,
    /// Tiles left to read after pruning.
    pub tiles_read: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions { subarray: Vec::new(), attrs: None, dims: true, order: Order::Unordered, filter: None }
    }
}

/// Source of a cell no fragment wrote: the fill value.
pub(crate) const FILL: u64 = u64::MAX;
/// Source of a dense cell whose newest tile a filter's statistics pruned:
/// read as the fill and removed from the result.
pub(crate) const PRUNED: u64 = u64::MAX - 1;

/// The source of cell `cell` of (global) tile `tile`, as one `u64`.
pub(crate) fn pack(tile: usize, cell: usize) -> u64 {
    ((tile as u64) << 32) | cell as u64
}

/// The (tile, cell) of a source made by [`pack`].
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

/// Compare a stored value of type `t` with a subarray bound.
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

/// Whether a stored value lies in any of the inclusive `ranges`.
pub(crate) fn in_ranges(t: Datatype, v: &[u8], ranges: &DimRanges) -> bool {
    ranges.iter().any(|(lo, hi)| cmp_bound(t, v, lo) != Ordering::Less && cmp_bound(t, v, hi) != Ordering::Greater)
}

/// Check the caller's subarray against the schema; one entry per dimension.
pub(crate) fn normalize_subarray(schema: &ArraySchema, sub: &[Option<DimRanges>]) -> Result<Vec<Option<DimRanges>>> {
    if !sub.is_empty() && sub.len() != schema.dims.len() {
        return Err(Error::invalid_input(format!("subarray has {} entries for {} dimensions", sub.len(), schema.dims.len())));
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
                    return Err(Error::invalid_input(format!("subarray range {lo:?}..{hi:?} on {} is outside the domain", dim.name)));
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

/// The columns to output: dimensions (if asked) then attributes, as
/// indices into the schema's dimensions and attributes.
pub(crate) fn output_columns(schema: &ArraySchema, opts: &ReadOptions) -> Result<(Vec<usize>, Vec<usize>)> {
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
            .build()
            .map_err(Error::corrupt_arrow)?,
        (DataType::LargeUtf8 | DataType::LargeBinary, None) => {
            // One fixed byte per cell shown as a one-character string.
            let offsets: Vec<i64> = (0..=n as i64).collect();
            ArrayData::builder(dt.clone())
                .len(n)
                .add_buffer(Buffer::from_vec(offsets))
                .add_buffer(Buffer::from_vec(cells.values))
                .nulls(nulls)
                .build()
                .map_err(Error::corrupt_arrow)?
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
                .build()
                .map_err(Error::corrupt_arrow)?
        }
        (DataType::FixedSizeList(f, k), None) => {
            let child = build_array(f.data_type(), t, 1, CellBytes { values: cells.values, offsets: None, len: n * *k as usize }, None)?;
            ArrayData::builder(dt.clone()).len(n).child_data(vec![child.to_data()]).nulls(nulls).build().map_err(Error::corrupt_arrow)?
        }
        (DataType::Boolean, None) => {
            let bits = BooleanBuffer::collect_bool(n, |i| cells.values[i] != 0);
            ArrayData::builder(DataType::Boolean).len(n).add_buffer(bits.into_inner()).nulls(nulls).build().map_err(Error::corrupt_arrow)?
        }
        (_, None) => ArrayData::builder(dt.clone())
            .len(n)
            .add_buffer(Buffer::from_vec(cells.values))
            .nulls(nulls)
            .align_buffers(true)
            .build()
            .map_err(Error::corrupt_arrow)?,
        (other, Some(_)) => return Err(Error::Internal { what: format!("var cells for Arrow type {other} (cell values {cell_val_num})") }),
    };
    Ok(make_array(data))
}

/// Gathered cell bytes of one column.
pub(crate) struct CellBytes {
    /// The cells' bytes back to back.
    pub(crate) values: Vec<u8>,
    /// Var-sized cells: `len + 1` byte offsets into `values`.
    pub(crate) offsets: Option<Vec<i64>>,
    /// Number of cells.
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
pub(crate) fn gather(
    col: &ColumnSpec,
    tiles: &[Option<TileData>],
    sources: &[u64],
    fill: &[u8],
    fill_valid: bool,
) -> Result<(CellBytes, Option<Vec<bool>>)> {
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
    /// First global tile id of each fragment, then the total.
    pub(crate) bases: Vec<usize>,
}

/// Load the tiles of `col` that `sources` name.
pub(crate) fn load_used(
    array: &TileDbArray,
    ids: &TileIds,
    col: &ColumnSpec,
    sources: &[u64],
    cells_of: &dyn Fn(usize, usize) -> usize,
) -> Result<Vec<Option<TileData>>> {
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
