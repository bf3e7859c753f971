//! Writing one fragment: data tiles into `aN.tdb` / `aN_var.tdb` /
//! `aN_validity.tdb` / `dN.tdb` files and `__fragment_metadata.tdb`.
//!
//! The metadata file is written as TileDB 2.30 lays it out (see
//! `fragment.rs` on the read side): the R-tree, then per column slot
//! (attributes, the legacy `__coords` slot, dimensions) the tile offsets,
//! var tile offsets, var tile sizes, validity tile offsets, tile minimums,
//! maximums, sums and null counts, then the fragment-wide
//! min/max/sum/null-count tile and the (empty) processed-conditions tile,
//! each a generic tile, then the footer and its u64 length. Every offsets
//! tile lists one entry per data tile in every slot (zeros where a slot
//! has no such file). The legacy `__coords` slot keeps zeroed min/max
//! buffers of `dims × first dimension width` bytes per tile and zero sums,
//! as TileDB leaves them.

use super::super::datatype::Datatype;
use super::super::filters::FilterPipeline;
use super::super::schema::ArraySchema;
use super::cells::Cells;
use super::encode::{filter_tile, generic_tile, strings_carry_offsets, EncodeKind, WRITE_VERSION};
use super::stats::{has_min_max, has_sum, sum_kind, MinMax, Sum};
use crate::error::Result;

/// Which cells make up each data tile: source row indices in tile order,
/// `None` for dense padding (zero bytes, validity 0).
#[derive(Debug, Clone)]
pub struct TilePlan {
    pub dense: bool,
    pub tiles: Vec<Vec<Option<u32>>>,
}

/// One column to write.
pub struct ColumnIn<'a> {
    pub name: &'a str,
    pub datatype: Datatype,
    pub cell_val_num: u32,
    pub nullable: bool,
    pub is_dim: bool,
    pub filters: &'a FilterPipeline,
    pub cells: &'a Cells,
}

/// What one slot contributes to the fragment.
#[derive(Debug, Default, Clone)]
pub struct SlotOut {
    pub file: Vec<u8>,
    pub var_file: Vec<u8>,
    pub validity_file: Vec<u8>,
    pub tile_offsets: Vec<u64>,
    pub var_offsets: Vec<u64>,
    pub var_sizes: Vec<u64>,
    pub validity_offsets: Vec<u64>,
    /// Tile min / max: fixed buffer and var buffer.
    pub mins: (Vec<u8>, Vec<u8>),
    pub maxs: (Vec<u8>, Vec<u8>),
    pub sums: Vec<u64>,
    pub null_counts: Vec<u64>,
    /// Fragment-wide values.
    pub fw_min: Vec<u8>,
    pub fw_max: Vec<u8>,
    pub fw_sum: u64,
    pub fw_nulls: u64,
    /// Sizes of `file`, `var_file`, `validity_file` once they were moved
    /// out to storage (the footer still needs them).
    pub sizes: Option<[u64; 3]>,
}

impl SlotOut {
    fn size(&self, k: usize) -> u64 {
        match self.sizes {
            Some(s) => s[k],
            None => [self.file.len(), self.var_file.len(), self.validity_file.len()][k] as u64,
        }
    }
}

