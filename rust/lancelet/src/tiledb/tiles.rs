//! Loading and decoding the data tiles of one column of one fragment.
//!
//! Data files are rows of filtered tiles (no generic tile header): `aN.tdb`
//! (fixed values, or `u64` offsets restarting at 0 in every tile for
//! var-sized columns), `aN_var.tdb` (var values), `aN_validity.tdb` (one
//! `u8` per cell, 0 = null); dimensions are `dN.tdb`, per-cell timestamps
//! `t.tdb`. Offsets use the schema's offsets filters, validity its validity
//! filters, dimensions their own filters or the coordinate filters.
//!
//! The tiles a call asks for are read together and decoded in parallel.

use rayon::prelude::*;

use super::array::TileDbArray;
use super::cursor::u64_at;
use super::datatype::Datatype;
use super::filters::{FilterPipeline, TileKind};
use super::fragment::{FragmentMeta, TileLoc};
use super::schema::{ArraySchema, VAR_NUM};
use crate::error::{Error, Result};

/// What is needed to decode one column's tiles.
#[derive(Debug, Clone)]
pub struct ColumnSpec {
    /// Column slot in the fragment metadata.
    pub slot: usize,
    /// File stem (`a0`, `d1`, `t`).
    pub stem: String,
    pub name: String,
    pub datatype: Datatype,
    pub cell_val_num: u32,
    pub nullable: bool,
    pub filters: FilterPipeline,
}

impl ColumnSpec {
    /// Attribute `a` of the schema.
    pub fn attr(schema: &ArraySchema, a: usize) -> Self {
        let at = &schema.attrs[a];
        ColumnSpec {
            slot: FragmentMeta::attr_slot(a),
            stem: format!("a{a}"),
            name: at.name.clone(),
            datatype: at.datatype,
            cell_val_num: at.cell_val_num,
            nullable: at.nullable,
            filters: at.filters.clone(),
        }
    }

    /// Dimension `d` of the schema.
    pub fn dim(schema: &ArraySchema, d: usize) -> Self {
        let dim = &schema.dims[d];
        ColumnSpec {
            slot: FragmentMeta::dim_slot(schema, d),
            stem: format!("d{d}"),
            name: dim.name.clone(),
            datatype: dim.datatype,
            cell_val_num: dim.cell_val_num,
            nullable: false,
            filters: schema.dim_filters(d).clone(),
        }
    }

    /// Var-sized column.
    pub fn is_var(&self) -> bool {
        self.cell_val_num == VAR_NUM
    }

    /// Bytes per cell of a fixed-size column.
    pub fn cell_size(&self) -> usize {
        self.datatype.size() * self.cell_val_num as usize
    }
}

/// One decoded tile of one column.
#[derive(Debug, Clone, Default)]
pub struct TileData {
    /// Fixed values (`cells × cell size` bytes); empty for var columns.
    pub fixed: Vec<u8>,
    /// Var columns: `cells + 1` offsets into `var`.
    pub offsets: Vec<u64>,
    pub var: Vec<u8>,
    /// One byte per cell for nullable columns.
    pub validity: Option<Vec<u8>>,
    pub cells: usize,
}

impl TileData {
    /// The bytes of cell `i`.
    pub fn value(&self, i: usize, cell_size: usize) -> &[u8] {
        if self.offsets.is_empty() {
            &self.fixed[i * cell_size..(i + 1) * cell_size]
        } else {
            &self.var[self.offsets[i] as usize..self.offsets[i + 1] as usize]
        }
    }
    /// Whether cell `i` is valid.
    pub fn valid(&self, i: usize) -> bool {
        self.validity.as_ref().is_none_or(|v| v[i] != 0)
    }
}

pub(crate) fn read_tiles(array: &TileDbArray, frag: &FragmentMeta, file: &str, locs: &[TileLoc]) -> Result<Vec<bytes::Bytes>> {
    let storage = array.fragment_file(frag, file)?;
    let ranges: Vec<_> = locs.iter().map(|l| l.offset..l.offset + l.size).collect();
    match storage.read_ranges(&ranges) {
        Err(Error::Io { path, message, source }) => {
            // A file shorter than its metadata says is corrupt, not an I/O failure.
            let end = ranges.iter().map(|r| r.end).max().unwrap_or(0);
            match storage.size() {
                Ok(size) if size < end => Err(Error::Corrupt {
                    path: Some(path),
                    what: format!("file is {size} bytes, the fragment metadata places tiles up to byte {end}"),
                    source,
                }),
                _ => Err(Error::Io { path, message, source }),
            }
        }
        other => other,
    }
}

