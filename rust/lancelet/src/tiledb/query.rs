//! Filtered reads (`filter=` in lancelet SQL) with tile pruning, and
//! `explain`.
//!
//! A filter is planned against the array's full Arrow schema (dimensions
//! and every attribute), so it may name columns the read does not return.
//! Before any data tile is read, each candidate tile's statistics from the
//! fragment metadata — per-tile min, max and null count of attributes,
//! and for sparse fragments the R-tree leaf MBR as the min/max of each
//! dimension — go through the same pruning lancelet uses for Lance files
//! (`expr::prune`): a tile no cell of which can satisfy the filter is not
//! read. The filter is then evaluated on the cells read (rows where it is
//! null are dropped, as SQL `WHERE`).
//!
//! Statistics used: one-value integer, datetime and bool attributes and
//! var-sized `STRING_ASCII` / `CHAR` ones (what TileDB keeps). Float
//! attributes are not pruned on: TileDB's min/max skip NaN, which lancelet's
//! comparisons order above every number. A pruned dense tile still hides
//! older fragments' cells (its cells are dropped, not replaced by older
//! ones); a pruned sparse tile likewise still takes part in deduplication.

use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, Schema, SchemaRef};

use super::array::TileDbArray;
use super::cells::{build_array, gather, load_used, normalize_subarray, output_schema, CellBytes, ReadOptions, TileCounts};
use super::datatype::Datatype;
use super::fragment::{FragmentMeta, Mbr, TileStats};
use super::schema::ArraySchema;
use super::tiles::{ColumnSpec, TileData};
use crate::error::{Error, Result};
use crate::expr::SqlFilter;
use crate::file::stats::GroupStats;
use crate::table::scan::RowFilter;

/// Decides which candidate tiles a read may skip.
pub trait TilePruner {
    /// Of the selected tiles `which` of sparse fragment `f` (leaf MBRs
    /// `mbrs`), those to read.
    fn sparse_may_match(&self, array: &TileDbArray, f: usize, which: &[usize], mbrs: &[Mbr]) -> Result<Vec<bool>>;
    /// Of the `ntiles` tiles of dense fragment `f`, those to read.
    fn dense_may_match(&self, array: &TileDbArray, f: usize, ntiles: usize, per_tile: usize) -> Result<Vec<bool>>;
    /// Skipped sparse tiles share no coordinate with other fragments.
    fn pruned_tiles_are_isolated(&self) -> bool {
        false
    }
}

impl TilePruner for Pruner {
    fn sparse_may_match(&self, array: &TileDbArray, f: usize, which: &[usize], mbrs: &[Mbr]) -> Result<Vec<bool>> {
        Pruner::sparse_may_match(self, array, f, which, mbrs)
    }
    fn dense_may_match(&self, array: &TileDbArray, f: usize, ntiles: usize, per_tile: usize) -> Result<Vec<bool>> {
        Pruner::dense_may_match(self, array, f, ntiles, per_tile)
    }
}

/// A planned filter and what it needs.
pub struct Pruner {
    filter: SqlFilter,
    columns: Vec<String>,
}

/// Whether TileDB keeps usable min/max for values of this type/cell shape.
fn has_minmax(t: Datatype, cell_val_num: u32) -> bool {
    if cell_val_num == super::schema::VAR_NUM {
        return matches!(t, Datatype::StringAscii | Datatype::Char);
    }
    cell_val_num == 1 && (t.is_integer() || matches!(t, Datatype::Bool))
}

/// Build an Arrow array of type `dt` from one stored value per group.
fn values_array(dt: &DataType, t: Datatype, var: bool, vals: &[&[u8]]) -> Option<ArrayRef> {
    let mut values = Vec::new();
    let mut offsets = vec![0i64];
    for v in vals {
        if !var && v.len() != t.size() {
            return None;
        }
        values.extend_from_slice(v);
        offsets.push(values.len() as i64);
    }
    if matches!(dt, DataType::LargeUtf8) && std::str::from_utf8(&values).is_err() {
        return None;
    }
    let cells = CellBytes { values, offsets: if var { Some(offsets) } else { None }, len: vals.len() };
    build_array(dt, t, if var { super::schema::VAR_NUM } else { 1 }, cells, None).ok()
}

impl Pruner {
    /// Plan `sql` against every dimension and attribute of `array`.
    pub fn new(array: &TileDbArray, sql: &str) -> Result<Self> {
        let all = ReadOptions { dims: true, attrs: None, ..Default::default() };
        let schema = output_schema(&array.schema, &all)?;
        let filter = SqlFilter::new(sql, &schema)?;
        let columns = filter.columns();
        Ok(Pruner { filter, columns })
    }