/// Encode one column's tiles and compute its tile metadata.
pub fn write_column(schema: &ArraySchema, col: &ColumnIn, plan: &TilePlan) -> Result<SlotOut> {
    let var = col.cells.is_var();
    let value_size = col.datatype.size();
    let cell_size = if var { value_size } else { col.cells.cell_size };
    let minmax = has_min_max(col.datatype, col.is_dim, var, col.cell_val_num);
    let sums = has_sum(col.datatype, var, col.cell_val_num);
    let mut out = SlotOut::default();
    let mut fw = MinMax::new(col.datatype, var, cell_size);
    let mut fw_seen = false;
    let mut fw_sum = Sum::new(sum_kind(col.datatype));
    for tile in &plan.tiles {
        let n = tile.len();
        let mut fixed = Vec::with_capacity(n * if var { 8 } else { cell_size });
        let mut var_data = Vec::new();
        let mut starts = Vec::new();
        let mut validity = Vec::new();
        let mut mm = MinMax::new(col.datatype, var, cell_size);
        let mut sum = Sum::new(sum_kind(col.datatype));
        let mut nulls = 0u64;
        for c in tile {
            match c {
                Some(i) => {
                    let i = *i as usize;
                    let v = col.cells.value(i);
                    let valid = col.cells.valid(i);
                    if var {
                        starts.push(var_data.len() as u64);
                        fixed.extend_from_slice(&(var_data.len() as u64).to_le_bytes());
                        var_data.extend_from_slice(v);
                    } else {
                        fixed.extend_from_slice(v);
                    }
                    validity.push(valid as u8);
                    if !valid {
                        nulls += 1;
                    }
                    if valid {
                        if minmax {
                            mm.add(v);
                        }
                        if sums {
                            sum.add_value(col.datatype, v);
                        }
                    }
                }
                None => {
                    if var {
                        starts.push(var_data.len() as u64);
                        fixed.extend_from_slice(&(var_data.len() as u64).to_le_bytes());
                        var_data.extend(std::iter::repeat_n(0u8, value_size));
                    } else {
                        fixed.extend(std::iter::repeat_n(0u8, cell_size));
                    }
                    validity.push(0);
                    // TileDB counts padding as null only for fixed-size
                    // nullable columns without min/max.
                    if !var && !minmax {
                        nulls += 1;
                    }
                }
            }
        }
        if var {
            let okind = EncodeKind { datatype: Datatype::UInt64, cell_size: 8 };
            out.tile_offsets.push(out.file.len() as u64);
            if strings_carry_offsets(col.filters, col.datatype) {
                // The offsets travel inside the string tile: an empty tile.
                out.file.extend_from_slice(&0u64.to_le_bytes());
            } else {
                out.file.extend(filter_tile(&schema.offsets_filters, &fixed, okind, None, col.name)?);
            }
            let vkind = EncodeKind { datatype: col.datatype, cell_size: value_size };
            out.var_offsets.push(out.var_file.len() as u64);
            out.var_sizes.push(var_data.len() as u64);
            out.var_file.extend(filter_tile(col.filters, &var_data, vkind, Some(&starts), col.name)?);
        } else {
            let kind = EncodeKind { datatype: col.datatype, cell_size };
            out.tile_offsets.push(out.file.len() as u64);
            out.file.extend(filter_tile(col.filters, &fixed, kind, None, col.name)?);
            out.var_offsets.push(0);
            out.var_sizes.push(0);
        }
        if col.nullable {
            let vkind = EncodeKind { datatype: Datatype::UInt8, cell_size: 1 };
            out.validity_offsets.push(out.validity_file.len() as u64);
            out.validity_file.extend(filter_tile(&schema.validity_filters, &validity, vkind, None, col.name)?);
            // Var columns without min/max return before counting nulls.
            out.null_counts.push(if var && !minmax { 0 } else { nulls });
        } else {
            out.validity_offsets.push(0);
        }
        let all_null = col.nullable && *out.null_counts.last().unwrap_or(&0) == n as u64 && n > 0;
        if minmax {
            let (mn, mx) = (mm.min.clone(), mm.max.clone());
            if var {
                out.mins.0.extend_from_slice(&(out.mins.1.len() as u64).to_le_bytes());
                out.mins.1.extend_from_slice(mn.as_deref().unwrap_or(&[]));
                out.maxs.0.extend_from_slice(&(out.maxs.1.len() as u64).to_le_bytes());
                out.maxs.1.extend_from_slice(mx.as_deref().unwrap_or(&[]));
            } else {
                out.mins.0.extend(mn.clone().unwrap_or_else(|| vec![0; cell_size]));
                out.maxs.0.extend(mx.clone().unwrap_or_else(|| vec![0; cell_size]));
            }
            if !all_null {
                if let Some(v) = &mn {
                    fw.add(v);
                    fw_seen = true;
                }
                if let Some(v) = &mx {
                    fw.add(v);
                }
            }
        }
        if sums {
            out.sums.push(sum.bits());
            fw_sum.add_bits(sum.bits());
        }
    }
    out.fw_nulls = out.null_counts.iter().sum();
    if minmax && (fw_seen || !var) {
        if let (Some(a), Some(b)) = (fw.min, fw.max) {
            out.fw_min = a;
            out.fw_max = b;
        }
    }
    // CHAR/ASCII cells have no fragment-wide sum; dense dimensions none.
    if sums && !matches!(col.datatype, Datatype::Char | Datatype::StringAscii) {
        out.fw_sum = fw_sum.bits();
    }
    Ok(out)
}

