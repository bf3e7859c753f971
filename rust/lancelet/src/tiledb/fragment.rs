//! Fragment metadata: `__fragments/<name>/__fragment_metadata.tdb`.
//!
//! The file is a row of generic tiles (R-tree, then per column slot the
//! tile offsets, var tile offsets, var tile sizes, validity tile offsets,
//! mins, maxes, sums, null counts, then fragment-wide statistics and the
//! processed delete conditions), a footer, and a trailing `u64` footer
//! length. Column slots are numbered: attributes, an empty legacy
//! `__coords` slot, dimensions, then `t` (per-cell timestamps), `dt`, `dci`
//! (delete metadata) when the footer flags them.
//!
//! Footer (version 22): `u32 version, u64 schema name length, schema name,
//! u8 dense, u8 null non-empty domain, non-empty domain (per dimension:
//! fixed `lo, hi`; var `u64 total, u64 lo length, lo, hi`), u64 sparse tile
//! count, u64 cells in the last tile, u8 has timestamps, u8 has delete
//! metadata`, then per slot `u64` file sizes, var file sizes, validity file
//! sizes, `u64` R-tree offset, and per slot the offsets of the generic
//! tiles listed above, then the two fragment-wide offsets.
//!
//! R-tree tile: `u32 fanout, u32 levels`, per level (root first) `u64
//! count` and that many MBRs; the last level has one MBR per data tile.

use super::cursor::Cursor;
use super::generic_tile::{check_version, read_generic_tile};
use super::schema::ArraySchema;
use crate::error::{Error, Result};

/// An inclusive range per dimension, values as stored bytes.
pub type Mbr = Vec<(Vec<u8>, Vec<u8>)>;

/// The parts of a timestamped name `__t1_t2_uuid_v`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimestampedName {
    pub t1: u64,
    pub t2: u64,
    pub version: Option<u32>,
}

impl TimestampedName {
    /// Parse a fragment, commit or schema name (extension removed).
    pub fn parse(name: &str) -> Result<Self> {
        let body = name.strip_prefix("__").ok_or_else(|| Error::corrupt(format!("bad timestamped name {name:?}")))?;
        let parts: Vec<&str> = body.split('_').collect();
        if parts.len() < 3 {
            return Err(Error::corrupt(format!("bad timestamped name {name:?}")));
        }
        let num = |s: &str| s.parse::<u64>().map_err(|_| Error::corrupt(format!("bad timestamp in name {name:?}")));
        let version = match parts.get(3) {
            Some(v) => Some(v.parse::<u32>().map_err(|_| Error::corrupt(format!("bad version in name {name:?}")))?),
            None => None,
        };
        Ok(TimestampedName { t1: num(parts[0])?, t2: num(parts[1])?, version })
    }
}

/// Parsed fragment metadata (footer plus the lazily decoded tiles).
#[derive(Debug, Clone)]
pub struct FragmentMeta {
    /// Fragment directory name.
    pub name: String,
    pub t1: u64,
    pub t2: u64,
    pub version: u32,
    pub schema_name: String,
    pub dense: bool,
    /// Non-empty domain, `None` for an empty fragment.
    pub nonempty: Option<Mbr>,
    pub sparse_tile_num: u64,
    pub last_tile_cell_num: u64,
    pub has_timestamps: bool,
    pub has_delete_meta: bool,
    pub file_sizes: Vec<u64>,
    pub file_var_sizes: Vec<u64>,
    pub file_validity_sizes: Vec<u64>,
    rtree_offset: u64,
    tile_offsets: Vec<u64>,
    var_offsets: Vec<u64>,
    var_sizes: Vec<u64>,
    validity_offsets: Vec<u64>,
    /// Offsets of the tile statistics tiles per slot (mins, maxes, sums,
    /// null counts) and of the processed delete conditions tile.
    stats_offsets: [Vec<u64>; 4],
    processed_offset: Option<u64>,
    bytes: bytes::Bytes,
}

/// Per-tile statistics of one column (from the fragment metadata).
#[derive(Debug, Clone, Default)]
pub struct TileStats {
    /// Min and max per tile as stored bytes (`None`: not kept for this
    /// column).
    pub mins: Option<Vec<Vec<u8>>>,
    pub maxes: Option<Vec<Vec<u8>>>,
    /// Sum per tile as stored (i64 for signed, u64 for unsigned integers,
    /// f64 for floats), 8 bytes each.
    pub sums: Option<Vec<[u8; 8]>>,
    /// Null cells per tile (nullable columns).
    pub null_counts: Option<Vec<u64>>,
}