    /// Attributes the filter names.
    pub fn attrs<'a>(&'a self, schema: &'a ArraySchema) -> impl Iterator<Item = &'a str> + 'a {
        self.columns.iter().filter(|c| schema.attr_index(c).is_some()).map(|c| c.as_str())
    }

    /// Keep the rows of `batch` where the filter holds.
    pub fn evaluate(&self, batch: &RecordBatch) -> Result<BooleanArray> {
        self.filter.evaluate(batch)
    }

    fn verdict(&self, groups: usize, cells: &[u64], stats: &dyn Fn(&str) -> Option<GroupStats>) -> Vec<bool> {
        let rows: u64 = cells.iter().sum();
        let pruned = self.filter.prune(stats, rows);
        let mut start = 0u64;
        (0..groups)
            .map(|i| {
                let r = start..start + cells[i];
                start += cells[i];
                // An empty tile cannot match; otherwise it may when its
                // rows meet a range that may match.
                r.start < r.end && pruned.maybe.iter().any(|m| m.start < r.end && r.start < m.end)
            })
            .collect()
    }

    fn attr_stats(
        &self,
        array: &TileDbArray,
        frag: &FragmentMeta,
        a: usize,
        which: &[usize],
        ntiles: usize,
        cells: &[u64],
    ) -> Result<Option<GroupStats>> {
        let at = &array.schema.attrs[a];
        let var = at.is_var();
        if !has_minmax(at.datatype, at.cell_val_num) {
            return Ok(None);
        }
        let st: TileStats = frag
            .tile_stats(FragmentMeta::attr_slot(a), ntiles, if var { None } else { Some(at.cell_size()) })
            .map_err(|e| e.in_file(&format!("{}/__fragments/{}/__fragment_metadata.tdb", array.uri(), frag.name)))?;
        let (Some(mins), Some(maxes)) = (&st.mins, &st.maxes) else { return Ok(None) };
        let null_count: Vec<u64> = if at.nullable {
            match &st.null_counts {
                Some(n) => which.iter().map(|&t| n[t]).collect(),
                None => return Ok(None),
            }
        } else {
            vec![0; which.len()]
        };
        let dt = output_schema(&array.schema, &ReadOptions { dims: false, attrs: Some(vec![at.name.clone()]), ..Default::default() })?
            .field(0)
            .data_type()
            .clone();
        let lo: Vec<&[u8]> = which.iter().map(|&t| mins[t].as_slice()).collect();
        let hi: Vec<&[u8]> = which.iter().map(|&t| maxes[t].as_slice()).collect();
        let (Some(min), Some(max)) = (values_array(&dt, at.datatype, var, &lo), values_array(&dt, at.datatype, var, &hi)) else {
            return Ok(None);
        };
        Ok(Some(groups(cells, min, max, null_count)))
    }

    /// Which of the selected tiles `which` of sparse fragment `f` may hold
    /// matching cells.
    pub fn sparse_may_match(&self, array: &TileDbArray, f: usize, which: &[usize], mbrs: &[Mbr]) -> Result<Vec<bool>> {
        let schema = &array.schema;
        let frag = &array.fragments[f];
        let ntiles = frag.sparse_tile_num as usize;
        let cells: Vec<u64> = which.iter().map(|&t| frag.sparse_tile_cells(schema, t)).collect();
        let mut known: Vec<(String, GroupStats)> = Vec::new();
        for name in &self.columns {
            if let Some(a) = schema.attr_index(name) {
                if let Some(g) = self.attr_stats(array, frag, a, which, ntiles, &cells)? {
                    known.push((name.clone(), g));
                }
            } else if let Some(d) = schema.dim_index(name) {
                let dim = &schema.dims[d];
                let dt = super::cells::arrow_type(dim.datatype, dim.cell_val_num)?;
                let var = dim.is_var();
                let lo: Vec<&[u8]> = which.iter().map(|&t| mbrs[t][d].0.as_slice()).collect();
                let hi: Vec<&[u8]> = which.iter().map(|&t| mbrs[t][d].1.as_slice()).collect();
                if let (Some(min), Some(max)) = (values_array(&dt, dim.datatype, var, &lo), values_array(&dt, dim.datatype, var, &hi)) {
                    known.push((name.clone(), groups(&cells, min, max, vec![0; which.len()])));
                }
            }
        }
        Ok(self.verdict(which.len(), &cells, &|n| known.iter().find(|k| k.0 == n).map(|k| k.1.clone())))
    }

    /// Which of the `ntiles` tiles of dense fragment `f` may hold matching
    /// cells.
    pub fn dense_may_match(&self, array: &TileDbArray, f: usize, ntiles: usize, per_tile: usize) -> Result<Vec<bool>> {
        let schema = &array.schema;
        let frag = &array.fragments[f];
        let which: Vec<usize> = (0..ntiles).collect();
        let cells = vec![per_tile as u64; ntiles];
        let mut known: Vec<(String, GroupStats)> = Vec::new();
        for name in &self.columns {
            if let Some(a) = schema.attr_index(name) {
                if let Some(g) = self.attr_stats(array, frag, a, &which, ntiles, &cells)? {
                    known.push((name.clone(), g));
                }
            }
        }
        Ok(self.verdict(ntiles, &cells, &|n| known.iter().find(|k| k.0 == n).map(|k| k.1.clone())))
    }
}