/// The legacy `__coords` slot's metadata.
pub fn coords_slot(schema: &ArraySchema, tiles: usize) -> SlotOut {
    let w = schema.dims[0].datatype.size();
    let coords = w * schema.dims.len();
    SlotOut {
        tile_offsets: vec![0; tiles],
        var_offsets: vec![0; tiles],
        var_sizes: vec![0; tiles],
        validity_offsets: vec![0; tiles],
        mins: (vec![0; tiles * coords], Vec::new()),
        maxs: (vec![0; tiles * coords], Vec::new()),
        // TileDB sums the legacy slot as the first dimension's type (none
        // for string dimensions); the sums stay zero.
        sums: if has_sum(schema.dims[0].datatype, schema.dims[0].is_var(), 1) { vec![0; tiles] } else { Vec::new() },
        fw_min: if tiles > 0 { vec![0; w] } else { Vec::new() },
        fw_max: if tiles > 0 { vec![0; w] } else { Vec::new() },
        ..Default::default()
    }
}

/// A slot for a dimension of a dense fragment (nothing stored).
pub fn empty_slot(tiles: usize) -> SlotOut {
    SlotOut {
        tile_offsets: vec![0; tiles],
        var_offsets: vec![0; tiles],
        var_sizes: vec![0; tiles],
        validity_offsets: vec![0; tiles],
        ..Default::default()
    }
}

fn u64_list(v: &[u64]) -> Vec<u8> {
    let mut b = Vec::with_capacity(8 + 8 * v.len());
    b.extend_from_slice(&(v.len() as u64).to_le_bytes());
    for x in v {
        b.extend_from_slice(&x.to_le_bytes());
    }
    b
}

fn min_max_tile(m: &(Vec<u8>, Vec<u8>)) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&(m.0.len() as u64).to_le_bytes());
    b.extend_from_slice(&(m.1.len() as u64).to_le_bytes());
    b.extend_from_slice(&m.0);
    b.extend_from_slice(&m.1);
    b
}

/// One inclusive range per dimension, values as stored bytes.
pub type Mbr = Vec<(Vec<u8>, Vec<u8>)>;

fn put_range(b: &mut Vec<u8>, var: bool, r: &(Vec<u8>, Vec<u8>)) {
    if var {
        b.extend_from_slice(&((r.0.len() + r.1.len()) as u64).to_le_bytes());
        b.extend_from_slice(&(r.0.len() as u64).to_le_bytes());
    }
    b.extend_from_slice(&r.0);
    b.extend_from_slice(&r.1);
}

/// The R-tree tile: `u32 fanout, u32 levels`, per level (root first) `u64
/// count` and the MBRs; leaves are one MBR per data tile.
pub fn rtree_bytes(schema: &ArraySchema, leaves: &[Mbr]) -> Vec<u8> {
    const FANOUT: usize = 10;
    let mut levels: Vec<Vec<Mbr>> = Vec::new();
    if !leaves.is_empty() {
        levels.push(leaves.to_vec());
        while levels.last().is_some_and(|l| l.len() > 1) {
            let below = levels.last().cloned().unwrap_or_default();
            let up: Vec<Mbr> = below.chunks(FANOUT).map(|g| union_mbrs(schema, g)).collect();
            levels.push(up);
        }
    }
    let mut b = Vec::new();
    b.extend_from_slice(&(FANOUT as u32).to_le_bytes());
    b.extend_from_slice(&(levels.len() as u32).to_le_bytes());
    for level in levels.iter().rev() {
        b.extend_from_slice(&(level.len() as u64).to_le_bytes());
        for m in level {
            for (d, r) in m.iter().enumerate() {
                put_range(&mut b, schema.dims[d].is_var(), r);
            }
        }
    }
    b
}

/// The smallest MBR holding all of `mbrs`.
pub fn union_mbrs(schema: &ArraySchema, mbrs: &[Mbr]) -> Mbr {
    let mut out = mbrs[0].clone();
    for m in &mbrs[1..] {
        for (d, r) in m.iter().enumerate() {
            let t = schema.dims[d].datatype;
            if super::plan::cmp_coord(t, &r.0, &out[d].0).is_lt() {
                out[d].0 = r.0.clone();
            }
            if super::plan::cmp_coord(t, &r.1, &out[d].1).is_gt() {
                out[d].1 = r.1.clone();
            }
        }
    }
    out
}