/// Where a data tile of one column lies in its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileLoc {
    pub offset: u64,
    pub size: u64,
}

fn read_range(c: &mut Cursor, schema: &ArraySchema, d: usize) -> Result<(Vec<u8>, Vec<u8>)> {
    let dim = &schema.dims[d];
    if dim.is_var() {
        let total = c.u64("var range size")? as usize;
        let lo_len = c.u64("var range start size")? as usize;
        if lo_len > total {
            return Err(Error::corrupt("var range start longer than the range"));
        }
        let b = c.take(total, "var range")?;
        Ok((b[..lo_len].to_vec(), b[lo_len..].to_vec()))
    } else {
        let w = dim.datatype.size() * dim.cell_val_num.max(1) as usize;
        Ok((c.take(w, "range low")?.to_vec(), c.take(w, "range high")?.to_vec()))
    }
}

fn read_mbr(c: &mut Cursor, schema: &ArraySchema) -> Result<Mbr> {
    (0..schema.dims.len()).map(|d| read_range(c, schema, d)).collect()
}

fn u64s(c: &mut Cursor, n: usize, what: &str) -> Result<Vec<u64>> {
    (0..n).map(|_| c.u64(what)).collect()
}

impl FragmentMeta {
    /// Number of column slots given the footer flags.
    pub fn slot_count(schema: &ArraySchema, has_timestamps: bool, has_delete_meta: bool) -> usize {
        schema.attrs.len() + 1 + schema.dims.len() + has_timestamps as usize + 2 * has_delete_meta as usize
    }

    /// Slot of attribute `a`.
    pub fn attr_slot(a: usize) -> usize {
        a
    }

    /// Slot of dimension `d`.
    pub fn dim_slot(schema: &ArraySchema, d: usize) -> usize {
        schema.attrs.len() + 1 + d
    }

    /// Slot of the per-cell timestamps.
    pub fn timestamp_slot(schema: &ArraySchema) -> usize {
        schema.attrs.len() + 1 + schema.dims.len()
    }

    /// Parse `__fragment_metadata.tdb` of fragment `name`.
    pub fn parse(bytes: bytes::Bytes, name: &str, schema: &ArraySchema) -> Result<Self> {
        let ts = TimestampedName::parse(name)?;
        let n = bytes.len();
        if n < 8 {
            return Err(Error::corrupt("fragment metadata shorter than its footer length"));
        }
        let footer_len = u64::from_le_bytes(bytes[n - 8..].try_into().unwrap_or_default());
        let footer_len = usize::try_from(footer_len)
            .ok()
            .filter(|l| *l <= n - 8)
            .ok_or_else(|| Error::corrupt(format!("footer length {footer_len} larger than the file ({n} bytes)")))?;
        let mut c = Cursor::new(&bytes[n - 8 - footer_len..n - 8]);
        let version = c.u32("fragment version")?;
        check_version(version, "fragment")?;
        let schema_name = String::from_utf8_lossy(c.take_len_u64("schema name")?).into_owned();
        let dense = c.u8("dense flag")? != 0;
        let null_domain = c.u8("null non-empty domain flag")? != 0;
        let nonempty = read_mbr(&mut c, schema).map_err(|e| e.context("non-empty domain"))?;
        let nonempty = if null_domain { None } else { Some(nonempty) };
        let sparse_tile_num = c.u64("sparse tile count")?;
        let last_tile_cell_num = c.u64("last tile cell count")?;
        let has_timestamps = c.u8("has timestamps flag")? != 0;
        let has_delete_meta = c.u8("has delete metadata flag")? != 0;
        let slots = Self::slot_count(schema, has_timestamps, has_delete_meta);
        let file_sizes = u64s(&mut c, slots, "file sizes")?;
        let file_var_sizes = u64s(&mut c, slots, "file var sizes")?;
        let file_validity_sizes = u64s(&mut c, slots, "file validity sizes")?;
        let rtree_offset = c.u64("R-tree offset")?;
        let tile_offsets = u64s(&mut c, slots, "tile offsets offsets")?;
        let var_offsets = u64s(&mut c, slots, "var tile offsets offsets")?;
        let var_sizes = u64s(&mut c, slots, "var tile sizes offsets")?;
        let validity_offsets = u64s(&mut c, slots, "validity tile offsets offsets")?;
        // Tile statistics (mins, maxes, sums, null counts per slot), the
        // fragment-wide statistics and the processed conditions follow.
        let mut stats_offsets: [Vec<u64>; 4] = Default::default();
        for (k, what) in ["tile mins offsets", "tile maxes offsets", "tile sums offsets", "tile null counts offsets"].iter().enumerate() {
            stats_offsets[k] = u64s(&mut c, slots, what)?;
        }
        c.u64("fragment statistics offset")?;
        let processed_offset = Some(c.u64("processed conditions offset")?);
        Ok(FragmentMeta {
            name: name.to_string(),
            t1: ts.t1,
            t2: ts.t2,
            version,
            schema_name,
            dense,
            nonempty,
            sparse_tile_num,
            last_tile_cell_num,
            has_timestamps,
            has_delete_meta,
            file_sizes,
            file_var_sizes,
            file_validity_sizes,
            rtree_offset,
            tile_offsets,
            var_offsets,
            var_sizes,
            validity_offsets,
            stats_offsets,
            processed_offset,
            bytes,
        })
    }