fn groups(cells: &[u64], min: ArrayRef, max: ArrayRef, null_count: Vec<u64>) -> GroupStats {
    let mut ranges = Vec::with_capacity(cells.len());
    let mut start = 0;
    for &c in cells {
        ranges.push(start..start + c);
        start += c;
    }
    GroupStats { ranges, min, max, null_count }
}

impl TileDbArray {
    /// A read with `filter`: the requested columns plus those the filter
    /// names are read (tiles pruned by statistics skipped), the filter is
    /// evaluated, and the requested columns of the matching rows returned.
    pub(crate) fn read_filtered(&self, opts: &ReadOptions, sql: &str) -> Result<(RecordBatch, TileCounts)> {
        let pruner = Pruner::new(self, sql)?;
        let out_schema = output_schema(&self.schema, opts)?;
        if self.schema.sparse {
            return self.read_sparse_filtered(opts, &pruner, out_schema);
        }
        let mut inner = opts.clone();
        inner.filter = None;
        inner.dims = true;
        let mut attrs: Vec<String> = match &opts.attrs {
            Some(a) => a.clone(),
            None => self.schema.attrs.iter().map(|a| a.name.clone()).collect(),
        };
        for a in pruner.attrs(&self.schema) {
            if !attrs.iter().any(|x| x == a) {
                attrs.push(a.to_string());
            }
        }
        inner.attrs = Some(attrs);
        let (batch, counts, keep) = self.read_plain(&inner, Some(&pruner as &dyn TilePruner))?;
        let mut mask = pruner.evaluate(&batch)?;
        if let Some(keep) = keep {
            mask = arrow_arith::boolean::and(&mask, &BooleanArray::from(keep)).map_err(Error::internal_arrow)?;
        }
        let kept = arrow_select::filter::filter_record_batch(&batch, &mask).map_err(Error::internal_arrow)?;
        let columns = out_schema
            .fields()
            .iter()
            .map(|f| {
                kept.column_by_name(f.name())
                    .cloned()
                    .ok_or_else(|| Error::Internal { what: format!("column {} missing after the filtered read", f.name()) })
            })
            .collect::<Result<Vec<_>>>()?;
        let n = kept.num_rows();
        let batch = RecordBatch::try_new_with_options(Arc::clone(&out_schema), columns, &RecordBatchOptions::new().with_row_count(Some(n)));
        Ok((batch.map_err(Error::internal_arrow)?, counts))
    }

