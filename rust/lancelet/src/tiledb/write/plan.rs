//! Which cells go into which data tile.
//!
//! Dense: the space tiles the subarray meets, in tile order; each holds
//! its full extent of cells in cell order, cells outside the subarray are
//! padding. The caller's cells are row-major over the subarray.
//!
//! Sparse: cells sorted into the global order (space tile in tile order,
//! then coordinates in cell order; dimensions without a tile extent, such
//! as strings, put everything in one tile), then cut into tiles of
//! `capacity` cells; each tile's MBR is an R-tree leaf.

use std::cmp::Ordering;

use super::super::datatype::Datatype;
use super::super::schema::{float_value, int_value, ArraySchema, Layout};
use super::cells::Cells;
use super::fragment::{Mbr, TilePlan};
use crate::error::{Error, Result};

/// A decoded numeric coordinate.
enum Key {
    I(i128),
    F(f64),
}

/// Compare two coordinates of type `t` (numbers by value, strings by bytes).
pub fn cmp_coord(t: Datatype, a: &[u8], b: &[u8]) -> Ordering {
    if let (Some(x), Some(y)) = (float_value(t, a), float_value(t, b)) {
        return x.total_cmp(&y);
    }
    if t.is_bytes() {
        return a.cmp(b);
    }
    match (int_value(t, a), int_value(t, b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => a.cmp(b),
    }
}

fn order_name(l: Layout) -> Result<bool> {
    match l {
        Layout::RowMajor => Ok(true),
        Layout::ColMajor => Ok(false),
        Layout::Hilbert => Err(Error::unsupported("writing arrays with Hilbert cell order")),
        other => Err(Error::unsupported(format!("writing arrays with {} order", other.name()))),
    }
}

/// Visit every index tuple of `extents` in row-major (last index fastest)
/// or column-major order.
fn odometer(extents: &[i128], row_major: bool, mut f: impl FnMut(&[i128])) {
    let nd = extents.len();
    if extents.iter().any(|e| *e <= 0) {
        return;
    }
    let mut idx = vec![0i128; nd];
    loop {
        f(&idx);
        let mut k = 0;
        loop {
            if k == nd {
                return;
            }
            let d = if row_major { nd - 1 - k } else { k };
            idx[d] += 1;
            if idx[d] < extents[d] {
                break;
            }
            idx[d] = 0;
            k += 1;
        }
    }
}

/// Dense tiles for a write of `sub` (inclusive ranges per dimension).
/// Returns the plan and the cells per tile.
pub fn dense_plan(schema: &ArraySchema, sub: &[(i128, i128)]) -> Result<(TilePlan, u64)> {
    let tile_rm = order_name(schema.tile_order)?;
    let cell_rm = order_name(schema.cell_order)?;
    let nd = schema.dims.len();
    let mut lo_dom = Vec::with_capacity(nd);
    let mut ext = Vec::with_capacity(nd);
    let mut tile_lo = Vec::with_capacity(nd);
    let mut tile_n = Vec::with_capacity(nd);
    for (d, dim) in schema.dims.iter().enumerate() {
        let (dl, dh) =
            dim.int_domain().ok_or_else(|| Error::unsupported(format!("dense write on dimension {} of type {}", dim.name, dim.datatype.name())))?;
        let e = dim.int_extent().unwrap_or(dh - dl + 1);
        let (lo, hi) = sub[d];
        let t0 = (lo - dl) / e;
        let t1 = (hi - dl) / e;
        lo_dom.push(dl);
        ext.push(e);
        tile_lo.push(t0);
        tile_n.push(t1 - t0 + 1);
    }
    let per_tile: i128 = ext.iter().product();
    let tiles_total: i128 = tile_n.iter().product();
    if per_tile * tiles_total > (1i128 << 32) {
        return Err(Error::invalid_input(format!(
            "dense write covers {} space tiles of {per_tile} cells: too many cells for one write",
            tiles_total
        )));
    }
    let sizes: Vec<i128> = sub.iter().map(|(l, h)| h - l + 1).collect();
    let mut strides = vec![1i128; nd];
    for d in (0..nd.saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * sizes[d + 1];
    }
    let mut tiles = Vec::new();
    odometer(&tile_n, tile_rm, |t| {
        let base: Vec<i128> = (0..nd).map(|d| lo_dom[d] + (tile_lo[d] + t[d]) * ext[d]).collect();
        let mut cells = Vec::with_capacity(per_tile as usize);
        odometer(&ext, cell_rm, |c| {
            let mut idx = 0i128;
            let mut inside = true;
            for d in 0..nd {
                let v = base[d] + c[d];
                if v < sub[d].0 || v > sub[d].1 {
                    inside = false;
                    break;
                }
                idx += (v - sub[d].0) * strides[d];
            }
            cells.push(inside.then_some(idx as u32));
        });
        tiles.push(cells);
    });
    Ok((TilePlan { dense: true, tiles }, per_tile as u64))
}

/// The tile index of a coordinate along a dimension (0 without extent).
fn tile_index(schema: &ArraySchema, d: usize, v: &[u8]) -> i128 {
    let dim = &schema.dims[d];
    let (Some((lo, _)), Some(ext)) = (&dim.domain, &dim.tile_extent) else { return 0 };
    if let (Some(x), Some(l), Some(e)) = (int_value(dim.datatype, v), int_value(dim.datatype, lo), int_value(dim.datatype, ext)) {
        if e > 0 {
            return (x - l).div_euclid(e);
        }
    }
    if let (Some(x), Some(l), Some(e)) = (float_value(dim.datatype, v), float_value(dim.datatype, lo), float_value(dim.datatype, ext)) {
        if e > 0.0 {
            return ((x - l) / e).floor() as i128;
        }
    }
    0
}

/// Render a coordinate for messages.
pub fn show(t: Datatype, v: &[u8]) -> String {
    if let Some(i) = int_value(t, v) {
        return i.to_string();
    }
    if let Some(f) = float_value(t, v) {
        return f.to_string();
    }
    format!("{:?}", String::from_utf8_lossy(v))
}

/// Sparse tiles: the sort order, duplicate and domain checks, tiles of
/// `capacity` cells, their MBRs and the fragment's non-empty domain.
/// `versions`: the cells are versions with these per-cell timestamps (a
/// consolidation's): equal coordinates are allowed and go newest first, as
/// TileDB orders them.
pub fn sparse_plan(schema: &ArraySchema, dims: &[Cells], versions: Option<&[u64]>) -> Result<(TilePlan, Vec<Mbr>, Mbr)> {
    let tile_rm = order_name(schema.tile_order)?;
    let cell_rm = order_name(schema.cell_order)?;
    let n = dims.first().map_or(0, |c| c.len);
    let nd = schema.dims.len();
    for (d, dim) in schema.dims.iter().enumerate() {
        let t = dim.datatype;
        let Some((lo, hi)) = &dim.domain else { continue };
        for i in 0..n {
            let v = dims[d].value(i);
            if float_value(t, v).is_some_and(f64::is_nan) {
                return Err(Error::invalid_input(format!("dimension {}: row {i} is NaN", dim.name)));
            }
            if cmp_coord(t, v, lo).is_lt() || cmp_coord(t, v, hi).is_gt() {
                return Err(Error::invalid_input(format!(
                    "dimension {}: row {i} coordinate {} is outside the domain [{}, {}]",
                    dim.name,
                    show(t, v),
                    show(t, lo),
                    show(t, hi)
                )));
            }
        }
    }
    let tiles_of: Vec<Vec<i128>> = (0..nd).map(|d| (0..n).map(|i| tile_index(schema, d, dims[d].value(i))).collect()).collect();
    // Numeric coordinates decoded once, so the sort compares plain numbers.
    let keys: Vec<Option<Vec<Key>>> = (0..nd)
        .map(|d| {
            let t = schema.dims[d].datatype;
            if t.is_bytes() {
                return None;
            }
            Some(
                (0..n)
                    .map(|i| {
                        let v = dims[d].value(i);
                        match float_value(t, v) {
                            Some(f) => Key::F(f),
                            None => Key::I(int_value(t, v).unwrap_or(0)),
                        }
                    })
                    .collect(),
            )
        })
        .collect();
    let cmp_dim = |d: usize, a: usize, b: usize| -> Ordering {
        match &keys[d] {
            Some(k) => match (&k[a], &k[b]) {
                (Key::I(x), Key::I(y)) => x.cmp(y),
                (Key::F(x), Key::F(y)) => x.total_cmp(y),
                _ => Ordering::Equal,
            },
            None => dims[d].value(a).cmp(dims[d].value(b)),
        }
    };
    let dim_order = |rm: bool| -> Vec<usize> {
        if rm {
            (0..nd).collect()
        } else {
            (0..nd).rev().collect()
        }
    };
    let (to, co) = (dim_order(tile_rm), dim_order(cell_rm));
    let cmp_cells = |a: usize, b: usize| -> Ordering {
        for &d in &to {
            let o = tiles_of[d][a].cmp(&tiles_of[d][b]);
            if o.is_ne() {
                return o;
            }
        }
        for &d in &co {
            let o = cmp_dim(d, a, b);
            if o.is_ne() {
                return o;
            }
        }
        Ordering::Equal
    };
    let mut order: Vec<u32> = (0..n as u32).collect();
    match versions {
        Some(ts) => order.sort_by(|a, b| cmp_cells(*a as usize, *b as usize).then_with(|| ts[*b as usize].cmp(&ts[*a as usize]))),
        None => order.sort_by(|a, b| cmp_cells(*a as usize, *b as usize)),
    }
    if !schema.allows_duplicates && versions.is_none() {
        for w in order.windows(2) {
            if cmp_cells(w[0] as usize, w[1] as usize).is_eq() {
                let coords: Vec<String> =
                    (0..nd).map(|d| format!("{}={}", schema.dims[d].name, show(schema.dims[d].datatype, dims[d].value(w[0] as usize)))).collect();
                return Err(Error::invalid_input(format!(
                    "duplicate coordinates ({}) at rows {} and {}; the array does not allow duplicates",
                    coords.join(", "),
                    w[0].min(w[1]),
                    w[0].max(w[1])
                )));
            }
        }
    }
    let cap = schema.capacity.max(1) as usize;
    let mut tiles = Vec::new();
    let mut leaves = Vec::new();
    for chunk in order.chunks(cap) {
        let mbr: Mbr = (0..nd)
            .map(|d| {
                let t = schema.dims[d].datatype;
                let mut lo = dims[d].value(chunk[0] as usize);
                let mut hi = lo;
                for &i in &chunk[1..] {
                    let v = dims[d].value(i as usize);
                    if cmp_coord(t, v, lo).is_lt() {
                        lo = v;
                    }
                    if cmp_coord(t, v, hi).is_gt() {
                        hi = v;
                    }
                }
                (lo.to_vec(), hi.to_vec())
            })
            .collect();
        leaves.push(mbr);
        tiles.push(chunk.iter().map(|&i| Some(i)).collect());
    }
    let nonempty = if leaves.is_empty() { Vec::new() } else { super::fragment::union_mbrs(schema, &leaves) };
    Ok((TilePlan { dense: false, tiles }, leaves, nonempty))
}