    fn u64_tile(&self, offset: u64, what: &str) -> Result<Vec<u64>> {
        let (b, _) = read_generic_tile(&self.bytes, offset as usize).map_err(|e| e.context(what))?;
        let mut c = Cursor::new(&b);
        let n = c.count(8, what)?;
        u64s(&mut c, n, what)
    }

    fn locs(&self, starts: Vec<u64>, file_size: u64, what: &str) -> Result<Vec<TileLoc>> {
        let mut out = Vec::with_capacity(starts.len());
        for (i, &s) in starts.iter().enumerate() {
            let end = starts.get(i + 1).copied().unwrap_or(file_size);
            if end < s || end > file_size {
                return Err(Error::corrupt(format!("{what}: tile {i} spans {s}..{end} of a {file_size}-byte file")));
            }
            out.push(TileLoc { offset: s, size: end - s });
        }
        Ok(out)
    }

    /// Tiles of the fixed (or offsets) file of `slot`.
    pub fn tiles(&self, slot: usize) -> Result<Vec<TileLoc>> {
        let starts = self.u64_tile(self.tile_offsets[slot], &format!("tile offsets of slot {slot}"))?;
        self.locs(starts, self.file_sizes[slot], &format!("slot {slot}"))
    }

    /// Tiles of the var data file of `slot`, and their decoded sizes.
    pub fn var_tiles(&self, slot: usize) -> Result<(Vec<TileLoc>, Vec<u64>)> {
        let starts = self.u64_tile(self.var_offsets[slot], &format!("var tile offsets of slot {slot}"))?;
        let sizes = self.u64_tile(self.var_sizes[slot], &format!("var tile sizes of slot {slot}"))?;
        Ok((self.locs(starts, self.file_var_sizes[slot], &format!("var slot {slot}"))?, sizes))
    }

    /// Tiles of the validity file of `slot`.
    pub fn validity_tiles(&self, slot: usize) -> Result<Vec<TileLoc>> {
        let starts = self.u64_tile(self.validity_offsets[slot], &format!("validity tile offsets of slot {slot}"))?;
        self.locs(starts, self.file_validity_sizes[slot], &format!("validity slot {slot}"))
    }

    /// The leaf MBRs of the R-tree: one per data tile (sparse fragments).
    pub fn leaf_mbrs(&self, schema: &ArraySchema) -> Result<Vec<Mbr>> {
        let (b, _) = read_generic_tile(&self.bytes, self.rtree_offset as usize).map_err(|e| e.context("R-tree"))?;
        let mut c = Cursor::new(&b);
        c.u32("R-tree fanout")?;
        let levels = c.u32("R-tree levels")?;
        let mut leaves = Vec::new();
        for l in 0..levels {
            let n = c.count(1, "R-tree level size")?;
            let mut level = Vec::with_capacity(n);
            for _ in 0..n {
                level.push(read_mbr(&mut c, schema).map_err(|e| e.context(format!("R-tree level {l}")))?);
            }
            leaves = level;
        }
        Ok(leaves)
    }

    /// The footer as stored at the end of the metadata file, without the
    /// trailing `u64` length (what consolidated fragment metadata copies).
    pub fn footer_bytes(&self) -> Option<&[u8]> {
        let n = self.bytes.len();
        let len = u64::from_le_bytes(self.bytes.get(n.checked_sub(8)?..)?.try_into().ok()?) as usize;
        self.bytes.get(n.checked_sub(8 + len)?..n - 8)
    }