    /// A sparse read with a filter, materialised late: the cells are
    /// resolved (tiles pruned by statistics skipped), only the columns the
    /// filter names are gathered for every cell, and the returned columns
    /// only for the cells where it holds (attribute tiles without such a
    /// cell are not read).
    fn read_sparse_filtered(&self, opts: &ReadOptions, pruner: &Pruner, out_schema: SchemaRef) -> Result<(RecordBatch, TileCounts)> {
        let schema = &self.schema;
        let sub = normalize_subarray(schema, &opts.subarray)?;
        let may = |f: usize, which: &[usize], mbrs: &[Mbr]| pruner.sparse_may_match(self, f, which, mbrs);
        let sp = self.sparse_sources(&sub, opts.order, Some(&may), false, false)?;
        let counts = TileCounts { fragments: self.fragments.len(), tiles_total: sp.tiles_total, tiles_read: sp.tiles_read };
        let all = output_schema(schema, &ReadOptions { dims: true, attrs: None, ..Default::default() })?;
        let cells_of = |f: usize, t: usize| self.fragments[f].sparse_tile_cells(schema, t) as usize;
        // Attribute tiles holding `sources`.
        let tiles_of = |name: &str, sources: &[u64]| -> Result<Option<Vec<Option<TileData>>>> {
            match schema.attr_index(name) {
                Some(a) => Ok(Some(load_used(self, &sp.ids, &ColumnSpec::attr(schema, a), sources, &cells_of)?)),
                None => Ok(None),
            }
        };
        // The column `name` of `sources` (attributes from `tiles`).
        let column = |name: &str, sources: &[u64], tiles: Option<&Vec<Option<TileData>>>| -> Result<ArrayRef> {
            let dt = all.field_with_name(name).map_err(Error::internal_arrow)?.data_type().clone();
            let (col, (cells, validity)) = match (schema.dim_index(name), schema.attr_index(name), tiles) {
                (Some(d), _, _) => {
                    let col = ColumnSpec::dim(schema, d);
                    let g = gather(&col, &sp.dim_tiles[d], sources, &[], true)?;
                    (col, g)
                }
                (None, Some(a), Some(tiles)) => {
                    let col = ColumnSpec::attr(schema, a);
                    let at = &schema.attrs[a];
                    let g = gather(&col, tiles, sources, &at.fill, at.fill_valid)?;
                    (col, g)
                }
                _ => return Err(Error::Internal { what: format!("no column {name} to gather") }),
            };
            build_array(&dt, col.datatype, col.cell_val_num, cells, validity)
        };
        let mut fields = Vec::new();
        let mut cols = Vec::new();
        let mut loaded: Vec<(String, Vec<Option<TileData>>)> = Vec::new();
        for name in &pruner.columns {
            let tiles = tiles_of(name, &sp.sources)?;
            fields.push(all.field_with_name(name).map_err(Error::internal_arrow)?.clone());
            cols.push(column(name, &sp.sources, tiles.as_ref())?);
            if let Some(t) = tiles {
                loaded.push((name.clone(), t));
            }
        }
        let n = sp.sources.len();
        let probe = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), cols, &RecordBatchOptions::new().with_row_count(Some(n)))
            .map_err(Error::internal_arrow)?;
        let mask = pruner.evaluate(&probe)?;
        drop(probe);
        let selected: Vec<u64> = sp.sources.iter().zip(mask.iter()).filter(|(_, m)| m.unwrap_or(false)).map(|(s, _)| *s).collect();
        let mut columns = Vec::new();
        for f in out_schema.fields() {
            let name = f.name();
            let arr = match loaded.iter().find(|l| &l.0 == name) {
                Some((_, tiles)) => column(name, &selected, Some(tiles))?,
                None => column(name, &selected, tiles_of(name, &selected)?.as_ref())?,
            };
            columns.push(arr);
        }
        let batch = RecordBatch::try_new_with_options(out_schema, columns, &RecordBatchOptions::new().with_row_count(Some(selected.len())))
            .map_err(Error::internal_arrow)?;
        Ok((batch, counts))
    }

    /// How many fragments and data tiles a read of `subarray` with `filter`
    /// involves, and how many tiles it reads after pruning (R-tree MBRs or
    /// space tiles for the subarray, tile statistics for the filter). Reads
    /// no data tile: only fragment metadata.
    pub fn explain(&self, subarray: &[Option<super::cells::DimRanges>], filter: Option<&str>) -> Result<TileCounts> {
        let sub = super::cells::normalize_subarray(&self.schema, subarray)?;
        let pruner = filter.map(|sql| Pruner::new(self, sql)).transpose()?;
        if self.schema.sparse {
            let leaves = self.all_leaves()?;
            let selected = self.select_tiles(&leaves, &sub);
            let mut read = 0;
            for (f, which) in selected.iter().enumerate() {
                if which.is_empty() {
                    continue;
                }
                read += match &pruner {
                    Some(p) => p.sparse_may_match(self, f, which, &leaves[f])?.iter().filter(|k| **k).count(),
                    None => which.len(),
                };
            }
            let total = leaves.iter().map(|l| l.len()).sum();
            return Ok(TileCounts { fragments: self.fragments.len(), tiles_total: total, tiles_read: read });
        }
        let mut opts = ReadOptions { subarray: sub, dims: false, attrs: Some(Vec::new()), ..Default::default() };
        opts.filter = None;
        let (_, counts, _) = self.read_plain(&opts, pruner.as_ref().map(|p| p as &dyn TilePruner))?;
        Ok(counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minmax_types() {
        assert!(has_minmax(Datatype::Int32, 1));
        assert!(has_minmax(Datatype::StringAscii, super::super::schema::VAR_NUM));
        assert!(!has_minmax(Datatype::Float64, 1));
        assert!(!has_minmax(Datatype::StringUtf8, super::super::schema::VAR_NUM));
        assert!(!has_minmax(Datatype::Int32, 2));
        let a = values_array(&DataType::Int32, Datatype::Int32, false, &[&5i32.to_le_bytes(), &7i32.to_le_bytes()]).unwrap();
        assert_eq!(a.len(), 2);
        assert!(values_array(&DataType::Int32, Datatype::Int32, false, &[&[1u8, 2]]).is_none());
    }
}