/// Decode tiles `which` of column `col` of fragment `frag`, each holding
/// `cells[i]` cells.
pub fn load_tiles(array: &TileDbArray, frag: &FragmentMeta, col: &ColumnSpec, which: &[usize], cells: &[usize]) -> Result<Vec<TileData>> {
    let schema = &array.schema;
    let ctx = |e: Error, file: &str| e.in_file(&format!("{}/__fragments/{}/{file}", array.uri(), frag.name));
    let version = frag.version;
    let fixed_locs = frag.tiles(col.slot).map_err(|e| ctx(e, "__fragment_metadata.tdb"))?;
    let pick = |locs: &[TileLoc], what: &str| -> Result<Vec<TileLoc>> {
        which
            .iter()
            .map(|&t| {
                locs.get(t).copied().ok_or_else(|| Error::corrupt(format!("{what} of column {} has {} tiles, tile {t} wanted", col.name, locs.len())))
            })
            .collect()
    };
    let file = format!("{}.tdb", col.stem);
    let mut out: Vec<TileData>;
    if col.is_var() {
        // Strings whose offsets travel inside the var data (RLE or
        // dictionary): `aN.tdb` holds empty tiles and is not read.
        let strings_with_offsets = col.filters.encodes_string_offsets() && matches!(col.datatype, Datatype::StringAscii | Datatype::StringUtf8);
        let fixed_raw = if strings_with_offsets { Vec::new() } else { read_tiles(array, frag, &file, &pick(&fixed_locs, "tile offsets")?)? };
        let (var_locs, var_sizes) = frag.var_tiles(col.slot).map_err(|e| ctx(e, "__fragment_metadata.tdb"))?;
        let var_file = format!("{}_var.tdb", col.stem);
        let var_raw = read_tiles(array, frag, &var_file, &pick(&var_locs, "var tile offsets")?)?;
        let decode = |i: usize| -> Result<TileData> {
            let t = which[i];
            // A var tile's size comes from the fragment metadata; without
            // one, the filtered bytes of the tile bound what is reserved.
            let var_max = var_sizes.get(t).map_or(usize::MAX, |&n| usize::try_from(n).unwrap_or(usize::MAX));
            let vkind =
                TileKind { datatype: col.datatype, cell_size: col.datatype.size(), version, var_strings: col.datatype.is_bytes(), max_len: var_max };
            let okind = TileKind { datatype: Datatype::UInt64, cell_size: 8, version, var_strings: false, max_len: cells[i].saturating_mul(8) };
            let (offs, var) = if strings_with_offsets {
                let (var, starts) = col.filters.unfilter_strings(&var_raw[i], vkind).map_err(|e| ctx(e.context(format!("tile {t}")), &var_file))?;
                (starts.iter().flat_map(|o| o.to_le_bytes()).collect::<Vec<u8>>(), var)
            } else {
                let offs = schema.offsets_filters.unfilter(&fixed_raw[i], okind).map_err(|e| ctx(e.context(format!("tile {t}")), &file))?;
                (offs, col.filters.unfilter(&var_raw[i], vkind).map_err(|e| ctx(e.context(format!("tile {t}")), &var_file))?)
            };
            if let Some(&want) = var_sizes.get(t) {
                if want != var.len() as u64 {
                    return Err(ctx(Error::corrupt(format!("var tile {t} decodes to {} bytes, metadata says {want}", var.len())), &var_file));
                }
            }
            let n = cells[i];
            if offs.len() != n * 8 {
                return Err(ctx(Error::corrupt(format!("offsets tile {t} holds {} bytes for {n} cells", offs.len())), &file));
            }
            let mut offsets: Vec<u64> = (0..n).map(|k| u64_at(&offs, k)).collect();
            offsets.push(var.len() as u64);
            if offsets.windows(2).any(|w| w[0] > w[1]) {
                return Err(ctx(Error::corrupt(format!("offsets of tile {t} are not ascending within {} bytes", var.len())), &file));
            }
            Ok(TileData { fixed: Vec::new(), offsets, var, validity: None, cells: n })
        };
        out = crate::process::install(|| (0..which.len()).into_par_iter().map(decode).collect::<Result<_>>())?;
    } else {
        let fixed_raw = read_tiles(array, frag, &file, &pick(&fixed_locs, "tile offsets")?)?;
        let decode = |i: usize| -> Result<TileData> {
            let t = which[i];
            let kind = TileKind {
                datatype: col.datatype,
                cell_size: col.cell_size(),
                version,
                var_strings: false,
                max_len: cells[i].saturating_mul(col.cell_size()),
            };
            let fixed = col.filters.unfilter(&fixed_raw[i], kind).map_err(|e| ctx(e.context(format!("tile {t}")), &file))?;
            if fixed.len() != cells[i] * col.cell_size() {
                return Err(ctx(
                    Error::corrupt(format!("tile {t} holds {} bytes for {} cells of {} bytes", fixed.len(), cells[i], col.cell_size())),
                    &file,
                ));
            }
            Ok(TileData { fixed, offsets: Vec::new(), var: Vec::new(), validity: None, cells: cells[i] })
        };
        out = crate::process::install(|| (0..which.len()).into_par_iter().map(decode).collect::<Result<_>>())?;
    }
    if col.nullable {
        let vlocs = frag.validity_tiles(col.slot).map_err(|e| ctx(e, "__fragment_metadata.tdb"))?;
        let vfile = format!("{}_validity.tdb", col.stem);
        let raw = read_tiles(array, frag, &vfile, &pick(&vlocs, "validity tile offsets")?)?;
        crate::process::install(|| {
            out.par_iter_mut().enumerate().try_for_each(|(i, tile)| -> Result<()> {
                let t = which[i];
                let kind = TileKind { datatype: Datatype::UInt8, cell_size: 1, version, var_strings: false, max_len: cells[i] };
                let v = schema.validity_filters.unfilter(&raw[i], kind).map_err(|e| ctx(e.context(format!("tile {t}")), &vfile))?;
                if v.len() != cells[i] {
                    return Err(ctx(Error::corrupt(format!("validity tile {t} holds {} bytes for {} cells", v.len(), cells[i])), &vfile));
                }
                tile.validity = Some(v);
                Ok(())
            })
        })?;
    }
    Ok(out)
}