    fn generic(&self, offset: u64, what: &str) -> Result<Vec<u8>> {
        let off = usize::try_from(offset).map_err(|_| Error::corrupt(format!("{what}: offset {offset}")))?;
        Ok(read_generic_tile(&self.bytes, off).map_err(|e| e.context(what))?.0)
    }

    /// Min/max tile: `u64 fixed bytes, u64 var bytes`, the fixed buffer
    /// (one value per tile, or for var-sized columns one u64 offset per
    /// tile into the var buffer), the var buffer.
    fn minmax(&self, offset: u64, tiles: usize, cell_size: Option<usize>, what: &str) -> Result<Option<Vec<Vec<u8>>>> {
        let b = self.generic(offset, what)?;
        let mut c = Cursor::new(&b);
        let fixed_len = c.u64(what)? as usize;
        let var_len = c.u64(what)? as usize;
        let fixed = c.take(fixed_len, what)?;
        let var = c.take(var_len, what)?;
        if fixed_len == 0 || tiles == 0 {
            return Ok(None);
        }
        match cell_size {
            Some(w) => {
                if fixed_len != tiles * w {
                    return Err(Error::corrupt(format!("{what}: {fixed_len} bytes for {tiles} tiles of {w}-byte values")));
                }
                Ok(Some(fixed.chunks_exact(w).map(|v| v.to_vec()).collect()))
            }
            None => {
                if fixed_len != tiles * 8 {
                    return Err(Error::corrupt(format!("{what}: {fixed_len} offset bytes for {tiles} tiles")));
                }
                let offs: Vec<u64> = (0..tiles).map(|i| super::cursor::u64_at(fixed, i)).collect();
                let mut out = Vec::with_capacity(tiles);
                for i in 0..tiles {
                    let (s, e) = (offs[i], offs.get(i + 1).copied().unwrap_or(var.len() as u64));
                    if s > e || e > var.len() as u64 {
                        return Err(Error::corrupt(format!("{what}: value {i} spans {s}..{e} of {} bytes", var.len())));
                    }
                    out.push(var[s as usize..e as usize].to_vec());
                }
                Ok(Some(out))
            }
        }
    }

    /// Per-tile statistics of the column in `slot` (`cell_size`: bytes per
    /// value, `None` for var-sized columns), for `tiles` data tiles.
    pub fn tile_stats(&self, slot: usize, tiles: usize, cell_size: Option<usize>) -> Result<TileStats> {
        let mut st = TileStats {
            mins: self.minmax(self.stats_offsets[0][slot], tiles, cell_size, &format!("tile mins of slot {slot}"))?,
            maxes: self.minmax(self.stats_offsets[1][slot], tiles, cell_size, &format!("tile maxes of slot {slot}"))?,
            ..Default::default()
        };
        let sums = self.u64_tile(self.stats_offsets[2][slot], &format!("tile sums of slot {slot}"))?;
        if sums.len() == tiles && tiles > 0 {
            st.sums = Some(sums.iter().map(|v| v.to_le_bytes()).collect());
        }
        let nulls = self.u64_tile(self.stats_offsets[3][slot], &format!("tile null counts of slot {slot}"))?;
        if nulls.len() == tiles && tiles > 0 {
            st.null_counts = Some(nulls);
        }
        Ok(st)
    }

    /// Names of the delete/update commits already applied to this fragment
    /// (consolidated fragments with delete metadata): `u64 count`, then per
    /// condition `u64 length, marker file name`.
    pub fn processed_conditions(&self) -> Result<Vec<String>> {
        let Some(off) = self.processed_offset else { return Ok(Vec::new()) };
        let b = self.generic(off, "processed conditions")?;
        let mut c = Cursor::new(&b);
        if c.remaining() == 0 {
            return Ok(Vec::new());
        }
        let n = c.count(8, "processed condition count")?;
        (0..n).map(|_| Ok(String::from_utf8_lossy(c.take_len_u64("processed condition")?).into_owned())).collect()
    }

    /// Cells in data tile `t` of a sparse fragment.
    pub fn sparse_tile_cells(&self, schema: &ArraySchema, t: usize) -> u64 {
        if t + 1 == self.sparse_tile_num as usize {
            self.last_tile_cell_num
        } else {
            schema.capacity
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_timestamped_names() {
        let n = TimestampedName::parse("__1_2_0761d7ece00bc7ab53f53df5c0a6a031_22").unwrap();
        assert_eq!(n, TimestampedName { t1: 1, t2: 2, version: Some(22) });
        assert!(TimestampedName::parse("foo").is_err());
        assert!(TimestampedName::parse("__x_2_u").is_err());
    }
}