/// Everything the metadata file needs besides the slots.
pub struct FragmentHeader<'a> {
    pub schema: &'a ArraySchema,
    pub dense: bool,
    pub nonempty: &'a Mbr,
    pub leaves: &'a [Mbr],
    /// Sparse: data tile count; dense: 0.
    pub sparse_tile_num: u64,
    /// Sparse: cells in the last tile; dense: cells per tile.
    pub last_tile_cell_num: u64,
    /// Whether a per-cell timestamps slot (`t.tdb`) follows the dimensions.
    pub has_timestamps: bool,
    /// With delete metadata (`dt.tdb`, `dci.tdb` slots last): the delete
    /// commits the cells were resolved against.
    pub processed_conditions: Option<&'a [String]>,
}

/// Serialize `__fragment_metadata.tdb` from the slots (attributes,
/// `__coords`, dimensions, then the timestamps and delete metadata if
/// flagged).
pub fn metadata_file(h: &FragmentHeader, slots: &[SlotOut]) -> Vec<u8> {
    let mut file = Vec::new();
    let push = |file: &mut Vec<u8>, bytes: &[u8]| -> u64 {
        let at = file.len() as u64;
        file.extend(generic_tile(bytes));
        at
    };
    let rtree = if h.dense { rtree_bytes(h.schema, &[]) } else { rtree_bytes(h.schema, h.leaves) };
    let rtree_off = push(&mut file, &rtree);
    let mut groups: Vec<Vec<u64>> = Vec::new();
    let lists: [fn(&SlotOut) -> Vec<u8>; 8] = [
        |s| u64_list(&s.tile_offsets),
        |s| u64_list(&s.var_offsets),
        |s| u64_list(&s.var_sizes),
        |s| u64_list(&s.validity_offsets),
        |s| min_max_tile(&s.mins),
        |s| min_max_tile(&s.maxs),
        |s| u64_list(&s.sums),
        |s| u64_list(&s.null_counts),
    ];
    for f in lists {
        groups.push(slots.iter().map(|s| push(&mut file, &f(s))).collect());
    }
    let mut fw = Vec::new();
    for s in slots {
        fw.extend_from_slice(&(s.fw_min.len() as u64).to_le_bytes());
        fw.extend_from_slice(&s.fw_min);
        fw.extend_from_slice(&(s.fw_max.len() as u64).to_le_bytes());
        fw.extend_from_slice(&s.fw_max);
        fw.extend_from_slice(&s.fw_sum.to_le_bytes());
        fw.extend_from_slice(&s.fw_nulls.to_le_bytes());
    }
    let fw_off = push(&mut file, &fw);
    let mut processed = Vec::new();
    let conds = h.processed_conditions.unwrap_or(&[]);
    processed.extend_from_slice(&(conds.len() as u64).to_le_bytes());
    for c in conds {
        processed.extend_from_slice(&(c.len() as u64).to_le_bytes());
        processed.extend_from_slice(c.as_bytes());
    }
    let proc_off = push(&mut file, &processed);

    let mut f = Vec::new();
    f.extend_from_slice(&WRITE_VERSION.to_le_bytes());
    f.extend_from_slice(&(h.schema.name.len() as u64).to_le_bytes());
    f.extend_from_slice(h.schema.name.as_bytes());
    f.push(h.dense as u8);
    f.push(0); // non-empty domain present
    for (d, r) in h.nonempty.iter().enumerate() {
        put_range(&mut f, h.schema.dims[d].is_var(), r);
    }
    f.extend_from_slice(&h.sparse_tile_num.to_le_bytes());
    f.extend_from_slice(&h.last_tile_cell_num.to_le_bytes());
    f.push(h.has_timestamps as u8);
    f.push(h.processed_conditions.is_some() as u8);
    for k in 0..3 {
        for s in slots {
            f.extend_from_slice(&s.size(k).to_le_bytes());
        }
    }
    f.extend_from_slice(&rtree_off.to_le_bytes());
    for g in &groups {
        for o in g {
            f.extend_from_slice(&o.to_le_bytes());
        }
    }
    f.extend_from_slice(&fw_off.to_le_bytes());
    f.extend_from_slice(&proc_off.to_le_bytes());
    let flen = f.len() as u64;
    file.extend(f);
    file.extend_from_slice(&flen.to_le_bytes());
    file
}
